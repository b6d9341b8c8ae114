"""A core read on another machine: libraries missing or elsewhere, no program
file given, a stripped node, another architecture -- on every line and front end.

One core per line (tests/fixtures/remote.js: JS entered from C++ three times
over) serves every case; its "moved" copy names libc and libstdc++ at paths
that do not exist, in the core's file list and in the loader's list in
memory, as a core from another distribution or image does.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from support import (FRONTENDS, ROOT, VERSIONS, aarch64_core, core_program, fetch_node, json_line,
                     make_core, moved_core, moved_sysroot, node_binary, run, run_cli, run_gdb,
                     run_lldb, run_lldb_session, stripped_binary)
from test_stack import compare

MOVED_LIBC = "/usr/lib/x86_64-linux-prd/libc.so.6"


@pytest.fixture(scope="module")
def cores():
    return {v: make_core(v, "remote.js") for v in VERSIONS}


def libc_build_id(d) -> str:
    sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.corefile import CoreBackend
    core = CoreBackend(str(d / "core"))
    path = next(m.path for m in core.mappings_raw if m.path.endswith("/libc.so.6"))
    bid = core.mapped_build_id(path)
    assert bid
    return bid


def warnings(text: str) -> list[str]:
    return [l for l in text.splitlines() if "v8dbg: warning:" in l]


_moved: dict = {}


def moved_results(frontend: str, version: str, d) -> tuple[str, str]:
    """jsstack on the moved core: (without the libraries, with them pointed at)."""
    key = (frontend, version)
    if key in _moved:
        return _moved[key]
    core, root = moved_core(d), moved_sysroot(d)
    libdir = root / "usr" / "lib" / "x86_64-linux-prd"
    if frontend == "cli":
        bare = run_cli(version, core, ["jsstack --json"])[0]
        fixed = run_cli(version, core, ["jsstack --json"], extra=("--sysroot", str(root)))[0]
    elif frontend == "gdb":
        # `set sysroot` makes gdb load the libraries again; v8dbg reads what it loaded.
        bare, _, fixed = run_gdb(version, ["jsstack --json", f"set sysroot {root}",
                                           "jsstack --json"], core=core, merged=True)
    else:
        libs = sorted(p for p in libdir.iterdir() if not p.is_symlink())
        outs = run_lldb(version, ["jsstack --json"] + [f"target modules add {p}" for p in libs]
                        + ["jsstack --json"], core=core, merged=True)
        bare, fixed = outs[0], outs[-1]
    _moved[key] = (bare, fixed)
    return _moved[key]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_missing_libraries_still_give_every_js_frame(frontend, version, cores):
    d = cores[version]
    bare, _ = moved_results(frontend, version, d)
    doc = json_line(bare)
    compare(doc, (d / "expected-stack.txt").read_text())
    # Native unwinding could not leave libc: nothing of it is named ...
    natives = [f for f in doc["frames"] if f["kind"] == "native"]
    assert not any(f["symbol"] in ("abort", "raise") for f in natives), natives[:4]
    assert doc["frames"][0]["kind"] == "native" and doc["frames"][0]["symbol"] is None
    # ... and one warning says which library, by path and build-id.
    ws = warnings(bare)
    assert len(ws) == 1, bare[-2000:]
    assert MOVED_LIBC in ws[0] and f"build-id {libc_build_id(d)}" in ws[0]
    assert "missing" in ws[0]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_libraries_pointed_at_give_native_frames(frontend, version, cores):
    d = cores[version]
    _, fixed = moved_results(frontend, version, d)
    doc = json_line(fixed)
    compare(doc, (d / "expected-stack.txt").read_text())
    natives = [f for f in doc["frames"] if f["kind"] == "native"]
    libc = {f["symbol"] for f in natives if f.get("module") == "libc.so.6"}
    assert "abort" in libc, natives[:6]
    assert any(f["symbol"] and "uv_run" in f["symbol"] for f in natives)
    assert not any(MOVED_LIBC in w for w in warnings(fixed))


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_node_taken_from_the_core(frontend, version, cores):
    """`gdb -c core`, `lldb -c core` and the CLI without --binary find node
    from the core; gdb and lldb say which file they took (the CLI only when it
    is not where the core says: tests/test_cli_usage.py)."""
    d = cores[version]
    out = run(frontend, version, d / "core", ["jsstack --json"], no_binary=True)[0]
    compare(json_line(out), (d / "expected-stack.txt").read_text())
    notes = [l for l in out.splitlines() if "v8dbg: note: node binary" in l]
    assert len(notes) == (0 if frontend == "cli" else 1), out[-2000:]
    assert all(f"/node/{version}/bin/node" in n for n in notes), notes


def json_lines(text: str) -> list[dict]:
    """Every JSON document of a command's output (`jsstack -a` prints one per thread)."""
    docs = []
    for line in text.splitlines():
        if line.strip().startswith("{"):
            docs.append(json_line(line))
    assert docs, text[-2000:]
    return docs


