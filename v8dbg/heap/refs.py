"""Which objects hold a reference to an object, and through what: a view of
the heap graph's edges into it, named by edges.py as V8's heap snapshot
names them (a property, an element `[i]`, a closure variable, a field).

An internal array between a JS object and the value (an array's elements,
a global's property dictionary and cell, a Map's table, a bound function's
arguments) is no holder a user knows: the JS object or context that owns it
is reported, by the edge V8 makes from it straight to the value (an
element, a global's property) or else by its edge to the array and the
array's to the value (`table[6]`, `bindings[0]`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError
from ..v8 import slots
from . import edges as emod
from . import graph as gmod

if TYPE_CHECKING:
    from ..program import Program

MAX_REF_HITS = 10000  # holders reported
MAX_LIFT = 64  # internal arrays whose owners are looked up
MAX_OWNERS = 64  # owners of one internal array looked at


@dataclass
class Ref:
    holder: int
    holder_type: str
    constructor: str | None
    via: str
    name: str | None = None  # a function holder's name (`fn.name`, or the one V8 inferred)


@dataclass
class Refs:
    target: int
    refs: list[Ref]
    notes: list[str] = field(default_factory=list)  # caps hit


# A holder's kind in the words of the VALUE `type` jsprint --json gives it.
_KINDS = {"JS_ARRAY_TYPE": "array", "JS_MAP_TYPE": "map", "JS_SET_TYPE": "set",
          "JS_WEAK_MAP_TYPE": "map", "JS_WEAK_SET_TYPE": "set", "JS_REG_EXP_TYPE": "regexp",
          "JS_DATE_TYPE": "date", "JS_ERROR_TYPE": "error", "JS_PROMISE_TYPE": "promise",
          "JS_PROXY_TYPE": "proxy", "JS_PRIMITIVE_WRAPPER_TYPE": "boxed",
          "JS_ARRAY_BUFFER_TYPE": "arraybuffer", "JS_TYPED_ARRAY_TYPE": "typedarray",
          "JS_DATA_VIEW_TYPE": "typedarray", "JS_RAB_GSAB_DATA_VIEW_TYPE": "typedarray"}


class Objects:
    """What findjsrefs and jsretainers say of an object: its kind and constructor."""

    def __init__(self, prog: Program) -> None:
        self.sh = prog.shapes
        self.v = self.sh.v
        self.h = self.sh.h
        md = self.h.md
        self.ctx_lo = md.consts.get("FirstContextType", -1)
        self.ctx_hi = md.consts.get("LastContextType", -2)
        self.js_first = md.types.get("JS_PROXY_TYPE", 1024)
        self.cells = slots.wrapper_types(self.h)

    def itype(self, addr: int) -> int:
        try:
            return self.h.instance_type(addr)
        except (DecodeError, TargetMemoryError):
            return -1

    def is_js(self, addr: int) -> bool:
        return self.itype(addr) >= self.js_first

    def is_context(self, addr: int) -> bool:
        return self.ctx_lo <= self.itype(addr) <= self.ctx_hi

    def kind(self, t: int, closure: bool = False) -> str:
        """The contract's holder_type: `function` for every closure (bound ones
        too), `context`, `string`, else the VALUE type of a JS holder (`object`
        for the rest) or V8's instance type name."""
        if t < 0:
            return "?"
        if self.h.is_string_type(t):
            return "string"
        if self.ctx_lo <= t <= self.ctx_hi:
            return "context"
        if t < self.js_first:
            return self.h.type_name(t)
        if closure:
            return "function"
        return _KINDS.get(self.h.type_name(t), "object")

    def ctor(self, addr: int) -> str | None:
        try:
            return self.sh.shape(self.h.map_of(addr), addr).constructor
        except (DecodeError, TargetMemoryError):
            return None

    def ref(self, addr: int, via: str) -> Ref:
        """A reference from addr, a JS holder with its constructor, a function named."""
        t = self.itype(addr)
        if t < self.js_first:
            return Ref(addr, self.kind(t), None, via)
        closure = self.sh.is_closure_type(t)
        name = self.v.callable_name(addr) if closure else None
        return Ref(addr, self.kind(t, closure), self.ctor(addr), via, name)


def _into(g: gmod.Graph, node: int):
    """The strong edges into a node."""
    np = gmod.numpy()
    return np.flatnonzero((g.edge_to == node) & (g.edge_type != gmod.E_WEAK))


