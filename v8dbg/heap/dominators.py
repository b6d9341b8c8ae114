"""Immediate dominators and retained sizes of a heap graph, as DevTools computes them.

The graph is in CSR form over NumPy arrays: node i's edges are
``first_edge[i]:first_edge[i+1]`` of ``edge_to`` (node indices) and
``edge_type`` (V8's heap snapshot edge types); node ``root`` is the synthetic
root. An object's retained size is its own size plus that of every object it
dominates: what would be freed if it went.

Which edges retain is DevTools' rule (its snapshot worker's "essential"
edges): never a weak edge, nor an edge to itself; a shortcut edge only from
the root (there it marks the program's global objects); and no edge from an
object outside what the globals reach to one inside it (so that what the
program holds is not charged to roots of the VM or the debugger). A node no
retaining edge reaches (held only weakly, or only by a cycle of garbage) is
hung from the root, as DevTools does.

The dominator tree is the semi-NCA form of Lengauer-Tarjan (semidominators by
path compression, then each immediate dominator as the nearest common
ancestor of the DFS parent and the semidominator), which gives the same
unique tree as DevTools' Lengauer-Tarjan. Its loops run over typed arrays
(array.array), 8 bytes an entry, not Python lists of int objects.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from ..errors import V8DbgError
from ..interrupt import check_interrupted

# V8's heap snapshot edge types (HeapGraphEdge::Type), the same on every line.
EDGE_CONTEXT, EDGE_ELEMENT, EDGE_PROPERTY, EDGE_INTERNAL, EDGE_HIDDEN, EDGE_SHORTCUT, EDGE_WEAK = range(7)


@dataclass
class DominatorTree:
    """The dominator tree of a graph and every node's retained size."""

    idom: Any  # uint32 per node: its immediate dominator (the root's is the root)
    retained: Any  # uint64 per node: bytes it keeps alive, itself included
    order: Any  # uint32: nodes in DFS preorder; each node's dominator comes before it
    hung_from_root: int  # nodes no retaining edge reaches, hung from the root
    tin: Any  # uint32 per node: its place in a preorder of the dominator tree
    subtree: Any  # uint32 per node: how many nodes it dominates, itself included

    def dominates(self, a, b):
        """Whether node(s) a dominate node(s) b (each node dominates itself)."""
        return (self.tin[a] <= self.tin[b]) & (self.tin[b] < self.tin[a] + self.subtree[a])


def _np():
    try:
        import numpy
        return numpy
    except ImportError:
        raise V8DbgError("retained sizes need NumPy (python3-numpy)") from None


def expand(np, first_edge, nodes):
    """The edge indices of `nodes`, concatenated (CSR ranges at C speed)."""
    starts = first_edge[nodes].astype(np.int64)
    counts = first_edge[nodes + 1].astype(np.int64) - starts
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64)
    offs = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return offs + np.arange(total, dtype=np.int64)


def reach(np, first_edge, edge_to, starts, usable):
    """Bool per node: reached from `starts` over the edges `usable` marks."""
    n = len(first_edge) - 1
    seen = np.zeros(n, bool)
    front = np.unique(np.asarray(starts, np.int64))
    seen[front] = True
    while len(front):
        check_interrupted()
        e = expand(np, first_edge, front)
        e = e[usable[e]]
        to = np.unique(edge_to[e])
        to = to[~seen[to]]
        seen[to] = True
        front = to.astype(np.int64)
    return seen


def essential_edges(first_edge, edge_to, edge_type, root: int = 0, not_retaining=None):
    """Bool per edge: does it retain its target (DevTools' rule, above)?

    `not_retaining` marks more edges that do not: a WeakMap's edge from its
    table to a value (the key's edge to it is the one that counts).
    """
    np = _np()
    n = len(first_edge) - 1
    src = np.repeat(np.arange(n, dtype=np.uint32), np.diff(first_edge.astype(np.int64)))
    weak = edge_type == EDGE_WEAK
    ok = ~weak & (edge_to != src)
    if not_retaining is not None:
        ok &= ~not_retaining
    ok &= (edge_type != EDGE_SHORTCUT) | (src == root)
    r0, r1 = int(first_edge[root]), int(first_edge[root + 1])
    globals_ = edge_to[r0:r1][edge_type[r0:r1] == EDGE_SHORTCUT]
    if len(globals_):
        page = reach(np, first_edge, edge_to, globals_, ~weak)
        ok &= ~(page[edge_to] & ~page[src]) | (src == root)
    return ok


