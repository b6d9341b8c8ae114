"""jsstack against V8's own Error().stack, frame by frame, on every node line,
every tier and every front end; jsframe; bad input."""

from __future__ import annotations

import json
import re

import pytest

from support import (FRONTENDS, VERSIONS, LiveNode, json_line, major, make_core, node_binary,
                     read_json, run)

TIERS = ["interpreted", "baseline", "maglev", "turbofan"]
LINE = re.compile(r"^\s*at (?:(?P<name>.*?) \((?P<loc>.*)\)|(?P<bare>.*))$")


def tier_flags(version: str, tier: str) -> tuple[str, ...] | None:
    flags = ("--allow-natives-syntax",)
    if tier == "maglev":
        if major(version) < 24:
            # 18/20 have no shipping Maglev; on 22.23.3 %OptimizeMaglevOnNextCall left
            # the fixture's function interpreted, so there is no Maglev frame to check.
            return None
        flags += ("--maglev",)
    if tier == "baseline":
        flags += ("--sparkplug",)
    return flags


def expected_frames(text: str) -> list[dict]:
    """Parse V8's stack text into (name, script, line, column) per frame."""
    out = []
    for line in text.splitlines()[1:]:
        m = LINE.match(line)
        assert m, line
        loc = m.group("loc") if m.group("loc") is not None else m.group("bare")
        name = m.group("name") or ""
        pos = re.match(r"^(.*):(\d+):(\d+)$", loc)
        if pos:
            out.append({"name": name, "script": pos.group(1), "line": int(pos.group(2)),
                        "column": int(pos.group(3))})
        else:
            out.append({"name": name, "script": None, "line": None, "column": None})
    return out


def short_name(v8name: str) -> str:
    """The function's own name inside V8's 'new X' / 'Type.fn [as alias]' text."""
    n = re.sub(r" \[as [^\]]*\]$", "", v8name)
    n = re.sub(r"^(new|async) ", "", n)
    if n.startswith("get ") or n.startswith("set "):
        return n
    n = n.split(".", 1)[1] if "." in n else n  # "Type.method": the method may hold dots
    return "" if n == "<anonymous>" else n  # V8's word for a nameless function called as a method


def compare(doc: dict, expected_text: str, top: str = "die") -> None:
    """Our JS frames from `top` down must be V8's frames, in order and position."""
    exp = expected_frames(expected_text)
    js = [f for f in doc["frames"] if f["kind"] == "js"]
    names = [f["function"] for f in js]
    assert top in names, f"no {top} frame in {names}"
    js = js[names.index(top):]
    assert len(js) == len(exp), (
        f"{len(js)} JS frames, V8 shows {len(exp)}:\n"
        + "\n".join(f"{f['function']} {f['script']}:{f['line']}:{f['column']}" for f in js))
    for i, (got, want) in enumerate(zip(js, exp)):
        where = f"frame {i}: got {got['function']} {got['script']}:{got['line']}:{got['column']} " \
                f"[{got['tier']}], V8: {want}"
        sn = short_name(want["name"])
        if sn:
            if got["script"] is None:  # builtin: V8 prints Type.name
                assert sn.endswith(got["function"]) and got["function"], where
            else:
                whole = re.sub(r"^(new|async) ", "", re.sub(r" \[as [^\]]*\]$", "", want["name"]))
                assert got["function"] in (sn, whole) or (sn.startswith(("get ", "set "))
                                                          and got["function"].endswith(sn[4:])), where
        assert got["script"] == want["script"], where
        if i == 0:
            continue  # the top frame moved on since V8's trace was taken at new Error()
        assert (got["line"], got["column"]) == (want["line"], want["column"]), where


CASES = [(v, t) for v in VERSIONS for t in TIERS if tier_flags(v, t) is not None]


@pytest.fixture(scope="module")
def cores():
    out = {}
    for v, t in CASES:
        out[(v, t)] = make_core(v, "stack.js", tier_flags(v, t), {"V8DBG_TIER": t})
    return out


# The cores the debuggers' own bt is checked on (tests/test_bt.py), TurboFan on
# every line and Maglev where node ships it, in this module's debugger runs.
BT_CASES = [(v, t) for v in VERSIONS for t in ("turbofan", "maglev") if tier_flags(v, t)]


_results: dict = {}


def results(frontend: str, version: str, cores) -> dict:
    """Run every command this module needs, for all tiers of a version, in one debugger each."""
    import test_bt  # (it imports this module)
    key = (frontend, version)
    if key not in _results:
        per = {}
        for (v, t), d in cores.items():
            if v != version:
                continue
            cmds = ["jsstack --json", "jsstack -v --json", "jsstack -a --json", "jsstack -n 3",
                    "jsframe 6", "jsframe 7", "jsframe 8", "jsframe 9", "jsframe 999"]
            bt = test_bt.bt_commands(frontend) if (v, t) in BT_CASES and frontend != "cli" else []
            outs = run(frontend, v, d / "core", cmds + bt)
            per[t] = dict(zip(cmds, outs))
            _bt[(frontend, v, t)] = outs[len(cmds):]
        _results[key] = per
    return _results[key]