def v8_frames(docs: list[dict]) -> list[list[tuple]]:
    """What V8 knows of each thread's frames: every frame but native ones' names
    (a stripped binary has none for node's C++)."""
    keys = ("index", "kind", "pc", "fp", "frame_type", "symbol", "function", "tier", "script",
            "line", "column")
    return [[tuple(f.get(k) for k in keys) if f["kind"] != "native"
             else (f["index"], f["kind"], f["pc"], f["fp"]) for f in doc["frames"]]
            for doc in docs]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_stripped_binary(frontend, version):
    """node without .symtab (as some distributions ship it) ran the core: every
    frame V8 made, builtins by name, exactly as with the unstripped binary."""
    binary = stripped_binary(version)
    d = make_core(version, "remote.js", binary=binary)
    out = run(frontend, version, d / "core", ["jsstack -a --json"], binary=binary)[0]
    docs = json_lines(out)
    compare(docs[0], (d / "expected-stack.txt").read_text())
    ws = [w for w in warnings(out) if "stripped" in w]
    assert len(ws) == 1 and f"node-stripped/{version}/node is stripped" in ws[0], out[-2000:]
    assert "C++ function names are lost" in ws[0] and "V8's own builtins table" in ws[0]
    assert "<builtin>" not in out
    whole = json_lines(run(frontend, version, d / "core", ["jsstack -a --json"])[0])
    assert v8_frames(docs) == v8_frames(whole)
    named = [f.get("symbol") for f in docs[0]["frames"] if f["kind"] == "internal"]
    assert "JSEntry" in named and "JSEntryTrampoline" in named, named


def test_stripped_binary_without_v8_tables(tmp_path):
    """Where V8's builtins table is not found (here: its anchor name altered),
    builtins stay unnamed and the one warning says so; JS frames are as before."""
    version = VERSIONS[-1]
    binary = stripped_binary(version)
    d = make_core(version, "remote.js", binary=binary)
    data = binary.read_bytes()
    name = b"\0InterpreterEntryTrampoline\0"
    assert name in data
    broken = tmp_path / "node"
    broken.write_bytes(data.replace(name, b"\0InterpreterEntryTrampolinX\0"))
    broken.chmod(0o755)
    out = run_cli(version, d / "core", ["jsstack -a --json"], binary=broken)[0]
    doc = json_line(out)
    compare(doc, (d / "expected-stack.txt").read_text())
    ws = [w for w in warnings(out) if "stripped" in w]
    assert len(ws) == 1 and "show as <builtin>" in ws[0] and "was not found" in ws[0], ws
    named = [f.get("symbol") for f in doc["frames"] if f["kind"] == "internal"]
    assert "<builtin>" in named and "JSEntry" not in named, named


# The pinned releases, and releases of the V8 versions no pinned one has.
STRIPPED_CHECKED = VERSIONS + ["18.0.0", "19.0.0", "19.8.1", "21.7.3", "23.11.1", "25.9.0"]


