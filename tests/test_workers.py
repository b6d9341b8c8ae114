"""worker_threads: each worker's JS stack on its own thread, and `jsstack --all`."""

from __future__ import annotations

import pytest

from support import FRONTENDS, VERSIONS, LiveNode, json_line, make_core, run, run_gdb, run_lldb
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