def dominator_tree(first_edge, edge_to, essential, sizes, root: int = 0) -> DominatorTree:
    """Immediate dominators (semi-NCA) and retained sizes over the essential edges."""
    np = _np()
    n = len(first_edge) - 1
    fe = first_edge.astype(np.int64)
    keep = np.flatnonzero(essential)
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(fe))[keep]
    dst = edge_to[keep].astype(np.int64)
    # Successors over essential edges only, as Python lists for the DFS.
    sfirst = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=sfirst[1:])
    succ = array('q', dst.astype(np.int64).tobytes())
    sfirst_l = array('q', sfirst.astype(np.int64).tobytes())
    del keep

    # DFS preorder numbers from 1 (0: not reached), parent as numbers.
    num = array('q', bytes(8 * n))
    vertex = array('q', [0])  # number -> node
    parent = array('q', [0])  # number -> parent's number
    nxt = array('q', sfirst_l)  # next successor slot of each node on the DFS stack

    def dfs(start: int, par: int) -> None:
        num[start] = len(vertex)
        vertex.append(start)
        parent.append(par)
        stack = [start]
        while stack:
            v = stack[-1]
            i, end = nxt[v], sfirst_l[v + 1]
            while i < end:
                w = succ[i]
                i += 1
                if not num[w]:
                    nxt[v] = i
                    num[w] = len(vertex)
                    vertex.append(w)
                    parent.append(num[v])
                    stack.append(w)
                    break
            else:
                nxt[v] = end
                stack.pop()
                if len(vertex) & 0xFFFF == 0:
                    check_interrupted()

    dfs(root, 0)
    has_pred = np.zeros(n, bool)
    has_pred[dst] = True
    hung: list[int] = []
    if len(vertex) - 1 < n:
        # Held by nothing that retains (only weakly): each a tree of its own under the root.
        for v in np.flatnonzero(~has_pred).tolist():
            if not num[v] and v != root:
                hung.append(v)
                dfs(v, 1)
        # Garbage cycles: each node on its own under the root.
        for v in range(n):
            if not num[v]:
                hung.append(v)
                num[v] = len(vertex)
                vertex.append(v)
                parent.append(1)
    nxt = succ = sfirst_l = array('q')  # (freed: the DFS is done)

    # Predecessors by DFS number, with the root added for the nodes hung from it.
    numa = np.frombuffer(num, np.int64)
    psrc = numa[src]
    pdst = numa[dst]
    del src, dst
    if hung:
        psrc = np.concatenate([psrc, np.ones(len(hung), np.int64)])
        pdst = np.concatenate([pdst, numa[np.asarray(hung, np.int64)]])
    o = np.argsort(pdst, kind="stable")
    preds = array('q', psrc[o].astype(np.int64).tobytes())
    pfirst = np.zeros(n + 2, np.int64)
    np.cumsum(np.bincount(pdst, minlength=n + 1), out=pfirst[1:])
    pfirst_l = array('q', pfirst.tobytes())
    del o, psrc, pdst, pfirst

    semi = array('q', range(n + 1))
    label = array('q', semi)
    anc = array('q', bytes(8 * (n + 1)))
    stack2: list[int] = []
    for w in range(n, 1, -1):
        s = semi[w]
        for j in range(pfirst_l[w], pfirst_l[w + 1]):
            v = preds[j]
            if anc[v]:
                # eval(v): compress v's path in the linked forest, take its minimum.
                if anc[anc[v]]:
                    u = v
                    while anc[anc[u]]:
                        stack2.append(u)
                        u = anc[u]
                    while stack2:
                        u = stack2.pop()
                        a = anc[u]
                        if semi[label[a]] < semi[label[u]]:
                            label[u] = label[a]
                        anc[u] = anc[a]
                c = semi[label[v]]
            else:
                c = v  # not yet processed: its own number (it precedes w)
            if c < s:
                s = c
        semi[w] = s
        anc[w] = parent[w]
        if w & 0xFFFF == 0:
            check_interrupted()
    del label, anc, preds, pfirst_l

    idom_num = array('q', bytes(8 * (n + 1)))
    idom_num[1] = 1
    for w in range(2, n + 1):
        d = parent[w]
        s = semi[w]
        while d > s:
            d = idom_num[d]
        idom_num[w] = d
    semi = parent = array('q')

    vert = np.frombuffer(vertex, np.int64)
    idn = np.frombuffer(idom_num, np.int64)
    idom = np.empty(n, np.uint32)
    idom[vert[1:]] = vert[idn[1:]]
    # Retained sizes: each node added into its dominator, deepest numbers first.
    ret = array('Q', np.asarray(sizes, np.uint64)[vert].tobytes())  # by DFS number (index 0 unused)
    idl = idom_num
    sub = array('q', [1]) * (n + 1)
    for w in range(n, 1, -1):
        d = idl[w]
        ret[d] += ret[w]
        sub[d] += sub[w]
    # Preorder places in the dominator tree: a node's subtree is tin .. tin+subtree-1.
    tin = array('q', bytes(8 * (n + 1)))
    slot = array('q', [1]) * (n + 1)
    for w in range(2, n + 1):
        d = idl[w]
        t = tin[w] = slot[d]
        slot[d] = t + sub[w]
        slot[w] = t + 1
    del slot
    retained = np.empty(n, np.uint64)
    retained[vert[1:]] = np.frombuffer(ret, np.uint64)[1:]
    tin_a = np.empty(n, np.uint32)
    tin_a[vert[1:]] = np.frombuffer(tin, np.int64)[1:]
    sub_a = np.empty(n, np.uint32)
    sub_a[vert[1:]] = np.frombuffer(sub, np.int64)[1:]
    return DominatorTree(idom, retained, vert[1:].astype(np.uint32), len(hung), tin_a, sub_a)