@pytest.mark.parametrize("version", STRIPPED_CHECKED)
def test_stripped_builtins_match_the_symbols(version):
    """Every Builtins_* symbol of the release binary (V8's own ground truth) is
    named the same from V8's tables in the stripped copy, and the embedded
    code is placed exactly where the symbols put it."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.elf import ElfFile
    from v8dbg.v8 import builtins, metadata
    fetch_node(version)
    stripped = ElfFile(str(stripped_binary(version)))
    assert stripped.section(".symtab") is None
    raw, _, table, _ = metadata._scan(stripped)
    assert table is not None
    whole = ElfFile(str(node_binary(version)))
    syms = whole.symbols_matching(rb"Builtins_[A-Za-z0-9_]+")
    assert len(syms) == len(table.names) > 2000
    wrong = {n: hex(a) for n, a in syms.items()
             if builtins.name_in_table(table, a) != n[len("Builtins_"):]}
    assert not wrong, list(wrong.items())[:10]
    # A pc anywhere inside a builtin (up to the padding before the next) names it.
    ordered = sorted((a, n[len("Builtins_"):]) for n, a in syms.items())
    for (a, n), (b, _) in zip(ordered, ordered[1:]):
        assert builtins.name_in_table(table, a + 1) == n
        assert builtins.name_in_table(table, b - 1) == n
    md = metadata.load(whole)
    assert raw["EmbeddedBlobCodeStart"] == md.consts["EmbeddedBlobCodeStart"]
    assert raw["EmbeddedBlobCodeSize"] == md.consts["EmbeddedBlobCodeSize"]
    loaded = metadata.load(stripped)
    assert loaded.builtins == table


@pytest.mark.parametrize("version", STRIPPED_CHECKED)
def test_stripped_bytecode_sizes_match_the_symbol(version):
    """V8's bytecode size table (baseline frames' positions need it), found by
    its shape in the stripped copy, equals the one its symbol names in the
    release binary."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.elf import ElfFile
    from v8dbg.v8 import baseline
    fetch_node(version)
    stripped = ElfFile(str(stripped_binary(version)))
    want = baseline.read_sizes(ElfFile(str(node_binary(version))))
    assert want is not None and len(want[0]) > 190
    assert baseline.read_sizes(stripped) == want


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_other_architecture_is_one_clear_error(frontend, version, cores):
    core = aarch64_core(cores[version])
    if frontend == "cli":
        p = subprocess.run([sys.executable, "-m", "v8dbg", "jsstack", "--core", str(core)],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "Traceback" not in p.stderr
        out = p.stderr
    elif frontend == "gdb":
        out = run_gdb(version, ["jsstack"], core=core)[0]
    else:
        # lldb refuses the core itself (ending a -b run); v8dbg says why.
        out = run_lldb_session([f"target create --core {core} {node_binary(version)}",
                                "jsstack"])
    errs = [l for l in out.splitlines() if "v8dbg: " in l]
    assert len(errs) == 1, out[-2000:]
    assert "aarch64" in errs[0] and "x86-64" in errs[0] and str(core) in errs[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_thread_state_chains_every_segment(version, cores):
    """V8's chain of exit frames (c_entry_fp, then each entry frame's saved one)
    is exactly the exit frames a full native unwind finds, on a core whose
    libraries are all here."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.stack import segments
    from v8dbg.stack.frames import StackDecoder
    d = cores[version]
    prog, backend = core_program(d / "core", version)
    regs = backend.threads()[0].regs
    top = segments.top_for(prog, regs)
    assert top is not None and top.js_entry_sp
    assert prog.mem.u64(top.isolate + prog.md.const("IsolateThreadLocalTop")
                        + prog.md.const("TopIsolate")) == top.isolate
    frames = StackDecoder(prog).decode(regs)
    exits = [f.fp for f in frames if re.search(r"Exit", f.frame_type or "")
             or (f.kind == "js" and f.tier == "builtin" and f.script is None
                 and prog.mem.i64(f.fp - 8) & 1 == 0)]
    entries = [f.fp for f in frames if f.frame_type == "EntryFrame"]
    assert len(top.exits) == 3 == len(entries)
    assert top.exits == exits[:3]
    assert top.js_entry_sp == entries[-1]


@pytest.mark.parametrize("version", VERSIONS)
def test_native_frames_of_node_survive_a_missing_libc(version, cores):
    """Where libc cannot be unwound, node's own frames below it are found from
    the stack (taken only when they lead exactly to V8's exit frame): the same
    node frames, at the same places, as with every library present."""
    d = cores[version]
    whole = json_line(run_cli(version, d / "core", ["jsstack --json"])[0])
    moved = json_line(moved_results("cli", version, d)[0])

    def node_frames(doc):
        return [(f["pc"], f["symbol"]) for f in doc["frames"]
                if f["kind"] == "native" and f.get("module") == "node"]

    # Below main, libc's __libc_start_call_main cannot be unwound either: _start is lost.
    want = [f for f in node_frames(whole) if f[1] != "_start"]
    assert node_frames(moved) == want
    assert "Abort" in (node_frames(moved)[0][1] or "")


@pytest.mark.parametrize("version", VERSIONS)
def test_different_library_and_all_threads(version, cores, tmp_path):
    """A file of the right name but another build is named as different, not
    used; `jsstack --all` still finds the thread running JavaScript."""
    d = cores[version]
    wrong = tmp_path / "libc.so.6"
    import shutil
    shutil.copy(next(p for p in (moved_sysroot(d) / "usr" / "lib" / "x86_64-linux-prd").iterdir()
                     if p.name.startswith("libstdc++") and not p.is_symlink()), wrong)
    out, every = run_cli(version, moved_core(d), ["jsstack --json", "jsstack --all --json"],
                         extra=("--solib-path", str(tmp_path)))
    compare(json_line(out), (d / "expected-stack.txt").read_text())
    ws = warnings(out)
    assert len(ws) == 1 and MOVED_LIBC in ws[0], out[-1500:]
    assert f"differs on this machine: {wrong} has build-id" in ws[0]
    threads = [t for t in json_line(every)["threads"]
               if any(f["kind"] == "js" for f in t["frames"])]
    assert len(threads) == 1
    compare({"frames": threads[0]["frames"]}, (d / "expected-stack.txt").read_text())


@pytest.mark.parametrize("version", VERSIONS)
def test_thread_state_found_when_isolate_offsets_move(version, cores, monkeypatch):
    """A release whose Isolate members moved (and no other release of its line
    in the table fits): the ThreadLocalTop is found near the Heap by its
    pointer back to the Isolate, with the same contents."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.stack import segments
    d = cores[version]
    prog, backend = core_program(d / "core", version)
    regs = backend.threads()[0].regs
    want = segments.top_for(prog, regs)
    assert want is not None
    moved = dict(prog.md.consts)
    monkeypatch.setattr(segments.layouts, "thread_top_variants", lambda md: [])
    try:
        prog.md.consts["IsolateHeap"] += 64
        prog.forget()
        got = segments.top_for(prog, regs)
    finally:
        prog.md.consts.clear()
        prog.md.consts.update(moved)
    assert got is not None
    assert (got.isolate, got.c_entry_fp, got.js_entry_sp, got.exits) == \
        (want.isolate, want.c_entry_fp, want.js_entry_sp, want.exits)


@pytest.mark.parametrize("version", VERSIONS)
def test_thread_state_from_another_release_of_the_line(version, cores, monkeypatch):
    """A release the table has not measured may carry the offsets of another
    release of its line: those are tried (each checked) before any search."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.stack import segments
    from v8dbg.v8 import layouts
    d = cores[version]
    prog, backend = core_program(d / "core", version)
    regs = backend.threads()[0].regs
    want = segments.top_for(prog, regs)
    variants = layouts.thread_top_variants(prog.md)
    assert want is not None and len(variants) >= 2
    monkeypatch.setattr(segments, "_search_top", lambda prog, heap: None)
    for name, value in variants[1].items():  # another release's offsets, undone after
        monkeypatch.setitem(prog.md.consts, name, value)
    prog.forget()
    got = segments.top_for(prog, regs)
    assert got is not None
    assert (got.isolate, got.c_entry_fp, got.js_entry_sp, got.handler, got.exits) == \
        (want.isolate, want.c_entry_fp, want.js_entry_sp, want.handler, want.exits)


@pytest.mark.parametrize("version", ["18.20.8", "26.10.0"])
def test_library_found_by_build_id_under_another_name(version, cores, tmp_path):
    """--solib-path finds a library by its build-id whatever its file is called."""
    import shutil
    d = cores[version]
    libdir = moved_sysroot(d) / "usr" / "lib" / "x86_64-linux-prd"
    (tmp_path / "deep").mkdir()
    shutil.copy(libdir / "libc.so.6", tmp_path / "deep" / "libc-from-prod.so")
    out = run_cli(version, moved_core(d), ["jsstack --json"], extra=("--solib-path", str(tmp_path)))[0]
    doc = json_line(out)
    compare(doc, (d / "expected-stack.txt").read_text())
    assert "abort" in {f["symbol"] for f in doc["frames"] if f.get("module") == "libc.so.6"}
    assert not any(MOVED_LIBC in w for w in warnings(out)), out[-1000:]


def test_builtin_order_is_the_tables_own():
    """The sorted order of a table's builtins is kept per table by id; an id
    reused by another table (the first one gone) must not hand the new
    table the old one's order. (Seen once in a full run: every builtin of
    19.8.1's stripped binary misnamed after another line's table.)"""
    sys.path.insert(0, str(ROOT))
    from v8dbg.v8 import builtins
    from v8dbg.v8.embedded import BuiltinTable
    old = BuiltinTable(("A", "B"), (0x2000, 0x1000), (0x3000, 0x2000), 0x1000, 0x2000)
    new = BuiltinTable(("C", "D"), (0x1000, 0x1800), (0x1800, 0x2000), 0x1000, 0x1000)
    # As if `old` had lived at `new`'s address: its entry under new's id.
    builtins._orders[id(new)] = (old, [0x1000, 0x2000], [1, 0])
    assert builtins.name_in_table(new, 0x1900) == "D"
    assert builtins.name_in_table(new, 0x1000) == "C"
