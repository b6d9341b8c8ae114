"""Retained sizes of the census' rows: the bytes a row's objects hold alive
together, from the dominator tree of the heap graph.

A row's retained size is the sum of the retained sizes (as DevTools computes
them) of its objects that no other object of the row dominates: an object
inside another member's dominator subtree is counted there already, so the
row's number is what would be freed if all its objects went.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import graph as graphmod
from .dominators import DominatorTree, dominator_tree, essential_edges, set_retained
from .groups import Group, members
from .release import free_pages
from .selfsize import sizes_of

if TYPE_CHECKING:
    from ..program import Program


def tree(prog: Program, heap: int, progress=None) -> tuple[graphmod.Graph, DominatorTree]:
    """The heap's graph and its dominator tree, made once per target state.

    Garbage (what no root reaches, which no GC has freed yet) retains
    nothing: V8's snapshot, taken after a GC, has none, and an old backing
    store of a grown array would otherwise share every element it held with
    the live one, so that the root alone dominated them.

    What the global objects reach is the program's own (DevTools' rule):
    a VM root's edge into it, a stack slot or a handle that points at a
    class the program also holds, retains nothing, as in DevTools' view of
    V8's snapshot (whose root has shortcut edges to the globals).
    """
    graphmod.numpy()  # (says so if NumPy is missing)
    g = graphmod.build(prog, heap, progress)
    t = getattr(g, "_dominators", None)
    if t is None:
        seen = graphmod.reached(g)
        globals_ = graphmod.global_objects(prog, g)
        # The nodes' self sizes as V8's snapshot has them, asked by the tree a
        # piece at a time once made (no array of them held through its passes).
        sizes = sizes_of(prog, g)
        g.drop_pages()  # (read by the search and for the sizes)
        # No edge from garbage retains, nor one into it (a live key's edge to
        # the value of a dead WeakMap's entry). (Handed on, not kept here:
        # freed once the tree's own arrays of them are made.)
        ess = [essential_edges(g.first_edge, g.edge_to, g.edge_type, 0, None, globals_, seen)]
        g.drop_pages()  # (the graph's arrays, read through)
        # (What the rows' retained sizes need of it: no immediate dominators.)
        t = dominator_tree(g.first_edge, g.edge_to, ess.pop(), sizes, 0, globals_, whole=False)
        g.drop_pages()  # (the sizes' pages, read)
        g._dominators = t  # type: ignore[attr-defined]
    return g, t


def of_groups(prog: Program, heap: int, rows: list[Group], progress=None) -> list[int]:
    """The retained size of each row (reachable objects only)."""
    np = graphmod.numpy()
    g, t = tree(prog, heap, progress)
    free_pages()  # (what making the tree left)
    seen = graphmod.reached(g)
    idx_parts: list[Any] = []
    for row in rows:
        i = g.indices(members(prog, heap, row))
        i = i[i >= 0]
        i = i[seen[i]]
        idx_parts.append(i.astype(np.uint32))  # node indices in 32 bits, as edges hold them
    if not rows:
        return []
    grp = np.repeat(np.arange(len(rows), dtype=np.int32), [len(i) for i in idx_parts])
    idx = np.concatenate(idx_parts)
    del idx_parts
    free_pages()  # (what the tree and the members' lookups left)
    got = set_retained(t, idx, grp)
    out = [0] * len(rows)
    for k in range(min(len(rows), len(got))):
        out[k] = int(got[k])
    return out
