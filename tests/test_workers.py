"""worker_threads: each worker's JS stack on its own thread, and `jsstack --all`.

`jsstack --all` lists every thread: those running JavaScript with their JS
frames, the others (V8's and libuv's pools, node's own) with their native
frames; on a gcore of an idle node, every thread the kernel listed in
/proc/PID/task when the core was taken, none with a JS frame.
"""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from support import (FRONTENDS, VERSIONS, LiveNode, gcore_of, json_line, make_core, read_json,
                     run, run_gdb, run_lldb)
from test_stack import compare
from test_values import _sess

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
    found = {owner(t): t for t in threads if owner(t) is not None}
    assert sorted(found) == ["alpha", "beta", "main"], [owner(t) for t in threads]
    # The threads without JavaScript are listed too, with their native frames.
    idle = [t for t in threads if owner(t) is None]
    assert len(idle) >= 4, [t["thread"] for t in threads]
    assert all(not any(f["kind"] == "js" for f in t["frames"]) for t in idle)
    assert all(t["frames"] and t["frames"][0]["kind"] == "native" for t in idle), idle
    for name, t in found.items():
        compare(t, (expected_dir / f"expected-stack-{name}.txt").read_text(), TOPS[name])
        assert t["thread"]["tid"] > 0
    return [found["alpha"]["thread"]["tid"], found["beta"]["thread"]["tid"]]


@lru_cache(maxsize=None)
def threads_of(version: str) -> tuple[dict[str, int], str]:
    """({main, alpha, beta: tid}, the address of alpha's first Thing) in the
    workers core, read in-process: the front ends' batch below names them."""
    d = make_core(version, "workers.js")
    sess = _sess(version, d / "core")
    doc = json_line(sess.run("jsstack", ["--all", "--json"])[0], "jsstack")
    tids = {owner(t): t["thread"]["tid"] for t in doc["threads"] if owner(t) is not None}
    inst = json_line(sess.run("findjsinstances", ["--thread", str(tids["alpha"]), "-n", "1",
                                                  "--json", "Thing"])[0], "findjsinstances")
    return tids, inst["instances"][0]


@lru_cache(maxsize=None)
def outputs(frontend: str, version: str) -> tuple[str, ...]:
    """Every command the workers core is asked here, in one debugger run per
    front end (errors last)."""
    d = make_core(version, "workers.js")
    tids, inst = threads_of(version)
    return tuple(run(frontend, version, d / "core", [
        "jsstack --all --json", f"jsstack --thread {tids['alpha']} --json",
        "jsisolates --json", "findjsinstances --json Thing",
        "findjsinstances --isolate 1 --json Thing", "findjsinstances --isolate 2 --json Thing",
        "findjsobjects --isolate 2 -c Thing --json",
        f"findjsinstances --thread {tids['alpha']} -n 1 --json Thing",
        f"nodeinfo --thread {tids['beta']} --json", f"findjsrefs --json {inst}",
        "findjsobjects --isolate 7", "findjsinstances --thread 1 Thing"]))


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_all_threads(frontend, version):
    d = make_core(version, "workers.js")
    out = outputs(frontend, version)
    tids = check_all(json_line(out[0]), d)
    assert tids == [threads_of(version)[0]["alpha"], threads_of(version)[0]["beta"]]
    # A worker's own thread, selected explicitly.
    doc = json_line(out[1])
    assert owner(doc) == "alpha"
    compare(doc, (d / "expected-stack-alpha.txt").read_text(), "blockForever")


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_all_threads_of_an_idle_process(frontend, version):
    d = gcore_of(version, "idle.js")
    tasks = json.loads((d / "threads.json").read_text())
    out = run(frontend, version, d / "core", ["jsstack --all --json", "jsstack --all -n 4"])
    threads = json_line(out[0])["threads"]
    assert [t["thread"]["tid"] for t in threads] == [tid for tid, _ in tasks], (threads, tasks)
    for t in threads:
        assert "error" not in t and t["frames"], t
        assert all(f["kind"] == "native" for f in t["frames"]), t
    # The main thread waits in the event loop.
    main = threads[0]
    assert main["thread"]["tid"] == tasks[0][0]
    assert any("uv_run" in (f.get("symbol") or "") for f in main["frames"]), main
    # Text: each thread under its own heading, its native frames below.
    heads = [int(line.split()[1]) for line in out[1].splitlines() if line.startswith("thread ")]
    assert heads == [tid for tid, _ in tasks], out[1]
    assert "no thread is running JavaScript" not in out[1]


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
    out = outputs(frontend, version)
    by_thread = {owner(t): t["thread"]["tid"] for t in json_line(out[0])["threads"]}
    isos = json_line(out[2])["isolates"]
    assert [i["index"] for i in isos] == [0, 1, 2], isos
    runs = {tid: i["index"] for i in isos for tid in (t["tid"] for t in i["threads"])}
    # Each JS thread is tied to its own isolate; the main thread's is number 0.
    assert runs[by_thread["main"]] == 0
    assert {runs[by_thread["alpha"]], runs[by_thread["beta"]]} == {1, 2}
    name_of = {runs[by_thread[n]]: n for n in ("main", "alpha", "beta")}
    default = json_line(out[3])
    assert default["count"] == expected["main"] and default["isolate"]["index"] == 0
    for k in (1, 2):
        doc = json_line(out[3 + k])
        assert doc["count"] == expected[name_of[k]], (k, doc["count"], expected)
        assert doc["isolate"]["index"] == k
    groups = json_line(out[6])["groups"]
    assert [g["count"] for g in groups] == [expected[name_of[2]]]
    # By thread id; and findjsrefs picks the isolate that holds its address.
    alpha = by_thread["alpha"]
    assert alpha == threads_of(version)[0]["alpha"]
    doc = json_line(out[7])
    assert doc["count"] == expected["alpha"] and doc["isolate"]["index"] == runs[alpha]
    assert doc["instances"][0] == threads_of(version)[1]
    info = json_line(out[8])
    assert info["isolate"]["index"] == runs[by_thread["beta"]]
    assert info["exec_path"] and info["exec_path"].endswith("node")
    refs = json_line(out[9])
    assert refs["isolate"]["index"] == runs[alpha]
    assert any(r["holder_type"] == "array" and r["via"].startswith("[") for r in refs["refs"]), refs
    assert "v8dbg: no isolate 7" in out[10]
    assert "v8dbg: no thread 1 in the target" in out[11]
