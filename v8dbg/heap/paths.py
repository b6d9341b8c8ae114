"""Retaining paths: why an object is alive, as the shortest chains of edges
from a GC root to it (DevTools' Retainers view, memlab's trace).

Paths come from the graph's breadth-first search from the root: one path
per object that holds the target directly (each through that holder's own
shortest path), shortest first. Weak edges never retain. Each step names
the edge that holds it as V8's heap snapshot does (edges.py, as findjsrefs
and jsheapsnapshot name them): a property, an element `[i]`, a closure
variable, a field (a Map's `table`), an internal array's slot by its index.
Where V8 makes an edge straight from a JS object to a value (an array's
elements, a global's properties), the path takes it, leaving out the
internal arrays between, as DevTools' and memlab's paths on V8's file do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import V8DbgError
from . import graph as gmod
from .edges import named_edges
from .refs import Objects

if TYPE_CHECKING:
    from ..program import Program

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
    ob = Objects(prog)
    paths = []
    # Folding internal arrays shortens some paths more than others: a few more
    # than asked are made, and the shortest as shown are kept.
    for _len, e in cands[:max(n * 4, 16)]:
        s = gmod.source(g, e)
        edges = (_chain(g, parent, s) or []) + [e]
        paths.append(_steps(prog, g, ob, _owned(g, ob, seen, edges)))
    # Paths from exactly known roots first, then from conservatively found ones.
    late = {g.root_names[i] for i in g.late_groups}
    paths.sort(key=lambda p: (p[0].constructor in late, len(p)))
    return Retainers(target, paths[:n], True, len(by_src), notes)


def _owned(g: gmod.Graph, ob: Objects, seen, edges: list[int]) -> list[int]:
    """The path's edges, with the JS object that owns the internal array a root
    holds put before that array (a global's property dictionary, an object's
    elements): the path then names the property that holds the next step."""
    np = gmod.numpy()
    if len(edges) < 3:
        return edges
    first = int(g.edge_to[edges[1]])
    if first < g.first_object or ob.is_js(int(g.node_addr[first])):
        return edges
    into = np.flatnonzero((g.edge_to == first) & (g.edge_type != gmod.E_WEAK))
    for e in into[:64].tolist():
        s = gmod.source(g, e)
        if s < g.first_object or not seen[s] or not ob.is_js(int(g.node_addr[s])):
            continue
        # The owner, as one more object the root group holds.
        back = np.flatnonzero(g.edge_to[g.first_edge[1]:g.first_edge[g.first_object]] == s)
        if len(back):
            return [edges[0], int(g.first_edge[1] + back[0]), e] + edges[2:]
    return edges


def _steps(prog: Program, g: gmod.Graph, ob: Objects, edges: list[int]) -> list[Step]:
    """The steps of a path given by its edges (the first from the root), each
    named by edges.py. Where V8 makes an edge straight from an object to a
    later node of the path (an array's element, a global's property), it is
    taken and the internal arrays between are left out, as in V8's snapshot."""
    nodes = [0] + [int(g.edge_to[e]) for e in edges]
    named = named_edges(prog, g, [n for n in nodes[1:-1] if n >= g.first_object])
    out: list[Step] = []
    i = 1
    while i < len(nodes):
        node = nodes[i]
        if node < g.first_object:
            out.append(Step(None, "root", g.root_names[node - 1], None))
            i += 1
            continue
        prev = nodes[i - 1]
        if prev < g.first_object:
            out.append(_step(ob, int(g.node_addr[node]), None))
            i += 1
            continue
        mine = named.get(prev, [])
        ahead = {n: k for k, n in enumerate(nodes[i + 1:i + 1 + FOLD], start=i + 1)}
        skip = [(ahead[x.to], x) for x in mine if x.edge < 0 and x.to in ahead]
        if skip:
            k, x = max(skip, key=lambda kx: kx[0])
            out.append(_step(ob, int(g.node_addr[nodes[k]]), x.label()))
            i = k + 1
            continue
        label = next((x.label() for x in mine if x.edge == edges[i - 1]),
                     f"<internal slot +{int(g.edge_name[edges[i - 1]])}>")
        out.append(_step(ob, int(g.node_addr[node]), label))
        i += 1
    return out


def _step(ob: Objects, addr: int, edge: str | None) -> Step:
    t = ob.itype(addr)
    if t >= ob.js_first:
        return Step(addr, ob.kind(t, ob.sh.is_closure_type(t)), ob.ctor(addr), edge)
    return Step(addr, ob.kind(t), None, edge)
