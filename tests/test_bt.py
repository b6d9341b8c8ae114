"""The debugger's own `bt` with v8dbg loaded, against jsstack and V8's Error().stack.

On every pinned line, in gdb and in lldb, on a core (stack.js optimized with
TurboFan: interpreted, baseline, builtin, TurboFan and inlined frames; with
Maglev too where node ships it; test_bt_on_core is in tests/test_stack.py,
in the same debugger run as jsstack's checks of those cores) and on
a live process: `bt` names every JS frame with the function and position
jsstack gives it, and those are V8's own; no frame is `??` or a bare address;
gdb's `bt` goes on to the bottom of the stack (`_start`, after
`__libc_start_call_main`, which called node's `main`). `v8dbg bt off` gives
the debugger's own backtrace back, and `v8dbg bt on` v8dbg's; on a process
without V8, `bt` is the debugger's own.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from support import (GDB, LLDB, ROOT, VERSIONS, LiveNode, json_line, make_core, node_binary,
                     run_gdb, run_lldb)
from test_stack import compare, tier_flags

DEBUGGERS = ["gdb", "lldb"]
LABEL = re.compile(r"^(?P<name>.*?) \((?P<where>[^()]*)\) \[(?P<tier>[a-z]+)(?P<inl> inlined)?\]")
GDB_LINE = re.compile(r"^(?:#(?P<level>\d+)\s+)?(?:(?P<pc>0x[0-9a-f]+) in )?(?P<rest>.*)$")
LLDB_LINE = re.compile(r"^\s*\*?\s*frame #(?P<level>\d+): (?P<pc>0x[0-9a-f]+)(?P<rest>.*)$")


def frame_lines(debugger: str, text: str) -> list[tuple[str, str]]:
    """(pc, what follows it) for each frame line of a backtrace."""
    out = []
    for line in text.splitlines():
        if debugger == "gdb":
            if not re.match(r"^(#\d+\s+)?0x[0-9a-f]+ in |^#\d+\s+\S", line):
                continue
            m = GDB_LINE.match(line)
            rest = m.group("rest")
            rest = rest[:-3] if rest.endswith(" ()") else rest
            out.append((m.group("pc") or "", rest))
        else:
            m = LLDB_LINE.match(line)
            if m:
                out.append((m.group("pc"), m.group("rest").strip()))
    return out


def js_frames(lines: list[tuple[str, str]]) -> list[dict]:
    """The JS frames a backtrace names, as jsstack's JSON has them."""
    out = []
    for _, rest in lines:
        m = LABEL.match(rest)
        if not m:
            continue
        name, where = m.group("name"), m.group("where")
        ctor = name.startswith("new ")
        fr = {"kind": "js", "function": name[4:] if ctor else name, "tier": m.group("tier"),
              "inlined": bool(m.group("inl")), "script": None, "line": None, "column": None}
        pos = re.match(r"^(.*):(\d+):(\d+)$", where)
        if pos:
            fr.update(script=pos.group(1), line=int(pos.group(2)), column=int(pos.group(3)))
        elif where not in ("<builtin>", "<unknown>"):
            fr["script"] = where
        if name == "(anonymous)":
            fr["function"] = ""
        if ctor:
            fr["constructor"] = True
        out.append(fr)
    return out


def check(debugger: str, bt: str, stack_json: str, expected: str, top: str = "die") -> None:
    lines = frame_lines(debugger, bt)
    assert len(lines) > 20, bt
    for pc, rest in lines:
        assert rest and "??" not in rest, f"an unnamed frame in {debugger}'s bt:\n{bt}"
    got = js_frames(lines)
    doc = json_line(stack_json)
    want = [f for f in doc["frames"] if f["kind"] == "js"]
    keys = ("function", "script", "line", "column", "tier", "inlined")
    assert [{k: f[k] for k in keys} for f in got] == [{k: f[k] for k in keys} for f in want], bt
    assert [bool(f.get("constructor")) for f in got] == [bool(f.get("constructor")) for f in want]
    compare({"frames": got}, expected, top)
    if debugger == "gdb":
        assert lines[-1][1].startswith("_start"), bt
        assert any(r.startswith("__libc_start_call_main") for _, r in lines), bt


