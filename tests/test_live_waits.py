"""A live process that waits, read as it runs: jsasync and jshandles with
`--pid` in the CLI, and under `gdb -p` / `lldb -p`.

tests/fixtures/live_waits.js is an HTTP server whose 37 requests each wait in
handler -> fetchUser -> query on a pool that never hands out a connection,
plus one refreshCache awaiting a Promise.all of two queries. Once all wait,
it writes where V8 places each of those functions (`new Error().stack` on the
line of its await) and what `process.getActiveResourcesInfo()` says. On every
pinned line and front end: jsasync gives the 37 chains and the two
Promise.all chains with each function on its await's line, jshandles lists
exactly the resources node listed, and the server still answers afterwards.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from support import FRONTENDS, ROOT, VERSIONS, LiveNode, json_line, read_json, run_gdb, run_lldb

import subprocess
import sys

FIXTURE = "live_waits.js"
_servers: dict[str, LiveNode] = {}


@pytest.fixture(scope="module")
def servers():
    yield _servers
    for node in _servers.values():
        node.close()


def server(servers: dict, version: str) -> LiveNode:
    if version not in servers or not servers[version].alive():
        servers[version] = LiveNode(version, FIXTURE)
    return servers[version]


def read(frontend: str, version: str, pid: int) -> tuple[dict, dict]:
    cmds = ["jsasync --json", "jshandles --json"]
    if frontend == "cli":
        docs = []
        for c in cmds:
            p = subprocess.run([sys.executable, "-m", "v8dbg", *c.split(), "--pid", str(pid)],
                               cwd=ROOT, capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, p.stderr
            assert re.search(rf"^v8dbg: process {pid} paused [\d.]+ ms", p.stderr, re.M), p.stderr
            docs.append(json_line(p.stdout, c.split()[0]))
        return docs[0], docs[1]
    runner = run_gdb if frontend == "gdb" else run_lldb
    out = runner(version, cmds, pid=pid, timeout=300)
    return json_line(out[0], "jsasync"), json_line(out[1], "jshandles")


def where(frame: str) -> tuple[str, int]:
    """`    at Server.handler (/x/live_waits.js:35:19)` -> ('handler', 35)."""
    m = re.match(r"\s*at (?:\S+\.)?(\w+) \(.*:(\d+):\d+\)$", frame)
    assert m, frame
    return m.group(1), int(m.group(2))


def short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_waiting_server(servers, version: str, frontend: str) -> None:
    node = server(servers, version)
    want = read_json(node.dir, "expected-waits.json")
    lines = dict(where(f) for f in want["lines"].values())
    asyncs, handles = read(frontend, version, node.pid)

    # jsasync: 37 x handler <- fetchUser <- query, each at its await's line.
    groups = {tuple(short(f["function"]) for f in g["chain"]): g["count"] for g in asyncs["groups"]}
    assert groups.get(("query", "fetchUser", "handler")) == want["requests"], groups
    for g in asyncs["groups"]:
        for f in g["chain"]:
            name = short(f["function"])
            if name in lines:
                assert f["line"] == lines[name], (name, f, lines)
                assert f["script"].endswith(FIXTURE), f
    # refreshCache awaits Promise.all of two queries: one chain per element.
    alls = [c for c in asyncs["chains"] if short(c[-1]["function"]) == "refreshCache"]
    assert len(alls) == 2, asyncs["chains"]
    assert sorted(c[1].get("index") for c in alls if c[1]["function"] == "Promise.all") == [0, 1], alls
    assert asyncs["total"] == 3 * want["requests"] + 3, asyncs["total"]

    # jshandles: what node itself listed, entry for entry.
    assert sorted(handles["resources"]) == sorted(want["resources"]), (handles["resources"],
                                                                       want["resources"])
    assert node.alive(), "the process died after being read"
    port = int((node.dir / "port").read_text())
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
        assert r.status == 200 and r.read() == b"ok"  # it serves on
