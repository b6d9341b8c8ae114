"""Damaged cores and wrong input, through every command and every front end.

From the jsstack core of each node line (tests/fixtures/stack.js, interpreted)
we make damaged copies under .cache/corrupt/VERSION/ and run every command
(COMMANDS below, with the addresses of real objects taken from the intact
core) against each one. Every command must end within its time bound, print
no Python traceback and no "internal error", and either succeed or print one
`v8dbg: ...` line (`{"error": ...}` with --json).

Failure cases (KINDS), each with every command:

  trunc50   the core cut at 50% of its size
  trunc10   the core cut at 10%
  trunc4k   the core cut after its first 4 KiB (ELF and program headers only)
  pages     10% of the core's data pages overwritten with random bytes
  objpages  the pages holding the stack's JS functions, their arguments and
            the objects they point at overwritten with random bytes
  notes     the PT_NOTE segment (threads, registers, mapped files) overwritten
  phdrs     the program header table overwritten with random bytes
  random    1 MiB of random bytes instead of a core
  empty     a zero-byte core
  wrongbin  the intact core with the node binary of another line
  nometa    the intact core with a binary that has no V8 metadata (/bin/ls;
            CLI only: the debuggers load the core's own executable)

plus wrong addresses on the intact core (unmapped, misaligned, a Smi, a
non-JS heap word, an unknown constructor name, a frame number past the end).

Matrix and counts (20 commands per case; "kinds" includes the intact core):

  cli   22.23.3, 24.21.0 x 12 kinds                        = 24 cases
        18.20.8, 20.20.2, 26.10.0 x 5 kinds (intact,
        trunc50, pages, objpages, wrongbin)                = 15 cases
                                                     total   39 cases,  780 command runs
  gdb   the same, without nometa                           = 37 cases,  740 command runs
  lldb  the same, without nometa                           = 37 cases,  740 command runs

and a truncated core must say so in a warning (in all three front ends), and
in the CLI a reader that closes the pipe early (`| head -1`) must not cause a traceback.

lldb refuses some damaged cores outright (random, empty, notes: "doesn't
contain any 'host' platform architectures"); the session then goes on with the
binary alone and every v8dbg command says `v8dbg: no process: ...`.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support import (CACHE, GDB, LLDB, MARK, ROOT, VERSIONS, json_line, make_core,
                     node_binary, validate_output)

KINDS = ["trunc50", "trunc10", "trunc4k", "pages", "objpages", "notes", "phdrs", "random",
         "empty", "wrongbin", "nometa"]
# The cuts: the matrix's, and two more of the sizes users met (tests below).
CUTS = ("trunc50", "trunc10", "trunc4k", "cut3000", "cut20m")
CMD_BOUND = 60.0          # seconds for one command
DEBUGGER_BOUND = 600.0    # seconds for one debugger run of every command
SEED = 5
MOSTLY_MISSING = "most of the core is missing"
PROGRESS = re.compile(r"^v8dbg: [a-z ]+: +[0-9.]+%$")


def stack_core(version: str) -> Path:
    return make_core(version, "stack.js", ("--allow-natives-syntax",),
                     {"V8DBG_TIER": "interpreted"}) / "core"


# -- addresses of real objects in the intact core --------------------------

def targets(version: str) -> dict:
    """Addresses taken from the intact core: die's function, an argument string, a frame."""
    core = stack_core(version)
    cache = core.parent / "corrupt-targets.json"
    if cache.exists():
        return json.loads(cache.read_text())
    p = subprocess.run([sys.executable, "-m", "v8dbg", "jsstack", "-v", "--json", "--core",
                        str(core), "--binary", str(node_binary(version))],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    doc = json_line(p.stdout, "jsstack")
    js = [f for f in doc["frames"] if f["kind"] == "js"]
    die = next(f for f in js if f["function"] == "die")
    hello = next(a for a in die["args"] if a["type"] == "string")
    heap = sorted({int(f["function_address"], 16) for f in js if f.get("function_address")}
                  | {int(a["address"], 16) for f in js for a in f.get("args", [])
                     if a.get("address")})
    out = {"function": die["function_address"], "string": hello["address"],
           "frame": die["index"], "last_frame": doc["frames"][-1]["index"],
           "stack": [(f["fp"]) for f in doc["frames"]], "heap": [hex(a) for a in heap]}
    cache.write_text(json.dumps(out))
    return out


def commands(t: dict) -> list[str]:
    fn, s = t["function"], t["string"]
    return [
        "jsstack",
        "jsstack -v -a --json",
        f"jsframe -v {t['frame']}",
        f"jsframe {t['last_frame'] + 50}",
        f"jsprint {fn}",
        f"jsprint --json -a {s}",
        f"jsprint {hex(int(fn, 16) + 3)}",         # misaligned
        "jsprint 0x11",                             # tagged, unmapped
        "jsprint 0x10",                             # neither a tagged pointer nor a Smi
        "jsprint 0x2a00000000",                     # a Smi, not an address
        f"jsclosure --json {fn}",
        f"jssource {fn}",
        f"jsconstructor {hex(int(fn, 16) + 7)}",   # a word inside the object
        "findjsobjects --json",
        "findjsinstances NoSuchConstructor",
        "jsfunctions -n die --json",
        f"findjsrefs {s}",
        "nodeinfo --json",
        "jsisolates --json",
        "findjsobjects --isolate 0x10 -c Object",     # no such isolate
    ]


# -- damaged copies -----------------------------------------------------------

def _data_pages(path: Path, first: int) -> list[int]:
    """File offsets of the 4 KiB pages the (sparse) core really holds, from `first` on."""
    pages = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = first
        while pos < size:
            try:
                d = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            h = os.lseek(fd, d, os.SEEK_HOLE)
            pages.extend(range(d & ~4095, h, 4096))
            pos = h
    finally:
        os.close(fd)
    return pages


def _overwrite(path: Path, offsets: list[int], rng: random.Random, size: int = 4096) -> None:
    with open(path, "r+b") as fh:
        for off in offsets:
            fh.seek(off)
            fh.write(rng.randbytes(size))


def _copy(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "--sparse=always", str(src), str(dst)], check=True)


