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
    first, to, typ = _graph(n, edges)
    sizes = np.ones(n, np.uint64)
    trees = []
    for bound in (10 ** 9, 4096):
        monkeypatch.setattr(D, "MAX_LEVELS", bound)
        t = D.retained_sizes(first, to, typ, sizes)
        assert t.idom[3:].tolist() == list(range(2, n - 1)) and t.idom[1] == 0
        assert t.retained[2] == n - 2 and t.retained[0] == n
        trees.append(t)
    assert (trees[0].subtree == trees[1].subtree).all()
