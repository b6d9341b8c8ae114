"""jscode: a TurboFan frame's machine code and an interpreted frame's bytecode,
with source positions, on every node line and every front end.

Ground truth: the instruction bytes are the bytes the core holds there; the
positions are lines of the fixture that belong to the function (or to what
was inlined into it); the frame's pc, as jsstack gives it, is marked, and
for a return address the instruction before it is a call.
"""

from __future__ import annotations

import re

import pytest

from support import (FIXTURES, FRONTENDS, VERSIONS, core_program, json_line, major, make_core,
                     run, run_cli)
from test_stack import tier_flags

SOURCE = (FIXTURES / "stack.js").read_text().splitlines()


def lines_of(name: str) -> set[int]:
    """The fixture's lines (1-based) of function `name`: one line, or up to a line '}'."""
    start = next(i for i, t in enumerate(SOURCE) if re.match(rf"^function {name}\(", t))
    end = start
    if SOURCE[start].count("{") != SOURCE[start].count("}"):
        end = next(i for i in range(start, len(SOURCE)) if SOURCE[i] == "}")
    return set(range(start + 1, end + 2))


@pytest.fixture(scope="module")
def cores():
    return {v: make_core(v, "stack.js", tier_flags(v, "turbofan"), {"V8DBG_TIER": "turbofan"})
            for v in VERSIONS}


_stacks: dict = {}


def stack(version, core) -> list[dict]:
    if version not in _stacks:
        _stacks[version] = json_line(run_cli(version, core / "core", ["jsstack -a --json"])[0],
                                     "jsstack")["frames"]
    return _stacks[version]


_codes: dict = {}


def codes(frontend, version, core) -> list[str]:
    """jscode of hot's TurboFan frame and of die's interpreted one, JSON and
    text, in one run of the front end."""
    if (frontend, version) not in _codes:
        frames = stack(version, core)
        hot, die = frame_of(frames, "hot")["index"], frame_of(frames, "die")["index"]
        _codes[(frontend, version)] = run(frontend, version, core / "core", [
            f"jscode --frame {hot} --json", f"jscode --frame {hot}",
            f"jscode --frame {die} --json", f"jscode --frame {die}"])
    return _codes[(frontend, version)]


def frame_of(frames: list[dict], name: str, inlined: bool = False) -> dict:
    return next(f for f in frames if f["kind"] == "js" and f["function"] == name
                and f["inlined"] == inlined)


def check_bytes(version, core, doc) -> None:
    """The instructions tile the code, and their bytes are the core's own."""
    _prog, backend = core_program(core / "core", version)
    start = int(doc["start"], 16)
    assert backend.read(start, doc["size"]).hex() == "".join(i["bytes"] for i in doc["instructions"])
    at = start
    for i in doc["instructions"]:
        assert int(i["address"], 16) == at, i
        assert i["offset"] == at - start
        at += len(i["bytes"]) // 2
    assert at == start + doc["size"]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_turbofan_frame(frontend, version, cores):
    core = cores[version]
    frames = stack(version, core)
    hot = frame_of(frames, "hot")
    assert hot["tier"] == "turbofan", hot
    out = codes(frontend, version, core)[:2]
    doc = json_line(out[0], "jscode")
    assert (doc["function"], doc["tier"]) == ("hot", "turbofan")
    assert doc["disassembler"].split()[0] == {"cli": "capstone", "gdb": "gdb",
                                              "lldb": "lldb"}[frontend]
    check_bytes(version, core, doc)
    # The pc is the return address of hot's call of fn: marked, after a call.
    assert doc["pc_address"] == hot["pc"]
    insns = doc["instructions"]
    k = next(n for n, i in enumerate(insns) if i["offset"] == doc["pc"])
    assert k > 0 and "call" in insns[k - 1]["text"], insns[k - 1]
    # Positions: lines of hot, and of inner inlined into it, in the fixture itself.
    starts = {i["offset"] for i in insns}
    script = hot["script"]  # the fixture's path where the core was made
    assert script.endswith("/tests/fixtures/stack.js")
    lines = {"hot": lines_of("hot"), "inner": lines_of("inner")}
    assert doc["positions"]
    for p in doc["positions"]:
        assert p["offset"] in starts, p
        assert p["script"] == script and p["function"] in lines, p
        assert p["line"] in lines[p["function"]], p
        assert p["inlined"] == (p["function"] == "inner"), p
    assert {p["function"] for p in doc["positions"]} == {"hot", "inner"}
    # The text: a position line before the instructions it maps to, and the pc marked.
    text = out[1].splitlines()
    assert text[0].startswith(f"hot at {script}:") and text[0].endswith("[turbofan]")
    marked = [t for t in text if t.lstrip().startswith("=> ")]
    assert len(marked) == 1 and marked[0].split()[1] == hot["pc"], marked
    before = [t.strip() for t in text[:text.index(marked[0])] if t.startswith(f"  {script}:")]
    inner = frame_of(frames, "inner", inlined=True)
    assert before[-1].startswith(f"{script}:{inner['line']}:"), before[-1]
    assert f"{script}:{inner['line']}:" in "\n".join(text)


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_interpreted_frame(frontend, version, cores):
    core = cores[version]
    frames = stack(version, core)
    die = frame_of(frames, "die")
    assert die["tier"] == "interpreted", die
    out = codes(frontend, version, core)[2:]
    doc = json_line(out[0], "jscode")
    assert (doc["function"], doc["tier"], doc["disassembler"]) == ("die", "interpreted", None)
    check_bytes(version, core, doc)
    insns = doc["instructions"]
    at_pc = next(i for i in insns if i["offset"] == doc["pc"])
    names = [i["text"] for i in insns]
    if version.startswith("26."):
        # Node 26's binary holds no table of bytecode names (said in a note).
        assert set(names) == {None} and any("name table" in n for n in doc["notes"])
    else:
        assert None not in names and names[-1] == "Return", names
        assert at_pc["text"].startswith("Call"), at_pc  # process.abort()
    script = die["script"]
    lines = lines_of("die")
    assert doc["positions"]
    for p in doc["positions"]:
        assert p["script"] == script and p["function"] == "die" and p["line"] in lines, p
    assert any(p["line"] == die["line"] and p["column"] == die["column"]
               for p in doc["positions"])
    marked = [t for t in out[1].splitlines() if t.lstrip().startswith("=> ")]
    assert len(marked) == 1 and int(marked[0].split()[1]) == doc["pc"], marked