def bt_commands(debugger: str) -> list[str]:
    """bt, then with `v8dbg bt off` and on again, moving between frames: one
    debugger run on a core (tests/test_stack.py adds them to its own run)."""
    move = ["frame 12", "up", "info frame"] if debugger == "gdb" else ["frame select 12", "up"]
    walk = WALK if debugger == "gdb" else []
    off_move = ["frame 12", "info frame"] if debugger == "gdb" else ["frame select 12", "frame select 0"]
    return ["bt", "jsstack --json", *walk, "v8dbg bt off", "bt", *off_move,
            "v8dbg bt on", "bt", *move]


def check_bt_on_core(debugger: str, tier: str, d, outputs: list[str]) -> None:
    """What bt_commands printed on the core of stack.js in directory D."""
    walk = WALK if debugger == "gdb" else []
    bt, stack, *outs = outputs
    walked, (off, bt_off, off_frame, off_info, on, bt_on, *moved) = outs[:len(walk)], \
        outs[len(walk):]
    if walk:
        check_walk(bt, walked)
    # Off, nothing names JS frames (and gdb's own unwinding stops at the first V8 frame).
    assert not js_frames(frame_lines(debugger, off_frame)), off_frame
    if debugger == "gdb":
        assert not hook_lines(off_frame) and "JavaScript" not in off_info, (off_frame, off_info)
    expected = (d / "expected-stack.txt").read_text()
    check(debugger, bt, stack, expected)
    doc = json_line(stack)
    assert any(f["kind"] == "js" and f["inlined"] for f in doc["frames"])
    assert {"interpreted", tier, "builtin"} <= {f["tier"] for f in doc["frames"]
                                                 if f["kind"] == "js"}
    assert off.endswith("off") and on.endswith("on"), (off, on)
    assert not js_frames(frame_lines(debugger, bt_off)), bt_off
    assert bt_on == bt
    # Selecting frames moves through JS frames as bt numbers them.
    pcs = levels(debugger, bt)
    for level, out in ((12, moved[0]), (13, moved[1])):
        got = levels(debugger, out)
        assert list(got) == [level] and got[level][0] == pcs[level][0], (level, out)
        if debugger == "lldb":
            assert got[level][1] == pcs[level][1], (out, pcs[level])
    if debugger == "gdb":
        assert f"saved rip = {pcs[14][0]}" in moved[2], moved[2]


# gdb: select each frame from the innermost up, and back down, describing each.
WALK = ["frame 0", "info frame", *["up", "info frame"] * 60, "down", "info frame", "down"]


def by_level(bt: str) -> dict[int, list[str]]:
    """gdb bt's text for each frame number: the lines of a frame that inlined
    others follow its numbered one, without a number."""
    out: dict[int, list[str]] = {}
    level = None
    for line in bt.splitlines():
        m = GDB_LINE.match(line)
        if not m or not m.group("pc") and m.group("level") is None:
            continue
        if m.group("level") is not None:
            level = int(m.group("level"))
        if level is None:
            continue
        rest = m.group("rest")
        out.setdefault(level, []).append(rest[:-3] if rest.endswith(" ()") else rest)
    return out


def hook_lines(out: str) -> list[str]:
    """The JS frame names v8dbg adds under `frame`, `up` and `down` (indented
    under gdb's frame line) or in `info frame` (` JavaScript: ...`)."""
    lines = []
    for line in out.splitlines():
        if line.startswith(" JavaScript: "):
            lines.append(line[len(" JavaScript: "):])
        elif line.startswith("    ") and line.strip():
            lines.append(line.strip())
    return lines


def check_walk(bt: str, outs: list[str]) -> None:
    """`frame`, `up`, `down` and `info frame` on each frame in turn name a JS or
    V8-internal frame as `bt` does (and so as jsstack does); a native one as gdb."""
    want = by_level(bt)
    seen: set[int] = set()
    for cmd, out in zip(WALK, outs):
        if "Initial frame selected" in out:
            continue
        if cmd == "info frame":
            m = re.search(r"^Stack level (\d+),", out, re.M)
        else:
            m = re.match(r"^#(\d+)\s", out)
        assert m, (cmd, out)
        level = int(m.group(1))
        seen.add(level)
        names = want[level]
        v8 = [n for n in names if LABEL.match(n) or n.startswith("<")]
        got = hook_lines(out)
        assert got == v8, (cmd, level, out, names)
        if cmd != "info frame" and v8:
            assert out.splitlines()[0].startswith(f"#{level} "), out
    assert seen == set(want), (sorted(seen), sorted(want))
    assert any(LABEL.match(n) for names in want.values() for n in names)


