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

The dominator tree is computed by the iterative algorithm of Cooper, Harvey
and Kennedy, every pass over all nodes at once in NumPy (see
`_wide_tree`): the same unique tree as DevTools' Lengauer-Tarjan, in
arrays of a few bytes per node and edge, with no Python loop per node or
edge; the loops left are per breadth-first level and per pass. A graph of
very many levels (long linked lists) is left to semi-NCA Lengauer-Tarjan
over typed arrays (`_deep_tree`), whose cost does not grow with depth.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from .arrays import unique
from . import mapped
from .release import free_pages
from .. import numpylib
from ..errors import V8DbgError
from ..interrupt import check_interrupted

# V8's heap snapshot edge types (HeapGraphEdge::Type), the same on every line.
EDGE_CONTEXT, EDGE_ELEMENT, EDGE_PROPERTY, EDGE_INTERNAL, EDGE_HIDDEN, EDGE_SHORTCUT, EDGE_WEAK = range(7)


@dataclass
class DominatorTree:
    """The dominator tree of a graph and every node's retained size."""

    idom: Any  # uint32 per node: its immediate dominator (the root's is the root); None unless whole
    retained: Any  # uint64 per node: bytes it keeps alive, itself included
    order: Any  # uint32: nodes breadth first from the root; each node's dominator comes before it; None unless whole
    hung_from_root: int  # nodes no retaining edge reaches, hung from the root
    tin: Any  # uint32 per node: its place in a preorder of the dominator tree
    subtree: Any  # uint32 per node: how many nodes it dominates, itself included

    def dominates(self, a, b):
        """Whether node(s) a dominate node(s) b (each node dominates itself)."""
        return (self.tin[a] <= self.tin[b]) & (self.tin[b] < self.tin[a] + self.subtree[a])


def _np():
    try:
        return numpylib.load()
    except ImportError:
        raise V8DbgError("retained sizes need NumPy (python3-numpy)") from None


# Edges a breadth-first step takes at once: its temporaries (a few 8-byte
# arrays of this length, and as many nodes' offsets) stay a few MB however
# wide a level is.
STEP_EDGES = 1 << 18


def expand(np, first_edge, nodes, limit: int = 0):
    """The edge indices of `nodes`, in order, in pieces of at most `limit` edges
    (CSR ranges at C speed, in bounded memory: a level may hold millions of
    nodes, one node millions of edges)."""
    limit = limit or STEP_EDGES
    for q in range(0, len(nodes), limit):
        part = nodes[q:q + limit]
        starts = first_edge[part].astype(np.int64, copy=False)
        counts = first_edge[part + 1].astype(np.int64, copy=False) - starts
        cum = np.cumsum(counts)
        total = int(cum[-1]) if len(cum) else 0
        for p0 in range(0, total, limit):
            p1 = min(p0 + limit, total)
            i0 = int(np.searchsorted(cum, p0, side="right"))
            i1 = int(np.searchsorted(cum, p1 - 1, side="right")) + 1
            s, c = starts[i0:i1].copy(), counts[i0:i1].copy()
            skip = p0 - (int(cum[i0]) - int(counts[i0]))
            s[0] += skip
            c[0] -= skip
            c[-1] -= int(cum[i1 - 1]) - p1
            yield np.repeat(s - np.cumsum(c) + c, c) + np.arange(p1 - p0, dtype=np.int64)


# Nodes (and edges) a step of `reach` takes at once: in order, a stretch of
# the graph's arrays some MB long (where they are a file's, what is resident).
REACH_PIECE = 1 << 16


def reach(np, first_edge, edge_to, starts, usable):
    """Bool per node: reached from `starts` over the edges `usable` marks.
    Each step takes its nodes in order, a piece at a time, so that a piece
    reads one stretch of the graph's arrays (where they are a file's, its
    pages let go after each piece)."""
    n = len(first_edge) - 1
    seen = np.zeros(n, bool)
    front = unique(np, np.asarray(starts, np.int64))
    seen[front] = True
    stamp = np.empty(n, np.int32)  # for keeping a node found twice in one step once
    while len(front):
        check_interrupted()
        found = []
        for e in expand(np, first_edge, front, REACH_PIECE):
            e = e[usable[e]]
            to = edge_to[e]
            del e
            to = to[~seen[to]]
            # Keep each node once (no sort): the last write of a scatter wins.
            r = np.arange(len(to), dtype=np.int32)
            stamp[to] = r
            to = to[stamp[to] == r]
            seen[to] = True
            found.append(to)  # node indices as edges hold them: 32 bits
            mapped.drop(first_edge, edge_to)  # (the piece's edges read, where a file's)
        front = np.concatenate(found) if found else front[:0]
        front.sort()
    return seen