@pytest.mark.parametrize("version", VERSIONS[:1] + VERSIONS[-1:])
def test_bad_input(version, cores):
    core = cores[version] / "core"
    frames = stack(version, cores[version])
    native = next(f for f in frames if f["kind"] == "native")
    builtin = next(f for f in frames if f["kind"] == "js" and f["script"] is None)
    outs = run_cli(version, core, ["jscode", f"jscode --frame {native['index']}",
                                   f"jscode --frame {builtin['index']}", "jscode --frame 9999",
                                   "jscode 0x1234", "jscode --frame 1 --json 0x1234"])
    # Neither --frame nor ADDR is a usage error: its line, then jscode's usage.
    first, *usage = outs[0].splitlines()
    assert first.startswith("v8dbg: jscode") and usage and usage[0].startswith("usage:"), outs[0]
    for o in outs[1:-1]:
        assert len(o.splitlines()) == 1 and o.startswith("v8dbg: jscode"), o
    assert "error" in json_line(outs[-1])


@pytest.mark.parametrize("version", VERSIONS)
def test_function_address(version, cores):
    """ADDR: a JSFunction's current code -- hot's TurboFan code where V8 keeps it on
    the function (node 18-22); its bytecode, said so, where V8 keeps it in its
    dispatch table (node 24 on); an interpreted function's bytecode."""
    core = cores[version]
    frames = stack(version, core)
    hot, die = frame_of(frames, "hot"), frame_of(frames, "die")
    outs = run_cli(version, core / "core", [f"jscode --json {hot['function_address']}",
                                            f"jscode --json {die['function_address']}"])
    doc, doc_die = json_line(outs[0], "jscode"), json_line(outs[1], "jscode")
    assert doc["function"] == "hot" and doc["pc"] is None
    check_bytes(version, core, doc)
    if major(version) < 24:
        assert doc["tier"] == "turbofan" and doc["disassembler"].startswith("capstone")
        by_frame = json_line(run_cli(version, core / "core",
                                     [f"jscode --json --frame {hot['index']}"])[0], "jscode")
        assert doc["code"] == by_frame["code"] and doc["positions"] == by_frame["positions"]
    else:
        assert doc["tier"] == "bytecode" and any("dispatch table" in n for n in doc["notes"])
        assert {p["line"] for p in doc["positions"]} <= lines_of("hot")
    assert (doc_die["function"], doc_die["tier"]) == \
        ("die", "interpreted" if major(version) < 24 else "bytecode")
    check_bytes(version, core, doc_die)


