"""`v8dbg trace` and `v8dbg catch` on a running node of every pinned line,
against what node counts itself in the same run.

tests/fixtures/trace_server.js is one server per line, shared by the tests:
- gc: the GCs traced while the server churns equal (+-2) the perf_hooks
  'gc' entries it observed over the same requests;
- threadpool: PBKDF2, FSReq jobs equal to the pbkdf2 and fs.stat calls it
  made; Zlib jobs twice its deflate calls (zlib.deflate writes its input,
  then finishes the stream: two units of pool work);
- http: requests per method and URL equal to those sent over 127.0.0.1
  (fresh connections and one kept alive);
- threadpool, add-on: a real native add-on (tests/fixtures/pool_addon.cc,
  built with g++ against node-api-headers, loaded by the server) queues
  N-API works and uv_queue_work jobs that sleep a known time: counts per
  add-on function equal the jobs queued, run times that sleep;
- catch: the 5th GET /req closes a bad fd from closeBadFd(); the core
  written has that function under fs.closeSync at the top of its JS stack
  (as `jsstack --core` reads it), and the server answers afterwards; catch
  or its bpftrace killed while the server is stopped: it runs on.
Also: stopped by SIGINT (gc, http) or SIGTERM (threadpool), nothing left attached (no bpftrace, no uprobe in tracefs), no process
left stopped, and bad input (no such pid, a binary without the probe site).
BPF not permitted on a machine: each test is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import http.client
from pathlib import Path

import pytest

from support import (ROOT, SYSTEM_PYTHON, VERSIONS, LiveNode, build_addon, json_line, major,
                     validate_output)

TRACING_LINE = "v8dbg: tracing process"


def _bpf_problem() -> str | None:
    if os.geteuid() != 0:
        return "BPF tracing needs root here (tests run unprivileged)"
    if not shutil.which("bpftrace"):
        return "bpftrace is not installed (scripts/setup.sh installs it)"
    r = subprocess.run(["bpftrace", "-e", "BEGIN { exit(); }"], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        return f"BPF is not permitted on this machine: {r.stderr.strip().splitlines()[-1:]}"
    return None


_PROBLEM = _bpf_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=_PROBLEM or "")


@pytest.fixture(scope="module", params=VERSIONS)
def server(request):
    node = LiveNode(request.param, "trace_server.js",
                    env={"V8DBG_ADDON": str(build_addon("pool_addon.cc"))})
    node.port = int((node.dir / "port").read_text())  # type: ignore[attr-defined]
    node.version = request.param  # type: ignore[attr-defined]
    try:
        yield node
    finally:
        node.close()


def get(node, path: str, method: str = "GET") -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{node.port}{path}", method=method)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


class Tracer:
    """`v8dbg ARGS` in the background, started once its probes are attached;
    stopped by SIGINT (as Ctrl-C) and always reaped."""

    def __init__(self, *args: str, wrapper: str | None = None) -> None:
        run = ["-c", wrapper] if wrapper else ["-m", "v8dbg"]  # wrapper: a script running v8dbg
        self.proc = subprocess.Popen([sys.executable, *run, *args], cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err = ""
        deadline = time.time() + 90
        while TRACING_LINE not in self.err:
            line = self.proc.stderr.readline()  # type: ignore[union-attr]
            if not line:
                out, err = self.proc.communicate(timeout=30)
                raise AssertionError(f"tracer ended before attaching: {self.err}{err}{out}")
            self.err += line
            if time.time() > deadline:
                self.kill()
                raise AssertionError(f"tracer did not attach: {self.err}")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, self.err + err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def assert_nothing_left(pid: int) -> None:
    """No bpftrace of ours runs, no uprobe is registered, the target is not stopped."""
    me = str(os.getpid())
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                comm = (p / "comm").read_text().strip()
                ppid = (p / "stat").read_text().rsplit(")", 1)[1].split()[1]
            except OSError:
                continue
            assert not (comm == "bpftrace" and ppid == me), f"bpftrace {p.name} left running"
    events = Path("/sys/kernel/tracing/uprobe_events")
    if events.exists():
        assert "node" not in events.read_text(), events.read_text()
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state not in ("T", "t"), f"process {pid} left stopped"


def test_gc_count_matches_perf_hooks(server):
    t = Tracer("trace", "gc", "--pid", str(server.pid), "--json")
    try:
        get(server, "/mark")
        for _ in range(3):
            get(server, "/gc?n=4")
        node_count = json.loads(get(server, "/counts"))["gc"]
        rc, out, err = t.stop()
    finally:
        t.kill()
    assert rc == 0, err
    doc = json_line(out, "trace gc")
    assert node_count >= 6, f"the fixture made too few GCs to compare: {node_count}"
    assert abs(doc["count"] - node_count) <= 2, (doc["count"], node_count, doc)
    assert len(doc["events"]) == doc["count"]
    assert {"scavenge"} <= {e["type"] for e in doc["events"]}, doc["events"]
    assert all(e["duration_us"] > 0 for e in doc["events"])
    assert_nothing_left(server.pid)


def test_threadpool_jobs_per_kind(server):
    p, z, f = 7, 5, 9
    t = Tracer("trace", "threadpool", "--pid", str(server.pid), "--json")
    try:
        assert get(server, f"/pool?p={p}&z={z}&f={f}") == "pooled"
        rc, out, err = t.stop(signal.SIGTERM)  # as a service manager stops it: maps still read
    finally:
        t.kill()
    assert rc == 0, err
    doc = json_line(out, "trace threadpool")
    kinds = {k["kind"]: k for k in doc["kinds"]}
    got = {k: kinds[k]["count"] if k in kinds else 0 for k in ("PBKDF2", "Zlib", "FSReq")}
    assert got == {"PBKDF2": p, "Zlib": 2 * z, "FSReq": f}, doc["kinds"]
    for k in ("PBKDF2", "Zlib", "FSReq"):
        s = kinds[k]
        assert 0 < s["p50_us"] <= s["p99_us"] <= s["max_us"], s
        assert s["run"]["max_us"] <= s["max_us"] and s["wait"]["max_us"] <= s["max_us"], s
    assert_nothing_left(server.pid)


def _worker_sites(server) -> list[int]:
    """The runtime addresses of the worker() probes on this line (none on 26)."""
    from v8dbg.inferior.elf import open_elf
    from v8dbg.tracing import threadpool, uvwork
    from v8dbg.v8 import probes
    exe = os.readlink(f"/proc/{server.pid}/exe")
    elf = open_elf(exe)
    ws = uvwork.worker_sites(elf, probes.find(elf, threadpool.SITES, threadpool.OPTIONAL))
    if major(server.version) < 26:
        assert ws is not None
    if ws is None:
        return []
    return [uvwork.runtime_address(server.pid, exe, elf.vaddr_to_offset(a)) for a in (ws.before, ws.after)]


def _byte(pid: int, addr: int) -> int:
    with open(f"/proc/{pid}/mem", "rb") as fh:
        fh.seek(addr)
        return fh.read(1)[0]


def test_threadpool_addon_jobs(server):
    """A native add-on's jobs (tests/fixtures/pool_addon.cc, built with g++),
    queued through N-API and with uv_queue_work called directly: counted and
    named by the add-on's own C functions (its execute callback, its work
    callback, symbolized from the .node file), and timed, the run of each
    being its 40 ms sleep. Direct uv_queue_work jobs are timed on every
    line: at uv__queue_work's entry where it is emulated (node 26), before
    by perf-event uprobes in libuv's worker() (tracing/uvwork.py)."""
    napi, uv, ms = 6, 5, 40
    get(server, "/pool?p=1&z=0&f=0")  # the pool's threads started, as on a server that has run
    sites = _worker_sites(server)
    t = Tracer("trace", "threadpool", "--pid", str(server.pid), "--json")
    try:
        # On 18 to 24 the worker() probes (int3) cost every pool job: placed
        # only once a job to time is queued, so none yet ...
        get(server, "/pool?p=1&z=0&f=0")
        assert [_byte(server.pid, a) for a in sites] == [0xE8] * len(sites), sites
        # ... and in place after one (it ran before them: counted untimed).
        assert get(server, f"/addon?napi=0&uv=1&ms={ms}") == "queued"
        deadline = time.time() + 10
        while [_byte(server.pid, a) for a in sites] != [0xCC] * len(sites):
            assert time.time() < deadline, "the worker() probes were never placed"
            time.sleep(0.05)
        time.sleep(2 * ms / 1000)
        assert get(server, f"/addon?napi={napi}&uv={uv}&ms={ms}") == "queued"
        rc, out, err = t.stop()
    finally:
        t.kill()
    # ... and gone after: the calls are back.
    assert [_byte(server.pid, a) for a in sites] == [0xE8] * len(sites), sites
    assert rc == 0, err
    doc = json_line(out, "trace threadpool")
    validate_output(doc, "trace")
    kinds = {k["kind"]: k for k in doc["kinds"]}
    untimed = {u["kind"]: u["count"] for u in doc.get("untimed", [])}
    # The first job: untimed where it ran before the probes were placed.
    first = untimed.pop("pool_uv_sleep", 0) if sites else 0
    want_timed = {"pool_napi_sleep": napi, "pool_uv_sleep": uv + 1 - first}
    assert untimed == {} and first <= 1, doc
    if first:
        assert "before the probes" in doc["untimed_why"], doc
    got = {k: kinds[k]["count"] if k in kinds else 0 for k in want_timed}
    assert got == want_timed, doc["kinds"]
    for name, n in got.items():
        k = kinds[name]
        run = k["run"]
        # p50 is the upper bound of its bucket, capped at max: >= 40 ms puts
        # the median run in the 32-65 ms bucket, and no run took longer.
        assert ms * 1000 <= run["p50_us"] <= run["max_us"] < 65536, (name, run)
        assert run["max_us"] <= k["max_us"] and k["wait"]["max_us"] <= k["max_us"], k
        assert sum(b["count"] for b in k["histogram"] if b["low"] >= 32768) == n, k
    assert_nothing_left(server.pid)


