"""`COMMAND --pid PID`: the read commands on a running node, held still only
while its memory is read.

tests/fixtures/pid_server.js is an HTTP server that also spins in JavaScript
on a timer and holds objects it counts; it writes what node itself says:
its pid, versions and argv, the counts, and `new Error().stack` from inside
the spinning function. On every pinned line one server answers every read
command with --pid, each checked against that truth: nodeinfo's fields,
jsstack's frames (the callers exactly where Error().stack places them, the
spinning function at its loop), the census counts, the holder object's
properties, its constructor and who refers to it, the closures of one
function and the variables one of them captured, its source. Each command
says its pause (stderr, and `paused_ms` in --json), the server answers after
every command, and /proc shows it running, untraced, while findjsobjects
walks the heap.

v8dbg killed while it holds the process (SIGKILL, SIGTERM, Ctrl-C): the
process runs on, untraced. Bad input: a pid that is gone, not node, traced
by another tracer, another user's (v8dbg run as nobody), a zombie, a stopped
process: one line each, exit 1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from support import FIXTURES, ROOT, SYSTEM_PYTHON, VERSIONS, LiveNode, json_line, tracer_of

FIXTURE = "pid_server.js"
PAUSE = re.compile(r"^v8dbg: process (\d+) paused ([\d.]+) ms", re.M)
SLOW = FIXTURES / "slow_hold.py"
SETPRIV = "/usr/bin/setpriv"
TRIES = 12  # stops that may land outside the spinning loop before jsstack is judged


def v8dbg(pid: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "v8dbg", *args, "--pid", str(pid)],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def fetch(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
        assert r.status == 200
        return json.loads(r.read())


def state_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


class Server:
    """The fixture's server, and what it said about itself."""

    def __init__(self, node: LiveNode) -> None:
        self.node = node
        self.pid = node.pid
        self.port = int((node.dir / "port").read_text())
        self.expected = json.loads((node.dir / "expected.json").read_text())
        self.stack = (node.dir / "spin-stack.txt").read_text()
        self.served = fetch(self.port)["served"]

    def answers(self, what: str) -> None:
        """The process runs on, untraced, and answers a request."""
        assert self.node.alive(), f"the server died after {what}"
        assert tracer_of(self.pid) == 0, f"still traced after {what}"
        assert state_of(self.pid) in "RS", f"state {state_of(self.pid)} after {what}"
        got = fetch(self.port)
        assert got["served"] > self.served and got["widgets"] == self.expected["widgets"], got
        self.served = got["served"]


def paused(p: subprocess.CompletedProcess, pid: int) -> float:
    """The pause v8dbg said, in ms (one line on stderr)."""
    found = PAUSE.findall(p.stderr)
    assert len(found) == 1 and int(found[0][0]) == pid, p.stderr
    return float(found[0][1])


