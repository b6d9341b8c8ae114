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
from .selfsize import snapshot_sizes

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
    np = graphmod.numpy()
    g = graphmod.build(prog, heap, progress)
    t = getattr(g, "_dominators", None)
    if t is None:
        seen, _ = graphmod.reach(g)
        garbage_edge = np.repeat(~seen, np.diff(g.first_edge))  # an edge from garbage
        # or into it: a live key's edge to the value of a dead WeakMap's entry
        garbage_edge |= ~seen[g.edge_to]
        globals_ = graphmod.global_objects(prog, g)
        ess = essential_edges(g.first_edge, g.edge_to, g.edge_type, 0, garbage_edge, globals_)
        del garbage_edge
        t = dominator_tree(g.first_edge, g.edge_to, ess, snapshot_sizes(prog, g), 0, globals_)
        g._dominators = t  # type: ignore[attr-defined]
    return g, t


def of_groups(prog: Program, heap: int, rows: list[Group], progress=None) -> list[int]:
    """The retained size of each row (reachable objects only)."""
    np = graphmod.numpy()
    g, t = tree(prog, heap, progress)
    seen, _ = graphmod.reach(g)
    idx_parts: list[Any] = []
    grp_parts: list[Any] = []
    for k, row in enumerate(rows):
        i = g.indices(members(prog, heap, row))
        i = i[i >= 0]
        i = i[seen[i]]
        idx_parts.append(i)
        grp_parts.append(np.full(len(i), k, np.int64))
    if not rows:
        return []
    got = set_retained(t, np.concatenate(idx_parts), np.concatenate(grp_parts))
    out = [0] * len(rows)
    for k in range(min(len(rows), len(got))):
        out[k] = int(got[k])
    return out
