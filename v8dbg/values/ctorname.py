"""The constructor name util.inspect shows before an object (jsprint, jsconstructor).

util.inspect's rule, not V8's: walking from the object itself up its
prototype chain, the first own `constructor` data property that is a named
function F *of which the object is an instance* (F.prototype is on the
object's prototype chain). So `Gadget.prototype` -- whose own constructor is
Gadget, but which is no Gadget -- prints as its parent class, `Widget {}`.
With no such constructor, an object whose prototype is null has no name;
any other is named by V8's rule with its prototype's name in angle brackets
(`Object <Complex prototype>` in util.inspect's words, shortened here).
The heap census names objects by V8's heap-snapshot rule instead (objects.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError

if TYPE_CHECKING:
    from .decoder import Values

MAX_CHAIN = 64
CACHE_LIMIT = 100000


def _prototype(vals: Values, o: int) -> int | None:
    """The [[Prototype]] of heap object o (None for null or a non-object)."""
    h = vals.h
    p = vals.fld(h.map_of(o), "Map", "prototype")
    if not h.is_heap(p) or h.oddball_name(p) is not None:
        return None
    return p


def _function_prototype(vals: Values, fn: int) -> int | None:
    """F.prototype: the initial map's prototype, or the object kept in its place."""
    h = vals.h
    v = vals.fld(fn, "JSFunction", "prototype_or_initial_map")
    if not h.is_heap(v) or h.oddball_name(v) is not None:
        return None
    if h.is_type(v, "MAP_TYPE"):
        p = vals.fld(v, "Map", "prototype")
        return p if h.is_heap(p) and h.oddball_name(p) is None else None
    return v


def is_instance(vals: Values, obj: int, fn: int) -> bool:
    """`obj instanceof fn` by OrdinaryHasInstance (bound functions lead to their target)."""
    h = vals.h
    for _ in range(8):
        if h.is_type(fn, "JS_BOUND_FUNCTION_TYPE"):
            fn = vals.fld(fn, "JSBoundFunction", "bound_target_function")
            continue
        break
    if not vals.f.is_function(fn):
        return False
    target = _function_prototype(vals, fn)
    if target is None:
        return False
    o = _prototype(vals, obj)
    for _ in range(MAX_CHAIN):
        if o is None:
            return False
        if o == target:
            return True
        o = _prototype(vals, o)
    return False


def _own_named_constructor(vals: Values, o: int) -> int | None:
    c = vals.own_data_property(o, "constructor")
    if c is not None and vals.h.is_heap(c) and vals.f.is_function(c) and vals.function_name(c):
        return c
    return None


def inspect_name(vals: Values, obj: int, cache: dict[int, str | None]) -> str | None:
    """The name util.inspect would show before obj; None for a null prototype."""
    h = vals.h
    m = h.map_of(obj)
    own = _own_named_constructor(vals, obj)
    if own is not None and is_instance(vals, obj, own):
        return vals.function_name(own)
    if own is None and m in cache:
        # Without an own constructor the answer follows from the map's prototype chain.
        return cache[m]
    found: str | None = None
    first = _prototype(vals, obj)
    o = first
    try:
        for _ in range(MAX_CHAIN):
            if o is None:
                break
            c = _own_named_constructor(vals, o)
            if c is not None and is_instance(vals, obj, c):
                found = vals.function_name(c)
                break
            o = _prototype(vals, o)
        if found is None and first is not None:
            # V8's own name for it (the heap-snapshot rule), as util.inspect falls back to.
            found = f"{vals.prog.shapes.constructor_name_of_map(m, obj)} <Complex prototype>"
    except (DecodeError, TargetMemoryError):
        found = vals._fallback_name(h.map_type(m))
    if own is None:
        if len(cache) > CACHE_LIMIT:
            cache.clear()
        cache[m] = found
    return found
