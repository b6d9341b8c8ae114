"""Object shapes for the heap census: constructor name and property names per map.

The census groups objects the way V8's own heap snapshot names them, so the
constructor name follows V8's JSReceiver::GetConstructorName rather than
util.inspect's: the map's constructor when the object was made with
`new.target === constructor` (and is no prototype) -- a function's name, or
the class name of an API template (FunctionTemplateInfo) --, else a
Symbol.toStringTag data property of the object or its prototype chain, or
the `constructor` of an object on the prototype chain (not of the object
itself), else the class name of its type. The census computes it once per
map, from one object of that map (a prototype has a map of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError

if TYPE_CHECKING:
    from ..program import Program

MAX_CHAIN = 64
NEW_TARGET_IS_BASE = 1  # Map bit_field2 bit 0
IS_PROTOTYPE_MAP = 1 << 20  # Map bit_field3 bit 20
IS_DICTIONARY_MAP = 1 << 21

_CLASS_NAMES = {
    "JS_ARRAY_TYPE": "Array", "JS_FUNCTION_TYPE": "Function", "JS_ERROR_TYPE": "Error",
    "JS_MAP_TYPE": "Map", "JS_SET_TYPE": "Set", "JS_PROMISE_TYPE": "Promise",
    "JS_REG_EXP_TYPE": "RegExp", "JS_DATE_TYPE": "Date", "JS_WEAK_MAP_TYPE": "WeakMap",
    "JS_WEAK_SET_TYPE": "WeakSet", "JS_ARRAY_BUFFER_TYPE": "ArrayBuffer",
    "JS_PROXY_TYPE": "Object", "JS_ARGUMENTS_OBJECT_TYPE": "Arguments",
    "JS_BOUND_FUNCTION_TYPE": "Function", "JS_WRAPPED_FUNCTION_TYPE": "Function",
    "JS_GLOBAL_PROXY_TYPE": "global", "JS_ARRAY_ITERATOR_TYPE": "Array Iterator",
    "JS_MAP_KEY_ITERATOR_TYPE": "Map Iterator", "JS_MAP_VALUE_ITERATOR_TYPE": "Map Iterator",
    "JS_MAP_KEY_VALUE_ITERATOR_TYPE": "Map Iterator",
    "JS_SET_VALUE_ITERATOR_TYPE": "Set Iterator", "JS_SET_KEY_VALUE_ITERATOR_TYPE": "Set Iterator",
    "JS_GENERATOR_OBJECT_TYPE": "Generator", "JS_ASYNC_GENERATOR_OBJECT_TYPE": "Generator",
    "JS_SLOPPY_ARGUMENTS_OBJECT_TYPE": "Arguments", "JS_STRICT_ARGUMENTS_OBJECT_TYPE": "Arguments",
}


@dataclass
class Shape:
    constructor: str
    properties: list[str]
    dictionary: bool


class Shapes:
    """Constructor and property names of maps, cached per map."""

    def __init__(self, prog: Program) -> None:
        self.v = prog.values
        self.h = self.v.h
        self.md = self.h.md
        self.f = self.v.f
        self._cache: dict[int, Shape] = {}
        self._map_names: dict[int, tuple[str, bool]] = {}  # map -> `map_name`
        self._by_proto: dict[int, tuple[str | None, int | None]] = {}
        self._named: dict[int, str | None] = {}
        self._tag_keys: dict[int, bool] = {}
        self._tags: dict[int, int | None] = {}  # object -> its own toStringTag, read once
        md = self.md
        self.o_ctor = md.off("Map", "constructor_or_back_pointer")
        self.o_proto = md.off("Map", "prototype")
        self.o_bf2 = md.off("Map", "bit_field2")
        self.o_bf3 = md.off("Map", "bit_field3")
        self.fn_lo = md.consts.get("FirstJSFunctionType", 0)
        self.fn_hi = md.consts.get("LastJSFunctionType", -1)
        self.proxy = md.types.get("JS_PROXY_TYPE")
        self.template = md.types.get("FUNCTION_TEMPLATE_INFO_TYPE")
        self.o_class_name = md.fields.get(("FunctionTemplateInfo", "class_name"))
        self.other_closures = {md.types[k] for k in ("JS_BOUND_FUNCTION_TYPE",
                                                     "JS_WRAPPED_FUNCTION_TYPE")
                               if k in md.types}

    def shape(self, m: int, representative: int) -> Shape:
        s = self._cache.get(m)
        if s is None:
            s = self._compute(m, representative)
            if len(self._cache) > 200000:
                self._cache.clear()
            self._cache[m] = s
        return s

    def is_function_type(self, itype: int) -> bool:
        return self.fn_lo <= itype <= self.fn_hi

    def is_closure_type(self, itype: int) -> bool:
        """Functions, bound and wrapped ones too: V8's snapshot files them as closures."""
        return self.is_function_type(itype) or itype in self.other_closures

    def is_proxy_type(self, itype: int) -> bool:
        return itype == self.proxy

    def is_object_row_type(self, itype: int) -> bool:
        """Whether findjsobjects counts objects of this JS type: those V8's heap
        snapshot files as `object` nodes, which are its JSObjects. Not closures
        (`closure` nodes, which jsfunctions counts), nor proxies: a JSProxy is
        a receiver but no JSObject, a `system / JSProxy` node of the snapshot.
        """
        return not self.is_closure_type(itype) and not self.is_proxy_type(itype)

    def name_of(self, obj: int, m: int) -> str:
        """V8's constructor name of one object: per map, except for dictionary-mode
        objects, which share maps while their own properties (a toStringTag) differ.
        (No property names read: a heap snapshot names its objects by this alone.)"""
        name, dictionary = self.map_name(m, obj)
        if not dictionary:
            return name
        try:
            if self._map_named(m, self.h.map_type(m)) is None:
                return self.constructor_name_of_map(m, obj)
        except (DecodeError, TargetMemoryError):
            pass
        return name

    def map_name(self, m: int, obj: int) -> tuple[str, bool]:
        """(V8's constructor name of map m's objects, as obj has it; whether m
        is a dictionary map), per map: the shape's name without its property
        names."""
        got = self._map_names.get(m)
        if got is None:
            try:
                bf3 = self.h.mem.u32(m - 1 + self.o_bf3)
            except TargetMemoryError:
                bf3 = 0
            try:
                name = self.constructor_name_of_map(m, obj)
            except (DecodeError, TargetMemoryError):
                name = "Object"
            got = (name, bool(bf3 & IS_DICTIONARY_MAP))
            if len(self._map_names) > 200000:
                self._map_names.clear()
            self._map_names[m] = got
        return got

    def name_and_properties(self, obj: int, m: int) -> tuple[str, list[str]]:
        """(V8's name, own enumerable property names) of one object, its properties read once."""
        s = self.shape(m, obj)
        if not s.dictionary:
            return s.constructor, s.properties
        props = self._own(obj)
        name = s.constructor
        try:
            if self._map_named(m, self.h.map_type(m)) is None:
                name = self.constructor_name_of_map(m, obj, props)
        except (DecodeError, TargetMemoryError):
            pass
        return name, self.property_names(obj, props)

    def _own(self, obj: int) -> list:
        try:
            return self.v.own_properties(obj, 1024)
        except (DecodeError, TargetMemoryError):
            return []

    def _compute(self, m: int, obj: int) -> Shape:
        name, dictionary = self.map_name(m, obj)
        if dictionary:
            return Shape(name, [], True)
        # (The first 256 of all its properties where the map's constructor
        # does not name it, as the name's own reading of them had it.)
        props = None
        try:
            if self._map_named(m, self.h.map_type(m)) is None:
                props = self._own(obj)
        except (DecodeError, TargetMemoryError):
            pass
        return Shape(name, self.property_names(obj, props), False)

    def property_names(self, obj: int, props: list | None = None) -> list[str]:
        """Own enumerable property names of an object, in JavaScript's order.

        Non-enumerable ones (an array's `length`, a function's `name`, class
        methods on prototypes) would make every row of a census look alike.
        """
        out: list[str] = []
        try:
            for p in (self.v.own_properties(obj, 256) if props is None else props[:256]):
                if not p.enumerable:
                    continue
                k = self.v.key_text(p.key, 200)
                if k is not None:
                    out.append(k)
        except (DecodeError, TargetMemoryError):
            pass
        return out

    def _own_tag(self, obj: int, props: list | None) -> int | None:
        """The value of an own data property Symbol.toStringTag (V8's GetDataProperty)."""
        if props is None:
            # (An object's name and its location each ask for its map's
            # first object's: its properties read once.)
            if obj in self._tags:
                return self._tags[obj]
            tag = self.v.own_data_property(obj, symbol_desc="Symbol.toStringTag")
            if len(self._tags) > 100000:
                self._tags.clear()
            self._tags[obj] = tag
            return tag
        v = self.v
        known = self._tag_keys
        for p in props:
            if p.accessor:
                continue
            is_tag = known.get(p.key)
            if is_tag is None:
                # Property keys recur across objects: each is looked at once.
                is_tag = v.is_symbol(p.key) and \
                    v.symbol_description(p.key) == "Symbol.toStringTag"
                if len(known) > 100000:
                    known.clear()
                known[p.key] = is_tag
            if is_tag:
                return p.value
        return None

    def constructor_name_of_map(self, m: int, obj: int | None = None,
                                props: list | None = None) -> str:
        """V8's JSReceiver::GetConstructorName for an object of map m.

        The map's constructor names an ordinary instance (made with
        new.target === its constructor, not a prototype): a function by its
        name unless that is empty or `Object`, an API template by its class
        name when it has one. Otherwise the name
        is an own or inherited *data* property Symbol.toStringTag -- looked for
        from the object itself up its prototype chain -- or, from the first
        prototype up, a `constructor` data property that is a named function
        other than Object; getters are never called. Failing both, the class
        name of the object's type.
        """
        h = self.h
        mem = h.mem
        itype = h.map_type(m)
        n = self._map_named(m, itype)
        if n is not None:
            return n
        if obj is not None:
            tag = self._own_tag(obj, props)
            if tag is not None and h.is_heap(tag) and self.v.is_string(tag):
                return self.v.s.text(tag, 200)
        found = self._on_chain(mem.u64(m - 1 + self.o_proto))[0]
        return found or self.class_name(itype, m, obj)

    def constructor_function(self, m: int, obj: int | None = None,
                             props: list | None = None) -> int | None:
        """The function V8's JSReceiver::GetConstructor gives for an object of
        map m: the one `constructor_name_of_map` took the name from, None
        where the name is a toStringTag, an API template's or a type's."""
        h = self.h
        if self._map_named(m, h.map_type(m)) is not None:
            c = self.v.map_constructor(m)
            return c if self._is_function(c) else None
        if obj is not None:
            tag = self._own_tag(obj, props)
            if tag is not None and h.is_heap(tag) and self.v.is_string(tag):
                return None
        return self._on_chain(h.mem.u64(m - 1 + self.o_proto))[1]

    def _on_chain(self, o: int) -> tuple[str | None, int | None]:
        """`_from_prototypes` from prototype o, cached per o."""
        got = self._by_proto.get(o)
        if got is None:
            got = self._from_prototypes(o)
            if len(self._by_proto) > 100000:
                self._by_proto.clear()
            self._by_proto[o] = got
        return got

    def _map_named(self, m: int, itype: int) -> str | None:
        """The name of the map's own constructor, when V8 takes it (an ordinary instance)."""
        got = self._named.get(m, 0)
        if got != 0:
            return got
        mem = self.h.mem
        bf2 = mem.u8(m - 1 + self.o_bf2)
        bf3 = mem.u32(m - 1 + self.o_bf3)
        out = None
        if itype != self.proxy and bf2 & NEW_TARGET_IS_BASE and not bf3 & IS_PROTOTYPE_MAP:
            c = self.v.map_constructor(m)
            if self.h.is_heap(c) and self._is_function(c):
                n = self.v.function_name(c)
                if n and n != "Object":
                    out = n
            elif self.h.is_heap(c) and self._is_template(c):
                out = self.template_class_name(c)
        if len(self._named) > 200000:
            self._named.clear()
        self._named[m] = out
        return out

    def _from_prototypes(self, o: int) -> tuple[str | None, int | None]:
        """Symbol.toStringTag or `constructor` name found on the chain from o,
        and the constructor function the name is of (None for a tag)."""
        h = self.h
        mem = h.mem
        for _ in range(MAX_CHAIN):
            if not h.is_heap(o) or h.oddball_name(o) is not None:
                break
            tag = self.v.own_data_property(o, symbol_desc="Symbol.toStringTag")
            if tag is not None and h.is_heap(tag) and self.v.is_string(tag):
                return self.v.s.text(tag, 200), None
            c = self.v.own_data_property(o, "constructor")
            if c is not None and h.is_heap(c) and self._is_function(c):
                n = self.v.function_name(c)
                if n and n != "Object":
                    return n, c
            o = mem.u64(h.map_of(o) - 1 + self.o_proto)
        return None, None

    def _is_function(self, v: int) -> bool:
        try:
            return self.is_function_type(self.h.instance_type(v))
        except (DecodeError, TargetMemoryError):
            return False

    def _is_template(self, v: int) -> bool:
        try:
            return self.template is not None and self.h.instance_type(v) == self.template
        except (DecodeError, TargetMemoryError):
            return False

    def template_class_name(self, info: int) -> str | None:
        """A FunctionTemplateInfo's class name (FunctionTemplate::SetClassName), if a string."""
        if self.o_class_name is None:
            return None
        n = self.h.mem.u64(info - 1 + self.o_class_name)
        if self.h.is_heap(n) and self.v.is_string(n):
            return self.v.s.text(n, 200)
        return None

    def class_name(self, itype: int, m: int | None = None, obj: int | None = None) -> str:
        """JSReceiver::class_name: the name V8 falls back on, by instance type.

        Not the class name of an API template, whatever made the object: an
        API object that is a prototype with no prototype of its own (zlib's
        native handle in census_mixed.js) is `Object` in V8's snapshots of
        every supported line.
        """
        if self.is_function_type(itype):
            return "Function"
        tname = self.h.type_name(itype)
        if tname in ("JS_TYPED_ARRAY_TYPE", "JS_DETACHED_TYPED_ARRAY_TYPE") and m is not None:
            try:
                kind = self.v._kinds.get(self.v.elements_kind(m))
            except (DecodeError, TargetMemoryError):
                kind = None
            if kind:
                return f"{kind}Array"
        if tname == "JS_PRIMITIVE_WRAPPER_TYPE" and obj is not None:
            return self._wrapper_class(obj)
        return _CLASS_NAMES.get(tname, "Object")

    def _wrapper_class(self, obj: int) -> str:
        """Number, String, Boolean, BigInt or Symbol: by the wrapped value."""
        h = self.h
        try:
            val = h.field(obj, "JSPrimitiveWrapper", "value")
            if h.is_smi(val):
                return "Number"
            t = h.type_name(h.instance_type(val))
        except (DecodeError, TargetMemoryError):
            return "Object"
        if h.is_string_type(h.md.types.get(t, -1)):
            return "String"
        if t == "HEAP_NUMBER_TYPE":
            return "Number"
        if t in ("BIGINT_TYPE", "BIG_INT_BASE_TYPE"):
            return "BigInt"
        if t == "SYMBOL_TYPE":
            return "Symbol"
        if h.oddball_name(val) in ("true", "false"):
            return "Boolean"
        return "Object"


def constructor_name(prog: Program, obj: int) -> str:
    """V8's constructor name of one object (the census's grouping name)."""
    sh = prog.shapes
    return sh.shape(sh.h.map_of(obj), obj).constructor