def damaged(version: str, kind: str) -> tuple[Path, Path]:
    """(core, binary) for one failure case, made once under .cache/corrupt."""
    orig = stack_core(version)
    binary = node_binary(version)
    if kind == "intact":
        return orig, binary
    if kind == "wrongbin":
        other = VERSIONS[(VERSIONS.index(version) + 1) % len(VERSIONS)]
        return orig, node_binary(other)
    if kind == "nometa":
        return orig, Path("/bin/ls")
    d = CACHE / "corrupt" / version / f"{kind}-{SEED}-{orig.parent.name}"
    core = d / "core"
    if (d / "done").exists():
        return core, binary
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    rng = random.Random(f"{SEED}-{version}-{kind}")
    size = orig.stat().st_size
    sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.inferior.elf import ElfFile
    if kind == "random":
        core.write_bytes(rng.randbytes(1 << 20))
    elif kind == "empty":
        core.write_bytes(b"")
    else:
        _copy(orig, core)
        elf = ElfFile(str(orig))
        loads = [s for s in elf.segments if s.type == 1 and s.filesz]
        if kind in CUTS:
            cut = {"trunc50": size // 2, "trunc10": size // 10, "trunc4k": 4096,
                   "cut3000": 3000, "cut20m": 20_000_000}[kind]
            os.truncate(core, cut)
        elif kind == "pages":
            pages = _data_pages(orig, min(s.offset for s in loads))
            _overwrite(core, rng.sample(pages, len(pages) // 10), rng)
        elif kind == "objpages":
            t = targets(version)
            cb = CoreBackend(str(orig), str(binary))
            addrs = [int(a, 16) for a in t["heap"]]
            # ... and what those objects point at (their maps, SFIs, contexts, strings).
            for a in list(addrs):
                for i in range(8):
                    try:
                        w = int.from_bytes(cb.read(a - 1 + 8 * i, 8), "little")
                    except Exception:
                        continue
                    if w & 3 == 1:
                        addrs.append(w)
            offs = set()
            for a in addrs:
                for vaddr, _memsz, off, filesz in cb._segs:
                    if vaddr <= a < vaddr + filesz:
                        offs.add(off + ((a - vaddr) & ~4095))
            _overwrite(core, sorted(offs), rng)
        elif kind == "notes":
            for s in elf.segments:
                if s.type == 4:
                    _overwrite(core, [s.offset], rng, s.filesz)
        elif kind == "phdrs":
            with open(orig, "rb") as fh:
                head = fh.read(64)
            phoff = int.from_bytes(head[32:40], "little")
            phnum = int.from_bytes(head[56:58], "little")
            _overwrite(core, [phoff], rng, 56 * phnum)
        else:
            raise ValueError(kind)
    (d / "done").write_text("ok")
    return core, binary


# -- checks ---------------------------------------------------------------

def check_output(cmd: str, out: str, where: str, rc: int | None = None) -> str:
    """One command's output is clean; returns 'ok' or 'error'."""
    ctx = f"{where}: `{cmd}` printed:\n{out[-3000:]}"
    assert "Traceback" not in out, ctx
    assert "Python Exception" not in out and "Error occurred in Python" not in out, ctx
    assert "internal error" not in out, ctx
    # As a terminal shows it: a progress line erased with \r leaves nothing.
    lines = [l.rsplit("\r", 1)[-1] for l in out.split("\n")]
    lines = [l[len("error: "):] if l.startswith("error: ") else l for l in lines]
    errors = [l for l in lines if l.startswith("v8dbg: ") and not l.startswith("v8dbg: warning:")
              and not PROGRESS.match(l)]
    if "--json" in cmd.split():
        docs = [l for l in lines if l.startswith("{")]
        assert len(docs) == 1, ctx
        doc = json.loads(docs[0])
        assert isinstance(doc, dict), ctx
        validate_output(doc, cmd)
        assert not errors, ctx
        if "error" in doc:
            assert isinstance(doc["error"], str) and doc["error"] and "\n" not in doc["error"], ctx
            assert rc in (None, 1), ctx
            return "error"
        assert rc in ((None, 0, 1) if MOSTLY_MISSING in out else (None, 0)), ctx
        return "ok"
    assert len(errors) <= 1, ctx
    if errors:
        assert rc in (None, 1), ctx
        assert len(errors[0]) > len("v8dbg: ") + 5, ctx
        return "error"
    # A core mostly missing: what can be read is printed, and the command fails.
    assert rc in ((None, 0, 1) if MOSTLY_MISSING in out else (None, 0)), ctx
    assert out.strip(), ctx  # success prints something
    return "ok"


def run_one_cli(core: Path, binary: Path, cmd: str) -> tuple[int, str, float]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "v8dbg", *cmd.split(), "--core", str(core),
                        "--binary", str(binary)], cwd=ROOT, capture_output=True,
                       timeout=CMD_BOUND + 30)
    out = (p.stdout + p.stderr).decode("utf-8", "replace").rstrip("\n")
    return p.returncode, out, time.monotonic() - t0


