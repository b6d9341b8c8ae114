"""One lldb, one core after another: each command reads the core lldb has
selected now. Two cores of the same program from containers often carry the
same pid (1); lldb still tells them apart, and so must v8dbg (it once kept
what it read of the first core for the second, as their executable, pid and
stop count were alike)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

from support import LLDB, MARK, ROOT, _run_debugger, _split, debugger_env, json_line, lldb_each, \
    make_core, node_binary, run_cli

VERSION = "26.10.0"  # (lldb opens its cores in a second; the older lines take several)
NT_PRSTATUS, NT_PRPSINFO = 1, 3


def _with_pid(src: Path, dst: Path, pid: int) -> None:
    """A copy of core `src` whose process, and the thread that took the
    signal (the first the kernel writes), are `pid`."""
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        old = None
        for i in range(phnum):
            kind, offset, _, _, filesz = struct.unpack_from("<I4xQQQQ", table, i * phentsize)
            if kind != 4:  # PT_NOTE
                continue
            f.seek(offset)
            notes = f.read(filesz)
            at = 0
            while at + 12 <= len(notes):
                namesz, descsz, ntype = struct.unpack_from("<III", notes, at)
                desc = at + 12 + (namesz + 3) // 4 * 4
                name = notes[at + 12:at + 12 + namesz].rstrip(b"\0")
                field = {NT_PRSTATUS: 32, NT_PRPSINFO: 24}.get(ntype) if name == b"CORE" else None
                if field is not None:
                    was, = struct.unpack_from("<i", notes, desc + field)
                    if old is None and ntype == NT_PRSTATUS:
                        old = was  # the first thread's: the one that took the signal
                    if was == old or ntype == NT_PRPSINFO:
                        f.seek(offset + desc + field)
                        f.write(struct.pack("<i", pid))
                at = desc + (descsz + 3) // 4 * 4


def _same_pid_cores(tmp_path) -> tuple[Path, Path, Path]:
    first = make_core(VERSION, "stack.js", ("--allow-natives-syntax",),
                      {"V8DBG_TIER": "interpreted"}) / "core"
    other = make_core(VERSION, "remote.js") / "core"
    sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.corefile import CoreBackend
    pid = CoreBackend(str(first)).pid()
    second = tmp_path / "core"
    _with_pid(other, second, pid)
    assert CoreBackend(str(second)).pid() == pid != CoreBackend(str(other)).pid()
    return first, second, other


def test_next_core_with_the_same_pid(tmp_path) -> None:
    first, second, other = _same_pid_cores(tmp_path)

    node = str(node_binary(VERSION))
    half = len(MARK) // 2
    mark = f"script print('{MARK[:half]}' + '{MARK[half:]}')"
    args = [LLDB, "--no-lldbinit", "-b", "-c", str(first), node,
            "-o", f"command script import {ROOT}/plugins/lldb/v8dbg.py",
            "-o", mark, "-o", lldb_each("jsstack --json"),
            "-o", "target delete", "-o", f"target create -c {second} {node}",
            "-o", mark, "-o", lldb_each("jsstack --json")]
    outs = _split(_run_debugger(args, 2, 300), 2)
    want = [run_cli(VERSION, c, ["jsstack --json"])[0] for c in (first, second)]
    # Each core's JS frames where V8's own Error().stack, written beside it,
    # puts them (the second's from the copy's original); and the CLI's whole
    # stack, native frames too.
    from test_stack import compare
    for got, exp, truth, name in zip(outs, want, (first, other), ("first", "second")):
        g, e = json_line(got, "jsstack"), json_line(exp, "jsstack")
        compare(g, (truth.parent / "expected-stack.txt").read_text())
        assert [f.get("function") for f in g["frames"]] == \
            [f.get("function") for f in e["frames"]], (name, got[-3000:])
    assert json_line(outs[0])["frames"] != json_line(outs[1])["frames"]


# Run in lldb's own Python: both cores open, in either order; a stand-in for
# lldb's process says where its first thread is. (lldb -b drops what its
# Python printed unflushed.)
_SEARCH = """
import os, sys
sys.path.insert(0, ROOT)
from v8dbg import lldb as L
from v8dbg.inferior.corefile import CoreBackend

class Frame:
    def __init__(s, pc, sp): s.pc, s.sp = pc, sp
    def GetPC(s): return s.pc
    def GetSP(s): return s.sp

class Thread:
    def __init__(s, tid, pc, sp): s.tid, s.frame = tid, Frame(pc, sp)
    def GetThreadID(s): return s.tid
    def GetFrameAtIndex(s, i): return s.frame

class Process:
    def __init__(s, pid, tid, pc, sp): s.pid, s.thread = pid, Thread(tid, pc, sp)
    def GetProcessID(s): return s.pid
    def GetThreadAtIndex(s, i): return s.thread

def like(path, pc_off=0):
    c = CoreBackend(path)
    t = c.threads()[0]
    p = Process(c.pid(), t.tid, t.regs.rip + pc_off, t.regs.rsp)
    c.close()
    return p

for order in ((A, B), (B, A)):
    fds = [os.open(p, os.O_RDONLY) for p in order]
    print("FOUND", os.path.basename(os.path.dirname(L._search_core_file(like(A)))),
          os.path.basename(os.path.dirname(L._search_core_file(like(B)))),
          L._search_core_file(like(A, 1)), flush=True)
    for fd in fds:
        os.close(fd)
print("FDS", len(os.listdir("/proc/self/fd")), flush=True)
for _ in range(20):
    L._search_core_file(like(A))
print("FDS", len(os.listdir("/proc/self/fd")), flush=True)
"""


def test_search_tells_same_pid_cores_apart(tmp_path) -> None:
    """Of two open cores of one pid, each found for the process lldb has,
    whichever was opened first; neither when lldb's first thread is at
    neither; and the search leaves no file open behind it."""
    first, second, _ = _same_pid_cores(tmp_path)
    (tmp_path / "a").mkdir()
    a = tmp_path / "a" / "core"  # its own name (a symbolic link's fd names the target)
    try:
        os.link(first, a)
    except OSError:
        shutil.copyfile(first, a)
    code = f"ROOT, A, B = {str(ROOT)!r}, {str(a)!r}, {str(second)!r}\n" + _SEARCH
    script = tmp_path / "search.py"
    script.write_text(code)
    p = subprocess.run([LLDB, "--no-lldbinit", "-b", "-o", f"script exec(open({str(script)!r}).read())"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=debugger_env())
    found = [ln.split()[1:] for ln in p.stdout.splitlines() if ln.startswith("FOUND ")]
    name = second.parent.name
    assert found == [["a", name, "None"], ["a", name, "None"]], p.stdout + p.stderr
    fds = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("FDS ")]
    assert len(fds) == 2 and fds[0] == fds[1], p.stdout + p.stderr
