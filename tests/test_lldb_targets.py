"""One lldb, one core after another: each command reads the core lldb has
selected now. Two cores of the same program from containers often carry the
same pid (1); lldb still tells them apart, and so must v8dbg (it once kept
what it read of the first core for the second, as their executable, pid and
stop count were alike)."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

from support import LLDB, MARK, ROOT, _run_debugger, _split, json_line, lldb_each, make_core, \
    node_binary, run_cli

VERSION = "26.10.0"  # (lldb opens its cores in a second; the older lines take several)
NT_PRSTATUS, NT_PRPSINFO = 1, 3


def _with_pid(src: Path, dst: Path, pid: int) -> None:
    """A copy of core `src` whose process (and main thread) is `pid`."""
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
                field = {NT_PRSTATUS: 32, NT_PRPSINFO: 24}.get(ntype)
                if field is not None:
                    was, = struct.unpack_from("<i", notes, desc + field)
                    if old is None and ntype == NT_PRSTATUS:
                        old = was  # the first thread's: the one that took the signal
                    if was == old or ntype == NT_PRPSINFO:
                        f.seek(offset + desc + field)
                        f.write(struct.pack("<i", pid))
                at = desc + (descsz + 3) // 4 * 4


def test_next_core_with_the_same_pid(tmp_path) -> None:
    first = make_core(VERSION, "stack.js", ("--allow-natives-syntax",),
                      {"V8DBG_TIER": "interpreted"}) / "core"
    other = make_core(VERSION, "remote.js") / "core"
    sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.corefile import CoreBackend
    pid = CoreBackend(str(first)).pid()
    second = tmp_path / "core"
    _with_pid(other, second, pid)
    assert CoreBackend(str(second)).pid() == pid != CoreBackend(str(other)).pid()

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
    for got, exp, name in zip(outs, want, ("first", "second")):
        g, e = json_line(got, "jsstack"), json_line(exp, "jsstack")
        assert [f.get("function") for f in g["frames"]] == \
            [f.get("function") for f in e["frames"]], (name, got[-3000:])
    assert json_line(outs[0])["frames"] != json_line(outs[1])["frames"]