# Every kind on two lines; on the others the kinds whose effect depends on the line.
FULL_LINES = ["22.23.3", "24.21.0"]
LINE_KINDS = ["intact", "trunc50", "pages", "objpages", "wrongbin"]
CASES = [(v, k) for v in VERSIONS for k in (["intact"] + KINDS if v in FULL_LINES else LINE_KINDS)]


@pytest.mark.parametrize("version,kind", CASES)
def test_cli(version: str, kind: str) -> None:
    core, binary = damaged(version, kind)
    cmds = commands(targets(version))
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda c: run_one_cli(core, binary, c), cmds))
    outcome = {}
    for cmd, (rc, out, secs) in zip(cmds, results):
        assert secs < CMD_BOUND, f"cli {version} {kind}: `{cmd}` took {secs:.1f} s"
        outcome[cmd] = check_output(cmd, out, f"cli {version} {kind}", rc)
    if kind == "intact":
        # The good core decodes; only the wrong-input commands fail.
        assert outcome["jsstack"] == outcome["jsstack -v -a --json"] == "ok"
        assert outcome[f"jsprint {targets(version)['function']}"] == "ok"
        assert outcome["jsprint 0x11"] == "error"
    if kind in ("random", "empty", "wrongbin", "nometa", "trunc4k", "phdrs"):
        # Nothing to decode: every command that needs the target says why.
        # (A Smi needs no memory: jsprint prints its value from any target.)
        bad = {c: r for c, r in outcome.items() if r != "error" and c != "jsprint 0x2a00000000"}
        assert not bad, bad


