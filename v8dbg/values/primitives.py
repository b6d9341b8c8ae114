"""Values with no members beyond their own payload: BigInts, Dates, RegExps.
"""

from __future__ import annotations

from typing import Any

from ..errors import DecodeError
from .base import _REGEXP_FLAGS, MAX_BIGINT_DIGITS, Value, ValuesBase, number_value


class Primitives(ValuesBase):
    def bigint_text(self, v: int) -> str:
        bits = self.mem.u32(v - 1 + self.off("BigInt", "bitfield"))
        sign = bits & 1
        n = (bits >> 1) & 0x3FFFFFFF
        if n > MAX_BIGINT_DIGITS:
            raise DecodeError(f"BigInt 0x{v:x} has an implausible length of {n} digits")
        if n == 0:
            return "0"
        raw = self.mem.read(v - 1 + self.off("BigInt", "digits"), 8 * n)
        value = int.from_bytes(raw, "little")
        return f"-{value}" if sign else str(value)

    def _date(self, v: int) -> Any:
        if self.md.const("JSDateValueIsRaw"):
            d = self.f64(v, self.off("JSDate", "value"))
        else:
            w = self.fld(v, "JSDate", "value")
            if self.h.is_smi(w):
                return self.h.smi(w)
            if not self.h.is_heap(w) or self.itype(w) != self.heap_number_type:
                raise DecodeError(f"date 0x{v:x} has no time value")
            d = self.f64(w, self.off("HeapNumber", "value"))
        return number_value(d)["value"]

    def _regexp(self, v: int) -> Value:
        src = self.fld(v, "JSRegExp", "source")
        flags_w = self.fld(v, "JSRegExp", "flags")
        source = self.s.text(src, 4096) if self.is_string(src) else None
        flags = self.h.smi(flags_w) if self.h.is_smi(flags_w) else 0
        return {"type": "regexp", "source": source,
                "flags": "".join(ch for ch, bit in _REGEXP_FLAGS if flags & bit)}
