"""jshandles: what keeps the event loop alive, against what node itself said.

tests/fixtures/handles.js waits on a listening HTTP server, a client socket
(and the server's side of it), a pending connect, an open() of a FIFO
nobody writes (a thread-pool request that never ends), three timers (one
unref'd), an immediate, and a worker with its own timer and port; just
before process.abort() it writes process.getActiveResourcesInfo(), its
timers' delays and start times and its sockets' fds (the worker writes its
own list). `resources` must equal node's list, entry for entry, on every
pinned line and front end, for the main thread and the worker, and on every
release of the sweep (node's structures moved within line 18); the details
must agree with the fixture.
Bad input: a core whose Environment pointers are gone, and one whose
handle queue is damaged, each give one line. And a live process, attached
by gdb -p and lldb -p, with the process running on afterwards.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from support import (CACHE, FIXTURES, FRONTENDS, ROOT, SWEEP, VERSIONS, LiveNode, core_program,
                     fetch_node, json_line, make_core, node_binary, read_json, run, run_cli,
                     run_gdb, run_lldb)

FIXTURE = "handles.js"


def check(doc: dict, want: dict, live: bool = False) -> None:
    """A jshandles --json document against what the process said of itself."""
    assert doc["resources"] == want["resources"], (doc["resources"], want["resources"])
    counted = [h for h in doc["handles"] if h["counted"]]
    assert [r["type"] for r in doc["requests"] if r["counted"]] + \
        [h["type"] for h in counted] == [r for r in want["resources"]
                                          if r not in ("Timeout", "Immediate")]
    by_fd = {h["fd"]: h for h in doc["handles"]}
    server, client = by_fd[want["fd_server"]], by_fd[want["fd_client"]]
    assert server["type"] == "TCPServerWrap" and server["owner_constructor"] == "Server", server
    assert server["active"] and server["refed"] and server["object_constructor"] == "TCP"
    assert client["type"] == "TCPSocketWrap" and client["owner_constructor"] == "Socket", client
    fs = [r for r in doc["requests"] if r["type"] == "FSReqCallback"]
    assert len(fs) == 1 and fs[0]["object_constructor"] == "FSReqCallback", doc["requests"]
    script = str(FIXTURES / FIXTURE)
    timeouts = {t["callback"]["name"]: t for t in doc["timers"]
                if t["kind"] == "Timeout" and t["callback"]}
    for w in want["timers"]:
        t = timeouts[w["callback"]]
        cb = t["callback"]
        assert (cb["script"], cb["line"]) == (script, w["line"]), t
        assert (t["ms"], t["start"], t["refed"]) == (w["ms"], w["start"], w["refed"]), (t, w)
        assert t["due"] == w["start"] + w["ms"], t
        assert (t["repeat"] is not None) == (w["callback"] == "flushMetrics"), t
    # node's own refed Timeouts are the ones counted.
    assert sum(1 for t in doc["timers"] if t["kind"] == "Timeout" and t["refed"]) == \
        want["resources"].count("Timeout")
    immediates = [t for t in doc["timers"] if t["kind"] == "Immediate"]
    if live:
        assert not immediates, immediates
    else:
        assert [t["callback"]["name"] for t in immediates] == ["soonImmediate"], immediates


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_resources_as_node_counts_them(frontend, version):
    d = make_core(version, FIXTURE)
    want = read_json(d, "expected-handles.json")
    out = run(frontend, version, d / "core", ["jshandles --json", "jshandles",
                                              "jshandles --isolate 1 --json"])
    check(json_line(out[0], "jshandles"), want)
    # The worker's isolate, its own Environment: as node said in that thread.
    worker = json_line(out[2], "jshandles")
    assert worker["resources"] == read_json(d, "expected-handles-worker.json")["resources"]
    assert worker["isolate"]["index"] == 1 and worker["environment"] != \
        json_line(out[0])["environment"]
    ticks = [t for t in worker["timers"] if t["callback"] and t["callback"]["name"] == "workerTick"]
    assert len(ticks) == 1 and ticks[0]["ms"] == 4242 and ticks[0]["repeat"] == 4242, worker
    text = out[1]
    n = len(want["resources"])
    assert f"{n} resources keep the event loop alive" in text, text
    assert "TCPServerWrap" in text and "pollHealth at " in text and "Server 0x" in text, text
    assert "Traceback" not in text


@pytest.mark.parametrize("version", SWEEP)
def test_sweep_releases(version):
    fetch_node(version)
    d = make_core(version, FIXTURE)
    out = run_cli(version, d / "core", ["jshandles --json"])
    check(json_line(out[0], "jshandles"), read_json(d, "expected-handles.json"))


# -- bad input ---------------------------------------------------------------------------------

def _patched(version: str, kind: str) -> Path:
    """A copy of the fixture's core with node's state damaged, made once."""
    src = make_core(version, FIXTURE)
    d = CACHE / "corrupt" / version / f"handles-{kind}-{src.name}"
    core = d / "core"
    if (d / "done").exists():
        return core
    d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "--sparse=always", str(src / "core"), str(core)], check=True)
    sys.path.insert(0, str(ROOT))
    from v8dbg.heap import handles, isolates
    from v8dbg.v8 import layouts, nodedbg
    prog, backend = core_program(src / "core", version)
    heap = isolates.isolates(prog)[0].heap
    vals = nodedbg.values(prog)
    writes: list[tuple[int, bytes]] = []
    if kind == "noenv":
        # Every native context's Environment slot emptied: as before node's bootstrap.
        facts = layouts.node_facts(prog.md.v8_version)
        k = vals["const_ContextEmbedderIndex__kEnvironment__int"]
        for nc in handles._native_contexts(prog, heap):
            ed = prog.mem.u64(nc - 1 + prog.md.const("native_context_embedder_data_offset"))
            writes.append((ed - 1 + facts["EmbedderDataHeader"] + 8 * k, bytes(8)))
    else:
        env = handles.environments(prog, heap, vals)[0]
        head = (env + vals["offset_Environment__handle_wrap_queue___Environment_HandleWrapQueue"]
                + vals["offset_Environment_HandleWrapQueue__head___ListNode_HandleWrap"])
        nxt = head + vals["offset_ListNode_HandleWrap__next___uintptr_t"]
        writes.append((nxt, (0x4141414141414140).to_bytes(8, "little")))
    with open(core, "r+b") as fh:
        for addr, data in writes:
            for vaddr, _memsz, off, filesz in backend._segs:
                if vaddr <= addr < vaddr + filesz:
                    fh.seek(off + addr - vaddr)
                    fh.write(data)
                    break
            else:
                raise AssertionError(f"0x{addr:x} is not in the core")
    (d / "done").write_text("ok")
    return core


BAD = {"noenv": "found no node Environment", "queue": "handle queue (handle_wrap_queue_) is damaged"}


@pytest.mark.parametrize("kind", sorted(BAD))
@pytest.mark.parametrize("version", VERSIONS)
def test_bad_environment_one_line(version, kind):
    core = _patched(version, kind)
    p = subprocess.run([sys.executable, "-m", "v8dbg", "jshandles", "--core", str(core),
                        "--binary", str(node_binary(version))], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    errs = [line for line in p.stderr.splitlines() if line.startswith("v8dbg: ")]
    assert len(errs) == 1 and BAD[kind] in errs[0], p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    out = run_cli(version, core, ["jshandles --json"])[0]
    assert BAD[kind] in json_line(out)["error"], out


@pytest.mark.parametrize("frontend", ["gdb", "lldb"])
def test_bad_environment_in_debuggers(frontend):
    version = VERSIONS[-1]
    core = _patched(version, "noenv")
    runner = run_gdb if frontend == "gdb" else run_lldb
    out = runner(version, ["jshandles", "jsstack -n 1"], core=core)
    assert BAD["noenv"] in out[0] and "Traceback" not in out[0], out[0]
    assert "#0" in out[1] or "native" in out[1] or "0x" in out[1], out[1]  # the session goes on


# -- a live process ----------------------------------------------------------------------------

@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_live_process(debugger):
    version = VERSIONS[-1]
    with LiveNode(version, FIXTURE) as node:
        want = read_json(node.dir, "expected-handles.json")
        runner = run_gdb if debugger == "gdb" else run_lldb
        out = runner(version, ["jshandles --json"], pid=node.pid, timeout=300)
        check(json_line(out[0], "jshandles"), want, live=True)
        assert node.alive(), "the process died after the debugger detached"
        port = int((node.dir / "port").read_text())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.status == 200 and r.read() == b"ok"  # it serves on
