"""Error objects: message, stack (formatted or still raw), cause, properties.
"""

from __future__ import annotations

from .base import Value, ValuesBase, _Walk


class ErrorValues(ValuesBase):
    def _error(self, v: int, level: int, walk: _Walk) -> Value:
        out: Value = {"type": "error", "constructor": self.constructor_name(v),
                      "message": None, "stack": None}
        props = self.own_properties(v)
        for p in props:
            if p.accessor:
                continue
            if self.is_string(p.key) and self.s.text(p.key, 8) == "message" and \
                    self.is_string(p.value):
                out["message"] = self.s.text(p.value, max(walk.opts.strlen, 4096))
        for p in props:
            # The stack lives under the first private symbol in every supported line.
            if self.is_symbol(p.key) and self.symbol_is_private(p.key) and not p.accessor:
                if self.is_string(p.value):
                    out["stack"] = self.s.text(p.value, 65536)
                else:
                    frames = self._raw_frames(p.value)
                    if frames:
                        out["frames"] = frames
                break
        if level > walk.opts.depth:
            out["truncated"] = True
            return out
        out["properties"] = self._properties(v, level, walk)
        for p in props:
            if not p.accessor and not p.enumerable and self.is_string(p.key) and \
                    self.s.text(p.key, 8) == "cause":
                out["cause"] = self._child(p.value, level + 1, walk)
        return out

    def _raw_frames(self, arr: int) -> list[str]:
        """Function names of a not-yet-formatted stack (CallSiteInfo list)."""
        h = self.h
        if not h.is_heap(arr) or not h.is_type(arr, "FIXED_ARRAY_TYPE"):
            return []
        names: list[str] = []
        slots = self.md.const("ErrorStackFrameSlots")
        items = self.fixed_items(arr, 200 * max(slots, 1))
        # The flat list came within a line (node 26.10 has it, 26.5 not): the
        # first item tells which form this one is.
        if slots and not (items and h.is_heap(items[0])
                          and h.is_type(items[0], "CALL_SITE_INFO_TYPE")):
            fns = items[self.md.const("ErrorStackFrameFunction")::slots]
        else:
            fns = []
            for item in items[:200]:
                if h.is_heap(item) and h.is_type(item, "CALL_SITE_INFO_TYPE"):
                    fns.append(self.fld(item, "CallSiteInfo", "function"))
        for fn in fns:
            if h.is_heap(fn) and self.f.is_function(fn):
                names.append(self.function_name(fn) or "<anonymous>")
        return names
