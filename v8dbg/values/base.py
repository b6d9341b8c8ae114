"""What every family of value decoders shares: the caps on every walk, the
decoded-value types, and small readers of fields, keys and symbols.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError, TargetMemoryError

if TYPE_CHECKING:
    from ..program import Program

MAX_PROPERTIES = 4096  # own properties read per object
MAX_DICT_CAPACITY = 1 << 20  # hash-table slots scanned per table
MAX_CHAIN = 64  # maps / prototypes followed
MAX_VALUES = 20000  # values produced by one decode
MAX_BIGINT_DIGITS = 4096  # 64-bit digits
MAX_KEY = 1000  # characters of a property key (keys are never cut at STRLEN)
KEY_CACHE_LIMIT = 1 << 17  # entries of each key cache
DOUBLE_HOLE = 0xFFF7FFFFFFF7FFFF

# util.inspect's order of RegExp flag letters, with V8's flag bits.
_REGEXP_FLAGS = (("d", 1 << 7), ("g", 1 << 0), ("i", 1 << 1), ("m", 1 << 2), ("s", 1 << 5),
                 ("u", 1 << 4), ("v", 1 << 8), ("y", 1 << 3))
_TYPED_SIZES = {"Uint8": 1, "Int8": 1, "Uint8Clamped": 1, "Uint16": 2, "Int16": 2, "Float16": 2,
                "Uint32": 4, "Int32": 4, "Float32": 4, "Float64": 8, "BigUint64": 8,
                "BigInt64": 8}
_PROMISE_STATES = ("pending", "fulfilled", "rejected")

Value = dict[str, Any]


@dataclass
class Prop:
    """One own property as stored: key word, attributes and where its value is."""

    key: int
    accessor: bool
    enumerable: bool
    value: int  # the tagged value, or the AccessorPair/AccessorInfo for accessors


@dataclass
class Options:
    depth: int = 2
    strlen: int = 100
    max_values: int = MAX_VALUES
    max_props: int = 1000


@dataclass
class _Walk:
    """State of one decode: the path for cycle checks and the value budget."""

    opts: Options
    path: set[int] = field(default_factory=set)
    produced: int = 0


def number_value(v: float) -> Value:
    """A JS number as the contract spells it (NaN, ±Infinity and -0 as strings)."""
    if math.isnan(v):
        return {"type": "number", "value": "NaN"}
    if math.isinf(v):
        return {"type": "number", "value": "Infinity" if v > 0 else "-Infinity"}
    if v == 0 and math.copysign(1, v) < 0:
        return {"type": "number", "value": "-0"}
    if v.is_integer() and abs(v) < 2 ** 53:
        return {"type": "number", "value": int(v)}
    return {"type": "number", "value": v}


def hexaddr(v: int) -> str:
    return f"0x{v:x}"


class ValuesBase:
    """State and small readers shared by every value family."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.h = prog.heap
        self.s = prog.strings
        self.f = prog.functions
        self.md = self.h.md
        self.mem = self.h.mem
        md = self.md
        self.t = {name: num for name, num in md.types.items()}
        self.hole_type = self.t.get("HOLE_TYPE")
        self.heap_number_type = self.t.get("HEAP_NUMBER_TYPE")
        self._kinds = {md.consts[k]: k[len("ElementsKind"):-len("Array")]
                       for k in md.consts if k.startswith("ElementsKind") and k.endswith("Array")}
        self.ek_dictionary = md.const("elements_dictionary_elements")
        self._ctor_cache: dict[int, str | None] = {}
        # Hash-table keys and property keys recur across many objects; their
        # kind and text are read once per target state (bounded caches).
        self._empty_key: dict[int, bool] = {}
        self._symbol_key: dict[int, bool] = {}
        self._key_text: dict[tuple[int, int], str | None] = {}
        # (key, name, symbol description) -> is that key; (map, name, symbol
        # description) -> the fast map's own data field of that key (in
        # object?, where), False for none.
        self._key_match: dict[tuple[int, str | None, str | None], bool] = {}
        self._own_field: dict[tuple[int, str | None, str | None],
                              tuple[bool | None, int] | bool] = {}

    def _type(self, name: str) -> int | None:
        return self.t.get(name)

    def itype(self, obj: int) -> int:
        return self.h.instance_type(obj)

    def tname(self, itype: int) -> str:
        return self.h.type_name(itype)

    def u8(self, obj: int, off: int) -> int:
        return self.mem.u8(obj - 1 + off)

    def off(self, cls: str, name: str) -> int:
        return self.md.off(cls, name)

    def fld(self, obj: int, cls: str, name: str) -> int:
        return self.mem.u64(obj - 1 + self.md.off(cls, name))

    def f64(self, obj: int, off: int) -> float:
        return self.mem.f64(obj - 1 + off)

    def is_the_hole(self, v: int) -> bool:
        if not self.h.is_heap(v):
            return False
        try:
            return self.h.oddball_name(v) == "hole"
        except (DecodeError, TargetMemoryError):
            return False

    def is_undefined(self, v: int) -> bool:
        return self.h.is_heap(v) and self.h.oddball_name(v) == "undefined"

    def is_string(self, v: int) -> bool:
        return self.h.is_heap(v) and self.s.is_string(v)

    def is_symbol(self, v: int) -> bool:
        return self.h.is_heap(v) and self.h.is_type(v, "SYMBOL_TYPE")

    def fixed_items(self, arr: int, cap: int) -> list[int]:
        """Up to `cap` tagged slots of a FixedArray-shaped object."""
        return self.h.array_items(arr, cap)

    def fixed_length(self, arr: int) -> int:
        return self.h.array_length(arr)

    def symbol_description(self, sym: int, limit: int = 200) -> str | None:
        d = self.fld(sym, "Symbol", "name")
        if self.is_string(d):
            return self.s.text(d, limit)
        return None

    def symbol_is_private(self, sym: int) -> bool:
        flags = self.mem.u32(sym - 1 + self.off("Symbol", "flags"))
        return bool(flags & 1)

    def key_text(self, key: int, limit: int = 200) -> str | None:
        """Property key as shown: a string, `Symbol(desc)`, or None for private symbols."""
        ck = (key, limit)
        if ck in self._key_text:
            return self._key_text[ck]
        text = self._key_text_uncached(key, limit)
        if len(self._key_text) >= KEY_CACHE_LIMIT:
            self._key_text.clear()
        self._key_text[ck] = text
        return text

    def _key_text_uncached(self, key: int, limit: int) -> str | None:
        h = self.h
        if h.is_smi(key):
            return str(h.smi(key))
        if self.is_string(key):
            return self.s.text(key, limit)
        if self.is_symbol(key):
            if self.symbol_is_private(key):
                return None
            d = self.symbol_description(key, limit)
            return f"Symbol({d if d is not None else ''})"
        if h.is_heap(key) and h.instance_type(key) == self.heap_number_type:
            return str(number_value(self.f64(key, self.off("HeapNumber", "value")))["value"])
        return None