def run_debugger(frontend: str, version: str, commands: list[str], core: Path | None = None,
                 pid: int | None = None, timeout: float = DEBUGGER_BOUND) -> list[tuple[str, float]]:
    """Each command in one gdb or lldb session: [(its output, its seconds)].

    A time mark is printed before each command and after the last. lldb -b
    stops at the first command that reports an error, so in lldb each command
    runs through HandleCommand and the batch goes on, as an interactive
    session does.
    """
    half = len(MARK) // 2
    # Split so that lldb's echo of the command line does not contain the mark.
    mark = f"import time; print('{MARK[:half]}' + '{MARK[half:]}', time.monotonic())"
    if frontend == "gdb":
        args = [GDB, "-nx", "-q", "-batch", "-ex", "set pagination off", "-ex", "set width 0",
                "-ex", f"source {ROOT}/plugins/gdb/v8dbg.py"]
        for c in commands:
            args += ["-ex", f"python {mark}", "-ex", c]
        args += ["-ex", f"python {mark}", str(node_binary(version))]
        args += [str(core)] if core is not None else ["-p", str(pid)]
    else:
        def each(c: str) -> str:
            return ("script r = lldb.SBCommandReturnObject(); "
                    f"_ = lldb.debugger.GetCommandInterpreter().HandleCommand({c!r}, r); "
                    "print((r.GetOutput() or '') + (r.GetError() or ''))")

        binary = node_binary(version)
        args = [LLDB, "--no-lldbinit", "-b"]
        if core is not None:
            # lldb refuses some damaged cores; the session goes on with the binary alone.
            args += [str(binary), "-o", each(f"target create --core {core} {binary}")]
        else:
            args += ["-p", str(pid)]
        args += ["-o", f"command script import {ROOT}/plugins/lldb/v8dbg.py"]
        for c in commands:
            # A `script` line is the caller's own Python, which reports its output itself.
            args += ["-o", f"script {mark}", "-o", c if c.startswith("script ") else each(c)]
        args += ["-o", f"script {mark}"]
    for _ in range(2):
        # gdb prints a failing command's error (a gdb.GdbError) on stderr: read both
        # streams as one, in order, so each error stays with its command.
        p = subprocess.run(args, stdout=subprocess.PIPE, text=True, timeout=timeout, cwd=ROOT,
                           stderr=subprocess.STDOUT if frontend == "gdb" else subprocess.PIPE)
        # lldb has, rarely and under load, exited before running anything: no
        # command ran, so one more try hides nothing of v8dbg's.
        if MARK in p.stdout:
            break
    err = p.stderr or ""
    parts = p.stdout.split(MARK)[1:]
    outs: list[tuple[str, float]] = []
    for i, c in enumerate(commands):
        if i + 1 >= len(parts):
            outs.append(("", float("inf")))  # the session ended early
            continue
        head, _, body = parts[i].partition("\n")
        t0 = float(head.split()[0])
        t1 = float(parts[i + 1].partition("\n")[0].split()[0])
        lines = [l for l in body.split("\n") if not l.startswith("(lldb) ")]
        text = "\n".join(lines).strip("\n")
        if i == len(commands) - 1 and err.strip():
            text += "\n" + err.strip()  # warnings on stderr, after everything else
        outs.append((text, t1 - t0))
    return outs


def _debugger_case(frontend: str, version: str, kind: str) -> None:
    core, binary = damaged(version, kind)
    # The debugger loads the binary that run_* picks by version: for wrongbin, another line's.
    bin_version = version
    if kind == "wrongbin":
        bin_version = VERSIONS[(VERSIONS.index(version) + 1) % len(VERSIONS)]
    cmds = commands(targets(version))
    outs = run_debugger(frontend, bin_version, cmds, core=core)
    for c, (o, secs) in zip(cmds, outs):
        assert secs < CMD_BOUND, f"{frontend} {version} {kind}: `{c}` took {secs:.1f} s:\n{o}"
    results = {c: check_output(c, o, f"{frontend} {version} {kind}") for c, (o, _) in
               zip(cmds, outs)}
    if kind == "intact":
        assert results["jsstack"] == "ok" and results["jsprint 0x11"] == "error", results
    if kind == "wrongbin":
        assert set(results.values()) == {"error"}, results