# A kernel without the uprobe PMU (what the worker() probes need), bpftrace
# still working: the path v8dbg reads the PMU's type from made absent.
_NO_UPROBE_PMU = r"""
import runpy, sys
import v8dbg.inferior.perf_uprobes as pu
pu.UPROBE_TYPE = "/nonexistent/uprobe/type"
sys.argv = ["v8dbg", *sys.argv[1:]]
runpy.run_module("v8dbg", run_name="__main__")
"""


def test_threadpool_addon_jobs_without_perf_events(server):
    """Where the perf-event uprobes cannot be had, an add-on's uv_queue_work
    jobs are counted untimed with the reason (JSON untimed_why, one stderr
    line) and the rest is traced as usual. Node 18 to 24 only (26 needs no
    such probes); one line, to keep the suite short."""
    if server.version != VERSIONS[0]:
        pytest.skip("one line is enough: the fallback is the same on 18 to 24")
    uv, ms = 3, 20
    get(server, "/pool?p=1&z=0&f=0")
    t = Tracer("trace", "threadpool", "--pid", str(server.pid), "--json", wrapper=_NO_UPROBE_PMU)
    try:
        assert get(server, f"/addon?napi=0&uv={uv}&ms={ms}") == "queued"
        rc, out, err = t.stop()
    finally:
        t.kill()
    assert rc == 0, err
    doc = json_line(out, "trace threadpool")
    validate_output(doc, "trace")
    assert {u["kind"]: u["count"] for u in doc.get("untimed", [])} == {"pool_uv_sleep": uv}, doc
    assert "pool_uv_sleep" not in {k["kind"] for k in doc["kinds"]}, doc
    assert "no uprobe perf events" in doc["untimed_why"], doc
    assert ("v8dbg: perf-event uprobes refused (this kernel has no uprobe perf events "
            "(/nonexistent/uprobe/type)): uv_queue_work jobs of add-ons are counted, "
            "not timed") in err.splitlines(), err
    assert_nothing_left(server.pid)