_bt: dict = {}


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
@pytest.mark.parametrize("version,tier", BT_CASES)
def test_bt_on_core(debugger, version, tier, cores):
    """The debugger's own bt (tests/test_bt.py), in the run above."""
    import test_bt
    results(debugger, version, cores)
    test_bt.check_bt_on_core(debugger, tier, cores[(version, tier)], _bt[(debugger, version, tier)])


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version,tier", CASES)
def test_jsstack_matches_v8(frontend, version, tier, cores):
    out = results(frontend, version, cores)[tier]
    doc = json_line(out["jsstack --json"])
    compare(doc, (cores[(version, tier)] / "expected-stack.txt").read_text())
    js = [f for f in doc["frames"] if f["kind"] == "js"]
    tiers = {f["function"]: f["tier"] for f in js}
    inlined = {f["function"]: f["inlined"] for f in js}
    if tier == "interpreted":
        assert tiers["hot"] == tiers["inner"] == "interpreted"
    else:
        assert tiers["hot"] == tier, tiers
        if tier in ("maglev", "turbofan"):
            assert inlined["inner"] is True and inlined["hot"] is False
    assert all(f["kind"] != "internal" for f in doc["frames"])
    ctor = [f for f in js if f.get("constructor")]
    assert [f["function"] for f in ctor] == ["Widget"]  # V8: "at new Widget"
    natives = [f for f in doc["frames"] if f["kind"] == "native"]
    assert any(f["symbol"] and "uv_run" in f["symbol"] for f in natives)


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_jsstack_args_and_internal_frames(frontend, version, cores):
    d = cores[(version, "interpreted")]
    out = results(frontend, version, cores)["interpreted"]
    doc = json_line(out["jsstack -v --json"])
    js = [f for f in doc["frames"] if f["kind"] == "js"]
    die = next(f for f in js if f["function"] == "die")
    want = read_json(d, "expected-args.json")["die"]
    assert [a["type"] for a in die["args"]] == ["number", "string"]
    assert die["args"][0]["value"] == want[0]
    assert die["args"][1]["value"] == want[1]
    assert die["this"]["type"] == "undefined"  # strict mode call
    arrow = next(f for f in js if f["function"] == "arrow")
    assert len(arrow["args"]) == 1
    full = json_line(out["jsstack -a --json"])
    kinds = {f.get("frame_type") for f in full["frames"] if f["kind"] == "internal"}
    assert "EntryFrame" in kinds
    text = out["jsstack -n 3"].splitlines()
    assert len([l for l in text if l.startswith("#")]) == 3
    js_checked = 0
    for n in (6, 7, 8, 9):
        fr = next(f for f in full["frames"] if f["index"] == n)
        text = out[f"jsframe {n}"]
        head = text.splitlines()[0]
        assert head.startswith(f"#{n} ")
        if fr["kind"] == "js" and fr["script"]:
            name = ("new " if fr.get("constructor") else "") + (fr["function"] or "(anonymous)")
            assert f"{name} at {fr['script']}:{fr['line']}:{fr['column']}" in head
            assert any(l.lstrip().startswith(f"> {fr['line']:5} ") for l in text.splitlines())
            js_checked += 1
        elif fr["kind"] == "native":
            assert (fr["symbol"] or "??") in head
    assert js_checked >= 1
    assert out["jsframe 999"].splitlines()[-1].startswith(("v8dbg: jsframe: no frame 999",
                                                           "error: v8dbg: jsframe: no frame 999"))


def test_same_output_in_every_frontend(cores):
    v = "24.21.0"
    docs = [json_line(results(fe, v, cores)["interpreted"]["jsstack --json"]) for fe in FRONTENDS]
    assert docs[0]["thread"] == docs[1]["thread"] == docs[2]["thread"]
    assert docs[0]["thread"]["name"]
    texts = [d["frames"] for d in docs]
    strip = [[{k: f[k] for k in f if k != "symbol"} for f in t] for t in texts]
    assert strip[0] == strip[1] == strip[2]


@pytest.fixture(scope="module")
def api_cores():
    return {v: make_core(v, "apiframes.js") for v in VERSIONS}


_api_outputs: dict = {}


