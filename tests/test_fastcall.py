"""A thread stopped inside a fast API call, read where its libc is missing.

Optimized JavaScript calling C++ through V8's fast API builds no exit frame:
V8 records only the caller's fp and pc in the isolate. The fixture
(tests/fixtures/fastcall.js) spins in such calls, spending most of its time in
libc (memcmp, memchr, clock_gettime); the process is stopped until its main
thread is inside the call and in libc, and `gcore` takes it. With libc's path
rewritten (a core from another machine), native unwinding stops in libc and
every JavaScript frame must still come from V8's thread state.

Node 18 makes fast API calls only with --turbo-fast-api-calls (V8 10.2 leaves
them off by default): its core is taken with that flag, its one fast function
being process.hrtime's.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import (CACHE, FIXTURES, FRONTENDS, ROOT, SWEEP, VERSIONS, LiveNode, _key, built_once,
                     core_program, fetch_node, gcore, json_line, major, moved_core, node_binary,
                     run_cli, run_gdb, run_lldb, write_sparse)
from test_stack import compare, expected_frames

FIXTURE = "fastcall.js"
MOVED_LIBC = "/usr/lib/x86_64-linux-prd/libc.so.6"
STOP_TRIES = 3000
STOP_SECONDS = 45


def flags(version: str) -> tuple[str, ...]:
    extra = ("--turbo-fast-api-calls",) if major(version) < 20 else ()
    return ("--allow-natives-syntax", *extra)


def _fast_fp_address(core: Path, version: str) -> int:
    """Where the isolate keeps the fast call's caller fp (found with v8dbg's own
    reading of the thread state in a core of the process)."""
    from v8dbg.stack import segments
    prog, _ = core_program(core, version)
    md = prog.md
    tops = segments.thread_tops(prog)
    assert len(tops) == 1, tops
    t = tops[0]
    if "TopFastCCallerFp" in md.consts:
        addr = t.top + md.const("TopFastCCallerFp")
    else:
        addr = t.isolate + md.const("IsolateFastCCallerFp")
    return addr


def _libc_text(pid: int) -> list[tuple[int, int]]:
    out = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[5].endswith("/libc.so.6") and "x" in parts[1]:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi))
    return out


def _stopped(pid: int) -> None:
    for _ in range(1000):
        if "\nState:\tT" in Path(f"/proc/{pid}/status").read_text():
            return
        time.sleep(0.001)
    raise RuntimeError("node did not stop")


def _pc(pid: int) -> int:
    """The stopped main thread's pc (`-1 SP PC` when it is not in a system call)."""
    parts = Path(f"/proc/{pid}/task/{pid}/syscall").read_text().split()
    return int(parts[2], 16) if len(parts) == 3 and parts[0] == "-1" else 0


def fast_call_core(version: str) -> Path:
    """A core of the fixture stopped with its main thread in libc inside a fast
    API call; cached under .cache/cores, keyed by the fixture's text."""
    src = (FIXTURES / FIXTURE).read_text()
    return built_once(CACHE / "cores" / version / f"fastcall-{_key(src, *flags(version))}",
                      lambda d: _take(d, version))


def _take(d: Path, version: str) -> None:
    env = dict(os.environ, V8DBG_OUT=str(d))
    proc = subprocess.Popen([str(node_binary(version)), *flags(version), str(FIXTURES / FIXTURE)],
                            cwd=d, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while not (d / "ready").exists():
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"node {version} {FIXTURE} did not start")
            time.sleep(0.05)
        pid = proc.pid
        # A first core tells where the isolate keeps the word (v8dbg reads it).
        os.kill(pid, signal.SIGSTOP)
        _stopped(pid)
        first = d / "core-first"
        gcore(pid, first)
        addr = _fast_fp_address(first, version)
        libc = _libc_text(pid)
        tries, end = 0, time.time() + STOP_SECONDS
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            while True:
                mem.seek(addr)
                fp = int.from_bytes(mem.read(8), "little")
                pc = _pc(pid)
                if fp and any(lo <= pc < hi for lo, hi in libc):
                    break
                tries += 1
                if tries > STOP_TRIES or time.time() > end:
                    raise RuntimeError(f"node {version}: no stop inside a fast call in libc "
                                       f"after {tries} tries")
                os.kill(pid, signal.SIGCONT)
                time.sleep(0.002 + (tries % 7) * 0.001)
                os.kill(pid, signal.SIGSTOP)
                _stopped(pid)
        first.unlink()
        gcore(pid, d / "core")
        (d / "stop.json").write_text(json.dumps({"fp": fp, "pc": pc, "tries": tries}))
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def cores():
    return {}


