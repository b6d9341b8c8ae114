"""Arrays and integer-keyed elements: packed, holey, double and dictionary
elements, in index order.
"""

from __future__ import annotations

import struct
from typing import Any

from ..errors import DecodeError
from .base import DOUBLE_HOLE, Value, ValuesBase, _Walk, number_value


class Elements(ValuesBase):
    def elements_kind(self, m: int) -> int:
        bf2 = self.u8(m, self.off("Map", "bit_field2"))
        return (bf2 & self.md.const("bit_field2_elements_kind_mask", 0xFC)) >> self.md.const(
            "bit_field2_elements_kind_shift", 2)

    def _element_words(self, obj: int, kind: int, limit: int) -> list[tuple[int, Any]]:
        """(index, tagged word or float) of the first `limit` slots, holes included.

        Double kinds give floats (None for a hole); dictionary kinds give the
        live entries sorted by index.
        """
        elems = self.fld(obj, "JSObject", "elements")
        if not self.h.is_heap(elems):
            return []
        if kind == self.ek_dictionary:
            start = 3 + self.md.const("numberdictionaryshape_prefix_size")
            out = []
            for key, value, _det in self._hash_entries(elems, start, 3):
                if self.h.is_smi(key):
                    idx = self.h.smi(key)
                elif self.h.is_heap(key) and self.itype(key) == self.heap_number_type:
                    idx = int(self.f64(key, self.off("HeapNumber", "value")))
                else:
                    continue
                out.append((idx, value))
            out.sort(key=lambda e: e[0])
            return out[:limit]
        if kind in (4, 5):
            n = min(self.fixed_length(elems), limit)
            if n == 0:
                return []
            raw = self.mem.read(elems - 1 + self.off("FixedDoubleArray", "data"), 8 * n)
            ws = struct.unpack(f"<{n}Q", raw)
            return [(i, None if w == DOUBLE_HOLE else struct.unpack("<d", struct.pack("<Q", w))[0])
                    for i, w in enumerate(ws)]
        if kind in (self.ek_dictionary + 1, self.ek_dictionary + 2):  # sloppy arguments
            if self.fixed_length(elems) < 2:
                return []
            elems = self.mem.u64(elems - 1 + self.off("SloppyArgumentsElements", "arguments"))
            if not self.h.is_heap(elems):
                return []
            t = self.itype(elems)
            if t == self._type("NUMBER_DICTIONARY_TYPE"):
                return self._element_words_dict(elems, limit)
        words = self.fixed_items(elems, limit)
        return list(enumerate(words))

    def _element_words_dict(self, elems: int, limit: int) -> list[tuple[int, Any]]:
        start = 3 + self.md.const("numberdictionaryshape_prefix_size")
        out = [(self.h.smi(k), v) for k, v, _ in self._hash_entries(elems, start, 3)
               if self.h.is_smi(k)]
        out.sort(key=lambda e: e[0])
        return out[:limit]

    def _array_length(self, v: int) -> int:
        w = self.fld(v, "JSArray", "length")
        if self.h.is_smi(w):
            return self.h.smi(w)
        if self.h.is_heap(w) and self.itype(w) == self.heap_number_type:
            return int(self.f64(w, self.off("HeapNumber", "value")))
        raise DecodeError(f"array 0x{v:x} has no valid length")

    def _array(self, v: int, level: int, walk: _Walk) -> Value:
        length = self._array_length(v)
        out: Value = {"type": "array", "length": length}
        if level > walk.opts.depth and (length or self._has_enumerable(v)):
            out["truncated"] = True
            return out
        m = self.h.map_of(v)
        kind = self.elements_kind(m)
        limit = min(length, walk.opts.strlen)
        words = self._element_words(v, kind, limit)
        elems: list[Value] = [{"type": "hole"}] * limit
        elems = list(elems)
        for idx, w in words:
            if not 0 <= idx < limit:
                continue
            elems[idx] = self._element_value(w, kind, level, walk)
        out["elements"] = elems
        if length > limit:
            out["truncated"] = True
            if kind == self.ek_dictionary:
                # Sparse: the few real entries past the cut, so the gaps can be shown.
                tail = [(i, w) for i, w in self._element_words(v, kind, limit + walk.opts.strlen)
                        if i >= limit]
                out["sparse_tail"] = [{"index": i, "value": self._element_value(w, kind, level, walk)}
                                      for i, w in tail[:walk.opts.strlen]]
        props = self._properties(v, level, walk)
        if props:
            out["properties"] = props
        return out

    def _element_value(self, w: Any, kind: int, level: int, walk: _Walk) -> Value:
        if kind in (4, 5):
            return {"type": "hole"} if w is None else number_value(w)
        if self.is_the_hole(w):
            return {"type": "hole"}
        return self._child(w, level + 1, walk)

    def _elements_list(self, v: int, level: int, walk: _Walk) -> list[Value]:
        m = self.h.map_of(v)
        kind = self.elements_kind(m)
        if kind in self._kinds:
            return []
        out = []
        for idx, w in self._element_words(v, kind, max(walk.opts.strlen, 1) * 4):
            if kind in (4, 5):
                if w is None:
                    continue
            elif self.is_the_hole(w):
                continue
            out.append({"index": idx, "value": self._element_value(w, kind, level, walk)})
            if len(out) >= walk.opts.strlen:
                break
        return out

    def _has_elements(self, v: int) -> bool:
        kind = self.elements_kind(self.h.map_of(v))
        if kind in self._kinds:
            return False
        return any(not (w is None or (kind not in (4, 5) and self.is_the_hole(w)))
                   for _, w in self._element_words(v, kind, 16))
