"""JavaScript values decoded into the contract's VALUE dicts.

One `Values` decoder per program turns a tagged word into a plain dict
(`{"type": ..., "address": ...}`) that front ends print as JSON or render
like util.inspect. Every walk is bounded: a depth limit, a cap on entries
per container (STRLEN), a cap on values per decode, and caps on every
length read from the target, so corrupt memory ends in a short value or a
clear error rather than a hang.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any

from .errors import DecodeError, TargetMemoryError, V8DbgError, why
from .functions import Functions
from .heap import Heap
from .program import Program
from .strings import Strings

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


class Values:
    """Decodes tagged values of one program."""

    def __init__(self, prog: Program, heap: Heap | None = None, strings: Strings | None = None,
                 functions: Functions | None = None) -> None:
        self.prog = prog
        self.h = heap or Heap(prog)
        self.s = strings or Strings(self.h)
        self.f = functions or Functions(self.h, self.s)
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

    # -- small helpers --------------------------------------------------

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

    # -- keys -----------------------------------------------------------

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

    # -- own properties -------------------------------------------------

    def own_properties(self, obj: int, cap: int = MAX_PROPERTIES) -> list[Prop]:
        """Own named properties in enumeration order (string keys, then symbols)."""
        m = self.h.map_of(obj)
        if self.h.map_type(m) == self._type("JS_GLOBAL_PROXY_TYPE"):
            # globalThis is a proxy; the properties live on the global object behind it.
            g = self.fld(m, "Map", "prototype")
            if self.h.is_heap(g) and self.h.is_type(g, "JS_GLOBAL_OBJECT_TYPE"):
                obj, m = g, self.h.map_of(g)
        bf3 = self.mem.u32(m - 1 + self.off("Map", "bit_field3"))
        if (bf3 >> self.md.const("bit_field3_is_dictionary_map_shift", 21)) & 1:
            props = self._dictionary_properties(obj, cap)
        else:
            props = self._fast_properties(obj, m, bf3, cap)
        sym = [self._is_symbol_key(p.key) for p in props]
        return [p for p, s in zip(props, sym) if not s] + [p for p, s in zip(props, sym) if s]

    def _fast_properties(self, obj: int, m: int, bf3: int, cap: int) -> list[Prop]:
        md = self.md
        mask = md.const("bit_field3_number_of_own_descriptors_mask", 0xFFC00)
        shift = md.const("bit_field3_number_of_own_descriptors_shift", 10)
        n = min((bf3 & mask) >> shift, cap)
        if n == 0:
            return []
        descs = self.fld(m, "Map", "instance_descriptors")
        if not self.h.is_heap(descs):
            raise DecodeError(f"object 0x{obj:x} has no descriptor array")
        total = self.mem.u16(descs - 1 + self.off("DescriptorArray", "number_of_all_descriptors"))
        if n > total:
            raise DecodeError(f"descriptor array 0x{descs:x} is shorter than its map says")
        header = md.off("DescriptorArray", "header_size")
        size = md.const("prop_desc_size")
        raw = self.mem.read(descs - 1 + header, 8 * size * n)
        words = struct.unpack(f"<{size * n}Q", raw)
        isw = self.u8(m, self.off("Map", "instance_size_in_words"))
        start = self.u8(m, self.off("Map", "inobject_properties_start_or_constructor_function_index"))
        inobject = max(isw - start, 0)
        out: list[Prop] = []
        props_arr: int | None = None
        for i in range(n):
            key = words[i * size + md.const("prop_desc_key")]
            details_w = words[i * size + md.const("prop_desc_details")]
            slot = words[i * size + md.const("prop_desc_value")]
            if not self.h.is_smi(details_w):
                raise DecodeError(f"descriptor array 0x{descs:x} has bad details")
            details = self.h.smi(details_w)
            accessor = (details & md.const("prop_kind_mask")) == md.const("prop_kind_Accessor")
            attrs = (details & md.const("prop_attributes_mask", 0x1C)) >> md.const(
                "prop_attributes_shift", 2)
            enumerable = not attrs & md.const("prop_attributes_DONT_ENUM")
            location = (details & md.const("prop_location_mask")) >> md.const(
                "prop_location_shift", 5)
            if location == md.const("prop_location_Descriptor"):
                value = slot
            else:
                index = (details & md.const("prop_index_mask", 0x1FF80000)) >> md.const(
                    "prop_index_shift", 19)
                if index < inobject:
                    value = self.mem.u64(obj - 1 + (start + index) * 8)
                else:
                    if props_arr is None:
                        props_arr = self.fld(obj, "JSReceiver", "raw_properties_or_hash")
                    value = self._property_array_get(obj, props_arr, index - inobject)
            out.append(Prop(key, accessor, enumerable, value))
        return out

    def _property_array_get(self, obj: int, arr: int, i: int) -> int:
        if not self.h.is_heap(arr):
            raise DecodeError(f"object 0x{obj:x} lost its property array")
        lh = self.mem.u64(arr - 1 + self.off("PropertyArray", "length_and_hash"))
        n = self.h.smi(lh) & 0x3FF if self.h.is_smi(lh) else 0
        if not 0 <= i < n:
            raise DecodeError(f"property {i} is outside the property array of 0x{obj:x}")
        return self.mem.u64(arr - 1 + self.off("PropertyArray", "data") + 8 * i)

    def _dictionary_properties(self, obj: int, cap: int) -> list[Prop]:
        table = self.fld(obj, "JSReceiver", "raw_properties_or_hash")
        if not self.h.is_heap(table):
            return []
        t = self.itype(table)
        if t == self._type("GLOBAL_DICTIONARY_TYPE"):
            return self._global_properties(table, cap)
        if self._type("NAME_DICTIONARY_TYPE") is not None and t != self._type("NAME_DICTIONARY_TYPE"):
            raise DecodeError(f"object 0x{obj:x}: unsupported property table "
                              f"({self.tname(t)})")
        start = 3 + self.md.const("namedictionaryshape_prefix_size")
        entries = self._hash_entries(table, start, 3)
        out = []
        for key, value, det in entries:
            if not self.h.is_smi(det):
                continue
            d = self.h.smi(det)
            attrs = (d >> 2) & 7
            out.append((d >> 8, Prop(key, bool(d & 1), not attrs & 2, value)))
            if len(out) >= cap:
                break
        out.sort(key=lambda e: e[0])
        return [p for _, p in out]

    def _global_properties(self, table: int, cap: int) -> list[Prop]:
        out = []
        for (cell,) in self._hash_entries(table, 5, 1):
            if not self.h.is_heap(cell) or not self.h.is_type(cell, "PROPERTY_CELL_TYPE"):
                continue
            key = self.fld(cell, "PropertyCell", "name")
            det = self.fld(cell, "PropertyCell", "property_details_raw")
            value = self.fld(cell, "PropertyCell", "value")
            if self.is_the_hole(value) or not self.h.is_smi(det):
                continue
            d = self.h.smi(det)
            out.append((d >> 8, Prop(key, bool(d & 1), not (d >> 2) & 2, value)))
            if len(out) >= cap:
                break
        out.sort(key=lambda e: e[0])
        return [p for _, p in out]

    def _hash_entries(self, table: int, start: int, size: int) -> list[tuple[int, ...]]:
        """Live entries of a V8 HashTable: keys not undefined and not the hole."""
        n = self.fixed_length(table)
        capw = self.h.array_get(table, 2)
        if not self.h.is_smi(capw):
            raise DecodeError(f"hash table 0x{table:x} has no capacity")
        capacity = self.h.smi(capw)
        if capacity < 0 or capacity > MAX_DICT_CAPACITY or start + capacity * size > n:
            raise DecodeError(f"hash table 0x{table:x} has an implausible capacity {capacity}")
        words = self.fixed_items(table, start + capacity * size)
        out = []
        for i in range(capacity):
            e = tuple(words[start + i * size: start + (i + 1) * size])
            if self._is_empty_key(e[0]):
                continue
            out.append(e)
        return out

    def _is_symbol_key(self, k: int) -> bool:
        v = self._symbol_key.get(k)
        if v is None:
            v = self.is_symbol(k)
            if len(self._symbol_key) >= KEY_CACHE_LIMIT:
                self._symbol_key.clear()
            self._symbol_key[k] = v
        return v

    def _is_empty_key(self, k: int) -> bool:
        """True for the undefined / the-hole markers of an empty or deleted entry."""
        if not self.h.is_heap(k):
            return False
        v = self._empty_key.get(k)
        if v is None:
            v = self.h.oddball_name(k) in ("undefined", "hole")
            if len(self._empty_key) >= KEY_CACHE_LIMIT:
                self._empty_key.clear()
            self._empty_key[k] = v
        return v

    def own_data_property(self, obj: int, key_name: str | None = None,
                          symbol_desc: str | None = None) -> int | None:
        """The value of an own data property by string key (or public symbol description)."""
        try:
            props = self.own_properties(obj, 1024)
        except (DecodeError, TargetMemoryError):
            return None
        for p in props:
            if p.accessor:
                continue
            if key_name is not None and self.is_string(p.key) and \
                    self.s.text(p.key, len(key_name) + 1) == key_name:
                return p.value
            if symbol_desc is not None and self.is_symbol(p.key) and \
                    self.symbol_description(p.key) == symbol_desc:
                return p.value
        return None

    # -- elements -------------------------------------------------------

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

    # -- constructor names ----------------------------------------------

    def map_constructor(self, m: int) -> int:
        """Follow the back pointers to the constructor (JSFunction, template, Smi, null)."""
        c = self.fld(m, "Map", "constructor_or_back_pointer")
        map_type = self._type("MAP_TYPE")
        for _ in range(MAX_CHAIN):
            if not self.h.is_heap(c):
                return c
            try:
                if self.itype(c) != map_type:
                    return c
            except (DecodeError, TargetMemoryError):
                return c
            c = self.fld(c, "Map", "constructor_or_back_pointer")
        return c

    def function_name(self, fn: int) -> str:
        try:
            return self.f.debug_name(self.f.shared(fn))
        except (DecodeError, TargetMemoryError):
            return ""

    def constructor_name(self, obj: int) -> str | None:
        """The name util.inspect would show before an object; None for a null prototype."""
        from .ctorname import inspect_name
        return inspect_name(self, obj, self._ctor_cache)

    def _own_constructor(self, o: int) -> str | None:
        c = self.own_data_property(o, "constructor")
        if c is not None and self.h.is_heap(c) and self.f.is_function(c):
            return self.function_name(c) or None
        return None

    def _fallback_name(self, itype: int) -> str:
        name = self.tname(itype)
        table = {"JS_ARRAY_TYPE": "Array", "JS_ERROR_TYPE": "Error", "JS_FUNCTION_TYPE": "Function",
                 "JS_MAP_TYPE": "Map", "JS_SET_TYPE": "Set", "JS_PROMISE_TYPE": "Promise",
                 "JS_REG_EXP_TYPE": "RegExp", "JS_DATE_TYPE": "Date"}
        return table.get(name, "Object")

    # -- the decoder ----------------------------------------------------

    def decode(self, v: int, depth: int = 2, strlen: int = 100, max_props: int = 1000) -> Value:
        """The VALUE for tagged word v, `depth` levels of members deep."""
        # The value budget grows with what the caller asked for (-N), so a
        # user's limit is never cut short by an internal one.
        budget = max(MAX_VALUES, 2 * max(strlen, 0) + 1000)
        walk = _Walk(Options(max(depth, 0), max(strlen, 0), budget, max(max_props, 0)))
        return self._value(v, 0, walk)

    def _value(self, v: int, level: int, walk: _Walk) -> Value:
        walk.produced += 1
        h = self.h
        if h.is_smi(v) and not v & 0xFFFFFFFF:
            return {"type": "number", "value": h.smi(v)}
        if not h.is_heap(v):
            return {"type": "other", "v8_type": "not a tagged value", "address": hexaddr(v)}
        addr = hexaddr(v)
        try:
            itype = self.itype(v)
        except TargetMemoryError as e:
            return {"type": "other", "address": addr, "v8_type": f"unreadable ({why(e)})"}
        except DecodeError as e:
            return {"type": "other", "address": addr, "v8_type": f"not a JS value ({why(e)})"}
        try:
            out = self._dispatch(v, itype, level, walk)
        except (DecodeError, TargetMemoryError, V8DbgError) as e:
            out = {"type": "other", "v8_type": self.tname(itype), "error": why(e)}
        out["address"] = addr
        return out

    def _child(self, v: int, level: int, walk: _Walk) -> Value:
        if walk.produced >= walk.opts.max_values:
            out: Value = {"type": "other", "v8_type": "value limit reached", "truncated": True}
            if self.h.is_heap(v):
                out["address"] = hexaddr(v)
            return out
        return self._value(v, level, walk)

    def _dispatch(self, v: int, itype: int, level: int, walk: _Walk) -> Value:
        h = self.h
        opts = walk.opts
        name = self.tname(itype)
        if h.is_string_type(itype):
            js = self.s.read(v, opts.strlen)
            return {"type": "string", "value": js.text, "length": js.length,
                    "truncated": js.truncated}
        if itype == self.heap_number_type:
            return number_value(self.f64(v, self.off("HeapNumber", "value")))
        odd = h.oddball_name(v)
        if odd is not None:
            if odd in ("true", "false"):
                return {"type": "boolean", "value": odd == "true"}
            if odd in ("undefined", "null", "hole"):
                return {"type": odd}
            return {"type": "other", "v8_type": f"ODDBALL_TYPE ({odd})"}
        if name == "SYMBOL_TYPE":
            return {"type": "symbol", "description": self.symbol_description(v, opts.strlen)}
        if itype == self._type("BIG_INT_BASE_TYPE"):
            return {"type": "bigint", "value": self.bigint_text(v)}
        if not name.startswith("JS_") and itype < 1024 and not self.f.is_function(v):
            return {"type": "other", "v8_type": name}
        # Receivers: everything below has members and may be cyclic.
        if self.f.is_function(v):
            if v in walk.path:
                return {"type": "function", "name": self.function_name(v), "circular": True}
            return self._function(v, itype, level, walk)
        if v in walk.path:
            kind = self._container_type(name)
            return {"type": kind, "circular": True}
        walk.path.add(v)
        try:
            return self._receiver(v, itype, name, level, walk)
        finally:
            walk.path.discard(v)

    def _container_type(self, name: str) -> str:
        return {"JS_ARRAY_TYPE": "array", "JS_MAP_TYPE": "map", "JS_SET_TYPE": "set",
                "JS_ERROR_TYPE": "error", "JS_PROXY_TYPE": "proxy",
                "JS_BOUND_FUNCTION_TYPE": "bound_function"}.get(name, "object")

    def _receiver(self, v: int, itype: int, name: str, level: int, walk: _Walk) -> Value:
        deeper = level > walk.opts.depth
        if name == "JS_PROXY_TYPE":
            if deeper:
                return {"type": "proxy", "truncated": True}
            return {"type": "proxy",
                    "target": self._child(self.fld(v, "JSProxy", "target"), level + 1, walk),
                    "handler": self._child(self.fld(v, "JSProxy", "handler"), level + 1, walk)}
        if name == "JS_BOUND_FUNCTION_TYPE":
            return self._bound(v, level, walk)
        if name == "JS_ARRAY_TYPE":
            return self._array(v, level, walk)
        if name == "JS_DATE_TYPE":
            return {"type": "date", "value": self._date(v)}
        if name == "JS_REG_EXP_TYPE":
            return self._regexp(v)
        if name == "JS_PRIMITIVE_WRAPPER_TYPE":
            return {"type": "boxed",
                    "constructor": self.constructor_name(v),
                    "value": self._child(self.fld(v, "JSPrimitiveWrapper", "value"), level, walk)}
        if name in ("JS_MAP_TYPE", "JS_SET_TYPE"):
            return self._collection(v, name == "JS_MAP_TYPE", level, walk)
        if name in ("JS_WEAK_MAP_TYPE", "JS_WEAK_SET_TYPE"):
            return self._weak_collection(v, name == "JS_WEAK_MAP_TYPE", level, walk)
        if name == "JS_PROMISE_TYPE":
            return self._promise(v, level, walk)
        if name == "JS_ARRAY_BUFFER_TYPE":
            return self._array_buffer(v, walk)
        if name in ("JS_TYPED_ARRAY_TYPE", "JS_DATA_VIEW_TYPE", "JS_RAB_GSAB_DATA_VIEW_TYPE"):
            return self._typed_array(v, name, walk)
        if name == "JS_ERROR_TYPE":
            return self._error(v, level, walk)
        return self._object(v, itype, name, level, walk)

    # -- kinds ----------------------------------------------------------

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

    def _function(self, v: int, itype: int, level: int, walk: _Walk) -> Value:
        sfi = self.f.shared(v)
        # `name` is what JavaScript's fn.name gives (and util.inspect shows); the name
        # V8 inferred for an anonymous function (`Module._compile`) comes separately.
        name = self.f.name(sfi)
        out: Value = {"type": "function", "name": name,
                      "script": None, "line": None, "column": None}
        if not name:
            inferred = self.f.inferred_name(sfi)
            if inferred:
                out["inferred_name"] = inferred
        script = self.f.script(sfi)
        if script is not None:
            out["script"] = self.f.script_name(script)
            pos = self.f.start_position(sfi)
            if pos is not None and pos >= 0:
                lc = self.f.position_to_line_col(script, pos)
                out["line"], out["column"] = lc.line, lc.column
        if itype == self._type("JS_CLASS_CONSTRUCTOR_TYPE"):
            out["class"] = True
            span = self.class_positions(v)
            if span is not None and script is not None:
                lc = self.f.position_to_line_col(script, span[0])
                out["line"], out["column"] = lc.line, lc.column
        try:
            proto = self.fld(self.h.map_of(v), "Map", "prototype")
            if self.h.is_heap(proto) and self.h.oddball_name(proto) is None:
                c = self.own_data_property(proto, "constructor")
                if c is not None and self.f.is_function(c):
                    kind = self.function_name(c)
                    if kind in ("AsyncFunction", "GeneratorFunction", "AsyncGeneratorFunction"):
                        out["kind"] = kind
            if out.get("class") and self.h.is_heap(proto) and self.f.is_function(proto):
                parent = self.function_name(proto)
                if parent:
                    out["extends"] = parent
        except (DecodeError, TargetMemoryError):
            pass
        # Own enumerable properties (static class fields, fn.extra = ...), as util shows them.
        if self._has_enumerable(v):
            if level > walk.opts.depth:
                out["truncated"] = True
            else:
                walk.path.add(v)
                try:
                    out["properties"] = self._properties(v, level, walk)
                finally:
                    walk.path.discard(v)
        return out

    def class_positions(self, fn: int) -> tuple[int, int] | None:
        """(start, end) of a class's whole source, kept under a private symbol of the class."""
        cp_type = self._type("CLASS_POSITIONS_TYPE")
        try:
            for p in self.own_properties(fn, 64):
                if p.accessor or not self.h.is_heap(p.value) or not self.is_symbol(p.key):
                    continue
                if self.itype(p.value) == cp_type:
                    a = self.mem.u64(p.value - 1 + self.off("ClassPositions", "start"))
                    b = self.mem.u64(p.value - 1 + self.off("ClassPositions", "end"))
                    if self.h.is_smi(a) and self.h.is_smi(b):
                        return self.h.smi(a), self.h.smi(b)
        except (DecodeError, TargetMemoryError):
            return None
        return None

    def _bound(self, v: int, level: int, walk: _Walk) -> Value:
        target = self.fld(v, "JSBoundFunction", "bound_target_function")
        # JavaScript's name: "bound " per level of binding, then the target's own name.
        prefix, name, t = "bound ", "", target
        for _ in range(8):
            if self.h.is_heap(t) and self.h.is_type(t, "JS_BOUND_FUNCTION_TYPE"):
                prefix += "bound "
                t = self.fld(t, "JSBoundFunction", "bound_target_function")
                continue
            if self.f.is_function(t):
                try:
                    name = self.f.name(self.f.shared(t))
                except (DecodeError, TargetMemoryError):
                    name = ""
            break
        out: Value = {"type": "bound_function", "name": prefix + name}
        if level > walk.opts.depth:
            out["truncated"] = True
            return out
        out["target"] = self._child(target, level + 1, walk)
        out["this"] = self._child(self.fld(v, "JSBoundFunction", "bound_this"), level + 1, walk)
        args = self.fld(v, "JSBoundFunction", "bound_arguments")
        items = self.fixed_items(args, walk.opts.strlen) if self.h.is_heap(args) else []
        out["args"] = [self._child(a, level + 1, walk) for a in items]
        return out

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

    def _properties(self, v: int, level: int, walk: _Walk) -> list[Value]:
        out: list[Value] = []
        for p in self.own_properties(v):
            if not p.enumerable:
                continue
            if len(out) >= walk.opts.max_props:
                out.append({"key": "...", "value": {"type": "other", "v8_type": "more properties",
                                                    "truncated": True}})
                break
            key = self.key_text(p.key, MAX_KEY)
            if key is None:
                continue
            if p.accessor:
                out.append({"key": key, "value": self._accessor(p.value, level, walk)})
            else:
                out.append({"key": key, "value": self._child(p.value, level + 1, walk)})
        return out

    def _accessor(self, pair: int, level: int, walk: _Walk) -> Value:
        out: Value = {"type": "accessor"}
        if self.h.is_heap(pair) and self.h.is_type(pair, "ACCESSOR_PAIR_TYPE"):
            for part in ("getter", "setter"):
                w = self.fld(pair, "AccessorPair", part)
                if self.h.is_heap(w) and self.f.is_function(w):
                    out[part] = self._child(w, level + 1, walk)
                else:
                    out[part] = {"type": "undefined"}
        else:
            out["native"] = True
        return out

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

    def _object(self, v: int, itype: int, name: str, level: int, walk: _Walk) -> Value:
        out: Value = {"type": "object", "constructor": self.constructor_name(v)}
        if name == "JS_GENERATOR_OBJECT_TYPE" or itype == self._type("JS_GENERATOR_OBJECT_TYPE") \
                or name in ("JS_ASYNC_GENERATOR_OBJECT_TYPE", "JS_ASYNC_FUNCTION_OBJECT_TYPE"):
            out["generator"] = self._generator_state(v)
            try:
                gfn = self.fld(v, "JSGeneratorObject", "function")
                if self.f.is_function(gfn):
                    out["generator_function"] = self.function_name(gfn)
            except (DecodeError, TargetMemoryError):
                pass
        elif name == "JS_ARGUMENTS_OBJECT_TYPE":
            out["arguments"] = True
        elif name == "JS_GLOBAL_PROXY_TYPE":
            out["global_proxy"] = True
        elif not name.startswith("JS_") and itype < 1024:
            return {"type": "other", "v8_type": name}
        tag = self._proto_tag(v)
        if tag is not None and self.is_string(tag):
            out["tag"] = self.s.text(tag, 100)
        if level > walk.opts.depth and (self._has_enumerable(v) or self._has_elements(v)):
            out["truncated"] = True
            return out
        out["properties"] = self._properties(v, level, walk)
        out["elements"] = self._elements_list(v, level, walk)
        return out

    def _has_enumerable(self, v: int) -> bool:
        """Whether an object past the depth limit has anything to hide (util prints {} else)."""
        return any(p.enumerable and self.key_text(p.key, 8) is not None
                   for p in self.own_properties(v, 64))

    def _has_elements(self, v: int) -> bool:
        kind = self.elements_kind(self.h.map_of(v))
        if kind in self._kinds:
            return False
        return any(not (w is None or (kind not in (4, 5) and self.is_the_hole(w)))
                   for _, w in self._element_words(v, kind, 16))

    def _proto_tag(self, v: int) -> int | None:
        """Symbol.toStringTag from the first prototype (how util shows Generator objects)."""
        try:
            proto = self.fld(self.h.map_of(v), "Map", "prototype")
            for _ in range(2):
                if not self.h.is_heap(proto) or self.h.oddball_name(proto) is not None:
                    return None
                tag = self.own_data_property(proto, symbol_desc="Symbol.toStringTag")
                if tag is not None:
                    return tag
                proto = self.fld(self.h.map_of(proto), "Map", "prototype")
        except (DecodeError, TargetMemoryError):
            return None
        return None

    def _generator_state(self, v: int) -> str:
        try:
            c = self.fld(v, "JSGeneratorObject", "continuation")
        except V8DbgError:
            return "unknown"
        if not self.h.is_smi(c):
            return "unknown"
        c = self.h.smi(c)
        return "suspended" if c >= 0 else ("executing" if c == -1 else "closed")

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

    def _bytes(self, addr: int, n: int, walk: _Walk, unit: int = 1) -> tuple[str, bool]:
        """Hex of the first STRLEN units (bytes, or elements of `unit` bytes)."""
        want = min(n, walk.opts.strlen * unit)
        if want <= 0 or addr == 0:
            return "", n > 0
        return self.mem.read(addr, want).hex(), want < n

    def _array_buffer(self, v: int, walk: _Walk) -> Value:
        n = self.mem.u64(v - 1 + self.off("JSArrayBuffer", "byte_length"))
        store = self.mem.u64(v - 1 + self.off("JSArrayBuffer", "backing_store"))
        if n > 1 << 53:
            raise DecodeError(f"ArrayBuffer 0x{v:x} has an implausible length")
        data, cut = self._bytes(store, n, walk)
        out: Value = {"type": "arraybuffer", "byte_length": n, "bytes": data}
        if cut:
            out["truncated"] = True
        bits = self.mem.u32(v - 1 + self.off("JSArrayBuffer", "bit_field"))
        if bits & 4:
            out["detached"] = True
        return out

    def _typed_array(self, v: int, name: str, walk: _Walk) -> Value:
        mem = self.mem
        off = self.mem.u64(v - 1 + self.off("JSArrayBufferView", "byte_offset"))
        blen = mem.u64(v - 1 + self.off("JSArrayBufferView", "byte_length"))
        if off > 1 << 53 or blen > 1 << 53:
            raise DecodeError(f"view 0x{v:x} has an implausible length")
        ctor = self.constructor_name(v)
        if name != "JS_TYPED_ARRAY_TYPE":
            data = mem.u64(v - 1 + self.off("JSDataView", "data_pointer"))
            hexed, cut = self._bytes(data, blen, walk)
            out: Value = {"type": "typedarray", "kind": "DataView", "constructor": ctor,
                          "length": blen, "byte_offset": off, "byte_length": blen, "bytes": hexed}
            if cut:
                out["truncated"] = True
            return out
        kind = self._kinds.get(self.elements_kind(self.h.map_of(v)))
        if kind is None:
            raise DecodeError(f"typed array 0x{v:x} has an unknown elements kind")
        size = _TYPED_SIZES[kind]
        if self.md.has("JSTypedArray", "length"):
            length = mem.u64(v - 1 + self.off("JSTypedArray", "length"))
        else:
            length = blen // size
        if length > 1 << 53:
            raise DecodeError(f"typed array 0x{v:x} has an implausible length")
        base = mem.u64(v - 1 + self.off("JSTypedArray", "base_pointer"))
        ext = mem.u64(v - 1 + self.off("JSTypedArray", "external_pointer"))
        data = (base + ext) & ((1 << 64) - 1) if self.h.is_heap(base) else ext
        hexed, cut = self._bytes(data, length * size, walk, size)
        out = {"type": "typedarray", "kind": f"{kind}Array", "constructor": ctor,
               "length": length, "byte_offset": off, "byte_length": blen, "bytes": hexed}
        if cut:
            out["truncated"] = True
        return out

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
        if slots:
            items = self.fixed_items(arr, 200 * slots)
            fns = items[self.md.const("ErrorStackFrameFunction")::slots]
        else:
            fns = []
            for item in self.fixed_items(arr, 200):
                if h.is_heap(item) and h.is_type(item, "CALL_SITE_INFO_TYPE"):
                    fns.append(self.fld(item, "CallSiteInfo", "function"))
        for fn in fns:
            if h.is_heap(fn) and self.f.is_function(fn):
                names.append(self.function_name(fn) or "<anonymous>")
        return names

    # -- closures -------------------------------------------------------

    def closure_variables(self, fn: int, depth: int = 0, strlen: int = 100, max_props: int = 1000,
                          max_scopes: int = MAX_CHAIN) -> list[dict]:
        """Variables of every context enclosing a function, innermost first."""
        from .scopes import ScopeInfo
        from .slots import unwrap as unwrap_slot
        h = self.h
        if not self.f.is_function(fn):
            raise DecodeError(f"0x{fn:x} is not a JavaScript function")
        ctx = self.fld(fn, "JSFunction", "context")
        lo = self.md.const("FirstContextType")
        hi = self.md.const("LastContextType")
        native = self._type("NATIVE_CONTEXT_TYPE")
        out: list[dict] = []
        for _ in range(max_scopes):
            if not h.is_heap(ctx):
                break
            t = self.itype(ctx)
            if not lo <= t <= hi or t == native:
                break
            n = self.fixed_length(ctx)
            slots = self.fixed_items(ctx, min(n, 1 << 16))
            if len(slots) < 2:
                break
            si = slots[self.md.const("context_idx_scope_info")]
            if h.is_heap(si) and h.is_type(si, "SCOPE_INFO_TYPE"):
                for local in ScopeInfo(h, self.s, si).context_locals():
                    if 0 <= local.slot < len(slots):
                        raw = unwrap_slot(h, slots[local.slot])
                        val = number_value(raw) if isinstance(raw, float) else \
                            self.decode(raw, depth, strlen, max_props)
                        out.append({"name": local.name, "value": val,
                                    "context": hexaddr(ctx)})
            ctx = slots[self.md.const("context_idx_prev")]
        return out

    def function_source(self, fn: int, limit: int = 1 << 20) -> tuple[str, int, int]:
        """(source text, line, column) of a function's own definition."""
        sfi = self.f.shared(fn)
        script = self.f.script(sfi)
        if script is None:
            raise V8DbgError(f"function 0x{fn:x} ({self.f.debug_name(sfi) or 'anonymous'}) "
                             "has no script (a builtin or native function)")
        start = self.f.start_position(sfi)
        end = self.f.end_position(sfi)
        span = self.class_positions(fn) if self.itype(fn) == self._type(
            "JS_CLASS_CONSTRUCTOR_TYPE") else None
        if span is not None:
            start, end = span
        if start is None or end is None or not 0 <= start <= end:
            raise V8DbgError(f"function 0x{fn:x} has no recorded source range")
        end = min(end, start + limit)
        src = self.f.script_source(script, end + 1)
        if src is None:
            raise V8DbgError(f"the script of function 0x{fn:x} has no source text")
        lc = self.f.position_to_line_col(script, start)
        return src[start:end], lc.line, lc.column


def values_for(prog: Program) -> Values:
    """The program's Values decoder, shared with the stack decoder's primitives."""
    v = prog.cache.get("values")
    if not isinstance(v, Values):
        from .stackcmds import decoder
        dec = decoder(prog)
        v = Values(prog, dec.h, dec.s, dec.f)
        prog.cache["values"] = v
    return v
