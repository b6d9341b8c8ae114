"""The release sweep: the first, a middle and the last official release of
every line 18-26 (odd lines included), each checked against V8's own view in
the same run: jsstack through the standalone CLI against Error().stack on
every tier, and the value zoo, closures (of a module too) and sources against
util.inspect; the exception an uncaught throw or a pending one leaves; and the
heap census of one release of each V8 version no pinned release has.

V8 changes layouts within a line, so the pinned releases alone would not
show that every release works. The binaries are fetched from the npm
registry on first use into .cache/node (as scripts/setup.sh does for the
pinned ones), and each release's cores are small and cached like the rest.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from support import ROOT, SWEEP, fetch_node, json_line, make_core, read_json, run_cli
from test_census import CLASSES, core_dir, snapshot_counts
from test_exception import pending_core
from test_stack import TIERS, compare, tier_flags
import test_values
from test_values import (_check_closures, _check_outputs, _closure_cmds, _commands, _internals,
                         _sess, zoo)


_pool = ThreadPoolExecutor(max_workers=3)
_fetches: dict[str, Future] = {}


def _node(version: str) -> Path:
    """The release's binary; the first call starts fetching all of them, a few at a time."""
    if not _fetches:
        for v in SWEEP:
            _fetches[v] = _pool.submit(fetch_node, v)
    if version not in _fetches:
        _fetches[version] = _pool.submit(fetch_node, version)
    return _fetches[version].result()


