"""The heap as a graph: reachability and retaining paths, on every line and
front end, against V8's own heap snapshot of the same heap.

leakchain.js leaks LEAK_N Leaks behind a known chain (global.leakRegistry,
a Map, -> 'sessions' -> an Array -> [i] -> Holder -> .leak -> Leak), holds
Leak 7 by a second, longer chain too (global.audit.a.b.c.d.e), writes V8's
heap snapshot, then makes GARBAGE_N Garbage objects (and the arrays that
held them), drops them and aborts before any GC. So the core holds garbage
the snapshot does not:

- findjsobjects' counts must equal the snapshot's per name (as in
  test_census_snapshot): Garbage is in no row, and `unreachable` counts at
  least the GARBAGE_N Garbage objects. One allowance: an object the
  snapshot shows held only by `(Handle scope)` or `(Stack roots)` (what the
  call that wrote it held, e.g. node 24's Uint8Array(2)) may be garbage by
  the time the process aborts, so its name may count up to that many less;
  nor any above it: every root group is one of V8's lists, read as V8
  visits it (no conservative scan of native memory, whose stale words
  could keep garbage alive), so no Garbage object is reached (the stack
  roots are V8's JS frames only, so stale words of C++ frames keep no
  garbage alive either);
- jsretainers of Leak 7 gives the Map chain first, with its edge names, and
  the longer audit chain after it, each path starting at one of V8's own
  (GC roots) sub-roots as the same core's V8 snapshot names them; the
  names along the Map chain are those memlab's trace of Leak 7 gives on
  V8's own file (from the global object on, or from the Map on when V8's
  trace reaches the Map through a compile job's identity map);
- jsretainers of a Garbage object says it is garbage (no path);
- an address that is no object is one clear error line.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from support import (FRONTENDS, VERSIONS, json_line, make_core, node_binary, read_json, run,
                     run_cli)

from heapsnapshot import sub_roots, transient
from test_census_snapshot import census_counts, snapshot

LEAK = "leakchain.js"


@lru_cache(maxsize=None)
def leak_dir(version: str) -> Path:
    return make_core(version, LEAK)


@lru_cache(maxsize=None)
def targets(version: str) -> dict[str, str]:
    """Leak 7 (held by both chains) and one Garbage object, found in the core."""
    d = leak_dir(version)
    out = run_cli(version, d / "core", ["findjsobjects -p e --json"])[0]
    audit_d = [g for g in json_line(out)["groups"] if g["properties"] == ["e"]][0]
    doc = json_line(run_cli(version, d / "core",
                            [f"jsprint --json -d 1 {audit_d['representative']}"])[0])
    leak = doc["properties"][0]["value"]["address"]
    # Garbage is in no row of findjsobjects: its address from the census itself.
    from v8dbg.heap import census, isolates
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    prog = Program(CoreBackend(str(d / "core"), str(node_binary(version))),
                   str(node_binary(version)))
    heap = isolates.isolates(prog)[0].heap
    garbage = None
    for st in census.of(prog, heap).maps.values():
        if st.addresses and st.count and prog.shapes.is_object_row_type(st.instance_type) \
                and prog.shapes.shape(st.map, st.addresses[0]).constructor == "Garbage":
            garbage = hex(st.addresses[0])
            break
    assert garbage is not None, "the core holds no Garbage object"
    return {"leak": leak, "garbage": garbage}


@lru_cache(maxsize=None)
def outputs(frontend: str, version: str) -> list[str]:
    """One debugger run answering every command of this module."""
    t = targets(version)
    return run(frontend, version, leak_dir(version) / "core", [
        "findjsobjects --json", f"jsretainers --json {t['leak']}",
        f"jsretainers --json -n 1 {t['leak']}", f"jsretainers {t['leak']}",
        f"jsretainers --json {t['garbage']}", f"jsretainers {t['garbage']}",
        "jsretainers 0x10"])


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_reachable_counts_equal_snapshot(frontend: str, version: str) -> None:
    d = leak_dir(version)
    expected = read_json(d, "expected-leakchain.json")
    doc = json_line(outputs(frontend, version)[0], "findjsobjects")
    snap, boilerplates, proxies = snapshot(d, expected["snapshot"])
    assert snap["Leak"] == snap["Holder"] == expected["leak_n"]
    assert snap["Garbage"] == 0
    assert "left_out" not in doc and doc["proxies"] == proxies, doc  # boilerplates counted too
    assert doc["damaged_pages"] == 0 and doc["skipped_bytes"] == 0, doc
    mine = census_counts(doc)
    gone = transient(d / expected["snapshot"])
    under = {n: (mine[n], snap[n]) for n in set(mine) | set(snap) if mine[n] < snap[n] - gone[n]}
    assert not under, f"findjsobjects below the snapshot, by name: {under}"
    over = {n: (mine[n], snap[n]) for n in set(mine) | set(snap) if mine[n] > snap[n]}
    assert not over, f"findjsobjects above the snapshot, by name: {over}"
    assert doc["unreachable"] >= expected["garbage_n"], doc["unreachable"]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_retaining_paths(frontend: str, version: str) -> None:
    out = outputs(frontend, version)
    leak = targets(version)["leak"]
    doc = json_line(out[1], "jsretainers")
    assert doc["target"] == leak and doc["reachable"] is True
    paths = doc["paths"]
    assert len(paths) >= 2, paths
    first, second = paths[0], paths[1]
    # Paths start at V8's own sub-roots of (GC roots): no other group is made.
    d = leak_dir(version)
    roots = set(sub_roots(d / read_json(d, "expected-leakchain.json")["snapshot"]))
    for p in paths:
        assert p[0]["type"] == "root" and p[0]["address"] is None and p[0]["edge"] is None
        assert p[0]["constructor"] in roots, (p[0], roots)
        assert p[-1]["address"] == leak and p[-1]["constructor"] == "Leak"
    # V8's edges: the Map's `table`, the table's slot 6 (entry 0's value).
    assert [s["edge"] for s in first[-5:]] == ["leakRegistry", "table", "6", "[7]", "leak"], first
    assert [s["constructor"] for s in first[-6:]] == \
        ["global", "Map", None, "Array", "Holder", "Leak"]
    assert [s["edge"] for s in second[-6:]] == ["audit", "a", "b", "c", "d", "e"], second
    assert second[-7]["constructor"] == "global"
    assert len(first) < len(second)
    # Shorter first.
    keys = [len(p) for p in paths]
    assert keys == sorted(keys)
    one = json_line(out[2], "jsretainers")
    assert one["paths"] == paths[:1]
    text = out[3]
    assert "path 1 (" in text and "-> leakRegistry " in text and "-> [7] " in text
    assert text.index("-> leakRegistry ") < text.index("-> audit ")


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_garbage_and_bad_address(frontend: str, version: str) -> None:
    out = outputs(frontend, version)
    garbage = targets(version)["garbage"]
    doc = json_line(out[4], "jsretainers")
    assert doc["target"] == garbage and doc["reachable"] is False and doc["paths"] == []
    assert f"{garbage} is garbage: no GC root reaches it" in out[5]
    bad = out[6]
    assert "v8dbg: 0x10 is not a heap object pointer" in bad and "Traceback" not in bad


@pytest.mark.parametrize("version", VERSIONS)
def test_stack_roots_are_js_frames(version: str) -> None:
    """`(Stack roots)` are the words of V8's own frames, as V8 visits them:
    every JS and V8-internal frame of the aborting thread (an exit frame up
    to the entry frame) lies in the spans read, and no C++ frame does (not
    node::Abort below the exit frame, nor V8's Invoke and node's frames
    above the entry frame): stale words there are no roots."""
    from v8dbg.heap import isolates, roots
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    from v8dbg.v8 import pages
    d = leak_dir(version)
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    top = roots._top(prog, isolates.isolates(prog)[0].heap)
    _stacks, _dead, spans, note = roots._stacks(prog, pages.regions(prog), top)
    assert note is None and len(spans) == 1, (note, spans)
    frames = json_line(run_cli(version, d / "core", ["jsstack -a --json"])[0], "jsstack")["frames"]

    def inside(f: dict) -> bool:
        fp = int(f["fp"], 16)
        return any(lo <= fp < hi for lo, hi in spans)

    v8 = [f for f in frames if f["kind"] == "js" or f.get("frame_type") in
          ("BuiltinExitFrame", "ApiCallbackExitFrame", "ExitFrame", "InternalFrame")]
    native = [f for f in frames if f["kind"] == "native"]
    assert len(v8) >= 5 and all(inside(f) for f in v8), (spans, v8)
    assert any(f.get("frame_type") == "EntryFrame" and not inside(f) for f in frames)
    names = [f.get("symbol") or "" for f in native if not inside(f)]
    assert any("node::Abort" in n for n in names) and any("Execution::Call" in n for n in names)
    assert not [f for f in native if inside(f)], [f for f in native if inside(f)]


@pytest.mark.parametrize("version", VERSIONS)
def test_precise_roots_keep_no_garbage(version: str) -> None:
    """No Garbage object is reached from the root groups, every one read as
    V8 reads it (none is conservative), while every Leak is."""
    import numpy as np

    from v8dbg.heap import census, graph, isolates
    from v8dbg.heap.dominators import expand
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    d = leak_dir(version)
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    heap = isolates.isolates(prog)[0].heap
    g = graph.build(prog, heap)
    # Every list V8 visits was placed: no group stands in for them.
    assert not g.late_groups and not g.root_notes, (g.root_names, g.root_notes)
    seen = np.zeros(g.nodes, dtype=bool)
    seen[0] = True
    seen[[1 + i for i in g.late_groups]] = True  # never entered
    frontier = np.zeros(1, dtype=np.int64)
    while len(frontier):
        nxt = []
        for idx in expand(np, g.first_edge, frontier):
            t = g.edge_to[idx[g.edge_type[idx] != graph.E_WEAK]]
            t = np.unique(t[~seen[t]])
            seen[t] = True
            nxt.append(t.astype(np.int64))
        frontier = np.concatenate(nxt) if nxt else frontier[:0]
    seen[[1 + i for i in g.late_groups]] = False
    names: dict[str, int] = {"Garbage": 0, "Leak": 0}
    total: dict[str, int] = {"Garbage": 0, "Leak": 0}
    for st in census.of(prog, heap).maps.values():
        if not st.addresses or not prog.shapes.is_object_row_type(st.instance_type):
            continue
        name = prog.shapes.shape(st.map, st.addresses[0]).constructor
        if name in names:
            i = g.indices(np.asarray(st.addresses, dtype=np.uint64))
            names[name] += int(seen[i[i >= 0]].sum())
            total[name] += len(st.addresses)
    expected = read_json(d, "expected-leakchain.json")
    assert total["Garbage"] >= expected["garbage_n"] and names["Garbage"] == 0, (names, total)
    assert names["Leak"] == total["Leak"] == expected["leak_n"], (names, total)


def _v8_trace(version: str) -> dict[str, list[str]]:
    """memlab's retainer trace of Leak 7 on V8's own snapshot: the edges
    after its last step into the global object and after its last step into
    a Map (`leakRegistry`), by that node's constructor ("global", "Map";
    each where the trace has it), written as jsretainers writes them (`[i]`
    for an element, `closure:NAME` for a context variable). The trace
    reaches the global object by the root's shortcut, or on 26, when a
    compile job's identity map holds the global object (or its map) at
    snapshot time, through `(Identity map)`. When that identity map holds
    the Map itself, the trace never passes the global object (seen once in
    12 runs of node 26.10.0)."""
    import re
    from test_heapsnapshot import MEMLAB, _memlab_trace
    import heapsnapshot
    if not MEMLAB.exists():
        pytest.skip("memlab missing: run scripts/setup.sh")
    path = leak_dir(version) / read_json(leak_dir(version), "expected-leakchain.json")["snapshot"]
    s = heapsnapshot.read(path)
    prop = s.edge_types.index("property")
    leak7 = [i for i in range(len(s.ids)) if s.name(i) == "Leak"
             and any(int(s.edge_type[e]) == prop and s.strings[int(s.edge_name[e])] == "payload"
                     and s.name(int(s.edge_to[e])) == "leak-7"
                     for e in range(int(s.first_edge[i]), int(s.first_edge[i + 1])))]
    assert len(leak7) == 1, leak7
    steps = _memlab_trace(path, int(s.ids[leak7[0]]))
    assert "[Leak] (object)" in steps[-1], steps
    edges = [re.match(r"^--(.*) \((\w+)\)--->", x) for x in steps]
    into = {"global": r"\)--->  \[global( \(global\*\))?\] \(object\)",
            "Map": r"\)--->  \[Map\] \(object\)"}
    out: dict[str, list[str]] = {}
    for anchor, pattern in into.items():
        at = [i for i, x in enumerate(steps) if re.search(pattern, x)]
        if at:
            out[anchor] = [f"[{m.group(1)}]" if m.group(2) == "element" else
                           f"closure:{m.group(1)}" if m.group(2) == "context" else m.group(1)
                           for m in edges[at[-1] + 1:]]
    assert "Map" in out, steps
    return out


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_path_edges_as_v8_file(frontend: str, version: str) -> None:
    """The first retaining path of Leak 7, from the global object on, names
    each edge as memlab's trace of the same object on V8's own snapshot of
    the same heap: V8's direct element and global property edges taken, the
    Map's table a step of its own. Where V8's trace does not pass the
    global object (a compile job's identity map holding the Map, on 26),
    the two are compared from the Map on. (Ours passes it:
    test_retaining_paths.)"""
    first = json_line(outputs(frontend, version)[1], "jsretainers")["paths"][0]
    v8 = _v8_trace(version)
    anchor = "global" if "global" in v8 else "Map"
    at = max((i for i, s in enumerate(first) if s["constructor"] == anchor), default=None)
    assert at is not None, (anchor, first)
    assert [s["edge"] for s in first[at + 1:]] == v8[anchor], (first, v8)


@pytest.mark.parametrize("version", VERSIONS)
def test_pending_microtasks_are_roots(version: str) -> None:
    """microtasks.js: objects only pending microtasks hold (callbacks of
    queueMicrotask, reactions to a resolved promise) are reachable through
    the MicrotaskQueue's ring buffer, V8's `(Micro tasks)` (its strong
    roots before 11.8): counted as V8's snapshot counts them, and from 11.8
    the group holds the microtasks V8's file has under that name."""
    import numpy as np

    from v8dbg.heap import graph, isolates
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    d = make_core(version, "microtasks.js")
    expected = read_json(d, "expected-microtasks.json")
    n = expected["n"]
    doc = json_line(run_cli(version, d / "core", ["findjsobjects --json"])[0], "findjsobjects")
    mine = census_counts(doc)
    snap, _boilerplates, _proxies = snapshot(d, expected["snapshot"])
    assert snap["Job"] == snap["Reaction"] == n, snap
    assert mine["Job"] == mine["Reaction"] == n, mine
    import heapsnapshot
    s = heapsnapshot.read(d / expected["snapshot"])
    v8_edges = {s.name(int(j)): int(s.first_edge[j + 1] - s.first_edge[j])
                for j in s.edge_to[s.first_edge[1]:s.first_edge[2]]}
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    g = graph.build(prog, isolates.isolates(prog)[0].heap)
    assert not g.late_groups and not g.root_notes, g.root_notes
    if "(Micro tasks)" in g.root_names:
        k = 1 + g.root_names.index("(Micro tasks)")
        held = int(g.first_edge[k + 1] - g.first_edge[k])
        assert held == v8_edges["(Micro tasks)"] >= 2 * n, (held, v8_edges["(Micro tasks)"])
        assert np.all(g.edge_type[g.first_edge[k]:g.first_edge[k + 1]] != graph.E_WEAK)


def test_microtask_cap_is_said(monkeypatch) -> None:
    """A queue holding more pending microtasks than v8dbg reads (the cap made
    small here) is named in the graph's notes as a cap hit, with its count,
    never as a queue not found; its microtasks are then no roots."""
    from v8dbg.heap import graph, isolates, rootlists
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    version = VERSIONS[-1]
    d = make_core(version, "microtasks.js")
    n = read_json(d, "expected-microtasks.json")["n"]
    monkeypatch.setattr(rootlists, "MAX_QUEUE", 1)
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    g = graph.build(prog, isolates.isolates(prog)[0].heap)
    said = [x for x in g.root_notes if "microtask" in x]
    assert len(said) == 1 and said[0].endswith(
        "more than the 1 read at most: pending microtasks are no roots"), g.root_notes
    held = int(said[0].split(" holds ")[1].split()[0])
    assert held >= 2 * n, (held, n)  # a Job and a Reaction each, at least


@pytest.mark.parametrize("version", VERSIONS)
def test_unplaced_roots_table_falls_back(version: str, monkeypatch) -> None:
    """Where the roots table cannot be placed (as on a release whose offsets
    were never measured), the whole Isolate stands for the strong roots and
    the conservative `(Native roots)` group for the lists behind it, last,
    and the notes say so: every Leak still reached."""
    import numpy as np

    from v8dbg.heap import census, graph, isolates
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    from v8dbg.v8 import layouts
    monkeypatch.setattr(layouts, "roots_table", lambda _v: None)
    d = leak_dir(version)
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    heap = isolates.isolates(prog)[0].heap
    g = graph.build(prog, heap)
    assert g.root_names[-1] == "(Native roots)" and g.late_groups == [len(g.root_names) - 1]
    assert any("roots table was not found" in n for n in g.root_notes), g.root_notes
    assert any("(Native roots) holds every other word" in n for n in g.root_notes), g.root_notes
    seen, _ = graph.reach(g)
    leaks = 0
    for st in census.of(prog, heap).maps.values():
        if st.addresses and prog.shapes.is_object_row_type(st.instance_type) and \
                prog.shapes.shape(st.map, st.addresses[0]).constructor == "Leak":
            i = g.indices(np.asarray(st.addresses, dtype=np.uint64))
            leaks += int(seen[i[i >= 0]].sum())
    assert leaks == read_json(d, "expected-leakchain.json")["leak_n"]


def test_unfound_dispatch_table_is_said(monkeypatch) -> None:
    """From node 24 a function's code is reached only through V8's JS dispatch
    table; where the table is not found, the graph's notes say that code is
    left without its `code` edges (it would otherwise count as garbage
    silently)."""
    from v8dbg.heap import graph, isolates
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    from v8dbg.v8 import dispatch
    version = "24.21.0"
    d = leak_dir(version)
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    found = graph.build(prog, isolates.isolates(prog)[0].heap)
    assert not any("dispatch table" in n for n in found.root_notes), found.root_notes
    monkeypatch.setattr(dispatch, "find", lambda *_a: None)
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    g = graph.build(prog, isolates.isolates(prog)[0].heap)
    assert any("JS dispatch table was not found" in n for n in g.root_notes), g.root_notes
    assert len(g.edge_to) < len(found.edge_to)