def set_retained(tree: DominatorTree, members, group) -> Any:
    """Retained size of each set of nodes: the retained sizes of its members that
    no other member of the same set dominates, summed.

    `members` are node indices, `group` the set each belongs to (integers from
    0). A member inside another's dominator subtree is already counted there.
    """
    np = _np()
    members = np.asarray(members, np.int64)
    group = np.asarray(group, np.int64)
    k = int(group.max()) + 1 if len(group) else 0
    if not len(members):
        return np.zeros(k, np.uint64)
    span = np.int64(len(tree.tin) + 1)
    start = group * span + tree.tin[members].astype(np.int64)
    end = start + tree.subtree[members].astype(np.int64)
    o = np.argsort(start, kind="stable")
    start, end, members, group = start[o], end[o], members[o], group[o]
    # Dominator subtrees nest or are apart: a member is covered when it starts
    # before the furthest end of the members of its set before it.
    reach_ = np.maximum.accumulate(end)
    before = np.concatenate([[np.int64(-1)], reach_[:-1]])
    top = start >= before
    return np.bincount(group[top], weights=tree.retained[members[top]].astype(np.float64),
                       minlength=k).astype(np.uint64)


def retained_sizes(first_edge, edge_to, edge_type, sizes, root: int = 0,
                   not_retaining=None) -> DominatorTree:
    """The dominator tree and retained sizes of a heap graph, by DevTools' rules."""
    ess = essential_edges(first_edge, edge_to, edge_type, root, not_retaining)
    return dominator_tree(first_edge, edge_to, ess, sizes, root)