def run_json(srv: Server, *args: str) -> dict:
    p = v8dbg(srv.pid, *args, "--json")
    assert p.returncode == 0, (args, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    doc = json_line(p.stdout, args[0])
    assert doc["paused_ms"] == pytest.approx(paused(p, srv.pid), abs=0.06), (doc, p.stderr)
    srv.answers(" ".join(args))
    return doc


def run_text(srv: Server, *args: str) -> str:
    p = v8dbg(srv.pid, *args)
    assert p.returncode == 0, (args, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    paused(p, srv.pid)
    srv.answers(" ".join(args))
    return p.stdout


def error_stack_frames(stack: str) -> list[tuple[str, str, int, int]]:
    """(function, script, line, column) of each `at` line of Error().stack."""
    out = []
    for line in stack.splitlines()[1:]:
        m = re.match(r"\s*at (.*?) \((.*):(\d+):(\d+)\)$", line)
        assert m, line
        name = m.group(1).split(" [as ")[0].split(".")[-1]
        out.append((name, m.group(2), int(m.group(3)), int(m.group(4))))
    return out


def spin_loop_line() -> int:
    lines = (FIXTURES / FIXTURE).read_text().splitlines()
    return next(i + 1 for i, t in enumerate(lines) if t.strip().startswith("while (Date.now() < end)"))


def check_stack(srv: Server) -> None:
    """jsstack --json while the server spins: the frames Error().stack gives."""
    want = error_stack_frames(srv.stack)
    script = str(FIXTURES / FIXTURE)
    for _ in range(TRIES):
        doc = run_json(srv, "jsstack")
        js = [f for f in doc["frames"] if f["kind"] == "js"]
        # (A stop at a pc of optimized code without a source position gives
        # no line, as for a core taken there: stop again.)
        if js and js[0]["function"] == "spin" and js[0]["line"] is not None:
            break
    else:
        raise AssertionError(f"no stop of {TRIES} landed in spin at a known line: {doc}")
    got = [(f["function"], f["script"], f["line"], f["column"]) for f in js]
    assert len(got) == len(want), (got, want)
    assert got[0][:3] == ("spin", script, spin_loop_line()), got[0]
    assert want[0][:2] == ("spin", script), want[0]
    assert got[1:] == want[1:], (got, want)
    for _ in range(TRIES):
        text = run_text(srv, "jsframe", "0")
        if not text.startswith("#0") or " spin at " in text.splitlines()[0]:
            break
    assert text.splitlines()[0].startswith("#0") and " spin at " in text.splitlines()[0], text
    assert f"{script}:{spin_loop_line()}:" in text.splitlines()[0], text


@pytest.mark.parametrize("version", VERSIONS)
def test_read_commands(version: str) -> None:
    with LiveNode(version, FIXTURE, flags=("--expose-gc",)) as node:
        srv = Server(node)
        exp = srv.expected
        info = run_json(srv, "nodeinfo")
        assert info["pid"] == srv.pid and info["node_version"] == exp["node_version"], info
        assert info["argv"] == exp["argv"] and info["exec_path"] == exp["exec_path"], info
        assert info["v8_version"] == exp["v8_version"], info

        check_stack(srv)

        census = census_while_serving(srv)
        groups = {g["constructor"]: g for g in census["groups"]}
        assert groups["PidWidget"]["count"] == exp["widgets"], groups["PidWidget"]
        assert groups["PidWidget"]["properties"] == ["id", "label"]
        assert groups["PidHolder"]["count"] == 1, groups["PidHolder"]

        inst = run_json(srv, "findjsinstances", "PidHolder")
        assert inst["count"] == 1, inst
        holder = inst["instances"][0]
        value = run_json(srv, "jsprint", holder)
        assert value["constructor"] == "PidHolder", value
        props = {p["key"]: p["value"] for p in value["properties"]}
        assert props["title"]["value"] == "holder", props
        assert props["widgets"]["type"] == "array" and props["widgets"]["length"] == exp["widgets"]
        counter = props["counter"]
        assert counter["type"] == "function" and counter["name"] == "counter", counter
        assert run_text(srv, "jsconstructor", holder).strip().endswith("PidHolder")
        refs = run_json(srv, "findjsrefs", holder)
        assert any(r["via"] == "closure:holder" for r in refs["refs"]), refs

        funcs = run_json(srv, "jsfunctions", "-n", "counter")
        mine = [f for f in funcs["functions"] if f["script"] == str(FIXTURES / FIXTURE)]
        assert len(mine) == 1 and mine[0]["closures"] == exp["counters"], funcs
        closure = run_json(srv, "jsclosure", counter["address"])
        names = {v["name"]: v["value"] for v in closure["variables"]}
        assert names["tally"]["value"] == 5 and names["step"]["value"] == 7, closure
        assert "function counter() { tally += step; return tally; }" in \
        run_text(srv, "jssource", counter["address"])
        iso = run_json(srv, "jsisolates")
        assert len(iso["isolates"]) == 1, iso


def census_while_serving(srv: Server) -> dict:
    """findjsobjects --json, with requests sent and the process's state read
    from /proc all the while: each request is answered, and for the whole heap
    walk the process is untraced and running (it walks a copy: the process was
    let go after the copy, not at the end). The state is judged, not a count
    of answers, which depends on how long the walk takes."""
    finished: list[float] = []
    failed: list[str] = []
    states: list[tuple[float, str, int]] = []
    done = threading.Event()

    def ask() -> None:
        while not done.is_set():
            try:
                fetch(srv.port)
                finished.append(time.monotonic())
            except Exception as e:  # noqa: BLE001 (reported below)
                failed.append(repr(e))
            time.sleep(0.01)

    def watch() -> None:
        while not done.is_set():
            try:
                states.append((time.monotonic(), state_of(srv.pid), tracer_of(srv.pid)))
            except (OSError, AssertionError, IndexError) as e:
                failed.append(f"/proc: {e!r}")
            time.sleep(0.002)

    threads = [threading.Thread(target=ask), threading.Thread(target=watch)]
    for t in threads:
        t.start()
    try:
        p = v8dbg(srv.pid, "findjsobjects", "--json")
        ended = time.monotonic()
    finally:
        done.set()
        for t in threads:
            t.join()
    assert p.returncode == 0, p.stderr
    assert not failed, failed
    doc = json_line(p.stdout, "findjsobjects")
    # The command's own seconds (the pause first) end just before v8dbg prints
    # and exits; 20 ms each side for the clocks' and /proc's slack.
    walk = (ended - doc["seconds"] + doc["paused_ms"] / 1000 + 0.02, ended - 0.02)
    seen = [(t, st, tr) for t, st, tr in states if walk[0] <= t <= walk[1]]
    held = [(round(t - walk[0], 3), st, tr) for t, st, tr in seen if st not in "RS" or tr]
    assert len(seen) >= 5, (f"{len(seen)} looks at /proc during the walk "
                            f"({doc['seconds']} s)", p.stderr)
    assert not held, (f"held while findjsobjects walked the heap ({doc['seconds']} s)",
                      held[:5], p.stderr)
    # Once let go, the spinning server also answers.
    assert any(f > walk[0] for f in finished), (finished, walk)
    pause = paused(p, srv.pid)
    assert "which the heap walk read" in p.stderr, p.stderr
    assert doc["paused_ms"] == pytest.approx(pause, abs=0.06)
    srv.answers("findjsobjects")
    return doc


def slow_cli(pid: int, mark: Path, *args: str) -> subprocess.Popen:
    """The CLI with every read of the held process slowed (tests/fixtures/slow_hold.py)."""
    code = (f"exec(open({str(SLOW)!r}).read())\n"
            "import sys\nfrom v8dbg.commands.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    env = dict(os.environ, V8DBG_TEST_MARK=str(mark), V8DBG_TEST_READ_WAIT="0.05")
    return subprocess.Popen([sys.executable, "-c", code, *args, "--pid", str(pid)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_while_held(srv: Server, sig: int, args: tuple[str, ...] = ("jsstack",)) -> str:
    """Start v8dbg, wait until it holds the process, send it `sig`; its stderr."""
    mark = srv.node.dir / f"held-{sig}"
    proc = slow_cli(srv.pid, mark, *args)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "v8dbg never held the process"
            time.sleep(0.01)
        # Held: every thread in a tracing stop, traced by v8dbg.
        assert tracer_of(srv.pid) == proc.pid and state_of(srv.pid) == "t"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    want = {signal.SIGKILL: -9, signal.SIGTERM: 143, signal.SIGINT: 130}[sig]
    assert proc.returncode == want, (proc.returncode, err)
    assert "Traceback" not in err, err
    srv.answers(f"v8dbg got signal {sig}")
    return err


@pytest.mark.parametrize("version", VERSIONS)
def test_killed_while_holding(version: str) -> None:
    """SIGKILL to v8dbg mid-read: the kernel lets the process go, and it runs on."""
    with LiveNode(version, FIXTURE, flags=("--expose-gc",)) as node:
        srv = Server(node)
        kill_while_held(srv, signal.SIGKILL)
        if version == VERSIONS[-1]:
            err = kill_while_held(srv, signal.SIGTERM)
            assert f"v8dbg: terminated; process {srv.pid} let go" in err, err
            err = kill_while_held(srv, signal.SIGINT, ("findjsobjects",))
            assert "v8dbg: interrupted" in err, err
            assert PAUSE.search(err), err


_HOLD = r"""
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
assert libc.ptrace(0x4206, int(sys.argv[1]), None, None) == 0  # PTRACE_SEIZE: traced, not stopped
print("held", flush=True)
time.sleep(120)
"""


def one_error(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("v8dbg: "), p.stderr
    return lines[0]


def test_bad_pids() -> None:
    """Gone, not node, traced by another, a zombie, stopped: one line each, exit 1;
    the process is left as it was."""
    sleeper = subprocess.Popen(["/bin/sleep", "60"])
    try:
        line = one_error(v8dbg(sleeper.pid, "jsstack"))
        assert f"process {sleeper.pid} (/usr/bin/sleep) is not a node process" in line \
            or f"process {sleeper.pid} (/bin/sleep) is not a node process" in line, line
        assert tracer_of(sleeper.pid) == 0 and state_of(sleeper.pid) == "S"
        os.kill(sleeper.pid, signal.SIGSTOP)
        while state_of(sleeper.pid) != "T":
            time.sleep(0.01)
        line = one_error(v8dbg(sleeper.pid, "findjsobjects"))
        assert line.startswith(f"v8dbg: process {sleeper.pid} is stopped"), line
        assert state_of(sleeper.pid) == "T" and tracer_of(sleeper.pid) == 0
        os.kill(sleeper.pid, signal.SIGKILL)
        while state_of(sleeper.pid) != "Z":  # not waited for yet: a zombie
            time.sleep(0.01)
        line = one_error(v8dbg(sleeper.pid, "nodeinfo"))
        assert line.startswith(f"v8dbg: process {sleeper.pid} is a zombie"), line
    finally:
        sleeper.kill()
        sleeper.wait()
    line = one_error(v8dbg(sleeper.pid, "jsstack"))
    assert line == f"v8dbg: no process {sleeper.pid}", line

    with LiveNode(VERSIONS[-1], FIXTURE, flags=("--expose-gc",)) as node:
        srv = Server(node)
        holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(node.pid)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            line = one_error(v8dbg(node.pid, "jsstack"))
            assert f"already traced by process {holder.pid}" in line, line
        finally:
            holder.kill()
            holder.wait()
        srv.answers("a refused --pid")
        if os.geteuid() == 0 and Path(SETPRIV).exists():
            # Not ours to trace: v8dbg run as another user (nobody) than the server's.
            p = subprocess.run([SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups",
                                SYSTEM_PYTHON, "-m", "v8dbg", "jsstack", "--pid", str(node.pid)],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
            line = one_error(p)
            assert line == (f"v8dbg: cannot see process {node.pid}'s executable "
                            f"(/proc/{node.pid}/exe): it belongs to another user; run v8dbg as "
                            "that user or as root"), line
            srv.answers("--pid as another user")
        for args, want in ((("jsstack", "--core", "x"), "--core and --pid name two targets"),
                           (("jsstack", "--sysroot", "/"), "--sysroot and --solib-path are for")):
            p = v8dbg(node.pid, *args)
            assert p.returncode == 2 and want in p.stderr, p.stderr
        p = subprocess.run([sys.executable, "-m", "v8dbg", "jsstack", "--pid", "12ab"],
                           cwd=ROOT, capture_output=True, text=True)
        assert p.returncode == 2 and "--pid: '12ab' is not a process id" in p.stderr, p.stderr
        srv.answers("usage errors")
