"""Names of the reference edges findjsrefs reports beyond properties and elements.

V8's heap snapshot names every field edge of an object (a sliced string's
parent, a cons string's parts, a bound function's target, this and bound
arguments, a function's context, a promise's result, ...). Here a slot of a
holder is named the same way from the metadata's own field table: the
holder's instance type names its class (JS_BOUND_FUNCTION_TYPE ->
JSBoundFunction), and the slot's offset names the field, looked up in that
class and the classes every JS object shares. Nothing here is per version.
"""

from __future__ import annotations

from ..v8.tagged import Heap
from ..v8.typenames import class_of

_SHARED = ("JSObject", "JSReceiver", "HeapObject")


_CACHE: dict[tuple[int, str], dict[int, str]] = {}


def _fields(md_id: int, md, cls: str) -> dict[int, str]:
    got = _CACHE.get((md_id, cls))
    if got is not None:
        return got
    out: dict[int, str] = {}
    for c in (cls,) + _SHARED:
        for (k, name), off in md.fields.items():
            if k == c and isinstance(off, int) and off % 8 == 0:
                out.setdefault(off, name)
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[(md_id, cls)] = out
    return out


def field_name(h: Heap, holder: int, itype: int, slot: int) -> str | None:
    """The field of holder at slot, by the metadata's offsets for its class; None if unnamed."""
    cls = class_of(h.type_name(itype))
    off = slot - (holder - 1)
    name = _fields(id(h.md), h.md, cls).get(off)
    if name in (None, "map"):
        return None
    return name


# A holder's kind in the words of the VALUE `type` jsprint --json gives it.
_KINDS = {"JS_ARRAY_TYPE": "array", "JS_MAP_TYPE": "map", "JS_SET_TYPE": "set",
          "JS_WEAK_MAP_TYPE": "map", "JS_WEAK_SET_TYPE": "set", "JS_REG_EXP_TYPE": "regexp",
          "JS_DATE_TYPE": "date", "JS_ERROR_TYPE": "error", "JS_PROMISE_TYPE": "promise",
          "JS_PROXY_TYPE": "proxy", "JS_PRIMITIVE_WRAPPER_TYPE": "boxed",
          "JS_ARRAY_BUFFER_TYPE": "arraybuffer", "JS_TYPED_ARRAY_TYPE": "typedarray",
          "JS_DATA_VIEW_TYPE": "typedarray", "JS_RAB_GSAB_DATA_VIEW_TYPE": "typedarray"}


def holder_kind(h: Heap, itype: int, closure: bool = False) -> str:
    """The contract's holder_type for a JS holder: `function` for every closure
    (bound ones too), else the VALUE type of the holder (`object` for the rest)."""
    if h.is_string_type(itype):
        return "string"
    if closure:
        return "function"
    return _KINDS.get(h.type_name(itype), "object")