def api_outputs(frontend: str, version: str) -> list[str]:
    """The apiframes core's commands, in one run of each front end."""
    if (frontend, version) not in _api_outputs:
        _api_outputs[(frontend, version)] = run(
            frontend, version, make_core(version, "apiframes.js") / "core",
            ["jsstack -a --json", "jsstack --json", "jsstack -v", "jsstack -v --json"])
    return _api_outputs[(frontend, version)]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_api_constructor_frame_hidden(frontend, version, api_cores):
    """JS called back from a node C++ constructor reached by `new` on an API
    function (a BuiltinExitFrame of HandleApiConstruct), inside a script run by
    a plain call of another API function (vm's runInThisContext: HandleApiCall's
    BuiltinExitFrame on 18/20, an ApiCallbackExitFrame later): V8's trace
    leaves both API functions out, and so does jsstack."""
    d = api_cores[version]
    full, doc = api_outputs(frontend, version)[:2]
    compare(json_line(doc), (d / "expected-stack.txt").read_text())
    exits = [f for f in json_line(full)["frames"] if f.get("frame_type") == "BuiltinExitFrame"]
    assert exits and all(f["kind"] == "internal" for f in exits), exits


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_global_receiver_named(version: str, frontend: str) -> None:
    """`jsstack -v` names the global object as `this` (a script's top level run
    by vm.runInThisContext) instead of listing its members; JSON keeps it."""
    text, doc = api_outputs(frontend, version)[2:]
    fr = [f for f in json_line(doc)["frames"] if f.get("script") == "evalmachine.<anonymous>"]
    assert fr and fr[0]["this"]["global_proxy"] and fr[0]["this"]["constructor"] == "Object"
    lines = text.splitlines()
    at = [i for i, line in enumerate(lines) if "(anonymous) at evalmachine.<anonymous>:1:1" in line]
    assert at and lines[at[0] + 1] == "       this: <global>", lines[at[0]:at[0] + 3]
    assert not any("Object [global]" in line for line in lines)


@pytest.mark.parametrize("version", VERSIONS)
def test_api_function_data(version, api_cores):
    """An API function's SharedFunctionInfo leads to its FunctionTemplateInfo,
    a JS function's to its bytecode, on every line (two data slots from 12.9)."""
    from v8dbg.program import Program
    from v8dbg.inferior.corefile import CoreBackend
    d = api_cores[version]
    be = CoreBackend(str(d / "core"), str(node_binary(version)))
    prog = Program(be, str(node_binary(version)))
    h, f = prog.heap, prog.functions
    frames = prog.stack.frames_of(be.threads()[0])
    apis = {}
    for fr in frames:
        if fr.frame_type == "BuiltinExitFrame":
            fn = prog.mem.u64(fr.fp + prog.md.const("BuiltinExitFrameTargetOffset"))
            sfi = f.shared(fn)
            apis[f.debug_name(sfi)] = f.function_data(sfi)
    assert "MessageChannel" in apis, apis
    for name, data in apis.items():
        assert h.is_heap(data) and h.is_type(data, "FUNCTION_TEMPLATE_INFO_TYPE"), name
    die = next(fr for fr in frames if fr.kind == "js" and fr.function == "die")
    assert f.bytecode_array(die.sfi) is not None


@pytest.mark.parametrize("version", VERSIONS)
def test_wrong_binary_is_refused(version, cores):
    other = VERSIONS[(VERSIONS.index(version) + 1) % len(VERSIONS)]
    d = cores[(version, "interpreted")]
    import subprocess
    import sys
    from support import ROOT
    p = subprocess.run([sys.executable, "-m", "v8dbg", "jsstack", "--core", str(d / "core"),
                        "--binary", str(node_binary(other))], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode != 0
    assert p.stderr.startswith("v8dbg: ") and "build-id" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_gcore_core(version):
    """A core taken from a running process with gcore, read by every front end."""
    import shutil
    import subprocess
    with LiveNode(version, "stack.js", ("--allow-natives-syntax",)) as node:
        prefix = node.dir / "gcore"
        subprocess.run([shutil.which("gcore") or "gcore", "-o", str(prefix), str(node.pid)],
                       capture_output=True, timeout=300, check=True)
        core = node.dir / f"gcore.{node.pid}"
        assert node.alive()
        expected = (node.dir / "expected-stack.txt").read_text()
        for frontend in FRONTENDS:
            doc = json_line(run(frontend, version, core, ["jsstack --json"])[0])
            compare(doc, expected)


def test_unknown_version_warns():
    """A V8 newer than the table: a clear warning naming the versions known."""
    from v8dbg.v8 import layouts, metadata
    from v8dbg.inferior.elf import ElfFile
    md = metadata.load(ElfFile(str(node_binary(VERSIONS[-1]))))
    fake = metadata.Metadata((15, 1, 0, 0), dict(md.consts), dict(md.fields), md.type_names,
                             md.types, md.node, md.build_id, md.binary)
    layouts.apply(fake)
    assert fake.unsupported and "15.1" in fake.unsupported and "14.6" in fake.unsupported
    layouts.apply(md)
    assert md.unsupported is None
