"""JavaScript values decoded into the contract's VALUE dicts.

One `Values` decoder per program turns a tagged word into a plain dict
(`{"type": ..., "address": ...}`) that front ends print as JSON or render
like util.inspect. Every walk is bounded: a depth limit, a cap on entries
per container (STRLEN), a cap on values per decode, and caps on every
length read from the target, so corrupt memory ends in a short value or a
clear error rather than a hang.
"""

from __future__ import annotations

from ..errors import DecodeError, TargetMemoryError, V8DbgError, why
from .base import MAX_VALUES, Options, Value, _Walk, hexaddr, number_value
from .binary import Binary
from .collections import Collections
from .elements import Elements
from .functions import FunctionValues
from .jserrors import ErrorValues
from .primitives import Primitives
from .properties import Properties


class Values(Properties, Elements, Primitives, Collections, Binary, FunctionValues, ErrorValues):
    """Decodes the tagged values of one program: the dispatcher over the
    families (each a module of this package) by instance type."""

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