# Edges looked at in one piece where a pass over all of them is cut in
# pieces (whose temporaries, some 30 bytes an edge, stay near 15 MB).
PIECE_EDGES = 1 << 19


def node_pieces(first_edge, limit: int = 0):
    """(a, b): ranges of nodes whose edges number about `limit` (PIECE_EDGES
    unless given; a node with more alone), together covering every node in
    order."""
    limit = limit or PIECE_EDGES
    n = len(first_edge) - 1
    a = 0
    while a < n:
        b = int(_np().searchsorted(first_edge, int(first_edge[a]) + limit, side="right")) - 1
        b = min(max(b, a + 1), n)
        yield a, b
        a = b


def essential_edges(first_edge, edge_to, edge_type, root: int = 0, not_retaining=None,
                    globals_=None, live=None):
    """Bool per edge: does it retain its target (DevTools' rule, above)?

    `not_retaining` marks more edges that do not: a WeakMap's edge from its
    table to a value (the key's edge to it is the one that counts).
    `globals_` are the global objects of a graph whose root has no shortcut
    edges to them (the heap graph's; a snapshot file's root has them).
    `live` (bool per node): an edge from or into a node it does not mark
    retains nothing (garbage). The edges are judged a piece of nodes at a
    time: no array per edge but the answer and the edges' weakness.
    """
    np = _np()
    usable = edge_type != EDGE_WEAK
    r0, r1 = int(first_edge[root]), int(first_edge[root + 1])
    if globals_ is None:
        globals_ = edge_to[r0:r1][edge_type[r0:r1] == EDGE_SHORTCUT]
    mapped.drop(edge_type)  # (read through; where a file's, let go)
    page = reach(np, first_edge, edge_to, globals_, usable) if len(globals_) else None
    ok = usable
    del usable
    # (Where the graph's arrays are a file's pages: those read let go, after
    # the search and then each piece.)
    mapped.drop(first_edge, edge_to, edge_type)
    for a, b in node_pieces(first_edge):
        e0, e1 = int(first_edge[a]), int(first_edge[b])
        if e0 == e1:
            continue
        src = np.repeat(np.arange(a, b, dtype=np.uint32),
                        np.diff(first_edge[a:b + 1]).astype(np.int64, copy=False))
        to = edge_to[e0:e1]
        o = ok[e0:e1]
        o &= to != src
        if not_retaining is not None:
            o &= ~not_retaining[e0:e1]
        if live is not None:
            o &= live[src] & live[to]
        from_root = src == root
        o &= (edge_type[e0:e1] != EDGE_SHORTCUT) | from_root
        if page is not None:
            o &= ~(page[to] & ~page[src]) | from_root
        mapped.drop(first_edge, edge_to, edge_type)
    return ok


class _TooDeep(Exception):
    """More breadth-first levels than the passes in NumPy do well."""


# Past this many breadth-first levels (a linked list of thousands of objects,
# from the root or from what only weak edges hold), the dominator tree is the
# one of `_deep_tree`.
MAX_LEVELS = 4096


def _levels(np, first, to, n: int, starts, level, lv0: int):
    """Breadth first from `starts` over the CSR (first, to), marking level[] (-1:
    not reached); the nodes found, level by level. Each level is one step in
    NumPy: its edges at once, a node kept once (the first edge to it wins)."""
    front = np.asarray(starts).astype(to.dtype)  # node numbers as `to` holds them
    level[front] = lv0
    out = [front]
    lv = lv0
    while len(front):
        check_interrupted()
        lv += 1
        if lv > MAX_LEVELS:
            raise _TooDeep
        found = []
        for e in expand(np, first, front):
            t = to[e]
            t = t[level[t] < 0]
            # Keep each node once: the last write of a scatter wins, so scatter backwards.
            r = np.arange(len(t), dtype=np.int64)
            level[t[::-1]] = -2 - r[::-1]
            t = t[level[t] == -2 - r]
            level[t] = lv
            found.append(t)
        front = np.concatenate(found) if found else front[:0]
        out.append(front)
    return np.concatenate(out)


def _sort_small(np, keys, top: int):
    """Stable argsort of integer keys in [0, top] (below 2**32): radix passes of 16
    bits, which NumPy sorts in linear time, not a comparison sort."""
    o = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    if top >= 1 << 16:
        o = o[np.argsort((keys[o] >> 16).astype(np.uint16), kind="stable")]
    return o


def _meet(np, x, y, dom) -> None:
    """Nearest common ancestors of the pairs (x[i], y[i]) in the tree `dom`, into x.

    Nodes are numbered so that a node's parent has a smaller number: of two
    different nodes, the greater is never the other's ancestor, so it moves up."""
    k = np.flatnonzero(x != y)
    while len(k):
        check_interrupted()
        xx, yy = x[k], y[k]
        up = xx > yy
        xx = np.where(up, dom[xx], xx)
        yy = np.where(up, yy, dom[yy])
        x[k], y[k] = xx, yy
        k = k[xx != yy]


