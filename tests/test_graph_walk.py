"""One walk of the pages for the census and the heap graph.

A command that needs both (findjsobjects, jsretainers, jsheapsnapshot)
builds the graph before any census is taken: the graph's nodes then come
from the census's own walk, and no page is walked twice. Census and graph
must be those a census taken first and a graph walking the pages itself
give, array for array, on every pinned line: leakchain.js (the retainer
tests' core, garbage in it) and weakmap_values.js (ephemeron tables, whose
keys' edges to their values are made from the walk's pages).
"""

from __future__ import annotations

import pytest

from support import VERSIONS, core_program, make_core

ARRAYS = ("node_addr", "node_size", "first_edge", "edge_to", "edge_type", "edge_name",
          "ephemerons")


def _census_fields(c) -> tuple:
    return (c.total_objects, c.total_bytes, c.unknown_sizes, c.unswept_pages,
            list(c.damaged_pages), c.skipped_bytes, [p.address for p in c.pages],
            {m: (s.instance_type, s.count, s.size, list(s.addresses or ()))
             for m, s in c.maps.items()})


@pytest.mark.parametrize("fixture", ["leakchain.js", "weakmap_values.js"])
@pytest.mark.parametrize("version", VERSIONS)
def test_one_walk_same_census_and_graph(version, fixture, monkeypatch) -> None:
    from v8dbg.heap import census, graph, walk
    from v8dbg.heap.isolates import choose

    core = make_core(version, fixture) / "core"
    walked: list[int] = []
    bulk = walk.NumpyPages.walk

    def counted(self, p, *args, **kwargs):
        walked.append(p.start)
        return bulk(self, p, *args, **kwargs)

    monkeypatch.setattr(walk.NumpyPages, "walk", counted)
    # (A page whose walk met damage is walked again once native memory is
    # read for an allocation area ending there: census.py.)
    again: list[int] = []
    find = census.labs_at

    def labs_at(prog, pages, tops, budget):
        again.extend(p.start for p in pages for t in tops if p.start <= t < p.end)
        return find(prog, pages, tops, budget)

    monkeypatch.setattr(census, "labs_at", labs_at)
    prog, _ = core_program(core, version)
    heap = choose(prog, None, None).heap
    one = graph.build(prog, heap)  # no census yet: the census is taken by the graph's walk
    one_census = census.of(prog, heap)
    twice = {a for a in walked if walked.count(a) > 1}
    assert walked and twice <= set(again) and all(walked.count(a) <= 3 for a in again), \
        "a page was walked twice"

    prog2, _ = core_program(core, version)
    two_census = census.of(prog2, heap)  # the census first, then the graph's own walk
    two = graph.build(prog2, heap)
    assert _census_fields(one_census) == _census_fields(two_census)
    # (Either way the addresses wait in a file's pages: census._aside.)
    for c in (one_census, two_census):
        assert all(type(s.addresses) is memoryview for s in c.maps.values() if s.count)
    for name in ARRAYS:
        a, b = getattr(one, name), getattr(two, name)
        assert a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all()), name
    assert (one.root_names, one.first_object, one.root_notes, one.late_groups,
            one.cleared_groups) == (two.root_names, two.first_object, two.root_notes,
                                    two.late_groups, two.cleared_groups)
    if fixture == "weakmap_values.js":
        assert len(one.ephemerons) >= 200, "the WeakMap's entries are no ephemerons"


@pytest.mark.parametrize("fixture", ["leakchain.js", "weakmap_values.js"])
@pytest.mark.parametrize("version", VERSIONS)
def test_pieces_of_pages_same_graph(version, fixture, monkeypatch) -> None:
    """The slots are read a piece of a page at a time (graph.WINDOW words,
    an object larger than that in pieces of its own): pieces cut small, so
    that many objects are cut in several, give the same graph, array for
    array, as pieces that hold whole pages."""
    from v8dbg.heap import graph
    from v8dbg.heap.isolates import choose

    core = make_core(version, fixture) / "core"
    built = []
    for window in (1 << 17, 1000):
        monkeypatch.setattr(graph, "WINDOW", window)
        prog, _ = core_program(core, version)
        built.append(graph.build(prog, choose(prog, None, None).heap))
    whole, cut = built
    assert int((whole.node_size > 8 * 1000).sum()) >= 10, "no object was cut in pieces"
    for name in ARRAYS:
        a, b = getattr(whole, name), getattr(cut, name)
        assert a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all()), name
