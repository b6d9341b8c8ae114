"""Map, Set, WeakMap, WeakSet (V8's ordered hash tables) and Promises.
"""

from __future__ import annotations

import struct

from ..errors import DecodeError
from .base import _PROMISE_STATES, Value, ValuesBase, _Walk


class Collections(ValuesBase):
    def _ordered_table(self, table: int, entry_size: int, cap: int) -> tuple[int, list[tuple]]:
        """(size, live entries) of an OrderedHashMap/Set in insertion order."""
        h = self.h
        t = self.itype(table)
        if self.tname(t).startswith("SMALL_ORDERED"):
            raise DecodeError(f"small ordered hash table 0x{table:x} is not supported")
        head = self.fixed_items(table, 3)
        if len(head) < 3 or not all(h.is_smi(x) for x in head):
            raise DecodeError(f"hash table 0x{table:x} is malformed")
        nof, nod, buckets = (h.smi(x) for x in head)
        n = self.fixed_length(table)
        used = nof + nod
        if min(nof, nod, buckets) < 0 or 3 + buckets + used * entry_size > n:
            raise DecodeError(f"hash table 0x{table:x} has implausible counts")
        first = 3 + buckets
        out = []
        i = 0
        # Read in chunks so a huge table with few wanted entries stays cheap.
        while i < used and len(out) < cap:
            chunk = min(used - i, 256)
            raw = self.mem.read(table - 1 + self.off("FixedArray", "data")
                                + 8 * (first + i * entry_size), 8 * chunk * entry_size)
            ws = struct.unpack(f"<{chunk * entry_size}Q", raw)
            for j in range(chunk):
                e = ws[j * entry_size:(j + 1) * entry_size]
                if not self.is_the_hole(e[0]):
                    out.append(e)
                    if len(out) >= cap:
                        break
            i += chunk
        return nof, out

    def _collection(self, v: int, is_map: bool, level: int, walk: _Walk) -> Value:
        table = self.fld(v, "JSCollection", "table")
        kind = "map" if is_map else "set"
        size, entries = self._ordered_table(table, 3 if is_map else 2,
                                            0 if level > walk.opts.depth else walk.opts.strlen)
        out: Value = {"type": kind, "size": size}
        ctor = self.constructor_name(v)
        if ctor not in ("Map", "Set"):
            out["constructor"] = ctor
        if level > walk.opts.depth and size:
            out["truncated"] = True
            return out
        if is_map:
            out["entries"] = [[self._child(k, level + 1, walk), self._child(val, level + 1, walk)]
                              for k, val, _ in entries]
        else:
            out["values"] = [self._child(k, level + 1, walk) for k, _ in entries]
        if size > len(entries):
            out["truncated"] = True
        return out

    def _weak_collection(self, v: int, is_map: bool, level: int, walk: _Walk) -> Value:
        table = self.fld(v, "JSWeakCollection", "table")
        entries = self._hash_entries(table, 3, 2)
        out: Value = {"type": "map" if is_map else "set", "weak": True, "size": len(entries)}
        if level > walk.opts.depth:
            out["truncated"] = True
            return out
        entries = entries[:walk.opts.strlen]
        if is_map:
            out["entries"] = [[self._child(k, level + 1, walk), self._child(val, level + 1, walk)]
                              for k, val in entries]
        else:
            out["values"] = [self._child(k, level + 1, walk) for k, _ in entries]
        return out

    def _promise(self, v: int, level: int, walk: _Walk) -> Value:
        flags = self.fld(v, "JSPromise", "flags")
        if not self.h.is_smi(flags):
            raise DecodeError(f"promise 0x{v:x} has no state")
        state = self.h.smi(flags) & 3
        if state > 2:
            raise DecodeError(f"promise 0x{v:x} has an unknown state {state}")
        out: Value = {"type": "promise", "state": _PROMISE_STATES[state]}
        if state != 0:
            r = self.fld(v, "JSPromise", "reactions_or_result")
            out["result"] = self._child(r, level + 1, walk)
        return out