# Members met at once, from the members themselves, into one stored meet of
# the lowest level of a set's tree of meets: the levels below are not kept.
BLOCK = 8


class _SetMeets:
    """The nearest common ancestor of each of many sets of nodes, as a tree of
    meets per set: level 0 the members, level 1 the meet of each block of
    BLOCK members, each level above the meets of pairs of the one below, the
    top one meet per set. When members move in the tree, only the meets
    above them are made again: after the first passes few of a map's
    million predecessors move, and the rest need no work. Only the levels
    from 1 up are kept (some 4 bytes for every 4 members, beside the
    members' own 4), level 1 made from the members each time it is. Counts
    and offsets are int32 where they fit."""

    def __init__(self, np, members, counts) -> None:
        self.np = np
        self.idt = idt = np.int32 if len(members) < 1 << 31 else np.int64
        self.members = members
        counts = np.asarray(counts, idt)
        self.sets = len(counts)
        self.cnt = [counts]
        if self.sets:
            c = (counts + (BLOCK - 1)) // BLOCK
            self.cnt.append(c)
            while int(c.max()) > 1:
                c = (c + 1) // 2
                self.cnt.append(c)
        self.off = []
        for c in self.cnt:
            o = np.zeros(len(c) + 1, idt)
            np.cumsum(c, out=o[1:])
            self.off.append(o)
        # Each set's smallest member, its meet's first candidate. A member
        # numbered above it is not the meet (an ancestor of that smallest,
        # numbered at most it) but under it: its dominator stands in for it,
        # same meet, and the many predecessors of a map or a shared prototype
        # mostly become one node, met at once.
        self.low = np.minimum.reduceat(members, self.off[0][:-1]) if self.sets \
            else np.zeros(0, members.dtype)
        self.val = [np.zeros(0, np.int32)] + [np.zeros(int(o[-1]), np.int32)
                                              for o in self.off[1:]]

    def _blocks(self, s, c, dom):
        """The meets of blocks `c` of sets `s`, from their members: a row of
        BLOCK per block (a block's last member repeated past its set's end,
        which changes no meet), met pairwise across the row."""
        np = self.np
        lo = self.off[0][s].astype(np.int64) + c.astype(np.int64) * BLOCK
        last = self.off[0][s + 1].astype(np.int64) - 1
        at = lo[:, None] + np.arange(BLOCK, dtype=np.int64)
        np.minimum(at, last[:, None], out=at)
        del lo, last
        v = self.members[at]
        del at
        m = dom[v]
        np.copyto(v, m, where=v > self.low[s][:, None])
        del m
        while v.shape[1] > 1:
            if v.shape[1] % 2:  # (a BLOCK not a power of two: the last one again)
                v = np.concatenate([v, v[:, -1:]], axis=1)
            half = v.shape[1] // 2
            x = v[:, 0::2].astype(np.int32).reshape(-1)  # (copies, in a row)
            y = v[:, 1::2].astype(np.int32).reshape(-1)
            del v
            _meet(np, x, y, dom)
            del y
            v = x.reshape(-1, half)
        return v[:, 0]

    def _level(self, lv: int, s, c, dom):
        """The meets at places `c` of sets `s` of level `lv` (1 up), from the
        level below."""
        if lv == 1:
            return self._blocks(s, c, dom)
        cp, op = self.cnt[lv - 1], self.off[lv - 1]
        below = self.val[lv - 1]
        ch = c * 2
        more = ch + 1 < cp[s]
        ch += op[s]
        x = below[ch]
        ch += more
        del more
        y = below[ch]
        del ch
        _meet(self.np, x, y, dom)
        return x

    def update(self, dom, moved):
        """The sets whose meet in the tree `dom` is made again (all when `moved`
        is None; else those with a member `moved` marks), and those meets."""
        np, idt = self.np, self.idt
        if not self.sets:
            return np.zeros(0, idt), np.zeros(0, np.int32)
        idx = s = None
        if moved is not None:
            # The places of the moved members, a piece of members at a time.
            got = []
            for a in range(0, len(self.members), PIECE_EDGES):
                k = np.flatnonzero(moved[self.members[a:a + PIECE_EDGES]])
                got.append((k + a).astype(idt))
            idx = np.concatenate(got)
            del got
            if 2 * len(idx) > len(self.members):
                idx = None  # most moved: all made again, at less cost per meet
            else:
                s = (np.searchsorted(self.off[0], idx, side="right") - 1).astype(idt)
        step = max(PIECE_EDGES // BLOCK, 1)
        for lv in range(1, len(self.cnt)):
            check_interrupted()
            ol = self.off[lv]
            if idx is None:
                # Every place, a piece at a time (with no array as long as the level).
                for p0 in range(0, int(ol[-1]), step):
                    p1 = min(p0 + step, int(ol[-1]))
                    sp = _sources(np, ol, p0, p1, idt)
                    c = np.arange(p0, p1, dtype=idt)
                    c -= ol[sp]
                    self.val[lv][p0:p1] = self._level(lv, sp, c, dom)
                continue
            c = idx - self.off[lv - 1][s]
            c //= BLOCK if lv == 1 else 2
            if len(c) > 1:
                first = np.ones(len(c), bool)
                first[1:] = (s[1:] != s[:-1]) | (c[1:] != c[:-1])
                s, c = s[first], c[first]
                del first
            idx = ol[s] + c
            for p0 in range(0, len(c), step):
                sl = slice(p0, p0 + step)
                self.val[lv][idx[sl]] = self._level(lv, s[sl], c[sl], dom)
            del c
        top = self.val[len(self.cnt) - 1]  # one meet per set
        if idx is None:
            return np.arange(self.sets, dtype=idt), top.copy()
        return idx, top[idx]


def dominator_tree(first_edge, edge_to, essential, sizes, root: int = 0,
                   from_root=None, whole: bool = True) -> DominatorTree:
    """Immediate dominators and retained sizes over the essential edges: in NumPy
    passes (`_wide_tree`), or for a graph of more than MAX_LEVELS breadth-first
    levels, by `_deep_tree`. `from_root` are nodes given one more edge, from
    the root (the global objects of a graph whose root has no shortcuts).
    Both work on the essential edges' targets made here, `essential` not
    needed past that (a caller that holds no other reference to it has it
    freed before the passes). `sizes`, bytes per node, is an array or what
    gives the sizes of an array of nodes (selfsize.SizesOf), asked a piece
    at a time once the tree is made. Unless `whole`, the tree keeps only
    what set_retained needs (no `idom`, no `order`: 8 bytes a node)."""
    np = _np()
    n = len(first_edge) - 1
    sfirst, dst = _targets(np, first_edge, edge_to, essential, root, from_root,
                           np.int32 if n < 1 << 31 else np.int64)
    del essential
    mapped.drop(first_edge, edge_to)  # (a file's pages, where they are: read through)
    free_pages()  # (and the other graph arrays' pages, what the essential edges left)
    # Handed over in a list, which the one that makes the tree empties: it
    # lets them go when done with them.
    edges = [sfirst, dst]
    del sfirst, dst
    try:
        return _wide_tree(np, edges, sizes, root, whole)
    except _TooDeep:
        pass  # (out of the handler: its traceback would hold the passes' arrays)
    return _deep_tree(np, edges, sizes, root, whole)


def _targets(np, first_edge, edge_to, essential, root: int, from_root, dtype):
    """(CSR offsets, targets) of the essential edges but those from a node to
    itself, with the root's edges to `from_root` first among the root's; made
    a piece of nodes at a time, with no array of their sources (`_sources`
    makes a piece of them again where needed). The targets are in a
    temporary file's pages (mapped.py), as the graph's edges: the passes
    read them a piece at a time, the pages read let go after each."""
    n = len(first_edge) - 1
    keep = np.asarray(essential, bool)
    more = np.asarray(from_root if from_root is not None else [], np.int64)
    more = more[more != root].astype(dtype)
    dst = mapped.file_array(np, int(np.count_nonzero(keep)) + len(more), dtype)
    deg = np.zeros(n, np.int64)
    at = 0
    # (A piece that holds the root split there: its edges to `from_root` go
    # before its own, after those of the nodes before it.)
    pieces = [q for a, b in node_pieces(first_edge)
              for q in ([(a, root), (root, b)] if a < root < b else [(a, b)])]
    for a, b in pieces:
        e0, e1 = int(first_edge[a]), int(first_edge[b])
        if a == root and len(more):
            dst[at:at + len(more)] = more
            at += len(more)
            deg[root] += len(more)
        if e0 == e1:
            continue
        src = np.repeat(np.arange(a, b, dtype=dtype),
                        np.diff(first_edge[a:b + 1]).astype(np.int64, copy=False))
        to = edge_to[e0:e1]
        k = keep[e0:e1] & (to != src)
        src = src[k]
        dst[at:at + len(src)] = to[k]
        at += len(src)
        deg[a:b] += np.bincount(src - a, minlength=b - a)
        mapped.drop(dst, first_edge, edge_to)  # (written, and read: in the files' pages)
    sfirst = np.zeros(n + 1, np.int32 if at < 1 << 31 else np.int64)
    np.cumsum(deg, out=sfirst[1:], dtype=sfirst.dtype)
    return sfirst, dst[:at]


def _sources(np, sfirst, e0: int, e1: int, dtype):
    """The source of each edge e0 .. e1-1 of the CSR offsets `sfirst`."""
    a = int(np.searchsorted(sfirst, e0, side="right")) - 1
    b = int(np.searchsorted(sfirst, e1, side="left"))
    cnt = np.diff(np.clip(sfirst[a:b + 1], e0, e1).astype(np.int64))
    return np.repeat(np.arange(a, b, dtype=dtype), cnt)


def _by_set(np, sfirst, dst, rid, num, targets, counts):
    """The numbers of the sources of the edges into `targets` (nodes, `counts`
    edges into each), grouped by target in the targets' order, each group in
    the edges' order: a stable counting sort, a piece of edges at a time (no
    index array as long as all). `rid`, an int32 per node, is overwritten
    (each target's place among them, -1 for other nodes): the in-degrees',
    done with, where the tree makes them."""
    sets = len(targets)
    rid.fill(-1)
    rid[targets] = np.arange(sets, dtype=np.int32)
    out = np.empty(int(counts.sum(dtype=np.int64)), np.int32)
    cur = np.zeros(sets, np.int64)  # where each set's next member goes
    np.cumsum(counts[:-1], out=cur[1:])
    step = max(PIECE_EDGES // 4, 1)
    for a in range(0, len(dst), step):
        k = rid[dst[a:a + step]]
        sel = k >= 0
        k = k[sel]
        mapped.drop(dst)  # (the piece read: its pages let go, where a file's)
        if not len(k):
            continue
        _place(np, k, sets, num[_sources(np, sfirst, a, a + len(sel), np.int32)[sel]], cur, out)
    return out


def _place(np, keys, top: int, vals, cur, out) -> None:
    """One piece of a stable counting sort: each of `vals` into `out` at the
    next free place of its key's group (`cur`, advanced), in their order."""
    o = np.argsort(keys.astype(np.uint16), kind="stable") if top <= 1 << 16 else \
        _sort_small(np, keys, top)
    k, v = keys[o], vals[o]
    del o
    head = np.ones(len(k), bool)
    np.not_equal(k[1:], k[:-1], out=head[1:])
    starts = np.flatnonzero(head)
    del head
    runs = np.diff(np.append(starts, len(k)))
    # Each one's place: its group's next free one, plus its rank in its run.
    rank = np.arange(len(k), dtype=np.int64) - np.repeat(starts, runs)
    out[cur[k] + rank] = v
    cur[k[starts]] += runs


def _children(np, dom, n: int):
    """(kfirst, kids): the children of each node by number, kids[kfirst[v]:
    kfirst[v+1]] in the order of their numbers; counted and placed a piece
    of nodes at a time (a stable counting sort, with no array of 64 bits
    per node)."""
    kfirst = np.zeros(n + 1, np.int32)
    for a in range(1, n, TREE_PIECE):
        u, c = np.unique(dom[a:a + TREE_PIECE], return_counts=True)
        kfirst[u + 1] += c.astype(np.int32)
    np.cumsum(kfirst, out=kfirst)
    cur = kfirst[:-1].copy()
    kids = np.empty(max(n - 1, 0), np.int32)
    for a in range(1, n, TREE_PIECE):
        d = dom[a:a + TREE_PIECE]
        _place(np, d, n, np.arange(a, a + len(d), dtype=np.int32), cur, kids)
    return kfirst, kids


# Nodes whose arrays the tree's last steps (children, sums, preorder, the
# arrays by node) work on at once: their temporaries, some 40 bytes a node,
# a few MB beside the tree's own arrays.
TREE_PIECE = 1 << 17


def _by_node(np, order, by_number, dtype):
    """An array by node of what `by_number` holds by number, a piece at a time
    (no index array of 64 bits as long as all; where `by_number` is a
    file's, each piece's pages let go once read)."""
    out = np.empty(len(order), dtype)
    for a in range(0, len(order), TREE_PIECE):
        out[order[a:a + TREE_PIECE]] = by_number[a:a + TREE_PIECE]
        mapped.drop(by_number)
    return out


def _aside(np, a):
    """`a` in a temporary file's pages (mapped.aside), its memory freed by
    the caller's letting go of it; `a` itself where no file can be made."""
    out = mapped.aside(np, [a], a.dtype)
    return a if out is None else out


def _by_number(np, sizes, order):
    """sizes[order] as uint64, asked a piece of nodes at a time."""
    if not hasattr(sizes, "__getitem__") or isinstance(sizes, (list, tuple)):
        sizes = np.asarray(sizes, np.uint64)
    out = np.empty(len(order), np.uint64)
    for a in range(0, len(order), PIECE_EDGES):
        out[a:a + PIECE_EDGES] = sizes[order[a:a + PIECE_EDGES]]
    return out


def _wide_tree(np, edges: list, sizes, root: int = 0, whole: bool = True) -> DominatorTree:
    """Immediate dominators and retained sizes over the essential edges.

    The iterative algorithm of Cooper, Harvey and Kennedy, each pass over all
    nodes at once in NumPy: nodes numbered breadth first (a dominator is on every
    path, the shortest too, so it has a smaller level), every node's candidate
    starts as a predecessor of a smaller level, and each pass sets a node's
    candidate to the nearest common ancestor of its predecessors in the tree of
    candidates, until nothing changes (the same unique tree as Lengauer-Tarjan).
    A node with one predecessor has it as immediate dominator, and is never
    looked at again; nodes with the same two predecessors are met once; a pass
    recomputes only nodes a predecessor of which moved in the tree. The
    predecessors of a node with more (a map's, a prototype's: millions in
    all) are kept in a tree of pairwise meets (`_SetMeets`), where a pass
    makes again only the meets above predecessors that moved. Arrays are
    int32 where a node number or a count fits, and freed when done with:
    `edges` (the essential edges' CSR offsets and targets, `_targets`) is
    emptied once the levels are made, so that they go once the sets are.
    More levels than MAX_LEVELS raise _TooDeep before that, `edges` left
    whole for `_deep_tree`.
    """
    sfirst, dst = edges
    n = len(sfirst) - 1

    # Levels: breadth first from the root; then what only weak edges hold (no
    # predecessor at all), each such node hung from the root; then what is left
    # (cycles of garbage), each node on its own under the root.
    level = np.full(n, -1, np.int32)
    order = _levels(np, sfirst, dst, n, [root], level, 0)
    mapped.drop(dst)  # (read throughout by the levels, where a file's)
    # (A piece of edges at a time: bincount makes a 64-bit copy of its input,
    # and a 64-bit count per node, each piece.)
    indeg = np.zeros(n, np.int32)
    for a in range(0, len(dst), PIECE_EDGES):
        indeg += np.bincount(dst[a:a + PIECE_EDGES], minlength=n).astype(np.int32)
        mapped.drop(dst)
    free_pages()  # (the levels' and the counts' temporaries)
    hung = np.zeros(0, np.int64)
    if len(order) < n:
        free = np.flatnonzero((indeg == 0) & (level < 0))
        free = free[free != root]
        more = _levels(np, sfirst, dst, n, free, level, 1) if len(free) else free
        cycles = np.flatnonzero(level < 0)
        level[cycles] = 1
        hung = np.concatenate([free, cycles])
        order = np.concatenate([order, more, cycles]).astype(np.int32)
        lv = level[order]
        order = order[_sort_small(np, lv, int(lv.max()))]
        del lv
    edges.clear()  # (the levels made: no _deep_tree now)
    hung_count = len(hung)
    num = np.empty(n, np.int32)  # node -> number (order: number -> node)
    num[order] = np.arange(n, dtype=np.int32)
    lvl = level[order]
    del level
    bounds = np.flatnonzero(np.diff(lvl)) + 1  # where each level starts, after level 0
    spans = list(zip(bounds.tolist(), bounds[1:].tolist() + [n]))
    del lvl, bounds

    # Candidates: a node's one predecessor; for more, the smallest (a level before).
    # The root, and the nodes hung from it, have theirs already: the root.
    indeg[hung] = 0
    indeg[root] = 0
    del hung
    dom = np.zeros(n, np.int32)
    last = np.zeros(n, np.int32)
    m = len(dst)
    for a in range(0, m, PIECE_EDGES):  # by node: its last predecessor, the one where it has one
        last[dst[a:a + PIECE_EDGES]] = _sources(np, sfirst, a, min(a + PIECE_EDGES, m), np.int32)
        mapped.drop(dst)  # (the piece read: its pages let go)
    dom[num] = num[last]
    del last
    dom[indeg[order] == 0] = 0

    # Nodes with two predecessors: the last (their candidate now) and the
    # first (a scatter backwards); each distinct pair met once.
    pn = np.flatnonzero(indeg[order] == 2).astype(np.int32)  # by number, ascending
    pb = dom[pn]
    first = np.zeros(n, np.int32)
    for a in reversed(range(0, m, PIECE_EDGES)):
        first[dst[a:a + PIECE_EDGES][::-1]] = \
            _sources(np, sfirst, a, min(a + PIECE_EDGES, m), np.int32)[::-1]
        mapped.drop(dst)
    pa = num[first[order[pn]]]
    del first
    dom[pn] = np.minimum(pa, pb)
    key = np.minimum(pa, pb).astype(np.int64) * n + np.maximum(pa, pb)
    del pa, pb
    key, pinv = np.unique(key, return_inverse=True)
    pinv = pinv.astype(np.int32)
    ua, ub = (key // n).astype(np.int32), (key % n).astype(np.int32)
    del key
    free_pages()  # (the pairs' temporaries)
    # The others: their predecessors met pairwise, in a tree of meets per set,
    # grouped by set (a counting sort, a piece of edges at a time).
    rn = np.flatnonzero(indeg[order] > 2).astype(np.int32)  # by number, ascending
    rcnt = indeg[order[rn]]
    rms = _by_set(np, sfirst, dst, indeg, num, order[rn], rcnt)
    del indeg, sfirst, dst, num
    meets = _SetMeets(np, rms, rcnt)
    del rms, rcnt
    dom[rn] = meets.low
    free_pages()  # (the edges' arrays, done with: not kept for the passes' reuse)

    # The first pass meets only the pairs: most nodes of the sets lie under
    # pairs (a Session under its two holders), and would all move after it.
    moved = None
    sets_done = False
    while True:
        check_interrupted()
        if moved is None:
            pdirty = np.ones(len(ua), bool)
        else:
            # Moved in the tree: what moved, and everything under it, level by level.
            for a, b in spans:
                moved[a:b] |= moved[dom[a:b]]
            pdirty = moved[ua] | moved[ub]
        x, y = ua[pdirty], ub[pdirty]
        _meet(np, x, y, dom)
        pres = dom[pn]
        got = np.full(len(ua), -1, np.int32)
        got[pdirty] = x
        pw = got[pinv] >= 0
        pres[pw] = got[pinv][pw]
        rres = dom[rn]
        if moved is not None:
            # A meet of nodes none of which moved is the same in the new tree.
            rs, rv = meets.update(dom, moved if sets_done else None)
            rres[rs] = rv
            sets_done = True
        moved = np.zeros(n, bool)
        moved[pn] = pres != dom[pn]
        moved[rn] = rres != dom[rn]
        if sets_done and not moved.any():
            break
        dom[pn] = pres
        dom[rn] = rres
    del moved, ua, ub, pinv, meets
    free_pages()  # (the passes' temporaries and the meets: not kept for the sums)

    # Children of each node, by number: kids[kfirst[v]:kfirst[v+1]].
    kfirst, kids = _children(np, dom, n)
    # Retained sizes and subtree counts: deepest level first, each node's
    # children (all of a deeper level, done) summed into it.
    ret = _by_number(np, sizes, order)
    del sizes
    sub = np.ones(n, np.int32)
    for a0, b0 in reversed([(0, 1)] + spans):
        check_interrupted()
        # (The level's parents a piece at a time, by their children's count.)
        for a, b in node_pieces(kfirst[a0:b0 + 1], TREE_PIECE):
            a, b = a + a0, b + a0
            k0, k1 = int(kfirst[a]), int(kfirst[b])
            if k0 == k1:
                continue
            at = kfirst[a:b + 1] - k0
            k = kids[k0:k1]
            for arr in (ret, sub):
                c = np.zeros(k1 - k0 + 1, arr.dtype)
                np.cumsum(arr[k], out=c[1:])
                arr[a:b] += c[at[1:]] - c[at[:-1]]
    # Preorder places in the dominator tree: a node's subtree is tin .. tin+subtree-1,
    # siblings in the order of their numbers.
    # A child's place among its parent's subtree: the nodes of the subtrees of
    # the siblings before it. Its siblings are together in kids, so the count
    # is the nodes of the subtrees of every child before it there, less those
    # before its first sibling; a piece of children at a time (no temporary
    # as long as all), the count at the start of the last parent's children
    # carried into the next piece.
    # The sums are done: the retained sizes (8 bytes a node) wait in a
    # temporary file's pages until placed by node, and the preorder's arrays
    # take their place.
    ret = _aside(np, ret)
    off = np.zeros(n, np.int32)
    total = start = 0
    for a in range(0, len(kids), TREE_PIECE):
        k = kids[a:a + TREE_PIECE]
        s_ = sub[k].astype(np.int64)
        before = np.cumsum(s_)
        before -= s_
        before += total
        total += int(s_.sum())
        del s_
        g = kfirst[dom[k]].astype(np.int64)  # where each one's siblings start in kids
        g -= a
        here = g >= 0  # (else they start in a piece before: at `start`)
        base = np.full(len(k), start, np.int64)
        base[here] = before[g[here]]
        if g[-1] >= 0:
            start = int(before[g[-1]])
        off[k] = before - base
    del kids, kfirst
    tin = np.zeros(n, np.int32)
    for a0, b0 in spans:
        for a in range(a0, b0, TREE_PIECE):  # (parents: of a level before, placed)
            b = min(a + TREE_PIECE, b0)
            tin[a:b] = tin[dom[a:b]] + 1 + off[a:b]
    del off

    # By node, each array let go once placed.
    idom = None
    if whole:
        for a in range(0, n, TREE_PIECE):
            dom[a:a + TREE_PIECE] = order[dom[a:a + TREE_PIECE]]  # (by number: nodes)
        idom = _by_node(np, order, dom, np.uint32)
    del dom
    retained = _by_node(np, order, ret, np.uint64)
    del ret
    tin_a = _by_node(np, order, tin, np.uint32)
    del tin
    sub_a = _by_node(np, order, sub, np.uint32)
    del sub
    order = None if not whole else \
        order.view(np.uint32) if order.dtype == np.int32 else order.astype(np.uint32)
    return DominatorTree(idom, retained, order, hung_count, tin_a, sub_a)


def _deep_tree(np, edges: list, sizes, root: int = 0, whole: bool = True) -> DominatorTree:
    """Immediate dominators (semi-NCA Lengauer-Tarjan, its loops over typed arrays)
    and retained sizes, for a graph too deep for the passes in NumPy: each
    breadth-first level costs those some tens of microseconds, this about a
    microsecond per edge, however deep. `edges`: the essential edges' CSR
    offsets and targets (`_targets`), in a list this empties."""
    sfirst, dst = edges
    edges.clear()
    n = len(sfirst) - 1
    # Successors over essential edges only, as typed arrays for the DFS.
    succ = array('q', dst.astype(np.int64).tobytes())
    sfirst_l = array('q', sfirst.astype(np.int64).tobytes())
    mapped.drop(dst)  # (where a file's: read through)

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
    psrc = numa[_sources(np, sfirst, 0, len(dst), np.int64)]
    pdst = numa[dst]
    mapped.drop(dst)
    del sfirst, dst
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
    idom = None
    if whole:
        idom = np.empty(n, np.uint32)
        idom[vert[1:]] = vert[idn[1:]]
    # Retained sizes: each node added into its dominator, deepest numbers first.
    ret = array('Q', _by_number(np, sizes, vert).tobytes())  # by DFS number (index 0 unused)
    del sizes
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
    order = vert[1:].astype(np.uint32) if whole else None
    return DominatorTree(idom, retained, order, len(hung), tin_a, sub_a)



def set_retained(tree: DominatorTree, members, group) -> Any:
    """Retained size of each set of nodes: the retained sizes of its members that
    no other member of the same set dominates, summed.

    `members` are node indices, `group` the set each belongs to (integers from
    0). A member inside another's dominator subtree is already counted there.
    """
    np = _np()
    members = np.asarray(members)
    group = np.asarray(group)
    k = int(group.max()) + 1 if len(group) else 0
    if not len(members):
        return np.zeros(k, np.uint64)
    if len(members) > SET_PIECE and bool((group[1:] >= group[:-1]).all()):
        # Each set's members together: some SET_PIECE members at a time (a
        # larger set alone), whole sets each, the sort's temporaries bounded.
        heads = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
        out = np.zeros(k, np.uint64)
        n, a = len(members), 0
        while a < n:
            b = n
            if a + SET_PIECE < n:
                j = int(np.searchsorted(heads, a + SET_PIECE, side="right"))
                b = int(heads[j - 1])  # (a is a head: j >= 1)
                if b <= a:  # a set larger than a piece: alone
                    b = int(heads[j]) if j < len(heads) else n
            out += _set_retained(np, tree, members[a:b], group[a:b], k)
            a = b
        return out
    return _set_retained(np, tree, members, group, k)


# Members whose sets' retained sizes are summed at once, at most (but for a
# set larger than that): some 40 bytes of temporaries each.
SET_PIECE = 1 << 18


def _set_retained(np, tree: DominatorTree, members, group, k: int) -> Any:
    """set_retained of members given in any order."""
    span = np.int64(len(tree.tin) + 1)
    # Sorted by (set, preorder place); each array made from the sort's result
    # and the one before it let go, at most four per member held at once.
    start = np.multiply(group, span, dtype=np.int64)
    start += tree.tin[members]
    o = np.argsort(start, kind="stable")
    start = start[o]
    members = members[o]
    group = group[o]
    del o
    end = start + tree.subtree[members]
    # Dominator subtrees nest or are apart: a member is covered when it starts
    # before the furthest end of the members of its set before it.
    np.maximum.accumulate(end, out=end)
    top = np.ones(len(start), bool)
    np.greater_equal(start[1:], end[:-1], out=top[1:])
    del start, end
    return np.bincount(group[top], weights=tree.retained[members[top]].astype(np.float64),
                       minlength=k).astype(np.uint64)


def retained_sizes(first_edge, edge_to, edge_type, sizes, root: int = 0,
                   not_retaining=None) -> DominatorTree:
    """The dominator tree and retained sizes of a heap graph, by DevTools' rules."""
    return dominator_tree(first_edge, edge_to,
                          essential_edges(first_edge, edge_to, edge_type, root, not_retaining),
                          sizes, root)