def core_of(cores: dict, version: str) -> Path:
    if version not in cores:
        cores[version] = fast_call_core(version)
    return cores[version]


_runs: dict = {}


def jsstack(frontend: str, version: str, core: Path) -> str:
    key = (frontend, version, core.name)
    if key not in _runs:
        if frontend == "cli":
            out = run_cli(version, core, ["jsstack --json"])[0]
        elif frontend == "gdb":
            out = run_gdb(version, ["jsstack --json"], core=core, merged=True)[0]
        else:
            out = run_lldb(version, ["jsstack --json"], core=core, merged=True)[0]
        _runs[key] = out
    return _runs[key]


def js_frames(doc: dict) -> list[tuple]:
    return [(f["function"], f["script"], f["line"], f["column"])
            for f in doc["frames"] if f["kind"] == "js"]


def check_frames(doc: dict, d: Path) -> None:
    """Every JS frame of the fixture's trace, from the fast call's caller on,
    at V8's positions; the caller at the line of its call; above it only the
    node library functions optimized code inlined on the way to the call."""
    text = (d / "expected-stack.txt").read_text()
    compare(doc, text, top="probe")
    js = [f for f in doc["frames"] if f["kind"] == "js"]
    names = [f["function"] for f in js]
    probe = js[names.index("probe")]
    assert probe["line"] == expected_frames(text)[0]["line"], probe
    assert all((f["script"] or "").startswith("node:") for f in js[:names.index("probe")]), names


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_fast_call_with_libc_missing(frontend, version, cores):
    d = core_of(cores, version)
    stop = json.loads((d / "stop.json").read_text())
    out = jsstack(frontend, version, moved_core(d))
    doc = json_line(out)
    check_frames(doc, d)
    # Native unwinding stopped in libc: the innermost frame is there, unnamed.
    assert doc["frames"][0]["kind"] == "native" and doc["frames"][0]["symbol"] is None
    assert int(doc["frames"][0]["pc"], 16) == stop["pc"]
    ws = [l for l in out.splitlines() if "v8dbg: warning:" in l]
    assert len(ws) == 1 and MOVED_LIBC in ws[0] and "missing" in ws[0], out[-2000:]
    assert "V8's own thread state" in ws[0]


def without_frame_pointer(d: Path) -> Path:
    """The moved core with the stopped thread's rbp zeroed, as a libc routine
    that uses rbp for its own data leaves it: no frame-pointer guess past the
    missing library can then reach the JavaScript."""
    out = d / "core-moved-rbp"
    if out.exists():
        return out
    data = bytearray(moved_core(d).read_bytes())
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        pos = off
        while ptype == 4 and pos + 12 <= off + filesz:  # PT_NOTE: the first NT_PRSTATUS
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            desc = pos + 12 + (namesz + 3) // 4 * 4
            if ntype == 1:
                struct.pack_into("<Q", data, desc + 112 + 4 * 8, 0)  # pr_reg: r15 r14 r13 r12 rbp
                write_sparse(out, data)
                return out
            pos = desc + (descsz + 3) // 4 * 4
    raise AssertionError("no NT_PRSTATUS note in the core")


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_fast_call_without_frame_pointer(frontend, version, cores):
    """Where nothing but V8's thread state leads past libc to the JavaScript."""
    d = core_of(cores, version)
    out = jsstack(frontend, version, without_frame_pointer(d))
    doc = json_line(out)
    check_frames(doc, d)
    ws = [l for l in out.splitlines() if "v8dbg: warning:" in l]
    assert len(ws) == 1 and MOVED_LIBC in ws[0] and "V8's own thread state" in ws[0], out[-2000:]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_fast_call_with_every_library(frontend, version, cores):
    """The core whose libraries are all here: native unwinding goes through libc,
    and the JS frames are the same as where libc is missing."""
    d = core_of(cores, version)
    whole = json_line(jsstack(frontend, version, d / "core"))
    check_frames(whole, d)
    # Through libc (its internal memcmp/memchr variants carry no symbol) to node's
    # fast C++ function, with no warning.
    first_js = next(i for i, f in enumerate(whole["frames"]) if f["kind"] == "js")
    assert any(f.get("module") == "node" for f in whole["frames"][1:first_js]), whole["frames"][:4]
    assert "v8dbg: warning:" not in jsstack(frontend, version, d / "core")
    moved = json_line(jsstack(frontend, version, moved_core(d)))
    assert js_frames(whole) == js_frames(moved)


