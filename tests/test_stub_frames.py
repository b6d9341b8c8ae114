"""A thread stopped in a stub that runs on its caller's frame.

V8's call builtins (Call_*, CallFunction_*) run on the calling function's
frame until they jump to the callee, so the frame pointer names the caller
while the pc is in the stub. A profiler or a debugger attaching to a busy
process stops there now and then. gdb stops live node processes at the
first instruction of such a stub, called from interpreted code (stack.js's
`die`, calling `spin` for ever) and from TurboFan code (stub_call.js's
`step`, calling eight functions through one call site), and writes a core;
each is read in the CLI, gdb and lldb.

`jsstack -a` shows the stub innermost, then the caller at the call: `die`
at its `spin()` in the source, `step` at the position V8's own Error().stack
gives for a call from that site; the frames below are V8's. Without `-a`
the stub is hidden. gdb's and lldb's `bt` name the same JS frames as
jsstack (tests/test_bt.py's check). Before, the caller was shown as a
builtin with no script.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from support import (CACHE, FIXTURES, GDB, VERSIONS, _key, built_once, json_line, node_binary,
                     run_cli, run_gdb, run_lldb, write_sparse)
from test_bt import check
from test_stack import compare, expected_frames

from v8dbg.inferior.elf import open_elf
from v8dbg.inferior.unwind import follows_call

STUBS = ("Call_ReceiverIsAny", "Call_ReceiverIsNullOrUndefined",
         "Call_ReceiverIsNotNullOrUndefined", "CallFunction_ReceiverIsAny",
         "CallFunction_ReceiverIsNullOrUndefined", "CallFunction_ReceiverIsNotNullOrUndefined")


def _binary_maps(pid: int, binary: Path) -> list[tuple[int, int, int]]:
    """(start, end, file offset) of each mapping of the node binary (node 22+
    maps a second copy of its builtins' code, which is what runs)."""
    out = []
    real = os.path.realpath(binary)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        f = line.split(maxsplit=5)
        if len(f) == 6 and os.path.realpath(f[5]) == real:
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            out.append((lo, hi, int(f[2], 16)))
    return out


def _stopped_in_stub(version: str, fixture: str, from_jit: bool) -> Path:
    """A gcore of FIXTURE (run live) stopped at the first instruction of a
    call stub whose return address is in JIT code (from_jit) or in the
    binary (an interpreter handler's call); cached like make_core's."""
    src = (FIXTURES / fixture).read_text()
    node = node_binary(version)

    def build(d: Path) -> None:
        env = dict(os.environ, V8DBG_OUT=str(d), V8DBG_LIVE="1")
        proc = subprocess.Popen([str(node), "--allow-natives-syntax", str(FIXTURES / fixture)],
                                cwd=d, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while not (d / "ready").exists():
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"node {version} {fixture} did not start")
                time.sleep(0.05)
            maps = _binary_maps(proc.pid, node)
            elf = open_elf(str(node))
            sites = []
            for name in STUBS:
                span = elf.symbol_span(f"Builtins_{name}")
                off = elf.vaddr_to_offset(span[0]) if span else None
                if off is None:
                    continue
                sites += [lo + off - o for lo, hi, o in maps if o <= off < o + hi - lo]
            assert sites, f"no call stub of node {version} is mapped"
            inside = " || ".join(f"($ret >= {lo:#x} && $ret < {hi:#x})" for lo, hi, _ in maps)
            cond = f"!({inside})" if from_jit else f"({inside})"
            args = [GDB, "-nx", "-q", "-batch", "-p", str(proc.pid)]
            for at in sites:
                args += ["-ex", f"break *{at:#x} if ($ret = *(unsigned long *)$sp, {cond})"]
            args += ["-ex", "continue", "-ex", "info registers rip rsp rbp",
                     "-ex", f"gcore {d / 'core'}", "-ex", "kill"]
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=120)
            (d / "gdb.txt").write_text(p.stdout)
            if not (d / "core").exists():
                raise RuntimeError(f"gdb wrote no core:\n{p.stdout[-3000:]}")
            write_sparse(d / "core", (d / "core").read_bytes())
        finally:
            proc.kill()
            proc.wait()

    where = "jit" if from_jit else "interpreted"
    return built_once(CACHE / "cores" / version / f"{Path(fixture).stem}-stub-{where}-{_key(src)}",
                      build)


def _call_position(fixture: str, line_re: str, callee: str) -> tuple[int, int]:
    """1-based line and column of CALLEE's name on the source line matching LINE_RE."""
    for n, text in enumerate((FIXTURES / fixture).read_text().splitlines(), 1):
        if re.search(line_re, text):
            return n, text.index(callee) + 1
    raise AssertionError(f"no line {line_re!r} in {fixture}")


