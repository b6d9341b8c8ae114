"""Which live objects hold a reference to an object, and through what: a
property, an element, a closure variable, or one of the fields V8's heap
snapshot names as an edge.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError
from ..v8 import pages, slots
from ..v8.scopes import ScopeInfo
from . import census, refedges

if TYPE_CHECKING:
    from ..program import Program


def _hex(v: int | None) -> str | None:
    return None if v is None else f"0x{v:x}"


MAX_REF_HITS = 10000
MAX_LIFT = 64  # internal arrays whose owner findjsrefs looks up


@dataclass
class Ref:
    holder: int
    holder_type: str
    constructor: str | None
    via: str
    name: str | None = None  # a function holder's name (`fn.name`, or the one V8 inferred)


class RefFinder:
    def __init__(self, prog: Program, heap: int) -> None:
        self.prog = prog
        self.c = census.of(prog, heap)
        self.sh = prog.shapes
        self.v = self.sh.v
        self.h = self.sh.h
        md = self.h.md
        self.t = md.types
        self.ctx_lo = md.consts.get("FirstContextType", -1)
        self.ctx_hi = md.consts.get("LastContextType", -2)
        self.js_first = md.types.get("JS_PROXY_TYPE", 1024)
        self.cells = slots.wrapper_types(self.h)
        self._starts: dict[int, tuple[list[int], list[tuple[int, int, int]]]] = {}
        self._pages = sorted(self.c.pages, key=lambda p: p.start)
        self._page_starts = [p.start for p in self._pages]

    def holders(self, target: int, cap: int = MAX_REF_HITS) -> list[tuple[int, int]]:
        """(object, slot address) for each live object slot holding `target`."""
        pat = struct.pack("<Q", target)
        out: list[tuple[int, int]] = []
        for p in self._pages:
            try:
                data = pages.bulk(self.prog).read(p.start, p.end - p.start)
            except Exception:
                continue
            data = bytes(data)
            pos = data.find(pat)
            hits = []
            while pos >= 0 and len(hits) < cap:
                if pos % 8 == 0:
                    hits.append(p.start + pos)
                pos = data.find(pat, pos + 1)
            for slot in hits:
                obj = self._object_at(p, slot)
                if obj is not None and obj != target:
                    out.append((obj, slot))
            if len(out) >= cap:
                break
        return out

    def _object_at(self, p: pages.Page, addr: int) -> int | None:
        ent = self._starts.get(p.address)
        if ent is None:
            objs = census.object_starts(self.prog, p)
            ent = ([a - 1 for a, _m, _s in objs], objs)
            if len(self._starts) > 256:
                self._starts.clear()
            self._starts[p.address] = ent
        keys, objs = ent
        i = bisect.bisect_right(keys, addr) - 1
        if i < 0:
            return None
        a, _m, size = objs[i]
        if a - 1 < addr < a - 1 + 8 * size:  # not the map word: a reference slot
            return a
        return None

    def itype(self, obj: int) -> int:
        return self.h.instance_type(obj)

    def refs(self, target: int) -> list[Ref]:
        out: list[Ref] = []
        lifted = 0
        for obj, slot in self.holders(target):
            try:
                t = self.itype(obj)
            except (DecodeError, TargetMemoryError):
                continue
            if t >= self.js_first:
                out.extend(self._from_receiver(obj, t, target, slot))
            elif self.ctx_lo <= t <= self.ctx_hi:
                out.extend(self._from_context(obj, slot))
            elif t in self.cells:
                # A context cell wraps one closure variable: the context holds it.
                for ctx, cslot in self.holders(obj, 16):
                    if self.ctx_lo <= self.itype(ctx) <= self.ctx_hi:
                        out.extend(self._from_context(ctx, cslot))
            elif self.h.is_string_type(t) and refedges.field_name(self.h, obj, t, slot):
                out.append(Ref(obj, "string", None, refedges.field_name(self.h, obj, t, slot)
                               or "?"))
            elif lifted < MAX_LIFT:
                lifted += 1
                out.extend(self._lift(obj, t, target, slot))
        seen = set()
        uniq = []
        for r in out:
            k = (r.holder, r.via)
            if k not in seen:
                seen.add(k)
                uniq.append(r)
        return uniq

    def _ctor(self, obj: int) -> str | None:
        try:
            return self.sh.shape(self.h.map_of(obj), obj).constructor
        except (DecodeError, TargetMemoryError):
            return None

    def _ref(self, obj: int, t: int, via: str) -> Ref:
        """A reference from JS object obj (of instance type t), a function named."""
        closure = self.sh.is_closure_type(t)
        name = self.v.callable_name(obj) if closure else None
        return Ref(obj, refedges.holder_kind(self.h, t, closure), self._ctor(obj), via, name)

    def _from_receiver(self, obj: int, t: int, target: int, slot: int) -> list[Ref]:
        for pr in self._props(obj):
            if pr.value == target and not pr.accessor:
                return [self._ref(obj, t, self.v.key_text(pr.key, 200) or "?")]
        off = slot - (obj - 1)
        via = refedges.field_name(self.h, obj, t, slot) or f"<internal slot +{off}>"
        return [self._ref(obj, t, via)]

    def _props(self, obj: int):
        try:
            return self.v.own_properties(obj, 4096)
        except (DecodeError, TargetMemoryError):
            return []

    def _from_context(self, ctx: int, slot: int) -> list[Ref]:
        index = (slot - (ctx - 1) - 16) // 8
        name = f"<slot {index}>"
        try:
            si = self.h.array_get(ctx, 0)
            for loc in ScopeInfo(self.h, self.v.s, si).context_locals():
                if loc.slot == index:
                    name = loc.name
                    break
        except (DecodeError, TargetMemoryError):
            pass
        return [Ref(ctx, "context", None, f"closure:{name}")]

    def _lift(self, arr: int, t: int, target: int, slot: int) -> list[Ref]:
        """Who owns an internal array (elements, property array, Map/Set table)."""
        index = (slot - (arr - 1) - 16) // 8
        out = []
        om, os_ = self.t.get("ORDERED_HASH_MAP_TYPE"), self.t.get("ORDERED_HASH_SET_TYPE")
        for owner, _s in self.holders(arr, 64):
            try:
                ot = self.itype(owner)
            except (DecodeError, TargetMemoryError):
                continue
            if ot < self.js_first:
                continue
            name = self.h.type_name(ot)
            if t in (om, os_) and name in ("JS_MAP_TYPE", "JS_SET_TYPE"):
                kind = "map" if name == "JS_MAP_TYPE" else "set"
                out.append(self._ref(owner, ot, self._table_via(arr, index, kind)))
                continue
            elems = self.h.field(owner, "JSObject", "elements")
            props = self.h.field(owner, "JSReceiver", "raw_properties_or_hash")
            named = refedges.field_name(self.h, owner, ot, _s)
            if named and named not in ("elements", "raw_properties_or_hash"):
                # An array one field of the owner holds (a bound function's arguments).
                out.append(self._ref(owner, ot, f"{named}[{index}]"))
            elif elems == arr:
                out.append(self._ref(owner, ot, self._element_via(arr, t, index)))
            elif props == arr:
                via = "?"
                for pr in self._props(owner):
                    if pr.value == target and not pr.accessor:
                        via = self.v.key_text(pr.key, 200) or "?"
                        break
                out.append(self._ref(owner, ot, via))
        return out

    def _element_via(self, arr: int, t: int, index: int) -> str:
        if t == self.t.get("NUMBER_DICTIONARY_TYPE"):
            # Entries of 3 slots after 4 header/prefix slots: the key precedes the value.
            try:
                key = self.h.array_get(arr, index - 1)
                if self.h.is_smi(key):
                    return f"[{self.h.smi(key)}]"
            except TargetMemoryError:
                pass
            return "[?]"
        return f"[{index}]"

    def _table_via(self, table: int, index: int, kind: str) -> str:
        try:
            buckets = self.h.smi(self.h.array_get(table, 2))
        except TargetMemoryError:
            return kind
        width = 3 if kind == "map" else 2
        rel = index - 3 - buckets
        if rel < 0:
            return kind
        entry, part = divmod(rel, width)
        if kind == "set":
            return f"set entry {entry}"
        if part == 0:
            return f"map key (entry {entry})"
        try:
            key = self.h.array_get(table, 3 + buckets + entry * width)
            text = self.v.key_text(key, 60) if self.h.is_heap(key) or self.h.is_smi(key) else None
        except (DecodeError, TargetMemoryError):
            text = None
        return f"map value of key {text!r}" if text is not None else f"map value (entry {entry})"
