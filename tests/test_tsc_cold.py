"""A real program's cold path: TypeScript's checker, optimized, meets an input
that runs our code deep inside checkFunctionOrMethodDeclaration, which marks
the optimized code on the stack for deoptimization, checks one more file (so
the marked functions get other code while their old code still runs below)
and aborts (tests/fixtures/tsc_cold.js). That old code is found by its
header, which on node 20 is not 32-byte aligned: it read "code object not
found" there. Every frame must be where V8's own Error().stack puts it, on
every node line and front end, and `jscode` on the optimized
checkFunctionOrMethodDeclaration frame shows its code with positions from
typescript.js."""

from __future__ import annotations

import re

import pytest

from support import CACHE, FRONTENDS, VERSIONS, json_line, make_core, run, run_cli
from test_jscode import check_bytes
from test_stack import compare

TSC = CACHE / "npm" / "typescript-5.6.3"
FUNCTION = "checkFunctionOrMethodDeclaration"


def tsc_dir() -> str:
    if not (TSC / "lib" / "typescript.js").exists():
        raise RuntimeError("typescript-5.6.3 is missing: run scripts/setup.sh")
    return str(TSC)


def declarations() -> tuple[list[str], dict[str, list[int]]]:
    """typescript.js's lines, and the lines (1-based) where each named function starts."""
    lines = (TSC / "lib" / "typescript.js").read_text().splitlines()
    starts: dict[str, list[int]] = {}
    for i, t in enumerate(lines):
        # `function name(`, or a function V8 names by what it is assigned to.
        for m in re.finditer(r"\bfunction\*? (\w+)\(|\b(\w+) = (?:\(|\w+ =>|function|async)", t):
            starts.setdefault(m.group(1) or m.group(2), []).append(i + 1)
    return lines, starts


@pytest.fixture(scope="module")
def cores():
    return {v: make_core(v, "tsc_cold.js", (), {"V8DBG_TSC_DIR": tsc_dir()}) for v in VERSIONS}


_index: dict = {}


def frame_index(version: str, core) -> int:
    """The optimized checkFunctionOrMethodDeclaration frame's number (jsstack -a)."""
    if version not in _index:
        frames = json_line(run_cli(version, core / "core", ["jsstack --json"])[0])["frames"]
        _index[version] = next(f["index"] for f in frames if f["kind"] == "js"
                               and f["function"] == FUNCTION and not f["inlined"])
    return _index[version]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_every_frame_and_jscode(frontend, version, cores):
    d = cores[version]
    n = frame_index(version, d)
    out = run(frontend, version, d / "core", ["jsstack --json", f"jscode --frame {n} --json"])
    doc = json_line(out[0], "jsstack")
    compare(doc, (d / "expected-stack.txt").read_text(), top="die")
    js = [f for f in doc["frames"] if f["kind"] == "js"]
    assert not any(f.get("note") for f in js), [(f["function"], f["note"]) for f in js
                                                 if f.get("note")]
    frame = next(f for f in js if f["index"] == n and not f["inlined"])
    assert frame["function"] == FUNCTION and frame["tier"] in ("turbofan", "maglev"), frame

    code = json_line(out[1], "jscode")
    assert (code["function"], code["tier"]) == (FUNCTION, frame["tier"])
    check_bytes(version, d, code)
    assert code["pc_address"] == frame["pc"]
    insns = code["instructions"]
    k = next(i for i, x in enumerate(insns) if x["offset"] == code["pc"])
    # A return address (after a call), or the lazy-deopt exit V8 patched in for it.
    assert "call" in insns[k - 1]["text"] or "call" in insns[k]["text"], insns[k - 1:k + 1]
    lines, starts = declarations()
    own = starts[FUNCTION][0]
    indent = lines[own - 1][:len(lines[own - 1]) - len(lines[own - 1].lstrip())]
    end = next(i + 1 for i in range(own, len(lines)) if lines[i] == indent + "}")
    offsets = {x["offset"] for x in insns}
    assert code["positions"]
    for p in code["positions"]:
        assert p["script"] == frame["script"] and p["offset"] in offsets, p
        if not p["inlined"]:
            assert p["function"] == FUNCTION and own <= p["line"] <= end, p
        elif p["function"]:
            # An inlined function's position lies after its own declaration.
            assert any(s <= p["line"] for s in starts.get(p["function"], [])), p
    assert any(p["inlined"] for p in code["positions"])
