"""worker_threads: each worker's JS stack on its own thread, and `jsstack --all`."""

from __future__ import annotations

import pytest

from support import (FRONTENDS, VERSIONS, LiveNode, json_line, make_core, read_json, run,
                     run_gdb, run_lldb)
from test_stack import compare

TOPS = {"main": "mainAbort", "alpha": "blockForever", "beta": "blockForever"}


def owner(doc: dict) -> str | None:
    names = [f["function"] for f in doc["frames"] if f["kind"] == "js"]
    if "mainAbort" in names:
        return "main"
    for n in ("alpha", "beta"):
        if f"work{n.capitalize()}" in names:
            return n
    return None


def check_all(doc: dict, expected_dir) -> list[int]:
    threads = doc["threads"]
    found = {owner(t): t for t in threads}
    assert {"main", "alpha", "beta"} <= set(found), [owner(t) for t in threads]
    assert all(owner(t) is not None for t in threads), "a thread without JS was listed"
    for name, t in found.items():
        compare(t, (expected_dir / f"expected-stack-{name}.txt").read_text(), TOPS[name])
        assert t["thread"]["tid"] > 0
    return [found["alpha"]["thread"]["tid"], found["beta"]["thread"]["tid"]]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_all_threads(frontend, version):
    d = make_core(version, "workers.js")
    out = run(frontend, version, d / "core", ["jsstack --all --json"])
    tids = check_all(json_line(out[0]), d)
    # A worker's own thread, selected explicitly.
    one = run(frontend, version, d / "core", [f"jsstack --thread {tids[0]} --json"])
    doc = json_line(one[0])
    assert owner(doc) == "alpha"
    compare(doc, (d / "expected-stack-alpha.txt").read_text(), "blockForever")


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_all_threads_live(debugger):
    with LiveNode("24.21.0", "workers.js") as node:
        runner = run_gdb if debugger == "gdb" else run_lldb
        out = runner("24.21.0", ["jsstack --all --json"], pid=node.pid)
        check_all(json_line(out[0]), node.dir)
        assert node.alive()


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_isolates(frontend, version):
    """Heap commands say which isolate they scanned, and can be pointed at a worker's."""
    d = make_core(version, "workers.js")
    expected = {n: read_json(d, f"expected-things-{n}.json")["count"]
                for n in ("main", "alpha", "beta")}
    assert len(set(expected.values())) == 3
    out = run(frontend, version, d / "core", [
        "jsstack --all --json", "jsisolates --json", "findjsinstances --json Thing",
        "findjsinstances --isolate 1 --json Thing", "findjsinstances --isolate 2 --json Thing",
        "findjsobjects --isolate 2 -c Thing --json"])
    by_thread = {owner(t): t["thread"]["tid"] for t in json_line(out[0])["threads"]}
    isos = json_line(out[1])["isolates"]
    assert [i["index"] for i in isos] == [0, 1, 2], isos
    runs = {tid: i["index"] for i in isos for tid in (t["tid"] for t in i["threads"])}
    # Each JS thread is tied to its own isolate; the main thread's is number 0.
    assert runs[by_thread["main"]] == 0
    assert {runs[by_thread["alpha"]], runs[by_thread["beta"]]} == {1, 2}
    name_of = {runs[by_thread[n]]: n for n in ("main", "alpha", "beta")}
    default = json_line(out[2])
    assert default["count"] == expected["main"] and default["isolate"]["index"] == 0
    for k in (1, 2):
        doc = json_line(out[2 + k])
        assert doc["count"] == expected[name_of[k]], (k, doc["count"], expected)
        assert doc["isolate"]["index"] == k
    groups = json_line(out[5])["groups"]
    assert [g["count"] for g in groups] == [expected[name_of[2]]]
    # By thread id; and findjsrefs picks the isolate that holds its address.
    alpha = by_thread["alpha"]
    one = run(frontend, version, d / "core", [
        f"findjsinstances --thread {alpha} -n 1 --json Thing",
        f"nodeinfo --thread {by_thread['beta']} --json", "findjsobjects --isolate 7"])
    doc = json_line(one[0])
    assert doc["count"] == expected["alpha"] and doc["isolate"]["index"] == runs[alpha]
    info = json_line(one[1])
    assert info["isolate"]["index"] == runs[by_thread["beta"]]
    assert info["exec_path"] and info["exec_path"].endswith("node")
    refs_out = run(frontend, version, d / "core", [
        f"findjsrefs --json {doc['instances'][0]}", "findjsinstances --thread 1 Thing"])
    refs = json_line(refs_out[0])
    assert refs["isolate"]["index"] == runs[alpha]
    assert any(r["holder_type"] == "array" and r["via"].startswith("[") for r in refs["refs"]), refs
    # Errors come last: lldb -b stops at the first failing command.
    assert "v8dbg: no isolate 7" in one[2]
    assert "v8dbg: no thread 1 in the target" in refs_out[1]
