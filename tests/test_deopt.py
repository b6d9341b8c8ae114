"""Optimized frames read from V8's deoptimization data, against V8's own Error().stack
written in the same run, on every node line and front end.

Two fixtures, one core each per line, shared by every assertion:
- deopt_acorn.js: a real program from the npm registry (acorn, pinned, installed by
  scripts/setup.sh) parses until its hot code runs in TurboFan (and Maglev) with
  inlined callees; a cold path deep inside it invalidates that code, so the
  activations on the stack are marked for lazy deoptimization, then aborts.
- deopt_frames.js: a Maglev (TurboFan before node 24) loop calling a function, and
  two frames the deoptimizer rebuilt (one returning into the interpreter's
  EnterAtNextBytecode builtin).
Both write V8's stack from the very call that aborts, so every frame, the
innermost included, must be at V8's position.
"""

from __future__ import annotations

import pytest

from support import CACHE, FRONTENDS, VERSIONS, json_line, major, make_core, node_binary, run
from test_stack import compare, expected_frames

ACORN = "acorn-8.15.0"
OPTIMIZED = ("turbofan", "maglev")


def acorn_path() -> str:
    p = CACHE / "npm" / ACORN / "dist" / "acorn.js"
    if not p.exists():
        raise RuntimeError(f"{ACORN} is missing: run scripts/setup.sh")
    return str(p)


def frames_flags(version: str) -> tuple[tuple[str, ...], dict]:
    maglev = major(version) >= 24
    flags = ("--allow-natives-syntax",) + (("--maglev",) if maglev else ())
    return flags, {"V8DBG_MAGLEV": "1" if maglev else "0"}


@pytest.fixture(scope="module")
def cores():
    out = {}
    for v in VERSIONS:
        out[(v, "acorn")] = make_core(v, "deopt_acorn.js", (), {"V8DBG_ACORN": acorn_path()})
        flags, env = frames_flags(v)
        out[(v, "frames")] = make_core(v, "deopt_frames.js", flags, env)
    return out


def decoded(version: str, d) -> list:
    """The frames as the library decodes them (for facts the JSON does not carry)."""
    key = (version, str(d))
    if key not in _decoded:
        from v8dbg.inferior.corefile import CoreBackend
        from v8dbg.stack.frames import StackDecoder
        from v8dbg.program import Program
        binary = str(node_binary(version))
        prog = Program(CoreBackend(str(d / "core"), binary), binary)
        frames = StackDecoder(prog).decode(prog.backend.threads()[0].regs)
        _decoded[key] = (prog, frames)
    return _decoded[key]


_decoded: dict = {}
_results: dict = {}


def results(frontend: str, version: str, cores) -> dict:
    """Every command this module needs for one line, one debugger run per core."""
    key = (frontend, version)
    if key not in _results:
        per = {}
        for kind in ("acorn", "frames"):
            d = cores[(version, kind)]
            _prog, frames = decoded(version, d)
            js = [f for f in frames if f.kind == "js"]
            picks = []
            if kind == "frames":
                picks = [next(f.index for f in js if f.function == "loop")]
            else:
                picks = [next(f.index for f in js if f.inlined),
                         next(f.index for f in js if f.tier in OPTIMIZED and not f.inlined)]
            cmds = ["jsstack --json", "jsstack -v --json", "jsstack -v"] + \
                [f"jsframe {n}" for n in picks]
            per[kind] = (dict(zip(cmds, run(frontend, version, d / "core", cmds))), picks)
        _results[key] = per
    return _results[key]


def check_all(doc: dict, expected_text: str, top: str) -> list[dict]:
    """Every JS frame from `top` down is V8's, in name, script, line and column."""
    compare(doc, expected_text, top)
    js = [f for f in doc["frames"] if f["kind"] == "js"]
    js = js[[f["function"] for f in js].index(top):]
    first = expected_frames(expected_text)[0]
    assert (js[0]["line"], js[0]["column"]) == (first["line"], first["column"]), (js[0], first)
    return js


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_real_program_matches_v8(frontend, version, cores):
    d = cores[(version, "acorn")]
    out, picks = results(frontend, version, cores)["acorn"]
    js = check_all(json_line(out["jsstack --json"]), (d / "expected-stack.txt").read_text(), "crash")
    assert len(js) > 100
    acorn = [f for f in js if f["script"] and f["script"].endswith("/dist/acorn.js")]
    outer = [f for f in acorn if f["tier"] in OPTIMIZED and not f["inlined"]]
    inlined = [f for f in acorn if f["inlined"]]
    assert len(outer) >= 20 and len(inlined) >= 20, [(f["function"], f["tier"]) for f in acorn]
    assert all(f["tier"] in OPTIMIZED for f in inlined)
    if major(version) >= 24:
        assert any(f["tier"] == "maglev" for f in acorn)
    assert not any(f.get("note") for f in js), [f["note"] for f in js if f.get("note")]
    # -v: an optimized frame's receiver and arguments come from its parameter
    # slots; an inlined frame's are optimized out, never a made-up value.
    verbose = [f for f in json_line(out["jsstack -v --json"])["frames"] if f["kind"] == "js"]
    for f in verbose:
        if f["inlined"]:
            assert f["optimized_out"] and f["this"] == {"type": "optimized_out"} and f["args"] == []
        elif f["tier"] in OPTIMIZED and f["function"].startswith("pp"):
            assert f["this"].get("constructor") == "Parser", f
    text = out["jsstack -v"]
    assert "this: optimized out" in text and "args: optimized out" in text
    inl, opt = picks
    head = out[f"jsframe {inl}"].splitlines()
    fr = next(f for f in verbose if f["index"] == inl)
    assert head[0].startswith(f"#{inl} ") and "inlined" in head[0]
    assert f"{fr['function']} at {fr['script']}:{fr['line']}:{fr['column']}" in head[0]
    assert "this: optimized out" in head[1]
    fr = next(f for f in verbose if f["index"] == opt)
    head = out[f"jsframe {opt}"].splitlines()
    assert f"{fr['function']} at {fr['script']}:{fr['line']}:{fr['column']}" in head[0]
    assert head[1].lstrip().startswith("this: Parser {")
    assert any(l.lstrip().startswith(f"> {fr['line']:5} ") for l in head)


