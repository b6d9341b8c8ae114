"""Heap census against V8's own heap snapshot, on every node line and front end.

The census fixture writes `v8.writeHeapSnapshot()` just before it aborts; the
counts v8dbg finds in the core must equal the snapshot's for the fixture's
classes (including 0 for the class whose instances were all collected).
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache

import pytest

from support import FRONTENDS, VERSIONS, json_line, make_core, read_json, run, run_cli

FIXTURE = "census.js"
CLASSES = ("Widget", "Dropped", "Target", "Owner")


@lru_cache(maxsize=None)
def core_dir(version: str):
    return make_core(version, FIXTURE)


@lru_cache(maxsize=None)
def snapshot_counts(version: str) -> Counter:
    """(node type, name) -> count, from the fixture's heap snapshot."""
    d = core_dir(version)
    snap = json.loads((d / read_json(d, "expected-census.json")["snapshot"]).read_text())
    meta = snap["snapshot"]["meta"]
    fields = meta["node_fields"]
    types = meta["node_types"][0]
    ti, ni, k = fields.index("type"), fields.index("name"), len(fields)
    nodes, strings = snap["nodes"], snap["strings"]
    c: Counter = Counter()
    for i in range(0, len(nodes), k):
        c[(types[nodes[i + ti]], strings[nodes[i + ni]])] += 1
    return c


@lru_cache(maxsize=None)
def target_address(version: str) -> str:
    out = run_cli(version, core_dir(version) / "core", ["findjsinstances --json Target"])[0]
    inst = json_line(out)["instances"]
    assert len(inst) == 1, out
    return inst[0]


@lru_cache(maxsize=None)
def outputs(frontend: str, version: str) -> tuple[str, ...]:
    """All census commands in one debugger run (lldb takes seconds to start)."""
    cmds = ["findjsobjects --json", "findjsinstances --json Widget",
            "jsfunctions -n counter --json", "nodeinfo --json",
            f"findjsrefs --json {target_address(version)}", "findjsobjects -c Widget",
            "findjsobjects -p tags --json", "findjsobjects -c Widget -p nosuchprop --json"]
    return tuple(run(frontend, version, core_dir(version) / "core", cmds))


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_counts_equal_snapshot(frontend: str, version: str) -> None:
    doc = json_line(outputs(frontend, version)[0])
    mine: Counter = Counter()
    for g in doc["groups"]:
        mine[g["constructor"]] += g["count"]
    snap = snapshot_counts(version)
    for name in CLASSES:
        assert mine[name] == snap[("object", name)], (name, mine[name], snap[("object", name)])
    expected = read_json(core_dir(version), "expected-census.json")
    assert mine["Widget"] == expected["widgets"] == 7777
    assert mine["Dropped"] == 0
    widget = [g for g in doc["groups"] if g["constructor"] == "Widget"]
    assert widget[0]["properties"] == ["id", "label", "tags"]
    assert widget[0]["size"] > 0
    assert doc["total_objects"] > 7777 * 3


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_instances_and_functions(frontend: str, version: str) -> None:
    outs = outputs(frontend, version)
    inst = json_line(outs[1])
    assert inst["constructor"] == "Widget" and inst["count"] == 7777
    assert len(set(inst["instances"])) == 7777
    fns = json_line(outs[2])["functions"]
    assert len(fns) == 1
    f = fns[0]
    assert f["closures"] == snapshot_counts(version)[("closure", "counter")] == 321
    assert f["script"].endswith("census.js") and f["line"] == 22
    assert "7777" in outs[5] and "Widget" in outs[5]
    with_tags = json_line(outs[6])["groups"]
    assert [(g["constructor"], g["count"]) for g in with_tags] == [("Widget", 7777)]
    assert json_line(outs[7])["groups"] == []


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_nodeinfo(frontend: str, version: str) -> None:
    info = json_line(outputs(frontend, version)[3])
    expected = read_json(core_dir(version), "expected-census.json")
    assert info["node_version"] == expected["node_version"] == f"v{version}"
    assert info["v8_version"] == expected["v8_version"]
    assert info["pid"] == expected["pid"]
    assert info["argv"] == expected["argv"]
    assert info["exec_argv"] == expected["exec_argv"]
    assert info["exec_path"] == expected["exec_path"]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_findjsrefs(frontend: str, version: str) -> None:
    doc = json_line(outputs(frontend, version)[4])
    assert doc["target"] == target_address(version)
    refs = doc["refs"]
    vias = {(r["holder_type"], r["via"]) for r in refs}
    assert ("object", "held") in vias, refs
    assert any(r["constructor"] == "Owner" and r["via"] == "held" for r in refs)
    assert ("array", "[3]") in vias, refs
    assert ("context", "closure:kept") in vias, refs
    assert any(r["holder_type"] == "map" for r in refs), refs
    assert any(r["holder_type"] == "set" for r in refs), refs


