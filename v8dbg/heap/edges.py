"""Edges as V8's heap snapshot generator types and names them.

The heap graph (graph.py) keeps every tagged slot of an object as an edge,
named by its byte offset. V8HeapExplorer names some of those slots (a
property, an element, a context variable, an internal field) and files the
rest, which its indexed visitor meets after the named ones, as `hidden`
edges numbered in visiting order, and every weak slot as a `weak` edge
numbered likewise. This module gives the graph's edges those kinds and
names, in bulk, for whatever writes or shows them:

- the map word: `internal` edge `map`, as V8 names it for every object;
- an in-object property of a JS object, by its map's descriptors:
  `property` edge named by the property's key;
- every other strong slot: `hidden`, its index among the object's edges;
- a weak slot: `weak`, likewise.

Property names come from the map's descriptors (read once per map), so the
typing costs one pass over the edges in NumPy and a dictionary per map.
What V8 names besides (elements, out-of-object properties, context
variables, internal fields) stays `hidden` here: the edge exists, only its
name is V8's index rather than its field name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError, TargetMemoryError
from . import graph as gmod

if TYPE_CHECKING:
    from ..program import Program

MAX_PROPERTY_MAPS = 200000  # maps whose descriptors are read for property names


@dataclass
class Typed:
    """Kinds and names of a set of the graph's edges (parallel arrays).

    `names` holds a string's index in `strings` for context, property,
    internal and shortcut edges, and the number itself for element, hidden
    and weak edges, as a .heapsnapshot's `name_or_index` does."""

    kinds: Any  # uint8, V8's HeapGraphEdge::Type
    names: Any  # uint32
    strings: list[str]


class StringTable:
    """Strings in first-use order, each once (a snapshot's `strings`)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.items: list[str] = []

    def add(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i


def in_object_names(prog: Program, m: int) -> dict[int, str]:
    """Byte offset -> property key of the in-object fields a JS map's descriptors
    describe ({} when the map has none or they cannot be read)."""
    v = prog.values
    try:
        return {off: v.key_text(key, 200) or "?" for off, key in v.in_object_fields(m).items()}
    except (DecodeError, TargetMemoryError):
        return {}


def type_edges(prog: Program, g: gmod.Graph, src, lo: int, hi: int, node_map,
               is_js, strings: StringTable) -> Typed:
    """Kinds and names of edges lo .. hi-1 of the graph, whose sources are `src`.

    node_map: the map of each node (0 for synthetic ones); is_js: per node,
    whether it is a JS object (whose in-object properties get their names)."""
    np = gmod.numpy()
    to = g.edge_to[lo:hi]
    off = g.edge_name[lo:hi]
    gtype = g.edge_type[lo:hi]
    idx = np.arange(lo, hi, dtype=np.int64) - g.first_edge[src]
    kinds = np.where(gtype == gmod.E_WEAK, gmod.E_WEAK, gmod.E_HIDDEN).astype(np.uint8)
    names = idx.astype(np.uint32)
    synthetic = src < g.first_object
    kinds[synthetic] = gtype[synthetic]
    heap = ~synthetic
    is_map = heap & (off == 0) & (gtype != gmod.E_WEAK)
    kinds[is_map] = gmod.E_INTERNAL
    names[is_map] = strings.add("map")
    # In-object properties of JS objects, by each map's descriptors.
    cand = np.flatnonzero(heap & ~is_map & (gtype != gmod.E_WEAK) & is_js[src])
    if len(cand):
        maps = node_map[src[cand]]
        order = np.argsort(maps, kind="stable")
        um, starts = np.unique(maps[order], return_index=True)
        bounds = np.append(starts, len(order))
        for k, m in enumerate(um.tolist()):
            named = _names(prog, int(m))
            if not named:
                continue
            sel = cand[order[bounds[k]:bounds[k + 1]]]
            offs = off[sel].astype(np.int64)
            for o, key in named.items():
                hit = sel[offs == o]
                if len(hit):
                    kinds[hit] = gmod.E_PROPERTY
                    names[hit] = strings.add(key)
    del to
    return Typed(kinds, names, strings.items)


_cache: dict[tuple[int, int], dict[int, str]] = {}


def _names(prog: Program, m: int) -> dict[int, str]:
    key = (id(prog), m)
    got = _cache.get(key)
    if got is None:
        if len(_cache) > MAX_PROPERTY_MAPS:
            _cache.clear()
        got = _cache[key] = in_object_names(prog, m)
    return got
