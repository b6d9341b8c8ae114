"""Attach to a live node, run every command, detach: the process runs on unchanged.

tests/fixtures/server.js is an HTTP server on 127.0.0.1 that also spins in
JavaScript on a timer. For each debugger and node line we attach twice
(the second time with addresses the first found), run each command, and after
each detach check that the process is alive, its CPU time keeps growing and it
still answers an HTTP request on 127.0.0.1 with the same state as before.
Also: attached to a process that is not node (sleep), every command says the
binary has no V8 metadata, in one line, and the process runs on.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest

from support import VERSIONS, LiveNode, debugger_run_source, json_line
from test_corrupt import CMD_BOUND, check_output, run_debugger

CASES = [(d, v) for d in ("gdb", "lldb") for v in VERSIONS]
BOUND = 240.0
# A heap scan of a process that runs on. lldb itself would stop the process
# for every read (about 3.5 minutes for the scan on 2 cores); v8dbg reads it
# through the kernel instead (seconds), so the bound is BOUND's.
RUNNING_BOUND = BOUND


def fetch(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
        assert r.status == 200
        return json.loads(r.read())


def still_running(node: LiveNode, port: int, before: dict) -> None:
    assert node.alive(), "the process died after the debugger detached"
    t1 = t2 = node.cpu_time()
    deadline = time.monotonic() + 5  # generous for a loaded machine; a stopped process never grows
    while t2 <= t1 and time.monotonic() < deadline:
        time.sleep(0.2)
        t2 = node.cpu_time()
    assert t2 > t1, f"CPU time stopped growing ({t1} -> {t2}): the process is not running"
    assert fetch(port) == before


@pytest.mark.parametrize("debugger,version", CASES)
def test_attach_run_detach(debugger: str, version: str) -> None:
    def runner(cmds: list[str]) -> list[str]:
        outs = run_debugger(debugger, version, cmds, pid=node.pid, timeout=BOUND)
        for c, (o, secs) in zip(cmds, outs):
            assert secs < CMD_BOUND, f"{debugger} {version} live: `{c}` took {secs:.1f} s:\n{o}"
        return [o for o, _ in outs]

    with LiveNode(version, "server.js") as node:
        port = int((node.dir / "port").read_text())
        before = fetch(port)
        assert before["pid"] == node.pid
        first = ["nodeinfo --json", "jsstack -v --json", "jsstack -a", "jsframe 0",
                 "findjsobjects -c Keeper --json", "findjsinstances --json Keeper",
                 "jsfunctions -n spin --json"]
        outs = runner(first)
        res = {c: check_output(c, o, f"{debugger} {version} live") for c, o in zip(first, outs)}
        info = json_line(outs[0])
        assert info["pid"] == node.pid and info["node_version"] == f"v{version}", info
        assert res["jsstack -v --json"] == "ok"
        assert json_line(outs[1])["frames"], outs[1]
        inst = json_line(outs[5])
        assert inst["count"] == 1, inst
        funcs = json_line(outs[6])
        assert any(f["name"] == "spin" for f in funcs["functions"]), funcs
        still_running(node, port, before)

        # A GC may have moved the Keeper since the first attach: each command below
        # finds it (and its handler) again in the attach it runs in.
        second = [refind(debugger, "jsprint --json ADDR"), refind(debugger, "jsconstructor ADDR"),
                  refind(debugger, "findjsrefs ADDR"), "jsprint 0x11", "jsstack",
                  refind(debugger, "jsclosure --json ADDR", "handler"),
                  refind(debugger, "jssource ADDR", "handler")]
        outs2 = runner(second)
        names = ["jsprint --json", "jsconstructor", "findjsrefs", "jsprint 0x11", "jsstack",
                 "jsclosure --json", "jssource"]
        res2 = {n: check_output(n, o, f"{debugger} {version} live") for n, o in zip(names, outs2)}
        assert res2["jsprint 0x11"] == "error"
        assert all(r == "ok" for n, r in res2.items() if n != "jsprint 0x11"), res2
        doc = json_line(outs2[0], "jsprint")
        assert doc.get("constructor") == "Keeper", doc
        props = {p["key"]: p["value"] for p in doc["properties"]}
        assert props["name"]["value"] == "server-state", props
        assert props["handler"]["type"] == "function", props
        assert outs2[1].strip().endswith("Keeper"), outs2[1]
        assert "keeper" in outs2[2] or "Keeper" in outs2[2], outs2[2]
        assert [v["name"] for v in json_line(outs2[5], "jsclosure")["variables"]], outs2[5]
        assert "function handler(req, res)" in outs2[6], outs2[6]
        still_running(node, port, before)


def refind(debugger: str, command: str, which: str = "keeper") -> str:
    """A debugger command line that runs `command` with ADDR replaced by the Keeper's
    address (or its handler's), both looked up in the same attach, and prints what
    `command` printed (its error included)."""
    run = debugger_run_source(debugger)
    code = (run + "import json\n"
            "def _doc(c):\n"
            "    return json.loads(next(l for l in _run(c).splitlines() if l.startswith('{')))\n"
            "a = _doc('findjsinstances --json Keeper')['instances'][0]\n")
    if which == "handler":
        code += ("a = {p['key']: p['value'] for p in _doc('jsprint --json ' + a)['properties']}"
                 "['handler']['address']\n")
    code += f"print(_run({command!r}.replace('ADDR', a)).rstrip())\n"
    return f"{'python' if debugger == 'gdb' else 'script'} exec({code!r})"


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_attach_to_a_process_that_is_not_node(debugger: str) -> None:
    """Attached to a process without V8: one clear line per command, and it runs on."""
    import subprocess
    proc = subprocess.Popen(["/bin/sleep", "300"])
    try:
        cmds = ["jsstack", "nodeinfo --json", "findjsobjects", "jsprint 0x11"]
        outs = run_debugger(debugger, "24.21.0", cmds, pid=proc.pid, timeout=BOUND)
        for c, (o, secs) in zip(cmds, outs):
            assert secs < CMD_BOUND
            assert check_output(c, o, f"{debugger} attached to sleep") == "error", o
            if c != "jsprint 0x11":
                assert "no V8 postmortem metadata" in o, o
        assert proc.poll() is None, "the process died after the debugger detached"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_running_process_is_named_as_such(debugger: str) -> None:
    """Threads left running (gdb non-stop, lldb asynchronous): commands say so, in one line each."""
    import os
    import signal
    import subprocess
    from support import GDB, LLDB, ROOT, node_binary

    def each(c: str) -> str:  # lldb -b would stop at the first command that fails
        return ("script r = lldb.SBCommandReturnObject(); t0 = time.monotonic(); "
                f"_ = lldb.debugger.GetCommandInterpreter().HandleCommand({c!r}, r); "
                "print((r.GetOutput() or '') + (r.GetError() or '')); "
                f"print('[{c}: %.1f s]' % (time.monotonic() - t0))")

    def until_state(name: str) -> str:
        """lldb's Python: wait (bounded) until lldb has seen the process in state `name`."""
        st = "lldb.debugger.GetSelectedTarget().GetProcess().GetState()"
        return (f"d = time.monotonic() + 60; _ = [time.sleep(0.02) for _ in iter(lambda: "
                f"{st} != lldb.{name} and time.monotonic() < d, False)]; "
                f"print('[state {name}: %s]' % ({st} == lldb.{name}))")

    with LiveNode("24.21.0", "server.js") as node:
        port = int((node.dir / "port").read_text())
        before = fetch(port)
        cmds = ["jsstack -n 3", "findjsinstances --json Keeper"]
        if debugger == "gdb":
            argv = [GDB, "-nx", "-q", "-batch", "-ex", "set non-stop on",
                    "-ex", f"source {ROOT}/plugins/gdb/v8dbg.py",
                    "-ex", f"file {node_binary('24.21.0')}", "-ex", f"attach {node.pid}",
                    "-ex", "continue -a &", "-ex", "shell sleep 0.3"]
            for c in cmds:
                argv += ["-ex", c]
        else:
            argv = [LLDB, "--no-lldbinit", "-b", "-p", str(node.pid),
                    "-o", f"command script import {ROOT}/plugins/lldb/v8dbg.py",
                    "-o", "script import time; lldb.debugger.SetAsync(True)",
                    "-o", "process continue", "-o", f"script {until_state('eStateRunning')}"]
            for c in cmds:
                argv += ["-o", each(c)]
            # lldb -b kills a process still attached when it quits: detach from
            # the running process (lldb halts it first, then lets it go) and wait
            # until lldb has seen it detached. (With an interrupt, a wait for the
            # stop and a synchronous detach, one CI run's lldb printed nothing
            # after echoing the detach, not even the wait's result.)
            argv += ["-o", "process detach", "-o", f"script {until_state('eStateDetached')}"]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=RUNNING_BOUND,
                               cwd=ROOT)
        except subprocess.TimeoutExpired as e:
            said = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
                else (e.stdout or "")
            state = [ln for ln in Path(f"/proc/{node.pid}/status").read_text().splitlines()
                     if ln.startswith(("State", "TracerPid"))]
            # The reason last as well: a CI log keeps only a failure's tail.
            pytest.fail(f"{debugger} did not end in {RUNNING_BOUND:.0f} s; node {state}; "
                        f"it printed:\n{said[-4000:]}\n[{debugger} did not end in "
                        f"{RUNNING_BOUND:.0f} s; node {state}]")
        out = p.stdout + p.stderr
        assert "Traceback" not in out and "internal error" not in out, out
        assert out.count("v8dbg: warning: the process is running, not stopped") == 2, out
        if debugger == "lldb":
            assert "[state eStateRunning: True]" in out and "[state eStateDetached: True]" in out, out
        if debugger == "gdb":
            # gdb itself leaves a process it detached from in non-stop mode stopped.
            os.kill(node.pid, signal.SIGCONT)
        still_running(node, port, before)