def test_http_requests_per_url(server):
    t = Tracer("trace", "http", "--pid", str(server.pid), "--json")
    try:
        for _ in range(7):
            get(server, "/alpha")
        for _ in range(3):
            get(server, "/beta?x=1", method="POST")
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        for _ in range(4):  # one connection, kept alive
            conn.request("GET", "/gamma")
            conn.getresponse().read()
        conn.close()
        time.sleep(0.3)
        rc, out, err = t.stop()
    finally:
        t.kill()
    assert rc == 0, err
    doc = json_line(out, "trace http")
    urls = {(u["method"], u["url"]): u for u in doc["urls"]}
    got = {k: urls[k]["count"] if k in urls else 0
           for k in (("GET", "/alpha"), ("POST", "/beta?x=1"), ("GET", "/gamma"))}
    assert got == {("GET", "/alpha"): 7, ("POST", "/beta?x=1"): 3, ("GET", "/gamma"): 4}, doc
    assert_nothing_left(server.pid)


def test_catch_bad_close(server, tmp_path):
    core = tmp_path / "core"
    t = Tracer("catch", "--pid", str(server.pid), "--syscall", "close", "--errno", "EBADF",
               "--core", str(core))
    try:
        for _ in range(6):
            get(server, "/req")
        out, err = t.proc.communicate(timeout=300)
        rc = t.proc.returncode
    finally:
        t.kill()
    assert rc == 0, t.err + err
    assert "close() failed with EBADF" in out, out
    assert get(server, "/ping") == "ok"  # it runs on
    assert core.exists() and core.stat().st_blocks * 512 < core.stat().st_size, "core not sparse"
    r = subprocess.run([sys.executable, "-m", "v8dbg", "jsstack", "--core", str(core), "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    frames = [f for f in json_line(r.stdout, "jsstack")["frames"] if f["kind"] == "js"]
    names = [f["function"] for f in frames]
    assert names[:2] == ["closeSync", "closeBadFd"], names
    assert frames[1]["script"].endswith("trace_server.js")
    assert "closeBadFd" in out  # the stack printed as it stopped
    assert_nothing_left(server.pid)


def test_catch_count_json(tmp_path):
    """--count 2 --json: one schema-valid line per catch, cores FILE and FILE.2,
    and then the process is left running."""
    node = LiveNode(VERSIONS[-1], "trace_server.js")
    node.port = int((node.dir / "port").read_text())  # type: ignore[attr-defined]
    core = tmp_path / "core"
    try:
        t = Tracer("catch", "--pid", str(node.pid), "--syscall", "close", "--errno", "9",
                   "--count", "2", "--core", str(core), "--json")
        try:
            for _ in range(3):
                assert get(node, "/bad") == "EBADF"
            out, err = t.proc.communicate(timeout=300)
        finally:
            t.kill()
        assert t.proc.returncode == 0, t.err + err
        docs = [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
        for d in docs:
            validate_output(d, "catch")
        assert [(d["syscall"], d["errno"], d["tid"], d["core"]) for d in docs] == [
            ("close", "EBADF", node.pid, str(core)), ("close", "EBADF", node.pid, f"{core}.2")]
        assert core.exists() and Path(f"{core}.2").exists()
        assert get(node, "/ping") == "ok"
        assert_nothing_left(node.pid)
    finally:
        node.close()


def test_catch_pid_gone_and_no_such_pid(server):
    r = subprocess.run([sys.executable, "-m", "v8dbg", "trace", "gc", "--pid", "999999999"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.strip() == "v8dbg: no process 999999999", r.stderr
    r = subprocess.run([sys.executable, "-m", "v8dbg", "catch", "--pid", str(server.pid),
                        "--syscall", "nosuchcall"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == \
        "v8dbg: no system call nosuchcall with an exit tracepoint on this kernel", r.stderr


def test_target_exits_mid_trace(tmp_path):
    node = LiveNode(VERSIONS[-1], "trace_server.js")
    t = None
    try:
        t = Tracer("trace", "gc", "--pid", str(node.pid))
        node.proc.send_signal(signal.SIGKILL)
        node.proc.wait()
        out, err = t.proc.communicate(timeout=60)
    finally:
        if t is not None:
            t.kill()
        node.close()  # also when the tracer failed to start
    assert t.proc.returncode == 1
    assert f"v8dbg: process {node.pid} exited after" in err, err
    assert "Traceback" not in err


def test_probe_site_missing(tmp_path):
    """A node whose symbol table lacks the site: one line, nothing attached."""
    from support import stripped_binary
    binary = stripped_binary(VERSIONS[-1])
    proc = subprocess.Popen([str(binary), "-e", "setInterval(() => {}, 1000)"])
    try:
        time.sleep(0.5)
        r = subprocess.run([sys.executable, "-m", "v8dbg", "trace", "gc", "--pid", str(proc.pid)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("v8dbg: probe site"), r.stderr


def test_not_root():
    """As an unprivileged user: one line saying what is needed, exit 1."""
    runuser = shutil.which("runuser")
    # Debian's own Python: the test runner's may sit where nobody cannot read.
    base = [runuser or "runuser", "-u", "nobody", "--", "env", f"PYTHONPATH={ROOT}", SYSTEM_PYTHON]
    if not runuser or subprocess.run([*base, "-c", "import v8dbg"], capture_output=True,
                                     timeout=60).returncode:
        pytest.skip("user nobody cannot run this checkout's v8dbg here")
    for args in (["trace", "gc", "--pid", "1"], ["catch", "--pid", "1", "--syscall", "close"]):
        r = subprocess.run([*base, "-m", "v8dbg", *args], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and r.stderr.splitlines() == [
            "v8dbg: tracing needs root (or CAP_BPF and CAP_PERFMON): it loads BPF programs "
            "and uprobes; run it with sudo"], r.stderr


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _bpftrace_of(pid: int) -> list[str]:
    """bpftrace processes attached to `pid` (by their -p argument), whoever their parent."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                argv = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"bpftrace") and str(pid).encode() in argv:
                found.append(p.name)
    return found


def test_catch_killed_while_stopped(server, tmp_path):
    """`catch` SIGKILLed while the target is stopped at the failing call (its
    core being written: a gdb that takes its time stands in for gcore): the
    target runs on, serving and counting, and its bpftrace is gone."""
    slow_gdb = tmp_path / "gdb"
    gdb_pid = tmp_path / "gdb.pid"
    slow_gdb.write_text(f"#!/bin/sh\necho $$ > {gdb_pid}\nexec sleep 120\n")
    slow_gdb.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", "v8dbg", "catch", "--pid", str(server.pid),
                             "--syscall", "close", "--errno", "EBADF",
                             "--core", str(tmp_path / "core")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, V8DBG_GDB=str(slow_gdb)))
    try:
        _wait_attached(proc)
        before = int(get(server, "/tick").split()[1])
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("GET", "/bad")  # closes a bad fd: the target stops inside close()
        deadline = time.time() + 60
        while not (gdb_pid.exists() and _state(server.pid) in ("T", "t")):
            assert time.time() < deadline, f"target never stopped: {_state(server.pid)}"
            time.sleep(0.02)
        time.sleep(0.2)
        assert _state(server.pid) in ("T", "t"), "the target ran on before the kill"
        proc.kill()  # SIGKILL: no finally, no signal handler of the tool runs
        proc.wait()
        assert conn.getresponse().read() == b"EBADF"  # the stopped request completes
        conn.close()
        after = int(get(server, "/tick").split()[1])
        assert after == before + 1, (before, after)  # its own counter goes on
        deadline = time.time() + 30
        while _bpftrace_of(server.pid) and time.time() < deadline:
            time.sleep(0.1)
        assert not _bpftrace_of(server.pid), "bpftrace left attached"
        assert _state(server.pid) not in ("T", "t")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if gdb_pid.exists():
            try:
                os.kill(int(gdb_pid.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def _wait_attached(proc: subprocess.Popen) -> str:
    """catch's stderr up to the line that says its probes are attached."""
    err = ""
    while TRACING_LINE not in err:
        line = proc.stderr.readline()  # type: ignore[union-attr]
        assert line, f"catch ended before attaching: {err}{proc.communicate()}"
        err += line
    return err


def test_catch_bpftrace_killed_while_stopped(tmp_path):
    """bpftrace itself SIGKILLed while the target is stopped at the failing
    call, before it could hand the catch over (it is frozen first, so the
    kernel's probe stops the target but nothing reads its report): catch
    continues the target (the stopped request completes, its own counter
    advances), nothing stays attached (another failing close runs through),
    no core is written, and catch ends with one `v8dbg:` line, exit 1."""
    node = LiveNode(VERSIONS[-1], "trace_server.js")
    node.port = int((node.dir / "port").read_text())  # type: ignore[attr-defined]
    core = tmp_path / "core"
    proc = subprocess.Popen([sys.executable, "-m", "v8dbg", "catch", "--pid", str(node.pid),
                             "--syscall", "close", "--errno", "EBADF", "--core", str(core)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        err = _wait_attached(proc)
        engines = _bpftrace_of(node.pid)
        assert len(engines) == 1, engines
        bpf = int(engines[0])
        os.kill(bpf, signal.SIGSTOP)
        before = int(get(node, "/tick").split()[1])
        conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=20)
        conn.request("GET", "/bad")  # the target stops inside close()
        deadline = time.time() + 30
        while _state(node.pid) not in ("T", "t"):
            assert time.time() < deadline, "the target never stopped"
            time.sleep(0.02)
        os.kill(bpf, signal.SIGKILL)
        out, rest = proc.communicate(timeout=60)
        err += rest
        assert conn.getresponse().read() == b"EBADF"  # continued: the stopped request completes
        conn.close()
        assert int(get(node, "/tick").split()[1]) == before + 1
        assert get(node, "/bad") == "EBADF"  # no probe left to stop it again
        assert _state(node.pid) not in ("T", "t")
        assert proc.returncode == 1, (proc.returncode, err)
        said = [ln for ln in err.splitlines() if not ln.startswith(TRACING_LINE)]
        assert len(said) == 1 and said[0].startswith("v8dbg: bpftrace was killed (SIGKILL)"), err
        assert f"process {node.pid} was continued" in said[0], said
        assert not core.exists()
        assert not _bpftrace_of(node.pid)
        assert_nothing_left(node.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        node.close()
