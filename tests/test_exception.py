"""jsstack shows what was thrown: the uncaught exception of a core from
--abort-on-uncaught-exception, against what node said in the same run (the
error the fixture caught just before, and V8's own "Uncaught ..." line), on
every node line and front end; a process.abort() core shows none.

One fixture, one core per mode and line: a TypeError from reading a property
of undefined, a custom Error subclass thrown by a `throw` statement, a
SyntaxError from a real program (acorn, from the npm registry), an async
function's TypeError that nothing awaits (node throws the unhandled rejection
and aborts in its own handler), a TypeError thrown 250 frames down (the
message then lies blocks back among the handles V8 made after it), and
process.abort(). Each first throws and catches another error, which must
never be the one shown. And a core gdb takes while V8 unwinds with an
exception it has stored (at Isolate::UnwindAndFindHandler): the pending one.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from support import (CACHE, FIXTURES, FRONTENDS, GDB, VERSIONS, _key, built_once, json_line,
                     make_core, node_binary, read_json, run, validate_output, write_sparse)
from test_deopt import acorn_path

MODES = ["typeerror", "custom", "acorn", "rejection", "deep", "abort"]
COMMANDS = ["jsstack", "jsstack --json", "jsstack -v"]


@pytest.fixture(scope="module")
def cores():
    out = {}
    for v in VERSIONS:
        for mode in MODES:
            env = {"V8DBG_THROW": mode}
            if mode == "acorn":
                env["V8DBG_ACORN"] = acorn_path()
            flags = () if mode == "abort" else ("--abort-on-uncaught-exception",)
            out[(v, mode)] = make_core(v, "throw.js", flags, env)
        out[(v, "pending")] = pending_core(v)
    return out


def pending_core(version: str) -> Path:
    """A core of the fixture taken by gdb inside V8's handler search for an
    exception it has just stored (cached under .cache/cores like make_core's)."""
    src = (FIXTURES / "throw.js").read_text()

    def build(d: Path) -> None:
        env = dict(os.environ, V8DBG_OUT=str(d), V8DBG_THROW="pending")
        core = d / "core"
        p = subprocess.run([GDB, "-nx", "-q", "-batch", "-ex", "set pagination off",
                            "-ex", "handle SIGUSR2 stop nopass", "-ex", "run",
                            "-ex", "break v8::internal::Isolate::UnwindAndFindHandler",
                            "-ex", "continue", "-ex", f"gcore {core}", "-ex", "kill",
                            "--args", str(node_binary(version)), str(FIXTURES / "throw.js")],
                           cwd=d, env=env, capture_output=True, text=True, timeout=300)
        if not core.exists():
            raise RuntimeError(f"node {version}: gdb took no core:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        write_sparse(core, core.read_bytes())  # gdb writes every zero page out

    return built_once(CACHE / "cores" / version / f"throw-pending-{_key(src, GDB)}", build)


_results: dict = {}


def results(frontend: str, version: str, mode: str, cores) -> dict[str, str]:
    key = (frontend, version, mode)
    if key not in _results:
        d = cores[(version, mode)]
        _results[key] = dict(zip(COMMANDS, run(frontend, version, d / "core", COMMANDS)))
    return _results[key]


def v8_uncaught(d) -> str:
    """The text after "Uncaught " that V8 printed before it aborted."""
    m = re.search(r"^Uncaught (.*)$", (d / "output.txt").read_text(errors="replace"), re.M)
    assert m, (d / "output.txt").read_text(errors="replace")[-2000:]
    return m.group(1)


def v8_from(d) -> str:
    """The frames V8 listed after "FROM" as it aborted on an uncaught exception."""
    said = (d / "output.txt").read_text(errors="replace")
    assert "\nFROM\n" in said, said[-2000:]
    return said.split("\nFROM\n", 1)[1]


def v8_locations(stack: str) -> list[str]:
    """`script:line:column` of each frame of a stack V8 formatted; `<builtin>`
    for a frame it places `(<anonymous>)`."""
    out = []
    for line in stack.splitlines()[1:]:
        m = re.match(r"\s+at (?:.* \((.*)\)|(.*))$", line)
        if m:
            where = m.group(1) or m.group(2)
            out.append("<builtin>" if where == "<anonymous>" else where)
    return out


def captured_locations(verbose: list[str]) -> list[str]:
    """The place of each captured frame jsstack -v lists under `exception:`."""
    out = []
    for line in verbose[2:]:
        if not line.startswith("    at "):
            break
        m = re.search(r" \(([^()]*)\)$", line)
        out.append(m.group(1) if m else "")
    return out


# lldb opens each of these cores in 10 to 17 s on node 18 to 24 (see
# docs/testing.md), about a third of this module's time: there it reads two
# modes (the nearest exception and the one 250 frames down), and every mode
# on node 26, which it opens in about a second. gdb and the CLI read all.
LLDB_MODES = ("typeerror", "deep")
CASES = [(m, v, fe) for m in ["typeerror", "custom", "acorn", "rejection", "deep"]
         for v in VERSIONS for fe in FRONTENDS
         if fe != "lldb" or m in LLDB_MODES or v == VERSIONS[-1]]


@pytest.mark.parametrize("mode,version,frontend", CASES)
def test_uncaught_exception_shown(mode, version, frontend, cores):
    d = cores[(version, mode)]
    want = read_json(d, "expected.json")["thrown"]
    if mode == "rejection":
        # node prints the error of an unhandled rejection itself.
        said = (d / "output.txt").read_text(errors="replace")
        assert f"\n{want['constructor']}: {want['message']}\n" in said, said[-2000:]
    else:
        uncaught = v8_uncaught(d)
        # V8 names the error by its `name` (Error for the subclass), then its message.
        assert uncaught.endswith(": " + want["message"]), (uncaught, want)
    out = results(frontend, version, mode, cores)
    doc = json_line(out["jsstack --json"])
    validate_output(doc, "jsstack")
    exc = doc.get("exception")
    assert exc is not None, out["jsstack"][:2000]
    assert exc["type"] == "error", exc
    assert exc["constructor"] == want["constructor"] and exc["message"] == want["message"], exc
    # The text names it on the line after the thread's.
    line = f"exception: {want['constructor']}: {want['message']}"
    assert out["jsstack"].splitlines()[1] == line, out["jsstack"][:2000]
    # -v: the frames V8 captured for the error, innermost first, from the
    # function that threw.
    verbose = out["jsstack -v"].splitlines()
    assert verbose[1] == line
    # (From the stack text where it was formatted -- node prints an unhandled
    # rejection's -- else the function of each frame V8 captured.)
    captured = [l.strip()[3:].split(" (")[0] for l in verbose[2:] if l.startswith("    at ")]
    js = [f["function"] for f in doc["frames"] if f["kind"] == "js"]
    thrower = {"typeerror": "leaf", "custom": "parse", "acorn": "pp$4.raise", "rejection": "load",
               "deep": "descend"}[mode]
    assert captured and captured[0] == thrower, captured
    if mode != "rejection":  # the rest throw on this stack
        assert js[0] == thrower, js
    if mode == "custom":
        assert {"key": "offset", "value": {"type": "number", "value": 7}} in exc["properties"]
    if mode != "rejection":  # (node formatted that one's stack itself)
        # Where each captured frame is, as V8 says: the error was made where
        # the caught one was (its stack's first frame), and was thrown from the
        # callers V8 listed when it aborted ("FROM"), at most stackTraceLimit.
        made = v8_locations(read_json(d, "expected.json")["stack"])[0]
        callers = re.findall(r"\(([^()]*:\d+:\d+)\)", v8_from(d))
        want_at = [made] + callers[1:10]
        assert captured_locations(verbose) == want_at, (verbose, want_at)
        assert [p["line"] for p in exc["frame_positions"]] == \
            [int(w.split(":")[-2]) for w in want_at], exc["frame_positions"]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_pending_exception_shown(version, frontend, cores):
    d = cores[(version, "pending")]
    want = read_json(d, "expected.json")["thrown"]
    out = results(frontend, version, "pending", cores)
    doc = json_line(out["jsstack --json"])
    validate_output(doc, "jsstack")
    exc = doc.get("exception")
    assert exc is not None, out["jsstack"][:2000]
    assert exc["constructor"] == want["constructor"] and exc["message"] == want["message"], exc
    assert {"key": "offset", "value": {"type": "number", "value": 3}} in exc["properties"]
    assert out["jsstack"].splitlines()[1] == f"exception: {want['constructor']}: {want['message']}"
    assert "UnwindAndFindHandler" in out["jsstack"].splitlines()[2]
    # -v: each frame where V8 says its twin, made at the same call site, was
    # (a builtin's, `Array.map (<anonymous>)` to V8, is `<builtin>` here).
    want_at = v8_locations(read_json(d, "expected.json")["stack"])
    assert [w for w in want_at if w == "<builtin>"], want_at
    assert captured_locations(out["jsstack -v"].splitlines()) == want_at, \
        (out["jsstack -v"][:3000], want_at)


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_abort_shows_no_exception(version, frontend, cores):
    d = cores[(version, "abort")]
    assert "Uncaught" not in (d / "output.txt").read_text(errors="replace")
    out = results(frontend, version, "abort", cores)
    doc = json_line(out["jsstack --json"])
    validate_output(doc, "jsstack")
    assert "exception" not in doc, doc["exception"]
    assert any(f["kind"] == "js" and f["function"] == "run" for f in doc["frames"])
    assert not any(l.startswith("exception:") for l in out["jsstack"].splitlines())