# As for the CLI: every kind on two lines, the line-dependent kinds on all.
# (nometa replaces the binary the debugger itself loads; the CLI covers it.)
DEBUGGER_CASES = [(v, k) for v, k in CASES if k != "nometa"]


@pytest.mark.parametrize("version,kind", DEBUGGER_CASES)
def test_gdb(version: str, kind: str) -> None:
    _debugger_case("gdb", version, kind)


@pytest.mark.parametrize("version,kind", DEBUGGER_CASES)
def test_lldb(version: str, kind: str) -> None:
    _debugger_case("lldb", version, kind)


@pytest.mark.parametrize("frontend", ["cli", "gdb", "lldb"])
def test_truncated_core_says_so(frontend: str) -> None:
    """A truncated core is named as such, so a short stack is not taken for the whole story."""
    core, binary = damaged("24.21.0", "trunc50")
    if frontend == "cli":
        out = run_one_cli(core, binary, "jsstack")[1]
    else:
        out = "\n".join(o for o, _ in run_debugger(frontend, "24.21.0", ["jsstack", "nodeinfo"],
                                                   core=core))
    assert re.search(r"^(error: )?v8dbg: warning: .*truncated", out, re.M), out
    intact, _ = damaged("24.21.0", "intact")
    out = run_one_cli(intact, binary, "jsstack")[1]
    assert "truncated" not in out, out


def test_truncated_core_cause_first() -> None:
    """A core cut to 3,000 bytes (its notes gone with the rest, so it names no
    program): the error says the core is truncated first, not only that
    --binary is missing."""
    core, _binary = damaged("24.21.0", "cut3000")
    p = subprocess.run([sys.executable, "-m", "v8dbg", "jsstack", "--core", str(core)],
                       cwd=ROOT, capture_output=True, text=True, timeout=CMD_BOUND)
    assert p.returncode == 1, p.stderr
    errors = [l for l in p.stderr.splitlines()
              if l.startswith("v8dbg: ") and not l.startswith(("v8dbg: warning:", "v8dbg: note:"))]
    assert len(errors) == 1, p.stderr
    assert re.match(r"v8dbg: \S+ is truncated \(3000 of at least \d+ bytes\)", errors[0]), p.stderr
    assert errors[0].endswith("pass --binary NODE"), p.stderr


def test_mostly_missing_core_fails() -> None:
    """A core cut to 20 MB of its 500+: what can be read is printed, with a
    warning that most of the core is missing, and the exit status is 1."""
    core, binary = damaged("24.21.0", "cut20m")
    rc, out, _secs = run_one_cli(core, binary, "jsstack")
    assert rc == 1, out
    warn = [l for l in out.splitlines() if l.startswith("v8dbg: warning:") and "truncated" in l]
    assert len(warn) == 1 and MOSTLY_MISSING in warn[0], out
    assert re.search(r"^#0 ", out, re.M), out
    # Half a core is not "most of it missing": a warning, and success.
    half, _ = damaged("24.21.0", "trunc50")
    rc, out, _secs = run_one_cli(half, binary, "jsstack")
    assert rc == 0 and "truncated" in out and MOSTLY_MISSING not in out, out


@pytest.mark.parametrize("frontend", ["cli", "gdb", "lldb"])
def test_debug_says_where(frontend: str) -> None:
    """--debug: the reason a frame could not be decoded also names where v8dbg found it out."""
    core, binary = damaged("24.21.0", "objpages")
    cmds = ["jsstack --json", "jsstack --json --debug", "jsstack --json"]
    if frontend == "cli":
        outs = [run_one_cli(core, binary, c)[1] for c in cmds]
    else:
        outs = [o for o, _ in run_debugger(frontend, "24.21.0", cmds, core=core)]

    def notes(out: str) -> list[str]:
        doc = json_line(out, "jsstack")
        return [f["note"] for f in doc["frames"] if f.get("note")]

    plain, debug, after = (notes(o) for o in outs)
    assert plain and len(plain) == len(debug), (plain, debug)
    assert not any("Error at " in n for n in plain), plain
    for p, d in zip(plain, debug):
        assert d.startswith(p) and re.search(r"\[(DecodeError|TargetMemoryError) at \w+\.py:\d+ ", d), d
    assert after == plain, "--debug stayed on for the next command"


