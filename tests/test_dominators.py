"""Retained sizes by v8dbg's dominator tree against Chrome DevTools' own.

On every pinned line, census_mixed.js writes `v8.writeHeapSnapshot()` just
before it aborts. That snapshot is read into the array form of v8dbg's heap
graph (tests/heapsnapshot.py) and v8dbg.heap.dominators computes every
node's immediate dominator and retained size; DevTools' snapshot worker
(the chrome-devtools-frontend package from npm, tests/tools/) computes them
from the same file. Both must agree on every node, exactly. DevTools first
moves the sizes of hidden and array nodes into their one owner: its self
sizes are the input, so what is compared is the dominator tree and the sums.

A small graph with a known tree checks the rules themselves: weak edges,
self edges and shortcuts away from the root never retain; a node held only
weakly, and a cycle of garbage, hang from the root.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import heapsnapshot
from support import VERSIONS, make_core
from v8dbg.heap import dominators as D


@lru_cache(maxsize=None)
def mixed_snapshot(version: str):
    return make_core(version, "census_mixed.js") / "mixed.heapsnapshot"


@pytest.mark.parametrize("deep", [False, True], ids=["numpy", "deep"])
@pytest.mark.parametrize("version", VERSIONS)
def test_every_node_as_devtools(version, deep, monkeypatch):
    """Both ways of making the tree: the NumPy passes, and the one for graphs
    of very many breadth-first levels (forced here with a bound of one level)."""
    if deep:
        monkeypatch.setattr(D, "MAX_LEVELS", 1)
    path = mixed_snapshot(version)
    snap = heapsnapshot.read(path)
    ref = heapsnapshot.devtools(path)
    assert (ref.ids == snap.ids).all()
    tree = D.retained_sizes(snap.first_edge, snap.edge_to, snap.edge_type, ref.self_sizes, 0,
                            snap.weakmap_table_edges())
    wrong_dom = np.flatnonzero(snap.ids[tree.idom] != ref.dominator)
    wrong_ret = np.flatnonzero(tree.retained != ref.retained)
    assert not len(wrong_dom), [(snap.name(i), int(snap.ids[i])) for i in wrong_dom[:10]]
    assert not len(wrong_ret), [(snap.name(i), int(tree.retained[i]), int(ref.retained[i]))
                                for i in wrong_ret[:10]]
    # The root holds the whole heap; a real graph, not a trivial one.
    assert tree.retained[0] == ref.self_sizes.sum()
    assert len(snap.ids) > 50_000 and len(np.unique(tree.idom)) > 10_000


def _graph(n: int, edges: list[tuple[int, int, int]]):
    edges = sorted(edges, key=lambda e: e[0])
    first = np.zeros(n + 1, np.int64)
    for s, _, _ in edges:
        first[s + 1] += 1
    first = np.cumsum(first)
    to = np.asarray([t for _, t, _ in edges], np.uint32)
    typ = np.asarray([k for _, _, k in edges], np.uint8)
    return first, to, typ


def test_rules_on_a_small_graph():
    P, W, S, I = D.EDGE_PROPERTY, D.EDGE_WEAK, D.EDGE_SHORTCUT, D.EDGE_INTERNAL
    # 0 root -> 1 (GC roots) -> 2, 3; 2 and 3 both -> 4 -> 5; 5 -> 5 (self);
    # 1 -> 6 only weakly; 7 <-> 8 (garbage cycle); 2 -> 9 by a shortcut (does not retain),
    # 3 -> 9 by a property; 0 -> 10 by a shortcut (a global) -> 11; 1 -> 11 from outside
    # what the global reaches (does not retain it).
    edges = [(0, 1, I), (1, 2, P), (1, 3, P), (2, 4, P), (3, 4, P), (4, 5, P), (5, 5, P),
             (1, 6, W), (7, 8, P), (8, 7, P), (2, 9, S), (3, 9, P), (0, 10, S), (10, 11, P),
             (1, 11, P)]
    first, to, typ = _graph(12, edges)
    sizes = np.asarray([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], np.uint64)
    t = D.retained_sizes(first, to, typ, sizes)
    assert t.idom.tolist() == [0, 0, 1, 1, 1, 4, 0, 0, 0, 3, 0, 10]
    assert t.hung_from_root == 3  # 6, and the cycle's 7 and 8
    assert t.retained[4] == 8 + 16 and t.retained[3] == 4 + 256
    assert t.retained[1] == 1 + 2 + 4 + 8 + 16 + 256
    assert t.retained[10] == 512 + 1024
    assert t.retained[0] == sizes.sum()


def test_set_retained_counts_nothing_twice():
    """A set's retained size: its members' retained sizes, less those inside
    another member's dominator subtree (here 4 is inside 1's, 2 and 3 apart)."""
    P = D.EDGE_PROPERTY
    # 0 -> 1 -> 2, 1 -> 4; 0 -> 3; 2 -> 5, 3 -> 5 (5 dominated by the root only)
    first, to, typ = _graph(6, [(0, 1, P), (1, 2, P), (1, 4, P), (0, 3, P), (2, 5, P), (3, 5, P)])
    sizes = np.asarray([0, 1, 2, 4, 8, 16], np.uint64)
    t = D.retained_sizes(first, to, typ, sizes)
    assert t.retained.tolist() == [31, 11, 2, 4, 8, 16]
    assert bool(t.dominates(1, 4)) and not bool(t.dominates(2, 5)) and bool(t.dominates(0, 5))
    got = D.set_retained(t, [1, 4, 2, 3, 5, 4], [0, 0, 1, 1, 2, 3])
    assert got.tolist() == [11, 2 + 4, 16, 8]


def test_steps_in_bounded_pieces(monkeypatch):
    """Breadth-first steps take a level's edges a bounded piece at a time: every
    edge once and in order, whatever the bound, and the same tree from pieces
    of a few hundred edges as from one piece (a real heap: node 24's mixed one)."""
    first = np.asarray([0, 3, 3, 10, 12], np.int64)
    nodes = np.asarray([0, 1, 2, 3, 2], np.int64)
    want = np.concatenate([np.arange(first[i], first[i + 1]) for i in nodes])
    for limit in (1, 2, 3, 5, 7, 100):
        pieces = list(D.expand(np, first, nodes, limit))
        assert all(len(p) <= limit for p in pieces)
        assert np.concatenate(pieces).tolist() == want.tolist()
    snap = heapsnapshot.read(mixed_snapshot("24.21.0"))
    sizes = np.ones(len(snap.ids), np.uint64)
    whole = D.retained_sizes(snap.first_edge, snap.edge_to, snap.edge_type, sizes)
    monkeypatch.setattr(D, "STEP_EDGES", 300)
    pieces = D.retained_sizes(snap.first_edge, snap.edge_to, snap.edge_type, sizes)
    assert (pieces.idom == whole.idom).all() and (pieces.retained == whole.retained).all()
    assert len(snap.ids) > 50_000


@pytest.mark.parametrize("deep", [False, True], ids=["numpy", "deep"])
def test_pieces_of_nodes_give_the_same_tree(deep, monkeypatch):
    """The essential edges, the tree's edges' targets, the sets' members and their
    meets are made a piece of nodes or edges at a time: pieces of a hundred
    edges (a node's edges split between two, the root's edges to the globals
    among its own) give what one piece gives, with globals, a mask of live
    nodes and set_retained too (a real heap: node 24's mixed one)."""
    snap = heapsnapshot.read(mixed_snapshot("24.21.0"))
    n = len(snap.ids)
    rng = np.random.default_rng(19)
    sizes = rng.integers(1, 1000, n).astype(np.uint64)
    live = rng.random(n) > 0.01
    live[0] = True
    glob = np.sort(rng.choice(np.arange(1, n), 5, replace=False))
    members, group = rng.integers(0, n, 5000), rng.integers(0, 40, 5000)
    if deep:
        monkeypatch.setattr(D, "MAX_LEVELS", 1)

    def run():
        ess = D.essential_edges(snap.first_edge, snap.edge_to, snap.edge_type, 0, None, glob,
                                live)
        t = D.dominator_tree(snap.first_edge, snap.edge_to, ess, sizes, 0, glob)
        return ess, t, D.set_retained(t, members, group)

    ess, whole, sets = run()
    monkeypatch.setattr(D, "PIECE_EDGES", 101)
    monkeypatch.setattr(D, "STEP_EDGES", 300)
    assert len(list(D.node_pieces(snap.first_edge))) > 1000
    ess2, pieces, sets2 = run()
    assert (ess == ess2).all() and (~ess).any() and ess.any()
    for f in ("idom", "retained", "order", "tin", "subtree"):
        assert (getattr(pieces, f) == getattr(whole, f)).all(), f
    assert (sets == sets2).all() and sets.sum() > 0
    assert whole.hung_from_root == pieces.hung_from_root


@pytest.mark.parametrize("deep", [False, True], ids=["numpy", "deep"])
def test_what_set_retained_needs_alone(deep, monkeypatch):
    """findjsobjects --retained keeps of the tree only what set_retained reads
    (whole=False: no immediate dominators, no order): the same retained
    sizes, preorder places and subtrees as the whole tree, and the same
    sets' sizes (a real heap: node 24's mixed one)."""
    if deep:
        monkeypatch.setattr(D, "MAX_LEVELS", 1)
    snap = heapsnapshot.read(mixed_snapshot("24.21.0"))
    rng = np.random.default_rng(29)
    sizes = rng.integers(1, 1000, len(snap.ids)).astype(np.uint64)
    ess = D.essential_edges(snap.first_edge, snap.edge_to, snap.edge_type)
    whole = D.dominator_tree(snap.first_edge, snap.edge_to, ess, sizes)
    part = D.dominator_tree(snap.first_edge, snap.edge_to, ess, sizes, whole=False)
    assert part.idom is None and part.order is None and whole.idom is not None
    for f in ("retained", "tin", "subtree"):
        assert (getattr(part, f) == getattr(whole, f)).all(), f
    members, group = rng.integers(0, len(snap.ids), 3000), np.sort(rng.integers(0, 30, 3000))
    assert (D.set_retained(part, members, group) == D.set_retained(whole, members, group)).all()
    assert part.hung_from_root == whole.hung_from_root


def test_a_long_chain_either_way(monkeypatch):
    """A linked list 20,000 long (each link also held back by the next, all of
    them holding one shared node): past MAX_LEVELS levels the tree is made the
    other way, and both ways give each link the one before as dominator."""
    P = D.EDGE_PROPERTY
    n = 20_002
    edges = [(0, 1, P), (0, 2, P)]
    for k in range(2, n - 1):
        edges += [(k, k + 1, P), (k, 1, P), (k, k - 1 if k > 2 else 1, P)]
    edges.append((n - 1, 1, P))
    for t in _either_way(monkeypatch, n, edges, 4096):
        assert t.idom[3:].tolist() == list(range(2, n - 1)) and t.idom[1] == 0
        assert t.retained[2] == n - 2 and t.retained[0] == n


def _either_way(monkeypatch, n: int, edges, bound: int):
    """The trees of a graph of n nodes (edges: (from, to, type)), one of the
    NumPy passes, one made by `_deep_tree` past `bound` levels; their
    preorder places and subtrees the same."""
    first, to, typ = _graph(n, edges)
    sizes = np.ones(n, np.uint64)
    trees = []
    for levels in (10 ** 9, bound):
        monkeypatch.setattr(D, "MAX_LEVELS", levels)
        trees.append(D.retained_sizes(first, to, typ, sizes))
    assert (trees[0].subtree == trees[1].subtree).all()
    assert (trees[0].tin == trees[1].tin).all()
    return trees


def test_a_weakly_held_chain_either_way(monkeypatch):
    """A chain only a weak edge holds (root -> 1, 1 -weak-> 2 -> 3 -> ...):
    its head is hung from the root, and the breadth-first search from it,
    not the root's, passes MAX_LEVELS: the tree is made the other way, the
    same (each link dominated by the one before, the head by the root)."""
    P, W = D.EDGE_PROPERTY, D.EDGE_WEAK
    n = 3000
    edges = [(0, 1, P), (1, 2, W)] + [(k, k + 1, P) for k in range(2, n - 1)]
    for t in _either_way(monkeypatch, n, edges, 100):
        assert t.idom[:3].tolist() == [0, 0, 0] and t.idom[3:].tolist() == list(range(2, n - 1))
        assert t.hung_from_root == 1 and t.retained[2] == n - 2 and t.retained[0] == n


def _brute_idom(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Immediate dominators by the definition: d dominates v when v is out of
    the root's reach once d is gone; the immediate one is the dominator that
    every other dominator of v dominates (the root's own is the root)."""
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        succ[a].append(b)

    def reached(without: int) -> set[int]:
        seen, todo = {0}, [0]
        while todo:
            for w in succ[todo.pop()]:
                if w != without and w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    everything = reached(-1)
    assert len(everything) == n
    doms = {v: {0, v} for v in range(n)}
    for d in range(1, n):
        for v in everything - reached(d):
            doms[v].add(d)
    idom = [0] * n
    for v in range(1, n):
        strict = doms[v] - {v}
        idom[v] = next(d for d in strict if strict <= doms[d])
    return idom


@pytest.mark.parametrize("deep", [False, True], ids=["numpy", "deep"])
def test_random_graphs_against_the_definition(deep, monkeypatch):
    """Small random graphs with cycles, loops, repeated edges and nodes of many
    predecessors (meets of sets that move over several passes): every immediate
    dominator as the definition gives it, and retained sizes as its sums."""
    if deep:
        monkeypatch.setattr(D, "MAX_LEVELS", 1)
    rng = np.random.default_rng(18)
    P = D.EDGE_PROPERTY
    passes = 0
    for _ in range(300):
        n = int(rng.integers(4, 40))
        m = int(rng.integers(n, 4 * n))
        # Every node reached: each hangs from one before it in a random order.
        at = [0] + (rng.permutation(n - 1) + 1).tolist()
        edges = [(at[int(rng.integers(0, k))], at[k]) for k in range(1, n)]
        edges += [(int(a), int(b)) for a, b in zip(rng.integers(0, n, m), rng.integers(1, n, m))]
        hub = int(rng.integers(1, n))  # a node many others point at, as at a map
        edges += [(int(a), hub) for a in rng.integers(0, n, n // 2)]
        first, to, typ = _graph(n, [(a, b, P) for a, b in edges])
        sizes = rng.integers(1, 1000, n).astype(np.uint64)
        t = D.retained_sizes(first, to, typ, sizes)
        want = _brute_idom(n, [(a, b) for a, b in edges if a != b])
        assert t.idom.tolist() == want, edges
        ret = sizes.copy()
        for v in sorted(range(1, n), key=lambda v: -int(np.flatnonzero(t.order == v)[0])):
            ret[want[v]] += ret[v]
        assert t.retained.tolist() == ret.tolist()
        passes += 1
    assert passes == 300


def test_sets_in_pieces_give_the_same_sizes(monkeypatch):
    """Members given set by set (as findjsobjects --retained gives a row's
    objects together) are summed some SET_PIECE at a time, whole sets each
    (a larger set alone): pieces of a few dozen members, and of one, give
    what one piece gives (a real heap: node 24's mixed one)."""
    snap = heapsnapshot.read(mixed_snapshot("24.21.0"))
    n = len(snap.ids)
    rng = np.random.default_rng(23)
    sizes = rng.integers(1, 1000, n).astype(np.uint64)
    t = D.retained_sizes(snap.first_edge, snap.edge_to, snap.edge_type, sizes)
    group = np.sort(np.concatenate([rng.integers(0, 60, 5000), np.full(400, 17)]))
    members = rng.integers(0, n, len(group))
    want = D.set_retained(t, members, group)
    for piece in (37, 1):
        monkeypatch.setattr(D, "SET_PIECE", piece)
        assert (D.set_retained(t, members, group) == want).all(), piece
    assert want.sum() > 0 and len(want) == 60


def test_retained_sizes_wait_in_a_file(monkeypatch):
    """Once summed, the retained sizes (8 bytes a node) wait in a temporary
    file's pages while the preorder's arrays are made, and are placed by
    node from there: the same sizes as when they stay in memory (a real
    heap: node 24's mixed one)."""
    from v8dbg.heap import mapped
    snap = heapsnapshot.read(mixed_snapshot("24.21.0"))
    sizes = np.random.default_rng(5).integers(1, 1000, len(snap.ids)).astype(np.uint64)
    aside = D._aside
    put: list = []

    def kept(np_, a):
        out = aside(np_, a)
        put.append((a.dtype, len(a), mapped._mapping(out) is not None))
        assert (out == a).all()
        return out
    monkeypatch.setattr(D, "_aside", kept)
    t = D.retained_sizes(snap.first_edge, snap.edge_to, snap.edge_type, sizes)
    assert put == [(np.uint64, len(snap.ids), True)], put
    monkeypatch.setattr(D, "_aside", lambda np_, a: a)
    u = D.retained_sizes(snap.first_edge, snap.edge_to, snap.edge_type, sizes)
    assert (t.retained == u.retained).all() and (t.tin == u.tin).all()
    assert t.retained.dtype == np.uint64 and mapped._mapping(t.retained) is None
