"""A heap too big for the memory left: a clear message, not a dead debugger.

The heap's graph lives in the process running v8dbg (the debugger, under
gdb and lldb). Before its edges are made, its peak is estimated from the
page walk and compared with what the process may still take
(v8dbg/heap/budget.py); here the limit is set low with V8DBG_MEMORY_LIMIT,
as a user on a small machine would meet it. And where memory runs out
anyway (the address space capped with RLIMIT_AS right before the graph is
built, a real MemoryError from NumPy), the command says so in one line
and the same session goes on."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from support import FRONTENDS, ROOT, make_core, node_binary, run

from v8dbg.heap import budget

VERSION = "24.21.0"
LEAK = "leakchain.js"  # (the core test_retainers makes too)


def test_sizes() -> None:
    assert budget.parse_size("3G") == 3 << 30 and budget.parse_size("500m") == 500 << 20
    assert budget.parse_size("1.5g") == 3 << 29 and budget.parse_size(" 123 ") == 123
    assert budget.parse_size("2GiB") == 2 << 30
    assert budget.parse_size("lots") is None and budget.parse_size("") is None


def test_estimate_against_limit(monkeypatch) -> None:
    monkeypatch.setenv("V8DBG_MEMORY_LIMIT", "100G")
    assert budget.check_graph(2_000_000, 13_000_000) is None
    monkeypatch.setenv("V8DBG_MEMORY_LIMIT", "1M")
    said = budget.check_graph(2_000_000, 13_000_000)
    # 60 bytes an object and 19 a slot: 367 million bytes, 349 MB of 2**20.
    assert said is not None and "would need about 349 MB more" in said, said
    assert "V8DBG_MEMORY_LIMIT=1M leaves 0 MB" in said, said
    monkeypatch.delenv("V8DBG_MEMORY_LIMIT")
    have, why = budget.room()
    assert have is not None and have > 0 and why, (have, why)


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_graph_too_big_is_said(frontend: str, monkeypatch, tmp_path) -> None:
    """With less memory left than the graph needs: findjsobjects counts
    without telling garbage apart and says why, the commands that need the
    graph stop with one line saying how much it would need and what limits
    it (no file half written), and the session goes on."""
    d = make_core(VERSION, LEAK)
    monkeypatch.setenv("V8DBG_MEMORY_LIMIT", "1M")
    out = tmp_path / "leak.heapsnapshot"
    found, kept, wrote, info = run(frontend, VERSION, d / "core", [
        "findjsobjects", "findjsobjects --retained", f"jsheapsnapshot -o {out}", "nodeinfo"])
    assert " objects in " in found and "garbage not told apart (the heap's graph (" in found, found
    for text in (kept, wrote):
        # (lldb says a command's error after its own `error: `.)
        lines = [ln.removeprefix("error: ") for ln in text.splitlines()
                 if ln.removeprefix("error: ").startswith("v8dbg: ")]
        assert len(lines) == 1 and lines[0].startswith("v8dbg: the heap's graph ("), text
        assert "would need about" in lines[0] and "V8DBG_MEMORY_LIMIT=1M leaves" in lines[0], text
        assert "Traceback" not in text and "internal error" not in text, text
    assert not out.exists() and not list(tmp_path.iterdir())
    assert f"v{VERSION}" in info, info


def test_out_of_memory_is_said(tmp_path) -> None:
    """A real MemoryError (the process's address space capped just above what
    it holds once the census is taken): one line, and the same session then
    answers the next command."""
    d = make_core(VERSION, LEAK)
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from v8dbg.commands import Session, load_all
        from v8dbg.inferior.corefile import CoreBackend
        load_all()
        core, binary = {str(d / "core")!r}, {str(node_binary(VERSION))!r}
        sess = Session(lambda: CoreBackend(core, binary), binary)
        text, ok = sess.run("findjsobjects", ["-p", "nothing-has-this"])  # the census, no graph
        assert ok, text
        def vm():
            for line in open("/proc/self/status"):
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (vm() + (4 << 20), hard))
        text, ok = sess.run("findjsobjects", ["--retained"])
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        print("FAILED:", ok, text)
        text, ok = sess.run("nodeinfo", [])
        print("THEN:", ok, text.splitlines()[0])
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    failed = [ln for ln in p.stdout.splitlines() if ln.startswith("FAILED:")]
    assert failed and failed[0].startswith("FAILED: False v8dbg: findjsobjects: out of memory: "),\
        p.stdout
    assert "THEN: True" in p.stdout, p.stdout


def test_trims_kept_only_in_a_one_shot_process(monkeypatch) -> None:
    """free_pages(trim=False) keeps the allocator's free pages for the next
    phase only in a process that ends with its command (the standalone CLI
    says so: release.one_shot); gdb's and lldb's process, which lives on,
    is trimmed all the same. A plain free_pages() trims in both."""
    from v8dbg.heap import release
    trims: list[int] = []
    monkeypatch.setattr(release, "_trim", lambda pad: trims.append(pad) or 1)
    for one_shot, want in ((False, [0, 0]), (True, [0])):
        trims.clear()
        monkeypatch.setattr(release, "_one_shot", one_shot)
        release.free_pages(trim=False)
        release.free_pages()
        assert trims == want, one_shot
    code = ("import v8dbg.heap.release as r; from v8dbg.commands import cli; "
            "cli.main(['findjsobjects', '--core', '/nonexistent']); print(r._one_shot)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=str(ROOT))
    assert out.stdout.split() == ["True"], (out.stdout, out.stderr)
    out = subprocess.run([sys.executable, "-c", "import v8dbg.heap.release as r; "
                          "from v8dbg.commands import load_all; load_all(); print(r._one_shot)"],
                         capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert out.stdout.split() == ["False"], (out.stdout, out.stderr)