def test_cli_reader_goes_away() -> None:
    """`v8dbg jsfunctions ... | head -1`: no traceback when the pipe closes early."""
    core, binary = damaged("24.21.0", "intact")
    # Far more than a pipe holds (64 KiB), so the write meets the closed pipe.
    p = subprocess.Popen([sys.executable, "-m", "v8dbg", "jsfunctions", "--core", str(core),
                          "--binary", str(binary)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=CMD_BOUND)
    assert first.strip(), first
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_control_characters_are_escaped() -> None:
    """Text from a damaged target (a source with NUL bytes, terminal escapes) prints
    escaped: gdb refuses a NUL ("embedded null character"), escapes drive terminals."""
    from v8dbg.commands.base import printable
    assert printable("a\x00b\x1b[31mc\td\ne\x7f") == "a\\x00b\\x1b[31mc\td\ne\\x7f"
    assert printable("plain — ünïcode") == "plain — ünïcode"
    assert printable("line 1\r\nline 2\r") == "line 1\nline 2\\x0d"


@pytest.mark.parametrize("version", FULL_LINES)
def test_core_cut_within_a_word(version: str, tmp_path) -> None:
    """A core that ends within a word of the read-only space's page (a
    disk that filled while the kernel wrote it ends anywhere): that page
    is walked up to its last whole word. (The cut of trunc10 fell so on
    one core in ten or so, by its size: this one always does.) The
    segment holding that page is moved to the end of the file before the
    cut, so the heap's other pages survive wherever the kernel put them."""
    sys.path.insert(0, str(ROOT))
    from support import core_program
    from v8dbg.v8.pages import _Layout, read_only_pages
    orig, binary = damaged(version, "intact")
    prog, _ = core_program(orig, version)
    ro = max(read_only_pages(prog, _Layout(prog)), key=lambda p: p.end - p.start)
    at = ro.start + (ro.end - ro.start) // 2 // 8 * 8 + 5
    core = tmp_path / "core"
    _copy(orig, core)
    with open(core, "r+b") as f:
        phoff, = struct.unpack_from("<Q", f.read(64), 0x20)
        f.seek(0x36)
        phentsize, phnum = struct.unpack("<HH", f.read(4))
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        # (p_type, p_offset, p_vaddr, p_filesz) of each program header.
        heads = [struct.unpack_from("<I4xQQ8xQ", table, i * phentsize) for i in range(phnum)]
        i = next(i for i, (kind, _, va, fs) in enumerate(heads)
                 if kind == 1 and va <= at < va + fs)
        _, offset, vaddr, filesz = heads[i]
        end = f.seek(0, os.SEEK_END)
        moved = (end + 4095) // 4096 * 4096
        f.seek(offset)
        data = f.read(filesz)
        f.seek(moved)
        f.write(data)
        f.seek(phoff + i * phentsize + 8)
        f.write(struct.pack("<Q", moved))
        f.truncate(moved + at - vaddr)
    snap = tmp_path / "out.heapsnapshot"
    for cmd in ("findjsobjects --json", f"jsheapsnapshot -o {snap}"):
        rc, out, _ = run_one_cli(core, binary, cmd)
        assert check_output(cmd, out, f"cli {version} cut in a word", rc) == "ok", out
        assert re.search(r"^v8dbg: warning: .*truncated", out, re.M), out
        if cmd.startswith("findjsobjects"):
            assert json_line(out, "findjsobjects")["groups"], out
    assert snap.stat().st_size > 100_000
    # The cut page itself, among the heap's pages found before the cut: read
    # up to its last whole word.
    from v8dbg.heap.walk import Walker
    cut, _ = core_program(core, version)
    page = next(p for p in read_only_pages(cut, _Layout(cut)) if p.start == ro.start)
    assert page.end == at - 5 and page.end % 8 == 0, (hex(page.end), hex(at))
    assert Walker(cut, cut.heap).read_page(page) is not None
    assert any(ps for ps in cut.heap_state.heaps.values())