@pytest.mark.parametrize("version", SWEEP)
def test_sweep_stack(version: str) -> None:
    """jsstack --json on every tier the release has matches V8's Error().stack."""
    _node(version)
    bad = []
    for tier in TIERS:
        flags = tier_flags(version, tier)
        if flags is None:
            continue
        d = make_core(version, "stack.js", flags, {"V8DBG_TIER": tier})
        out = run_cli(version, d / "core", ["jsstack --json"])[0]
        try:
            # Every release is in the table: no warning of an unknown version.
            notes = [line for line in out.splitlines() if line.startswith("v8dbg")]
            assert not notes, notes
            doc = json_line(out)
            compare(doc, (d / "expected-stack.txt").read_text())
            js = {f["function"]: f for f in doc["frames"] if f["kind"] == "js"}
            want = "interpreted" if tier == "interpreted" else tier
            assert js["hot"]["tier"] == want, (tier, js["hot"])
            if tier in ("maglev", "turbofan"):
                assert js["inner"]["inlined"] is True, js["inner"]
        except (AssertionError, KeyError) as e:
            bad.append(f"{tier}: {str(e)[:800]}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("version", SWEEP)
def test_sweep_thread_state(version: str) -> None:
    """The table's thread-state offsets hold on every release as they are: the
    Isolate found from each Heap (IsolateHeap) holds its ThreadLocalTop at
    IsolateThreadLocalTop, whose isolate_ points back and whose c_entry_fp,
    js_entry_sp and handler_ are the exit frame, entry frame and handler of
    the stack (not the fallback search, which only guesses the first two)."""
    import sys
    sys.path.insert(0, str(ROOT))
    from v8dbg.program import Program
    from v8dbg.stack import segments
    from v8dbg.stack.frames import StackDecoder
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.v8 import pages
    node = str(_node(version))
    d = make_core(version, "stack.js", tier_flags(version, "interpreted"),
                  {"V8DBG_TIER": "interpreted"})
    backend = CoreBackend(str(d / "core"), node)
    prog = Program(backend, node)
    md, mem = prog.md, prog.mem
    heaps = sorted(pages.find_heaps(prog, pages.layout(prog)))
    assert heaps
    isolates = [heap - md.const("IsolateHeap") for heap in heaps]
    tops = [iso + md.const("IsolateThreadLocalTop") for iso in isolates]
    assert [mem.u64(t + md.const("TopIsolate")) for t in tops] == isolates, (
        f"V8 {md.version_text}: IsolateHeap/IsolateThreadLocalTop/TopIsolate do not hold")
    regs = backend.threads()[0].regs
    top = segments.top_for(prog, regs)
    assert top is not None and top.isolate in isolates
    frames = StackDecoder(prog).decode(regs)
    fps = [f.fp for f in frames]
    entries = [f.fp for f in frames if f.frame_type in ("EntryFrame", "ConstructEntryFrame")]
    assert entries and top.js_entry_sp == entries[-1], (top, entries)
    assert top.c_entry_fp in fps and len(top.exits) == len(entries), (top, entries)
    # handler_: the innermost try handler, a stack slot between sp and the outermost entry.
    assert regs.rsp <= top.handler < top.js_entry_sp, hex(top.handler)


def _without_performance(text: str) -> str:
    """`globalThis` as util.inspect shows it, less its `performance` entry.

    Node 18.0-18.15 give Performance a custom inspect method (it prints
    nodeTiming, computed by calling into node), which reading memory cannot
    run; every other entry of the global object is still compared.
    """
    out, skip = [], False
    for line in text.split("\n"):
        if line.startswith("  performance: "):
            skip = not line.rstrip().endswith(("},", "}"))
            continue
        if skip:
            skip = not line.startswith("  }")
            continue
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("version", SWEEP)
def test_sweep_values(version: str) -> None:
    """Every zoo value, the closures and the sources, as node showed them."""
    _node(version)
    d, truth, args = zoo(version)
    sess = _sess(version, d / "core")
    outs = [sess.run(c.split()[0], c.split()[1:])[0] for c in _commands(args)]
    g = truth["names"].index("global")
    want = truth["values"][g]
    if "nodeTiming: PerformanceNodeTiming" in want["inspect"]:
        truth = dict(truth, values=list(truth["values"]))
        truth["values"][g] = dict(want, inspect=_without_performance(want["inspect"]))
        outs[2 * g + 1] = _without_performance(outs[2 * g + 1])
    bad = _check_outputs(version, truth, outs)
    assert not bad, "\n".join(bad)
    st = json_line(sess.run("jsstack", ["--json", "-a"])[0])
    frame = [f["index"] for f in st["frames"] if f.get("function") == "zoo"][0]
    inner = _internals(version)
    cmds = _closure_cmds(truth, args, frame, inner)
    _check_closures(truth, inner, [sess.run(c.split()[0], c.split()[1:])[0] for c in cmds], False)
    big = _commands([args[truth["names"].index("bigclosure")]])[0].split()[-1]
    doc = json_line(sess.run("jsclosure", ["--json", big])[0])
    got = {v["name"]: v["value"].get("value") for v in doc["variables"]}
    assert all(got.get(f"v{i}") == i for i in range(80)), got
    test_values.test_module_closures(version)  # module, block and function scopes


@pytest.mark.parametrize("version", SWEEP)
def test_sweep_exception(version: str) -> None:
    """jsstack names the uncaught TypeError and Error subclass an abort left
    in the handle scope, and the exception V8 holds while it unwinds (a core
    gdb takes then), as the fixture wrote them."""
    _node(version)
    cores = [make_core(version, "throw.js", ("--abort-on-uncaught-exception",),
                       {"V8DBG_THROW": mode}) for mode in ("typeerror", "custom")]
    bad = []
    for d in cores + [pending_core(version)]:
        want = read_json(d, "expected.json")
        text, js = run_cli(version, d / "core", ["jsstack -n 1", "jsstack -n 1 --json"])
        exc = json_line(js).get("exception") or {}
        got = (exc.get("constructor"), exc.get("message"))
        line = f"exception: {want['thrown']['constructor']}: {want['thrown']['message']}"
        if got != (want["thrown"]["constructor"], want["thrown"]["message"]) or \
                text.splitlines()[1:2] != [line]:
            bad.append((want["mode"], got, text.splitlines()[:2]))
    assert not bad, bad


# One release of each V8 version that no pinned release has, and 24.0.0 (V8
# 13.6.233.8: FreeSpace sizes still in bytes, in words from 13.6.233.17): the
# heap census against V8's own heap snapshot, every page walked to its end
# and every root list found, and on young and not yet swept pages.
CENSUS_SWEEP = ["18.0.0", "19.0.0", "19.8.1", "21.7.3", "23.11.1", "24.0.0", "25.9.0"]


def _counts(doc: dict) -> Counter:
    c: Counter = Counter()
    for g in doc["groups"]:
        c[g["constructor"]] += g["count"]
    return c


@pytest.mark.parametrize("version", CENSUS_SWEEP)
def test_sweep_census(version: str) -> None:
    _node(version)
    d = core_dir(version)
    out, text = run_cli(version, d / "core", ["findjsobjects --json", "findjsobjects"])
    doc = json_line(out)
    assert (doc["damaged_pages"], doc["skipped_bytes"]) == (0, 0), doc["skipped_bytes"]
    # Every root list of the release placed (the compilation cache of 19.x),
    # no JS dispatch table looked for before 13.6 (23.x): nothing to note.
    assert not [ln for ln in text.splitlines() if ln.startswith(("note:", "warning:"))], text
    mine = _counts(doc)
    snap = snapshot_counts(version)
    assert {n: mine[n] for n in CLASSES} == {n: snap[("object", n)] for n in CLASSES}
    assert mine["Widget"] == 7777
    d = make_core(version, "census_young.js")
    young = _counts(json_line(run_cli(version, d / "core", ["findjsobjects --json"])[0]))
    assert (young["Widget"], young["Dropped"]) == (1500, 0), young
    d = make_core(version, "census_sweep.js", flags=("--expose-gc", "--no-concurrent-sweeping"))
    doc = json_line(run_cli(version, d / "core", ["findjsobjects --json"])[0])
    assert doc["unswept_pages"] > 0, doc["unswept_pages"]
    swept = _counts(doc)
    assert (swept["Kept"], swept["Dropped"]) == (200000, 1), swept