def _stub_then(doc: dict, function: str) -> dict:
    """The innermost frames are the stub, then FUNCTION's JS frame: return it."""
    top, caller = doc["frames"][0], doc["frames"][1]
    assert top["kind"] == "internal" and top["frame_type"] == "StubFrame", doc["frames"][:3]
    assert top.get("symbol") in STUBS, top
    assert caller["kind"] == "js" and caller["function"] == function, doc["frames"][:3]
    return caller


def _jsstack(version: str, debugger: str, core: Path) -> tuple[str | None, str]:
    """(bt, `jsstack -a --json`) from one debugger run; no bt from the CLI."""
    if debugger == "cli":
        (stack,) = run_cli(version, core, ["jsstack -a --json"])
        return None, stack
    runner = run_gdb if debugger == "gdb" else run_lldb
    bt, stack = runner(version, ["bt", "jsstack -a --json"], core=core)
    return bt, stack


@pytest.mark.parametrize("debugger", ["cli", "gdb", "lldb"])
@pytest.mark.parametrize("version", VERSIONS)
def test_stub_under_interpreted_caller(version, debugger):
    d = _stopped_in_stub(version, "stack.js", from_jit=False)
    expected = (d / "expected-stack.txt").read_text()
    bt, stack = _jsstack(version, debugger, d / "core")
    doc = json_line(stack)
    die = _stub_then(doc, "die")
    assert die["tier"] == "interpreted", die
    assert (die["line"], die["column"]) == _call_position("stack.js", r"for \(;;\) \{ spin", "spin")
    compare(doc, expected)
    if bt is not None:
        check(debugger, bt, stack, expected)
        assert any(s in bt for s in STUBS), bt
    else:
        (shown,) = run_cli(version, d / "core", ["jsstack --json"])
        first = json_line(shown)["frames"][0]
        assert first["kind"] == "js" and first["function"] == "die", first


@pytest.mark.parametrize("debugger", ["cli", "gdb", "lldb"])
@pytest.mark.parametrize("version", VERSIONS)
def test_stub_under_turbofan_caller(version, debugger):
    d = _stopped_in_stub(version, "stub_call.js", from_jit=True)
    text = (d / "expected-stack.txt").read_text().splitlines()
    v8 = expected_frames("\n".join(text))
    assert v8[0]["name"].endswith("record") and v8[1]["name"] == "step", v8[:2]
    expected = "\n".join(text[:1] + text[2:])  # from step down
    bt, stack = _jsstack(version, debugger, d / "core")
    doc = json_line(stack)
    step = _stub_then(doc, "step")
    assert step["tier"] == "turbofan" and not step["inlined"], step
    assert (step["script"], step["line"], step["column"]) == \
        (v8[1]["script"], v8[1]["line"], v8[1]["column"]), (step, v8[1])
    compare(doc, expected, top="step")
    if bt is not None:
        # bt names each JS frame as jsstack does, the stub on its own line.
        check(debugger, bt, stack, expected, top="step")
        assert any(s in bt for s in STUBS), bt


class _Bytes:
    """A target whose memory is one byte string from address 0."""

    def __init__(self, data: bytes) -> None:
        self.mem = self
        self.data = data

    def read(self, address: int, size: int) -> bytes:
        return self.data[address:address + size]


@pytest.mark.parametrize("code, call", [
    ([0xE8, 1, 2, 3, 4], True),                    # call rel32
    ([0xFF, 0xD0], True),                          # call rax
    ([0x41, 0xFF, 0xD3], True),                    # call r11
    ([0x41, 0xFF, 0x95, 1, 2, 3, 4], True),        # call [r13+disp32] (V8's builtin table)
    ([0x41, 0xFF, 0x55, 0x10], True),              # call [r13+disp8]
    ([0xFF, 0x15, 1, 2, 3, 4], True),              # call [rip+disp32]
    ([0xFF, 0x94, 0x24, 1, 2, 3, 4], True),        # call [rsp+disp32] (SIB)
    ([0, 0, 0, 0, 0, 0, 0, 0], False),
    ([0x48, 0x89, 0xE5], False),                   # mov rbp, rsp
    ([0xFF, 0xE0], False),                         # jmp rax
])
def test_return_addresses_follow_a_call(code, call):
    """Only words after a call instruction are looked up as return addresses
    (a costly search back for a code header otherwise, for every heap
    pointer above sp: the profiler lost samples to it)."""
    data = bytes(16 - len(code)) + bytes(code)
    assert follows_call(_Bytes(data), 16) is call