def refs(prog: Program, heap: int, target: int, cap: int = MAX_REF_HITS,
         progress=None) -> Refs:
    """The objects with a strong edge to target, each with that edge's name."""
    from ..errors import V8DbgError
    g = gmod.build(prog, heap, progress)
    t = g.index(target)
    if t is None:
        raise V8DbgError(f"0x{target:x} is not the address of an object of this heap")
    ob = Objects(prog)
    notes: list[str] = []
    hits = _into(g, t)
    srcs: list[int] = []
    for e in hits.tolist():
        s = gmod.source(g, e)
        if s >= g.first_object and s != t and (not srcs or srcs[-1] != s):
            srcs.append(s)
    if len(srcs) > cap:
        notes.append(f"{len(srcs)} objects hold the target: only the first {cap} are shown")
        srcs = srcs[:cap]
    named = emod.named_edges(prog, g, srcs)
    out: list[Ref] = []
    lift: list[int] = []
    for s in srcs:
        addr = int(g.node_addr[s])
        if ob.is_js(addr) or ob.is_context(addr) or ob.h.is_string_type(ob.itype(addr)):
            out.extend(ob.ref(addr, n.label()) for n in named[s]
                       if n.to == t and n.kind != gmod.E_WEAK)
        else:
            lift.append(s)
    if len(lift) > MAX_LIFT:
        notes.append(f"{len(lift)} of V8's internal objects hold the target: the owners of "
                     f"the first {MAX_LIFT} are looked up")
    out.extend(_lifted(prog, g, ob, t, lift[:MAX_LIFT], named))
    seen = set()
    uniq = []
    for r in out:
        k = (r.holder, r.via)
        if k not in seen:
            seen.add(k)
            uniq.append(r)
    return Refs(target, uniq, notes)


def _lifted(prog: Program, g: gmod.Graph, ob: Objects, t: int, arrays: list[int],
            named: dict[int, list[emod.Named]]) -> list[Ref]:
    """The JS objects and contexts that own internal arrays holding t (up to
    two arrays deep: a global's dictionary and property cell), each by its
    own edge straight to t when V8 makes one, else through the array."""
    owners: dict[int, list[int]] = {}  # array -> its owners (and arrays one level up)
    up: list[int] = []
    for a in arrays:
        srcs = sorted({gmod.source(g, e) for e in _into(g, a)[:MAX_OWNERS].tolist()})
        owners[a] = [s for s in srcs if s >= g.first_object and s != a]
        up.extend(owners[a])
    deeper = [s for s in set(up) if not _user_visible(ob, int(g.node_addr[s]))]
    for a in deeper:
        srcs = sorted({gmod.source(g, e) for e in _into(g, a)[:MAX_OWNERS].tolist()})
        owners[a] = [s for s in srcs if s >= g.first_object and s != a]
        up.extend(owners[a])
    named.update(emod.named_edges(prog, g, [s for s in set(up) if s not in named]))
    out: list[Ref] = []
    for a in arrays:
        inner = [n for n in named[a] if n.to == t and n.kind != gmod.E_WEAK]
        for o in owners[a]:
            oaddr = int(g.node_addr[o])
            if not _user_visible(ob, oaddr):
                # Two arrays deep: only an owner's edge straight to t names it.
                for o2 in owners.get(o, []):
                    out.extend(ob.ref(int(g.node_addr[o2]), n.label()) for n in named[o2]
                               if n.to == t and n.edge < 0)
                continue
            direct = [n for n in named[o] if n.to == t and n.edge < 0]
            if direct:
                out.extend(ob.ref(oaddr, n.label()) for n in direct)
                continue
            a_addr = int(g.node_addr[a])
            for n in (x for x in named[o] if x.to == a):
                if ob.itype(a_addr) in ob.cells:
                    # A context cell wraps one closure variable: the context holds it.
                    out.append(ob.ref(oaddr, n.label()))
                else:
                    out.extend(ob.ref(oaddr, f"{n.label()}{_sub(i)}") for i in inner)
    return out


def _sub(n: emod.Named) -> str:
    """An internal array's edge as a subscript of the edge that holds the array."""
    if n.kind == gmod.E_INTERNAL and n.name.isdigit():
        return f"[{n.name}]"
    return f".{n.label()}"


def _user_visible(ob: Objects, addr: int) -> bool:
    """A holder findjsrefs names: a JS object or a context."""
    return ob.is_js(addr) or ob.is_context(addr)