@pytest.fixture(scope="module")
def baseline_cores():
    return {v: make_core(v, "stack.js", tier_flags(v, "baseline"), {"V8DBG_TIER": "baseline"})
            for v in VERSIONS}


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_baseline_frame(frontend, version, baseline_cores):
    """Sparkplug code: positions from its pc -> bytecode map and the bytecode's
    positions, each at an instruction start, the pc after the call marked."""
    core = baseline_cores[version]
    frames = json_line(run_cli(version, core / "core", ["jsstack -a --json"])[0])["frames"]
    hot = frame_of(frames, "hot")
    assert hot["tier"] == "baseline", hot
    doc = json_line(run(frontend, version, core / "core",
                        [f"jscode --frame {hot['index']} --json"])[0], "jscode")
    assert (doc["function"], doc["tier"], doc["pc_address"]) == ("hot", "baseline", hot["pc"])
    check_bytes(version, core, doc)
    insns = doc["instructions"]
    k = next(n for n, i in enumerate(insns) if i["offset"] == doc["pc"])
    assert "call" in insns[k - 1]["text"], insns[k - 1]
    starts = {i["offset"] for i in insns}
    assert doc["positions"]
    for p in doc["positions"]:
        assert p["offset"] in starts and p["function"] == "hot" and not p["inlined"], p
        assert p["line"] in lines_of("hot"), p
    # The position of the call the frame is in comes before the pc.
    before = [p for p in doc["positions"] if p["offset"] < doc["pc"]]
    assert (before[-1]["line"], before[-1]["column"]) == (hot["line"], hot["column"])


def test_objdump_fallback(cores):
    """Without capstone, objdump: the same instruction boundaries as capstone."""
    from v8dbg.inferior import disasm
    version = VERSIONS[-1]
    core = cores[version]
    hot = frame_of(stack(version, core), "hot")
    doc = json_line(run_cli(version, core / "core", [f"jscode --json --frame {hot['index']}"])[0],
                    "jscode")
    data = bytes.fromhex("".join(i["bytes"] for i in doc["instructions"]))
    start = int(doc["start"], 16)
    got = disasm._objdump(start, data)
    assert got.tool == "objdump"
    assert [(i.address, i.size) for i in got.instructions] == \
        [(int(i["address"], 16), len(i["bytes"]) // 2) for i in doc["instructions"]]


PROBE = """
function probe(a, b) {
  const o = { x: a, y: [b, 2, 3] }; let s = 0;
  for (let i = 0; i < 300; i++) { s += o.y[i % 3] * i; if (s > 1e9) throw new Error('big'); }
  try { s = JSON.parse(String(s)); } catch (e) { s = -1; }
  const f = (v) => v + a; class K { m() { return this; } }
  return typeof a === 'string' ? `${a}${s}` : f(s) + new K().m() + (b ?? 1) + 100000;
}
probe(1, 2);
"""
PRINTED = re.compile(r"@\s+(\d+) : ((?:[0-9a-f]{2} )+)\s*([A-Za-z0-9.]+)")


@pytest.mark.parametrize("version", VERSIONS)
def test_bytecode_names_are_v8s(version, tmp_path):
    """The bytecode names and boundaries v8dbg reads from the binary are those
    V8 itself prints (`node --print-bytecode`), prefixed forms included."""
    import subprocess
    from v8dbg.inferior.elf import ElfFile
    from v8dbg.v8 import baseline, bytecodes
    from support import node_binary
    script = tmp_path / "probe.js"
    script.write_text(PROBE)
    out = subprocess.run([str(node_binary(version)), "--print-bytecode",
                          "--print-bytecode-filter=probe", str(script)],
                         capture_output=True, text=True, timeout=60).stdout
    printed = [(int(m.group(1)), bytes.fromhex(m.group(2)), m.group(3))
               for m in PRINTED.finditer(out)]
    assert len(printed) > 80 and any(n.endswith(".Wide") for _, _, n in printed)
    binary = ElfFile(str(node_binary(version)))
    sizes = baseline.read_sizes(binary)
    names = bytecodes.read_names(binary, len(sizes[0]))
    code = b"".join(b for _, b, _ in printed)
    walked = list(bytecodes.iter_bytecodes(code, sizes))
    assert [(o, n) for o, n, _op, _s in walked] == [(o, len(b)) for o, b, _ in printed]
    if major(version) >= 26:
        assert names is None  # node 26 keeps no table of bytecode names
        return
    suffix = {0: "", 1: ".Wide", 2: ".ExtraWide"}
    assert [names[op] + suffix[s] for _o, _n, op, s in walked] == [n for _, _, n in printed]
