"""Objects' self sizes as V8's heap snapshot gives them (SizeForSnapshot).

From V8 13 the snapshot no longer gives an object's bytes on the heap
alone: a read-only object (shared by every isolate, nothing the program
controls) weighs 0, and an external string weighs its characters outside
the heap too. The writer's `self_size` and the retained sizes of
`findjsobjects --retained` take the same sizes, so that both agree with
what DevTools computes from V8's own file. Before V8 13 the sizes are the
graph's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .arrays import unique
from ..errors import DecodeError, TargetMemoryError
from . import graph as gmod
from .edges import has_map

if TYPE_CHECKING:
    from ..program import Program


def applies(prog: Program) -> bool:
    """Whether this V8's snapshot sizes objects by the newer rule."""
    return bool(prog.md.consts.get("SnapshotSizeForSnapshot", 0))


class SizesOf:
    """The self sizes of the nodes asked, a piece of nodes at a time (indexed
    as an array of them would be): the graph's sizes, the read-only
    objects' 0 and the external strings' characters added, with no array
    per node made (the writer asks for the sizes of a piece of rows at a
    time, the dominator tree for a piece of nodes in its order)."""

    def __init__(self, np, g: gmod.Graph, extras: list[tuple[int, int]]) -> None:
        self.np, self.g = np, g
        self.read_only = g.read_only_nodes()
        self.ext_nodes = np.array([i for i, _ in extras], dtype=np.int64)
        self.ext_bytes = np.array([n for _, n in extras], dtype=np.uint64)

    def __getitem__(self, nodes) -> Any:
        np, g = self.np, self.g
        i = np.asarray(nodes, dtype=np.int64)
        out = g.node_size[i].astype(np.uint64)
        for a, b in self.read_only:
            out[(i >= a) & (i < b)] = 0
        if len(self.ext_nodes):
            j = np.minimum(np.searchsorted(self.ext_nodes, i), len(self.ext_nodes) - 1)
            hit = self.ext_nodes[j] == i
            out[hit] += self.ext_bytes[j[hit]]
        return out


def sizes_of(prog: Program, g: gmod.Graph, maps: Any = None, distinct: Any = None) -> Any:
    """The nodes' self sizes in V8's snapshot, as an object giving the sizes of
    the nodes asked (SizesOf), or the graph's own sizes where the version's
    rule is the plain one. `maps`, the map word of each node, is the
    graph's when not given; `distinct`, its distinct values, where known."""
    if not applies(prog):
        return g.node_size
    np = gmod.numpy()
    if maps is None:
        maps = node_maps(g)
    return SizesOf(np, g, _external_payloads(np, prog, g, maps, distinct))


def _external_payloads(np, prog: Program, g: gmod.Graph, maps, distinct=None):
    """(node, bytes of its characters) of each external string on the heap
    (not read-only: those weigh 0 whatever they hold)."""
    h = prog.heap
    s = prog.values.s
    nonstring = h.md.const("FirstNonstringType")
    ro = g.in_read_only()
    um = unique(np, maps[g.first_object:]) if distinct is None else distinct
    ext: dict[int, bool] = {}  # external map -> one byte?
    for m in um.tolist():
        if not m:
            continue  # (a synthetic node's)
        try:
            t = h.map_type(int(m))
        except (DecodeError, TargetMemoryError):
            continue
        if t < nonstring and (t & s.rep_mask) == s.ext:
            ext[int(m)] = (t & s.enc_mask) == s.one_byte_tag
    if not ext:
        return []
    keys = np.fromiter(ext, dtype=np.uint64, count=len(ext))
    nodes = np.flatnonzero(has_map(np, maps, keys) & ~ro)
    nodes = nodes[nodes >= g.first_object]
    out = []
    for i in nodes.tolist():
        try:
            n = s.length(int(g.node_addr[i]))
        except (DecodeError, TargetMemoryError):
            continue
        out.append((i, n if ext[int(maps[i])] else 2 * n))
    return out


def node_maps(g: gmod.Graph) -> Any:
    """The map word of every node (0 for synthetic ones), as the walk of the
    pages found them."""
    return g.map_words[g.map_code]