@pytest.mark.parametrize("version", VERSIONS)
def test_real_program_has_lazy_deopt_activations(version, cores):
    """The abort really happened with optimized code marked for lazy deoptimization:
    return addresses patched to the code's lazy-deopt exit, read back right above."""
    _prog, frames = decoded(version, cores[(version, "acorn")])
    lazy = [f for f in frames if f.kind == "js" and f.lazy_deopt and not f.inlined]
    assert len(lazy) >= 10
    assert all(f.tier in OPTIMIZED for f in lazy)


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_loop_and_rebuilt_frames_match_v8(frontend, version, cores):
    d = cores[(version, "frames")]
    out, (loop_index,) = results(frontend, version, cores)["frames"]
    js = check_all(json_line(out["jsstack --json"]), (d / "expected-stack.txt").read_text(), "die")
    tiers = {f["function"]: (f["tier"], f["inlined"]) for f in js}
    assert tiers["loop"] == ("maglev" if major(version) >= 24 else "turbofan", False), tiers
    assert tiers["mid"] == tiers["outer"] == ("interpreted", False), tiers
    verbose = {f["function"]: f for f in json_line(out["jsstack -v --json"])["frames"]
               if f["kind"] == "js"}
    loop = verbose["loop"]
    assert loop["this"]["type"] == "undefined"
    assert loop["args"][0] == {"type": "number", "value": 20}
    assert loop["args"][1]["type"] == "function" and loop["args"][1]["name"] == "outer"
    assert [a.get("value") for a in verbose["mid"]["args"]] == [7, "k3"]
    assert [a.get("value") for a in verbose["outer"]["args"]] == [7]
    text = out[f"jsframe {loop_index}"].splitlines()
    assert f"loop at {loop['script']}:{loop['line']}:{loop['column']}" in text[0]
    assert "arg0: 20" in out[f"jsframe {loop_index}"]


@pytest.mark.parametrize("version", VERSIONS)
def test_rebuilt_frame_returns_into_the_deoptimizer_builtin(version, cores):
    """`outer` really is a frame the deoptimizer built (node 18: through the
    BaselineOrInterpreter builtin, which v8dbg once showed as a builtin)."""
    prog, frames = decoded(version, cores[(version, "frames")])
    outer = next(f for f in frames if f.kind == "js" and f.function == "outer")
    want = "BaselineOrInterpreterEnterAtNextBytecode" if major(version) == 18 \
        else "InterpreterEnterAtNextBytecode"
    assert prog.builtin_at(outer.pc) == want
    assert outer.tier == "interpreted" and outer.bytecode_offset is not None


def test_fallback_to_source_positions_is_noted(cores):
    """Deoptimization data that cannot be read leaves the optimized code's own
    source positions, and every frame placed that way says so."""
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.stack.frames import StackDecoder
    from v8dbg.program import Program
    version = "24.21.0"
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(cores[(version, "acorn")] / "core"), binary), binary)
    prog.md.consts["DeoptimizationDataFirstEntryIndex"] = 1 << 30  # every deopt index out of range
    try:
        frames = StackDecoder(prog).decode(prog.backend.threads()[0].regs)
    finally:
        del prog.md.consts["DeoptimizationDataFirstEntryIndex"]
        from v8dbg.v8 import layouts
        layouts.apply(prog.md)
    outer = [f for f in frames if f.kind == "js" and f.tier in OPTIMIZED and not f.inlined]
    assert outer
    for f in outer:
        assert f.note and f.note.startswith("position from the optimized code's source positions"), f
        assert f.line is not None


@pytest.mark.parametrize("version", VERSIONS)
def test_real_program_with_a_stripped_binary(version, cores):
    """The acorn core (TurboFan, Maglev and baseline frames, inlining, lazy
    deopts) read with a stripped copy of the same node: every frame V8 made
    (builtins named and baseline positions found from V8's own tables, as
    stripped binaries have no symbols for them) equals what the unstripped
    binary's symbols give."""
    from support import run_cli, stripped_binary
    from test_remote import json_lines, v8_frames, warnings
    d = cores[(version, "acorn")]
    stripped = run_cli(version, d / "core", ["jsstack -a --json"], binary=stripped_binary(version))[0]
    whole = run_cli(version, d / "core", ["jsstack -a --json"])[0]
    assert "<builtin>" not in stripped
    assert [w for w in warnings(stripped) if "stripped" in w], stripped[-2000:]
    got, want = v8_frames(json_lines(stripped)), v8_frames(json_lines(whole))
    assert got == want
    frames = json_lines(whole)[0]["frames"]
    baseline = [f for f in frames if f.get("tier") == "baseline"]
    assert baseline and all(f["line"] for f in baseline), baseline
    assert any(f["kind"] == "internal" and f["symbol"] for f in frames)
