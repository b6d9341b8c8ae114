"""Retaining paths: why an object is alive, as the shortest chains of edges
from a GC root to it (DevTools' Retainers view, memlab's trace).

Paths come from the graph's breadth-first search from the root: one path
per object that holds the target directly (each through that holder's own
shortest path), shortest first. Weak edges never retain. Each step names
the edge that holds it, as findjsrefs names references: a property, an
element `[i]`, a Map or Set entry, a closure variable, or V8's field name.
V8's internal arrays between a JS object and a value (its elements, its
property or dictionary array, a Map's hash table, a global's property
cells) are folded into the one step that names the property or element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from . import graph as gmod
from .refedges import field_name, holder_kind

if TYPE_CHECKING:
    from ..program import Program
    from .refs import RefFinder

# The slots every context starts with, as V8 names them (a native context's
# extension is its global object).
_CONTEXT_HEADER = {0: "scope_info", 1: "previous", 2: "extension"}

MAX_PATH = 10000  # steps of one path: a chain longer than any real heap's
MAX_HOLDERS = 100000  # direct holders of the target looked at
FOLD = 3  # internal arrays folded into one step at most


@dataclass
class Step:
    """One object of a path (or its root group), with the edge that holds it."""

    address: int | None  # None for a root group
    type: str  # a VALUE type (object, array, function, ...), `root`, or V8's type name
    constructor: str | None
    edge: str | None  # the reference from the step before (None for the first)

    def to_json(self) -> dict:
        return {"address": None if self.address is None else f"0x{self.address:x}",
                "type": self.type, "constructor": self.constructor, "edge": self.edge}


@dataclass
class Retainers:
    target: int
    paths: list[list[Step]]
    reachable: bool
    holders: int  # objects (or root groups) that hold the target directly
    notes: list[str]


def _chain(g: gmod.Graph, parent, node: int) -> list[int] | None:
    """The edges of the shortest path from the root to node."""
    out: list[int] = []
    while node != 0:
        e = int(parent[node])
        if e < 0 or len(out) > MAX_PATH:
            return None
        out.append(e)
        node = gmod.source(g, e)
    out.reverse()
    return out


def retainers(prog: Program, heap: int, target: int, n: int, progress=None) -> Retainers:
    """Up to n shortest retaining paths of the object at target."""
    np = gmod.numpy()
    g = gmod.build(prog, heap, progress)
    t = g.index(target)
    if t is None:
        raise V8DbgError(f"0x{target:x} is not the address of an object of this heap")
    seen, parent = gmod.reach(g)
    notes = list(g.root_notes)
    if not seen[t]:
        return Retainers(target, [], False, 0, notes)
    hit = np.flatnonzero((g.edge_to == t) & (g.edge_type != gmod.E_WEAK))
    cands: list[tuple[int, int]] = []  # (path length, edge)
    by_src: set[int] = set()
    for e in hit[:MAX_HOLDERS].tolist():
        s = gmod.source(g, e)
        if s in by_src or not seen[s]:
            continue
        by_src.add(s)
        chain = _chain(g, parent, s) if s else []
        if chain is None:
            continue
        cands.append((len(chain) + 1, e))
    if len(hit) > MAX_HOLDERS:
        notes.append(f"only the first {MAX_HOLDERS} references to the target were looked at")
    cands.sort()
    from .refs import RefFinder
    rf = RefFinder(prog, heap)
    paths = []
    # Folding internal arrays shortens some paths more than others: a few more
    # than asked are made, and the shortest as shown are kept.
    for _len, e in cands[:max(n * 4, 16)]:
        s = gmod.source(g, e)
        edges = (_chain(g, parent, s) or []) + [e]
        paths.append(_steps(g, rf, _owned(g, rf, seen, edges)))
    # Paths from exactly known roots first, then from conservatively found ones.
    late = {g.root_names[i] for i in g.late_groups}
    paths.sort(key=lambda p: (p[0].constructor in late, len(p)))
    return Retainers(target, paths[:n], True, len(by_src), notes)


def _owned(g: gmod.Graph, rf: RefFinder, seen, edges: list[int]) -> list[int]:
    """The path's edges, with the JS object that owns the internal array a root
    holds put before that array (a global's property dictionary, an object's
    elements): the path then names the property that holds the next step."""
    np = gmod.numpy()
    if len(edges) < 3:
        return edges
    first = int(g.edge_to[edges[1]])
    if first < g.first_object or _is_js(rf, int(g.node_addr[first])):
        return edges
    into = np.flatnonzero((g.edge_to == first) & (g.edge_type != gmod.E_WEAK))
    for e in into[:64].tolist():
        s = gmod.source(g, e)
        if s < g.first_object or not seen[s] or not _is_js(rf, int(g.node_addr[s])):
            continue
        # The owner, as one more object the root group holds.
        back = np.flatnonzero(g.edge_to[g.first_edge[1]:g.first_edge[g.first_object]] == s)
        if len(back):
            return [edges[0], int(g.first_edge[1] + back[0]), e] + edges[2:]
    return edges


def _steps(g: gmod.Graph, rf: RefFinder, edges: list[int]) -> list[Step]:
    """The steps of a path given by its edges (the first from the root)."""
    nodes = [0] + [int(g.edge_to[e]) for e in edges]
    out: list[Step] = []
    i = 1
    while i < len(nodes):
        node = nodes[i]
        if node < g.first_object:
            out.append(Step(None, "root", g.root_names[node - 1], None))
            i += 1
            continue
        prev = nodes[i - 1]
        if prev >= g.first_object and _is_js(rf, prev_addr := int(g.node_addr[prev])) \
                and not _is_js(rf, int(g.node_addr[node])):
            # An internal array of a JS object: fold it into the step it leads to.
            for k in range(i + 1, min(len(nodes), i + 1 + FOLD)):
                value = int(g.node_addr[nodes[k]])
                name = _folded(rf, prev_addr, [int(g.node_addr[x]) for x in nodes[i:k]],
                               value)
                if name is not None:
                    out.append(_step(rf, value, name))
                    i = k + 1
                    break
            else:
                out.append(_step(rf, int(g.node_addr[node]), _edge_name(g, rf, edges[i - 1])))
                i += 1
            continue
        edge = None if prev < g.first_object else _edge_name(g, rf, edges[i - 1])
        out.append(_step(rf, int(g.node_addr[node]), edge))
        i += 1
    return out


def _itype(rf: RefFinder, addr: int) -> int:
    try:
        return rf.itype(addr)
    except (DecodeError, TargetMemoryError):
        return -1


def _is_js(rf: RefFinder, addr: int) -> bool:
    return _itype(rf, addr) >= rf.js_first


def _step(rf: RefFinder, addr: int, edge: str | None) -> Step:
    t = _itype(rf, addr)
    if t >= rf.js_first:
        closure = rf.sh.is_closure_type(t)
        return Step(addr, holder_kind(rf.h, t, closure), rf._ctor(addr), edge)
    if rf.ctx_lo <= t <= rf.ctx_hi:
        return Step(addr, "context", None, edge)
    if t >= 0 and rf.h.is_string_type(t):
        return Step(addr, "string", None, edge)
    name = rf.h.type_name(t) if t >= 0 else "?"
    return Step(addr, name, None, edge)


def _edge_name(g: gmod.Graph, rf: RefFinder, e: int) -> str:
    """The name of one edge of a heap object, from its slot."""
    s = gmod.source(g, e)
    holder = int(g.node_addr[s])
    target = int(g.node_addr[int(g.edge_to[e])])
    off = int(g.edge_name[e])
    slot = holder - 1 + off
    if off == 0:
        return "map"
    if off == gmod.EPHEMERON:
        return "<WeakMap value of this key>"
    t = _itype(rf, holder)
    try:
        if t >= rf.js_first:
            refs = rf._from_receiver(holder, t, target, slot)
            if refs:
                return refs[0].via
        elif rf.ctx_lo <= t <= rf.ctx_hi:
            via = rf._from_context(holder, slot)[0].via
            index = (off - 16) // 8
            if via == f"closure:<slot {index}>" and index in _CONTEXT_HEADER:
                return _CONTEXT_HEADER[index]
            return via
        elif t >= 0:
            name = field_name(rf.h, holder, t, slot)
            if name:
                return name
            if t in rf.cells:
                return "value"
            return f"[{(off - 16) // 8}]" if off >= 16 else f"<internal slot +{off}>"
    except (DecodeError, TargetMemoryError):
        pass
    return f"<internal slot +{off}>"


def _folded(rf: RefFinder, owner: int, inner: list[int], value: int) -> str | None:
    """The property, element or entry of JS object owner that holds value
    through its internal arrays `inner` (elements, properties, a table, a cell)."""
    try:
        for pr in rf._props(owner):
            if pr.value == value and not pr.accessor:
                return rf.v.key_text(pr.key, 200) or "?"
        first = inner[0]
        t = rf.itype(first)
        elems = rf.h.field(owner, "JSObject", "elements")
        if elems == first and len(inner) == 1:
            for k in range(_length(rf, first)):
                if rf.h.array_get(first, k) == value:
                    return rf._element_via(first, t, k)
        om = rf.t.get("ORDERED_HASH_MAP_TYPE")
        os_ = rf.t.get("ORDERED_HASH_SET_TYPE")
        if t in (om, os_) and len(inner) == 1:
            kind = "map" if t == om else "set"
            for k in range(_length(rf, first)):
                if rf.h.array_get(first, k) == value:
                    return rf._table_via(first, k, kind)
    except (DecodeError, TargetMemoryError):
        return None
    return None


def _length(rf: RefFinder, arr: int) -> int:
    try:
        return rf.h.array_length(arr, 1 << 20)
    except (DecodeError, TargetMemoryError):
        return 0