def test_errors_are_one_line() -> None:
    version = VERSIONS[-1]
    out = run_cli(version, core_dir(version) / "core", ["findjsrefs --json 0x10"])[0]
    assert json_line(out).get("error")
    assert "Traceback" not in out


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_scavenge_leftovers_not_counted(frontend: str, version: str) -> None:
    """Dead objects a scavenge left in from-space are not counted; copied ones once."""
    d = make_core(version, "census_young.js")
    expected = read_json(d, "expected-young.json")
    doc = json_line(run(frontend, version, d / "core", ["findjsobjects --json"])[0])
    mine: Counter = Counter()
    for g in doc["groups"]:
        mine[g["constructor"]] += g["count"]
    assert mine["Widget"] == expected["widgets"] == 1500
    assert mine["Dropped"] == expected["dropped"] == 0


@lru_cache(maxsize=None)
def sweep_dir(version: str):
    return make_core(version, "census_sweep.js", flags=("--expose-gc", "--no-concurrent-sweeping"))


@lru_cache(maxsize=None)
def first_kept(version: str) -> str:
    """The first Kept findjsinstances gives, read once by the CLI: each front
    end's run below asks for its holders in the same run."""
    out = run_cli(version, sweep_dir(version) / "core", ["findjsinstances -n 1 --json Kept"])[0]
    return json_line(out)["instances"][0]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_unswept_dead_not_counted(frontend: str, version: str) -> None:
    """Dead objects on pages V8 has not swept yet are not counted; the live ones are.

    census_sweep.js runs with --no-concurrent-sweeping, so the core is taken
    with about 25000 dead Dropped objects still intact on unswept pages.
    """
    d = sweep_dir(version)
    expected = read_json(d, "expected-sweep.json")
    assert expected["dead"] > 20000
    outs = run(frontend, version, d / "core", [
        "findjsobjects -c Kept --json", "findjsobjects -c Dropped --json",
        "findjsinstances -n 1 --json Dropped", "findjsinstances -n 1 --json Kept",
        f"findjsrefs --json {first_kept(version)}"])
    kept, dropped = json_line(outs[0]), json_line(outs[1])
    # The case this test is for: pages not yet swept, told apart by their mark bits.
    assert kept["unswept_pages"] > 0, kept
    assert sum(g["count"] for g in kept["groups"]) == expected["kept"] == 200000
    assert sum(g["count"] for g in dropped["groups"]) == expected["dropped"] == 1
    assert json_line(outs[2])["count"] == 1
    # Objects on unswept pages are found as holders too: the one array holds each Kept.
    assert json_line(outs[3])["instances"][0] == first_kept(version)
    refs = json_line(outs[4])
    assert any(r["holder_type"] == "array" and r["via"].startswith("[") for r in refs["refs"]), refs


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[-1]])
def test_unswept_without_numpy(version: str) -> None:
    """The pure-Python reading of mark bits (no NumPy in the debugger's Python) agrees."""
    import os
    import subprocess
    import sys
    from support import ROOT, node_binary
    d = make_core(version, "census_sweep.js", flags=("--expose-gc", "--no-concurrent-sweeping"))
    p = subprocess.run([sys.executable, "-m", "v8dbg", "findjsobjects", "--json", "--core",
                        str(d / "core"), "--binary", str(node_binary(version))], cwd=ROOT,
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, V8DBG_NO_NUMPY="1"))
    doc = json_line(p.stdout)
    counts: Counter = Counter()
    for g in doc["groups"]:
        counts[g["constructor"]] += g["count"]
    assert doc["unswept_pages"] > 0
    assert counts["Kept"] == 200000 and counts["Dropped"] == 1, counts


@pytest.mark.parametrize("version", VERSIONS)
def test_unused_allocation_area_not_damage(version: str) -> None:
    """The value zoo's core holds, on 18 and some releases of 19-21, a run of
    never-used zero words in the middle of a page (an allocation area no list
    placed, objects allocated after it): the walk steps over it to the next
    object, and that is no damaged page."""
    d = make_core(version, "values.js")
    doc = json_line(run_cli(version, d / "core", ["findjsobjects --json"])[0])
    assert (doc["damaged_pages"], doc["skipped_bytes"]) == (0, 0), doc
    assert doc["total_objects"] > 100000, doc["total_objects"]


def test_discarded_os_page_is_no_damage():
    """V8's sweeper gives back whole OS pages inside a free block (zeros in
    the core, the block's header with them, its dead bytes after): a zero run
    from an OS page boundary over a whole OS page is stepped over to the next
    object and no damage; a zero run elsewhere followed by other words is."""
    import sys
    from array import array
    from support import ROOT, node_binary
    sys.path.insert(0, str(ROOT))
    from v8dbg.heap.walk import PageWalk, Walker
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    version = "24.21.0"
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(core_dir(version) / "core"), binary), binary)
    w = Walker(prog, prog.heap)
    m = prog.heap.map_of(int(target_address(version), 16))
    kind, size = w.info(m)[:2]
    assert size > 0, (kind, size)
    words = array("Q", [0] * 2048)
    words[512:515] = array("Q", [1 << 32] * 3)  # a dead object's words, no map
    words[515] = m
    base1 = 0x7f0000040000 + 1
    res = PageWalk()
    assert w.step(words, 0, len(words), res, False, base1) == 515
    assert (res.damaged, res.skipped) == (False, 0)
    res = PageWalk()
    assert w.step(words, 0, len(words), res, False, base1 + 8) == 515
    assert res.damaged and res.skipped == 8 * 515
