"""findjsobjects --retained, --sort and --baseline on real cores.

leak_growth.js keeps V8DBG_LEAK `Session` objects, each with a `Record` and
the Record's array, behind globalThis.sessionCache (a Map and an array), and
writes V8's own heap snapshot before it aborts. It runs at two sizes (1000
and 3000) on every pinned line:

- --baseline of the bigger core against the smaller: the Session, Record
  and Array rows grew by exactly 2000 each, first, and by the bytes the
  census gives each row; no other row by more than a few (node's own
  objects); the same JSON in the CLI, gdb and lldb.
- --retained: every row's retained size is at least its own size, sorted by
  it with --sort retained; with --baseline, the leak's rows' retained sizes
  grew, by this core's own numbers less the baseline's; the same JSON in
  every front end.
- The retained sizes per constructor of the leak's classes equal, within 2 %,
  those Chrome DevTools' own snapshot worker computes from V8's snapshot of
  the same heap (per name: the DevTools retained sizes of that name's
  objects no other of them dominates, summed), on every line.
- The objects a row's retained size is made of are exactly the row's (as
  many as its count), dictionary-mode objects past the budget of those read
  one by one too.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

import heapsnapshot
from support import FRONTENDS, VERSIONS, json_line, leak_core, read_json, run
from v8dbg.heap import dominators as D

SMALL, BIG = 1000, 3000
LEAK = ("Session", "Record")


@lru_cache(maxsize=None)
def leak(version: str, n: int):
    return leak_core(version, n)


def _cmds(version: str) -> list[str]:
    old = leak(version, SMALL) / "core"
    return ["findjsobjects --json", f"findjsobjects --baseline {old} --json",
            "findjsobjects --retained --sort retained --json",
            f"findjsobjects --baseline {old} --retained --sort retained --json"]


@lru_cache(maxsize=None)
def outputs(version: str, frontend: str) -> list[dict]:
    outs = run(frontend, version, leak(version, BIG) / "core", _cmds(version))
    return [json_line(o, "findjsobjects") for o in outs]


def _strip(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "seconds"}


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_baseline_growth(version, frontend):
    full, grew, _, _ = outputs(version, frontend)
    exp = read_json(leak(version, BIG), "expected-leak.json")
    assert exp["sessions"] == BIG
    rows = {g["constructor"]: g for g in grew["groups"] if not g["properties"] or
            g["constructor"] in LEAK}
    assert sorted(g["constructor"] for g in grew["groups"][:3]) == ["Array", "Record", "Session"]
    for name in LEAK:
        assert rows[name]["count_growth"] == BIG - SMALL, rows[name]
        assert rows[name]["count"] == BIG and rows[name]["baseline_count"] == SMALL
        now = next(g for g in full["groups"] if g["constructor"] == name)
        assert rows[name]["size"] == now["size"]
        assert rows[name]["size_growth"] == now["size"] // BIG * (BIG - SMALL)
    assert rows["Array"]["count_growth"] == BIG - SMALL  # each Record's body
    # Nothing else grew by more than a few: the two cores are one program at two
    # sizes (node's own objects, e.g. an ArrayBuffer, may differ by one or two).
    assert all(g["count_growth"] <= 5 for g in grew["groups"]
               if g["constructor"] not in ("Array", *LEAK)), grew["groups"]
    counts = [g["count_growth"] for g in grew["groups"]]
    assert counts == sorted(counts, reverse=True)
    assert grew["baseline"]["total_objects"] < full["total_objects"]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_retained_rows(version, frontend):
    full, _, ret, grew = outputs(version, frontend)
    assert len(ret["groups"]) == len(full["groups"])
    assert all(g["retained"] >= g["size"] for g in ret["groups"]), \
        [g for g in ret["groups"] if g["retained"] < g["size"]][:3]
    kept = [g["retained"] for g in ret["groups"]]
    assert kept == sorted(kept, reverse=True)
    session = next(g for g in ret["groups"] if g["constructor"] == "Session")
    record = next(g for g in ret["groups"] if g["constructor"] == "Record")
    assert session["retained"] > record["retained"] >= record["size"]  # a Session holds its Record
    # --baseline --retained: the leak's retained sizes grew, by the rows' own numbers.
    by = {g["constructor"]: g for g in grew["groups"] if g["constructor"] in LEAK}
    for name in LEAK:
        now = next(g for g in ret["groups"] if g["constructor"] == name)
        assert by[name]["retained"] == now["retained"]
        assert by[name]["retained_growth"] == now["retained"] - by[name]["baseline_retained"] > 0
    growth = [g["retained_growth"] for g in grew["groups"]]
    assert growth == sorted(growth, reverse=True)


@pytest.mark.parametrize("version", VERSIONS)
def test_front_ends_agree(version):
    docs = {fe: [_strip(d) for d in outputs(version, fe)] for fe in FRONTENDS}
    assert docs["gdb"] == docs["cli"] and docs["lldb"] == docs["cli"]


@lru_cache(maxsize=None)
def devtools_by_name(version: str) -> dict[str, int]:
    path = leak(version, BIG) / "leak.heapsnapshot"
    snap, tree = heapsnapshot.devtools_tree(path)
    idx = np.flatnonzero(snap.types == snap.node_types.index("object"))
    names = [snap.name(i) for i in idx]
    uniq = sorted(set(names))
    k = {n: i for i, n in enumerate(uniq)}
    got = D.set_retained(tree, idx, [k[n] for n in names])
    return dict(zip(uniq, (int(x) for x in got)))


@pytest.mark.parametrize("version", VERSIONS)
def test_retained_as_devtools(version):
    ret = outputs(version, "cli")[2]
    dev = devtools_by_name(version)
    mine = {g["constructor"]: g["retained"] for g in ret["groups"] if g["constructor"] in
            (*LEAK, "SessionCache")}
    assert set(mine) == {*LEAK, "SessionCache"}, mine
    for name, r in mine.items():
        assert abs(r - dev[name]) <= 0.02 * dev[name], (name, r, dev[name])


def test_baseline_bad_input():
    """A missing baseline and a core of another node build: one line each, exit 1."""
    import subprocess
    import sys
    from support import ROOT, node_binary
    new = leak("24.21.0", BIG) / "core"
    other = leak("18.20.8", SMALL) / "core"
    for base, says in (("/nonexistent/core", "no such core file"),
                       (str(other), "a core of another program or node build")):
        p = subprocess.run([sys.executable, "-m", "v8dbg", "findjsobjects", "--baseline", base,
                            "--core", str(new), "--binary", str(node_binary("24.21.0"))],
                           capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert p.returncode == 1, p
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("v8dbg: --baseline: ") and says in lines[0], \
            p.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_members_are_the_rows_objects(version, monkeypatch):
    """The objects whose retained sizes make a row's are the row's own: as many
    as its count, each once, also for dictionary-mode maps past the budget of
    objects whose keys are read one by one (made small here, so that it runs
    out in node's own objects)."""
    from support import node_binary
    from v8dbg.heap import groups as G
    from v8dbg.heap.isolates import choose
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    monkeypatch.setattr(G, "MAX_DICT_SHAPES", 3)
    node = str(node_binary(version))
    prog = Program(CoreBackend(str(leak(version, SMALL) / "core"), node), node)
    heap = choose(prog, None, None).heap
    rows = G.groups(prog, heap)
    sh = prog.shapes
    dict_rows = 0
    for row in rows:
        got = list(G.members(prog, heap, row))
        assert len(got) == len(set(got)) == row.count, (row.constructor, row.properties)
        dict_rows += any(sh.shape(m, got[0]).dictionary for m in row.maps)
    assert dict_rows > 3  # dictionary-mode rows within the budget and past it
