"""Objects and their own properties: fast, dictionary and global property
storage, accessors, enumeration order, and constructor names (util.inspect's
rule: the first named `constructor` up the prototype chain).
"""

from __future__ import annotations

import struct

from ..errors import DecodeError, TargetMemoryError
from .base import (
    KEY_CACHE_LIMIT,
    MAX_CHAIN,
    MAX_DICT_CAPACITY,
    MAX_KEY,
    MAX_PROPERTIES,
    Prop,
    Value,
    ValuesBase,
    _Walk,
)


class Properties(ValuesBase):
    def _holder(self, obj: int) -> tuple[int, int, int, bool]:
        """(object, map, bit_field3, dictionary map?) of where obj's own
        properties live: globalThis is a proxy, whose properties live on the
        global object behind it."""
        m = self.h.map_of(obj)
        if self.h.map_type(m) == self._type("JS_GLOBAL_PROXY_TYPE"):
            g = self.fld(m, "Map", "prototype")
            if self.h.is_heap(g) and self.h.is_type(g, "JS_GLOBAL_OBJECT_TYPE"):
                obj, m = g, self.h.map_of(g)
        bf3 = self.mem.u32(m - 1 + self.off("Map", "bit_field3"))
        return obj, m, bf3, bool((bf3 >> self.md.const("bit_field3_is_dictionary_map_shift",
                                                       21)) & 1)

    def own_properties(self, obj: int, cap: int = MAX_PROPERTIES) -> list[Prop]:
        """Own named properties in enumeration order (string keys, then symbols)."""
        obj, m, bf3, dictionary = self._holder(obj)
        if dictionary:
            props = self._dictionary_properties(obj, cap)
        else:
            props = self._fast_properties(obj, m, bf3, cap)
        sym = [self._is_symbol_key(p.key) for p in props]
        return [p for p, s in zip(props, sym) if not s] + [p for p, s in zip(props, sym) if s]

    def _fast_properties(self, obj: int, m: int, bf3: int, cap: int) -> list[Prop]:
        return [Prop(key, accessor, enumerable, self._fast_value(obj, inobj, where))
                for key, accessor, enumerable, inobj, where
                in self._descriptors(obj, m, bf3, cap)]

    def _fast_value(self, obj: int, inobj: bool | None, where: int) -> int:
        """The value of one of a fast object's properties (`_descriptors`'s
        in object? and where)."""
        if inobj is None:
            return where
        if inobj:
            return self.mem.u64(obj - 1 + where)
        return self._property_array_get(
            obj, self.fld(obj, "JSReceiver", "raw_properties_or_hash"), where)

    def in_object_fields(self, m: int, cap: int = MAX_PROPERTIES) -> dict[int, int]:
        """Byte offset -> key word of each property a fast map keeps inside its objects."""
        bf3 = self.mem.u32(m - 1 + self.off("Map", "bit_field3"))
        if (bf3 >> self.md.const("bit_field3_is_dictionary_map_shift", 21)) & 1:
            return {}
        return {where: key for key, _a, _e, inobj, where in self._descriptors(m, m, bf3, cap)
                if inobj}

    def fast_fields(self, m: int, cap: int = MAX_PROPERTIES
                    ) -> list[tuple[int, bool, bool | None, int]] | None:
        """(key, accessor, in object?, where) of each own descriptor of a fast map,
        as `_descriptors` gives them; None for a dictionary map."""
        bf3 = self.mem.u32(m - 1 + self.off("Map", "bit_field3"))
        if (bf3 >> self.md.const("bit_field3_is_dictionary_map_shift", 21)) & 1:
            return None
        return [(key, acc, inobj, where)
                for key, acc, _e, inobj, where in self._descriptors(m, m, bf3, cap)]

    def _descriptors(self, obj: int, m: int, bf3: int,
                     cap: int) -> list[tuple[int, bool, bool, bool | None, int]]:
        """(key, accessor, enumerable, in object?, where) of a fast map's own
        descriptors: `where` is the byte offset in the object, the index in its
        property array, or (in object None) the value the descriptor holds."""
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
        out: list[tuple[int, bool, bool, bool | None, int]] = []
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
                out.append((key, accessor, enumerable, None, slot))
                continue
            index = (details & md.const("prop_index_mask", 0x1FF80000)) >> md.const(
                "prop_index_shift", 19)
            if index < inobject:
                out.append((key, accessor, enumerable, True, (start + index) * 8))
            else:
                out.append((key, accessor, enumerable, False, index - inobject))
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
        words = self._table_words(table, start, size)
        out = []
        for i in range(start, len(words) - size + 1, size):
            e = tuple(words[i:i + size])
            if self._is_empty_key(e[0]):
                continue
            out.append(e)
        return out

    def _table_words(self, table: int, start: int, size: int) -> list[int]:
        """A V8 HashTable's words: `start` words, then `size` an entry."""
        n = self.fixed_length(table)
        capw = self.h.array_get(table, 2)
        if not self.h.is_smi(capw):
            raise DecodeError(f"hash table 0x{table:x} has no capacity")
        capacity = self.h.smi(capw)
        if capacity < 0 or capacity > MAX_DICT_CAPACITY or start + capacity * size > n:
            raise DecodeError(f"hash table 0x{table:x} has an implausible capacity {capacity}")
        return self.fixed_items(table, start + capacity * size)

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
        """The value of an own data property by string key (or public symbol
        description). An object has a key once, and a key is one object (V8
        internalizes them): each key is matched once, and a fast map's
        descriptor for it found once, then only the value is read."""
        try:
            obj, m, bf3, dictionary = self._holder(obj)
            if dictionary:
                return self._dictionary_value(obj, key_name, symbol_desc)
            ck = (m, key_name, symbol_desc)
            found = self._own_field.get(ck)
            if found is None:
                found = next(((inobj, where) for key, accessor, _e, inobj, where
                              in self._descriptors(obj, m, bf3, 1024)
                              if not accessor and self._key_is(key, key_name, symbol_desc)),
                             False)
                if len(self._own_field) >= KEY_CACHE_LIMIT:
                    self._own_field.clear()
                self._own_field[ck] = found
            return None if found is False else self._fast_value(obj, *found)
        except (DecodeError, TargetMemoryError):
            return None

    def _dictionary_value(self, obj: int, key_name: str | None,
                          symbol_desc: str | None) -> int | None:
        """`own_data_property` of a dictionary-mode object: its dictionary's
        keys looked at as words, no entry made of the others."""
        table = self.fld(obj, "JSReceiver", "raw_properties_or_hash")
        if not self.h.is_heap(table):
            return None
        if self.itype(table) != self._type("NAME_DICTIONARY_TYPE"):
            # (A global object's dictionary of cells.)
            for p in self._dictionary_properties(obj, 1024):
                if not p.accessor and self._key_is(p.key, key_name, symbol_desc):
                    return p.value
            return None
        start = 3 + self.md.const("namedictionaryshape_prefix_size")
        words = self._table_words(table, start, 3)
        # (A string key is in a table once; symbols that share a description
        # may be several: the first in enumeration order that is data.)
        found: tuple[int, int] | None = None  # (enumeration index, value)
        for i in range(start, len(words) - 2, 3):
            if self._key_is(words[i], key_name, symbol_desc):
                det = words[i + 2]
                # (An accessor's details have their lowest bit set.)
                if self.h.is_smi(det) and not self.h.smi(det) & 1:
                    at = self.h.smi(det) >> 8
                    if found is None or at < found[0]:
                        found = (at, words[i + 1])
        return None if found is None else found[1]

    def _key_is(self, k: int, key_name: str | None, symbol_desc: str | None) -> bool:
        """Whether property key k is the string key_name or a symbol of
        description symbol_desc (each key and question looked at once)."""
        ck = (k, key_name, symbol_desc)
        v = self._key_match.get(ck)
        if v is None:
            v = (key_name is not None and self.is_string(k) and
                 self.s.text(k, len(key_name) + 1) == key_name) or \
                (symbol_desc is not None and self._is_symbol_key(k) and
                 self.symbol_description(k) == symbol_desc)
            if len(self._key_match) >= KEY_CACHE_LIMIT:
                self._key_match.clear()
            self._key_match[ck] = v
        return v

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

    def _proto_tag(self, v: int) -> int | None:
        """Symbol.toStringTag as util.inspect reads it (`value[Symbol.toStringTag]`):
        the first found on the object or up its prototype chain. None where the
        object's own is enumerable (util prints it as a property instead) or the
        first found is a getter (never called here)."""
        o: int | None = v
        try:
            for _ in range(MAX_CHAIN):
                if o is None:
                    return None
                for p in self.own_properties(o, 1024):
                    if self.is_symbol(p.key) and \
                            self.symbol_description(p.key) == "Symbol.toStringTag":
                        if p.accessor or (o == v and p.enumerable):
                            return None
                        return p.value
                proto = self.fld(self.h.map_of(o), "Map", "prototype")
                o = proto if self.h.is_heap(proto) and self.h.oddball_name(proto) is None \
                    else None
        except (DecodeError, TargetMemoryError):
            return None
        return None
        return None