def levels(debugger: str, text: str) -> dict[int, tuple[str, str]]:
    """(pc, the rest of the line) of each numbered frame line (the first, where
    an inlined frame repeats the number), pcs without leading zeros."""
    out: dict[int, tuple[str, str]] = {}
    rx = GDB_LINE if debugger == "gdb" else LLDB_LINE
    for line in text.splitlines():
        m = rx.match(line)
        if m and m.group("level") is not None and m.group("pc"):
            out.setdefault(int(m.group("level")), (hex(int(m.group("pc"), 16)), m.group("rest")))
    return out


@pytest.mark.parametrize("debugger", DEBUGGERS)
@pytest.mark.parametrize("version", VERSIONS)
def test_bt_on_live_process(debugger, version):
    """Attached while the process spins in JavaScript: frame 0 is JS itself;
    jsstack matches V8's stack; after the detach the process keeps running
    (tests/test_stack.py's check of jsstack on a live process)."""
    with LiveNode(version, "stack.js", ("--allow-natives-syntax",)) as node:
        before = node.cpu_time()
        runner = run_gdb if debugger == "gdb" else run_lldb
        walk = WALK if debugger == "gdb" else []
        bt, stack, *moved = runner(version, ["bt", "jsstack --json", *walk], pid=node.pid)
        compare(json_line(stack), (node.dir / "expected-stack.txt").read_text())
        check(debugger, bt, stack, (node.dir / "expected-stack.txt").read_text())
        if walk:
            check_walk(bt, moved)
        time.sleep(0.5)
        assert node.alive()
        after = node.cpu_time()
        time.sleep(0.5)
        assert node.cpu_time() > after >= before


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_bt_without_v8(debugger, tmp_path):
    """A process that is not node: bt is the debugger's own, without a word from v8dbg."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.2)
        if debugger == "gdb":
            args = [GDB, "-nx", "-q", "-batch", "-ex", f"source {ROOT}/plugins/gdb/v8dbg.py",
                    "-ex", "bt", "-p", str(proc.pid)]
        else:
            args = [LLDB, "--no-lldbinit", "-b", "-p", str(proc.pid),
                    "-o", f"command script import {ROOT}/plugins/lldb/v8dbg.py", "-o", "bt"]
        t0 = time.monotonic()
        p = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=ROOT)
        secs = time.monotonic() - t0
        out = p.stdout + p.stderr
        assert "v8dbg:" not in out, out
        assert "Traceback" not in out
        assert re.search(r"(#\d+ .*|frame #\d+: .*)nanosleep", out), out
        assert secs < 60
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_gdb_frame_hooks_keep_the_users_own(tmp_path):
    """A `hookpost-up` the user defined before v8dbg loaded still runs with v8dbg's
    JS names after it, and is all that is left of it with `v8dbg bt off`."""
    version = VERSIONS[-1]
    d = make_core(version, "stack.js", tier_flags(version, "turbofan"), {"V8DBG_TIER": "turbofan"})
    script = tmp_path / "cmds.gdb"
    script.write_text("\n".join([
        "set pagination off", "set width 0",
        "define hookpost-up", "echo mine\\n", "end",
        f"source {ROOT}/plugins/gdb/v8dbg.py",
        "bt", "echo @@on\\n", "frame 11", "up", "show user hookpost-up",
        "v8dbg bt off", "echo @@off\\n", "up", "show user hookpost-up", ""]))
    p = subprocess.run([GDB, "-nx", "-q", "-batch", "-x", str(script), str(node_binary(version)),
                        str(d / "core")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                       cwd=ROOT)
    out = p.stdout
    assert "Traceback" not in out and "Python Exception" not in out, out
    bt, rest = out.split("@@on\n")
    on, off = rest.split("@@off\n")
    up = on[on.index("#12 "):]
    want = [n for n in by_level(bt)[12] if LABEL.match(n) or n.startswith("<")]
    assert want and hook_lines(up.split("mine\n")[0]) == want, (on, want)
    assert "mine\n" in up and up.count("  echo mine") == 1, on
    assert "mine\n" in off and not hook_lines(off.split("mine\n")[0]), off
    body = off[off.index('User command "hookpost-up":'):].splitlines()[1:]
    assert [line.strip() for line in body if line.strip()] == ["echo mine\\n"], off