@pytest.mark.parametrize("version", VERSIONS)
def test_fast_call_caller_in_thread_state(version, cores):
    """The words V8 recorded for the call are read from the table's offsets: its
    caller's fp is the frame of the optimized function that made the call."""
    check_thread_state(version, core_of(cores, version))


# The lines between the pinned ones (their own fast-call facts), on the last
# release of each, through the CLI.
BETWEEN = [v for v in SWEEP if major(v) % 2 and v == max(
    (w for w in SWEEP if major(w) == major(v)), key=lambda w: tuple(map(int, w.split("."))))]


@pytest.mark.parametrize("version", BETWEEN)
def test_fast_call_between_lines(version, cores):
    fetch_node(version)
    d = core_of(cores, version)
    check_thread_state(version, d)
    out = jsstack("cli", version, without_frame_pointer(d))
    check_frames(json_line(out), d)
    ws = [l for l in out.splitlines() if "v8dbg: warning:" in l]
    assert len(ws) == 1 and MOVED_LIBC in ws[0] and "V8's own thread state" in ws[0], out[-2000:]


def check_thread_state(version: str, d: Path) -> None:
    stop = json.loads((d / "stop.json").read_text())
    from v8dbg.stack import segments
    prog, backend = core_program(d / "core", version)
    regs = backend.threads()[0].regs
    t = segments.top_for(prog, regs)
    assert t is not None and t.fast_fp == stop["fp"]
    mf = segments.fast_call_frame(prog, t, regs.rsp)
    assert mf is not None and mf.fp == t.fast_fp and mf.sp > regs.rsp
    assert prog.mem.u64(mf.sp - 8) == mf.pc
    # From there the chain goes on to JSON.parse's exit frame (c_entry_fp is 0
    # while JavaScript runs).
    from v8dbg.stack.frames import StackDecoder
    assert t.c_entry_fp == 0 and len(t.exits) == 1
    frames = StackDecoder(prog).decode(regs)
    assert [f.function for f in frames if f.fp == t.exits[0] and f.kind == "js"] == ["parse"]


FAST_FUNCTIONS = ("FastCompare", "FastIndexOfNumber", "FastNumber")


@pytest.mark.parametrize("version", VERSIONS)
def test_profile_samples_in_fast_call(version):
    """`v8dbg profile` unwinds a live process natively (its libc is here): a
    sample that lands in the fast call has every JS frame of the loop above
    node's fast C++ function."""
    with LiveNode(version, FIXTURE, flags(version)) as node:
        p = subprocess.run([sys.executable, "-m", "v8dbg", "profile", "--pid", str(node.pid),
                            "--duration", "2", "--native"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    total = in_call = 0
    for line in p.stdout.splitlines():
        stack, n = line.rsplit(" ", 1)
        names = [f.split(" (")[0] for f in stack.split(";")]
        total += int(n)
        fast = [i for i, f in enumerate(names)
                if any(f"::{name}(" in f for name in FAST_FUNCTIONS)]
        if not fast:
            continue
        in_call += int(n)
        js = names[names.index("reviver"):fast[0]]
        assert js[:5] == ["reviver", "go", "main", "scan", "probe"], names
    # Most of the loop's time is spent inside the fast call.
    assert total and in_call > total // 3, (in_call, total, p.stdout[-2000:])
