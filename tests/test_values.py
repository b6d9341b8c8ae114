"""jsprint and friends against node's own view of a zoo of values, on every
node line and front end; decoders on hand-built memory for the corner cases a
fixture cannot force."""

from __future__ import annotations

import inspect
import json
import re
import struct
import sys
import time
from functools import lru_cache
from pathlib import Path

import pytest

from support import (FRONTENDS, ROOT, VERSIONS, LiveNode, debugger_run_source, json_line,
                     make_core, node_binary, read_json, run, run_cli, run_gdb, run_lldb)

# Values whose text rendering must equal node's util.inspect exactly.
TEXT_EXCEPTIONS = {
    "proxy",  # util shows the target; we show target and handler
    "weakmap", "weakset",  # util cannot see the entries; we can
    "arraybuffer", "dataview",  # util shows [byteLength] / [buffer] slots
    "rawerror",  # node never formatted it
}


def _sess(version: str, core: Path):
    sys.path.insert(0, str(ROOT))
    from v8dbg.commands import Session, load_all
    from v8dbg.inferior.corefile import CoreBackend
    load_all()
    binary = str(node_binary(version))
    be = CoreBackend(str(core), binary)
    return Session(lambda: be, binary)


@lru_cache(maxsize=None)
def zoo(version: str) -> tuple[Path, dict, list]:
    """(core dir, node's truth, the zoo function's argument summaries)."""
    d = make_core(version, "values.js")
    truth = read_json(d, "expected-values.json")
    sess = _sess(version, d / "core")
    text, ok = sess.run("jsstack", ["-v", "--json"])
    assert ok, text
    frames = json_line(text, "jsstack")["frames"]
    fr = [f for f in frames if f.get("function") == "zoo"]
    assert fr, "no zoo frame"
    args = fr[0]["args"]
    assert len(args) == len(truth["names"])
    return d, truth, args


def _addr(arg: dict) -> str:
    if "address" in arg:
        return arg["address"]
    # A Smi: its tagged form is the value in the upper 32 bits.
    return hex((arg["value"] & 0xFFFFFFFF) << 32)


def check_value(name: str, t: dict, v: dict) -> None:
    """Compare one decoded VALUE with what node said about the live value."""
    where = f"{name}: {json.dumps(v)[:400]}"
    ty = t["typeof"]
    if ty == "number":
        assert v["type"] == "number" and v["value"] == t["value"], where
    elif ty == "string":
        assert v["type"] == "string", where
        assert v["length"] == t["length"], where
        shown = v["value"]
        assert len(shown.encode("utf-16-le")) // 2 == min(t["length"], 100), where
        assert t["prefix"].startswith(shown) or shown.startswith(t["prefix"]), where
        assert v["truncated"] == (t["length"] > 100), where
    elif ty == "boolean":
        assert v == {"type": "boolean", "value": t["value"], **({"address": v["address"]}
                                                                 if "address" in v else {})}, where
    elif ty == "undefined":
        assert v["type"] == "undefined", where
    elif ty == "symbol":
        assert v["type"] == "symbol" and v["description"] == t["description"], where
    elif ty == "bigint":
        assert v["type"] == "bigint" and v["value"] == t["value"], where
    elif ty == "function":
        if name == "boundtwice":
            assert v["type"] == "bound_function" and v["name"] == t["fname"], where
            return
        if name == "bound":
            assert v["type"] == "bound_function", where
            assert v["target"]["type"] == "function" and v["target"]["name"] == "arrow", where
            assert [a.get("value") for a in v["args"]] == [1, "two"], where
            assert v["this"]["type"] == "null", where
            return
        assert v["type"] == "function" and v["name"] == t["fname"], where
        if "line" in t:
            assert v["script"].endswith("values.js"), where
            assert (v["line"], v["column"]) == (t["line"], t["column"]), where
        else:
            assert v["script"] is None, where
    elif t["inspect"] == "null" if "inspect" in t else False:
        assert v["type"] == "null", where
    else:
        _check_object(name, t, v, where)


def _check_object(name: str, t: dict, v: dict, where: str) -> None:
    if t.get("proxy"):
        assert v["type"] == "proxy" and v["target"]["type"] == "object", where
        return
    ctor = t.get("constructor")
    if ctor in ("WeakMap", "WeakSet"):
        assert v["type"] == ctor[4:].lower() and v["weak"] and v["size"] == 1, where
        return
    if "state" in t:
        assert v["type"] == "promise" and v["state"] == t["state"], where
        if t["state"] == "fulfilled":
            assert v["result"] == {"type": "number", "value": 5}, where
        if t["state"] == "rejected":
            assert v["result"]["type"] == "error" and v["result"]["message"] == "no", where
        return
    if "size" in t:
        assert v["type"] == ctor.lower() and v["size"] == t["size"], where
        n = len(v["entries"] if v["type"] == "map" else v["values"])
        assert n == min(t["size"], 100) and bool(v.get("truncated")) == (t["size"] > 100), where
        return
    if "time" in t:
        assert v["type"] == "date" and v["value"] == t["time"], where
        return
    if "source" in t and "flags" in t:
        assert v["type"] == "regexp", where
        assert (v["source"], v["flags"]) == (t["source"], t["flags"]), where
        return
    if "message" in t:
        assert v["type"] == "error" and v["message"] == t["message"], where
        assert v["constructor"] == ctor, where
        if name == "rawerror":
            assert v["stack"] is None and v["frames"][0] == "build", where
        else:
            assert v["stack"] and v["stack"].startswith(t["inspect"].split("\n")[0]), where
        keys = [p["key"] for p in v["properties"]]
        assert keys == t["stringKeys"] + t["symbolKeys"], where
        return
    if name.startswith("box"):
        assert v["type"] == "boxed" and v["constructor"] == ctor, where
        return
    if "byteLength" in t and "length" not in t and ctor == "ArrayBuffer":
        assert v["type"] == "arraybuffer" and v["byte_length"] == t["byteLength"], where
        assert v["bytes"] == t["bytes"][:2 * 100], where
        return
    if "byteLength" in t:
        assert v["type"] == "typedarray", where
        assert v["constructor"] == ctor, where
        if ctor != "DataView":
            assert v["length"] == t["length"], where
            if ctor != "Buffer":
                assert v["kind"] == ctor, where
        assert v["byte_offset"] == t["byteOffset"], where
        assert t["bytes"].startswith(v["bytes"][:64]) or v["bytes"].startswith(t["bytes"]), where
        size = {"Float64Array": 8, "BigInt64Array": 8, "BigUint64Array": 8, "Int32Array": 4,
                "Uint32Array": 4, "Float32Array": 4, "Int16Array": 2, "Uint16Array": 2}.get(ctor, 1)
        assert len(v["bytes"]) // 2 == min(t["byteLength"], 100 * size), where
        return
    if t["isArray"]:
        assert v["type"] == "array" and v["length"] == t["length"], where
        elems = v["elements"]
        assert len(elems) == min(t["length"], 100), where
        present = [i for i, e in enumerate(elems) if e["type"] != "hole"]
        assert present == [i for i in t["indexKeys"] if i < 100], where
        keys = [p["key"] for p in v.get("properties", [])]
        assert keys == t["stringKeys"] + t["symbolKeys"], where
        return
    assert v["type"] == "object", where
    assert v["constructor"] == ctor, where
    if name == "generator":
        assert (v["generator"], v["generator_function"]) == ("suspended", "genFn"), where
    keys = [p["key"] for p in v["properties"]]
    assert keys == t["stringKeys"] + t["symbolKeys"], where
    assert [e["index"] for e in v["elements"]] == t["indexKeys"][:100], where


def _commands(args: list) -> list[str]:
    cmds = []
    for a in args:
        cmds.append(f"jsprint --json {_addr(a)}")
        cmds.append(f"jsprint {_addr(a)}")
    return cmds


def _norm(text: str) -> str:
    """Node 24+ prints symbol keys without the brackets that 18-22 (and v8dbg) use."""
    return re.sub(r"\[(Symbol\([^)]*\))\]:", r"\1:", text)


def _check_outputs(version: str, truth: dict, outs: list[str]) -> list[str]:
    bad = []
    for i, (name, t) in enumerate(zip(truth["names"], truth["values"])):
        js_out, text_out = outs[2 * i], outs[2 * i + 1]
        try:
            v = json_line(js_out)
            assert "error" not in v, v
            check_value(name, t, v)
            # node 18 does not cut Maps at maxArrayLength; v8dbg always cuts at -N.
            quirk = name == "bigmap" and version.startswith("18.")
            if name not in TEXT_EXCEPTIONS and "inspect" in t and t["typeof"] != "string" \
                    and not quirk:
                text_out = "\n".join(l for l in text_out.splitlines()
                                     if not re.match(r"^(\[Inferior \d|Process \d+ detached)", l))
                got, want = _norm(text_out.strip()), _norm(t["inspect"])
                assert got == want, f"{name}: {text_out!r} != {t['inspect']!r}"
        except AssertionError as e:
            bad.append(str(e)[:600])
    return bad


@pytest.mark.parametrize("version", VERSIONS)
def test_zoo_inprocess(version: str) -> None:
    """Every zoo value through the command layer the standalone CLI uses."""
    d, truth, args = zoo(version)
    sess = _sess(version, d / "core")
    outs = []
    for c in _commands(args):
        text, _ok = sess.run(c.split()[0], c.split()[1:])
        outs.append(text)
    bad = _check_outputs(version, truth, outs)
    assert not bad, "\n".join(bad)


@lru_cache(maxsize=None)
def _debugger_outputs(version: str, frontend: str) -> tuple[str, ...]:
    """The zoo's commands, then the closure commands (errors last), in one
    gdb or lldb run: loading the core is most of a debugger's time."""
    d, truth, args = zoo(version)
    cmds = _closure_cmds(truth, args, _zoo_frame(version), _internals(version))
    return tuple(run(frontend, version, d / "core", _commands(args) + cmds))


@pytest.mark.parametrize("frontend", [f for f in FRONTENDS if f != "cli"])
@pytest.mark.parametrize("version", VERSIONS)
def test_zoo_debuggers(version: str, frontend: str) -> None:
    """Every zoo value through gdb and lldb, batched in one debugger run."""
    d, truth, args = zoo(version)
    outs = _debugger_outputs(version, frontend)[:len(_commands(args))]
    bad = _check_outputs(version, truth, list(outs))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("version", VERSIONS)
def test_cli_subprocess(version: str) -> None:
    """A few values through `python -m v8dbg` itself."""
    d, truth, args = zoo(version)
    names = truth["names"]
    pick = [names.index(n) for n in ("widget", "map", "closure")]
    outs = run_cli(version, d / "core", [f"jsprint {_addr(args[i])}" for i in pick] +
                   [f"jsprint --json {_addr(args[i])}" for i in pick])
    assert outs[0] == "Widget { id: 7, name: 'w7', tags: [ 'a', 'b' ] }"
    assert outs[1] == "Map(3) { 'k' => 1, { o: 1 } => 'objkey', 2 => [ 1 ] }"
    assert outs[2] == "[Function: counter]"
    assert json_line(outs[3])["constructor"] == "Widget"


def _zoo_frame(version: str) -> int:
    d, _truth, _args = zoo(version)
    st = json_line(_sess(version, d / "core").run("jsstack", ["--json", "-a"])[0], "jsstack")
    return [f["index"] for f in st["frames"] if f.get("function") == "zoo"][0]


@lru_cache(maxsize=None)
def _internals(version: str) -> dict[str, str]:
    """Addresses of V8-internal objects behind zoo values, read in-process:
    deepFn's context (from jsclosure) and the regexp's source string."""
    d, truth, args = zoo(version)
    sess = _sess(version, d / "core")
    deep = _addr(args[truth["names"].index("deepclosure")])
    text = sess.run("jsclosure", [deep])[0]
    ctx = re.search(r"^  context (0x[0-9a-f]+):", text, re.M)
    assert ctx, text
    prog = sess.program()
    rx = int(_addr(args[truth["names"].index("regexp")]), 16)
    src = prog.mem.u64(rx - 1 + prog.md.off("JSRegExp", "source"))
    return {"deep": deep, "context": ctx.group(1), "regexp": hex(rx), "source": hex(src)}


def _closure_cmds(truth: dict, args: list, frame: int, inner: dict[str, str]) -> list[str]:
    names = truth["names"]
    c = _addr(args[names.index("closure")])
    n = _addr(args[names.index("nested")])
    w = _addr(args[names.index("widget")])
    g = _addr(args[names.index("gadget")])
    cl = _addr(args[names.index("fnclass")])
    return [f"jsclosure --json {c}", f"jsclosure --json {n}", f"jssource {c}",
            f"jssource -n 1 {cl}", f"jsconstructor {w}", f"jsconstructor {g}",
            f"jssource --json {c}", "jsprint --json 0x11", f"jsframe --json {frame}",
            f"jsclosure {inner['deep']}", f"jsclosure -d 2 {inner['deep']}",
            f"jsframe -v {frame}", f"jsframe {frame}",
            f"jsprint {inner['context']}", f"jsprint --json {inner['context']}",
            f"findjsrefs {inner['context']}", f"findjsrefs --json {inner['context']}",
            f"findjsrefs --json {inner['source']}",
            f"jsclosure {w}", "jsprint 0x9"]


def _check_closures(truth: dict, inner: dict[str, str], outs: list[str], lldb: bool) -> None:
    c = json_line(outs[0])
    assert c["function"] == "counter"
    got = {v["name"]: v["value"] for v in c["variables"]}
    assert got["tally"] == {"type": "number", "value": 10}
    assert got["label"]["value"] == "count"
    assert got["unused"]["value"] == "kept?"
    # The enclosing function scopes come after, innermost first.
    names = [v["name"] for v in c["variables"]]
    assert names.index("tally") < names.index("makeCounter")
    n = json_line(outs[1])
    names = [v["name"] for v in n["variables"]]
    assert names.index("inner") < names.index("outer")
    src = {t["name"]: t for t in truth["values"]}["closure"]["source"]
    body = "\n".join(line[8:] for line in outs[2].splitlines()[1:])
    assert body == src, outs[2]
    assert outs[3].splitlines()[1].endswith("class Widget {")
    assert "more line" in outs[3]
    assert outs[4].strip().splitlines()[-1] == "Widget"
    assert outs[5].strip().splitlines()[-1] == "Gadget"
    assert json_line(outs[6])["source"] == src
    assert "error" in json_line(outs[7])
    fj = json_line(outs[8])
    assert fj["function"] == "zoo"
    names = [c["name"] for c in fj["closure"]]
    assert "ZOO" in names and "truth" in names
    _check_internals(truth, inner, outs[9:18])
    # Error lines; lldb's batch mode stops at the first failing command.
    assert "v8dbg: jsclosure:" in outs[18] and "not a JavaScript function" in outs[18]
    if not lldb:
        assert "v8dbg: jsprint: 0x9 is too low to be a V8 heap pointer" in outs[19]


def _one_line(text: str, start: str) -> str:
    """The value after `start` in a listing, its continuation lines joined."""
    lines = text.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith(start)]
    assert at, (start, text[:2000])
    out = [lines[at[0]][len(start):]]
    for line in lines[at[0] + 1:]:
        if re.match(r"^\s*(closure |context |this:|arg\d+:|#\d)", line) or not line.startswith(" "):
            break
        out.append(line.strip())
    return " ".join(out)


def _check_internals(truth: dict, inner: dict[str, str], outs: list[str]) -> None:
    """Closure variables as util.inspect shows them at each depth; V8's type
    names; function holders named; RegExp holders in the VALUE's words."""
    t = {v["name"]: v for v in truth["values"]}["deepclosure"]
    deep2, deep0 = t["closureInspect"], t["closureInspect0"]
    assert _one_line(outs[0], "    cfg: ") == deep0
    assert _one_line(outs[1], "    cfg: ") == deep2
    assert _one_line(outs[2], "       closure DEEP: ") == deep2  # jsframe -v: util's default depth
    assert _one_line(outs[3], "       closure DEEP: ") == deep0
    # A function's context, by V8's name for its type (not a number).
    assert outs[4].strip().splitlines()[-1] == f"<FunctionContext {inner['context']}>"
    assert json_line(outs[5]) == {"type": "other", "v8_type": "FUNCTION_CONTEXT_TYPE",
                                  "address": inner["context"]}
    # The context's holder is deepFn itself, named as util.inspect names it.
    assert f"{inner['deep']} function [Function: deepFn] context" in outs[6], outs[6]
    refs = json_line(outs[7])["refs"]
    assert {"holder": inner["deep"], "holder_type": "function", "constructor": "Function",
            "via": "context", "name": t["fname"]} in refs, refs
    refs = json_line(outs[8])["refs"]
    assert any(r["holder"] == inner["regexp"] and r["holder_type"] == "regexp"
               for r in refs), refs
    assert not any(r["holder_type"].startswith("js_") for r in refs), refs


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_closure_source_constructor(version: str, frontend: str) -> None:
    d, truth, args = zoo(version)
    inner = _internals(version)
    cmds = _closure_cmds(truth, args, _zoo_frame(version), inner)
    if frontend == "cli":
        sess = _sess(version, d / "core")
        outs = [sess.run(c.split()[0], c.split()[1:])[0] for c in cmds]
    else:
        outs = list(_debugger_outputs(version, frontend)[len(_commands(args)):])
        assert len(outs) == len(cmds)
    _check_closures(truth, inner, outs, frontend == "lldb")


@pytest.mark.parametrize("version", VERSIONS)
def test_many_captured_variables(version: str) -> None:
    """80 context locals: the names come from ScopeInfo's hash table."""
    d, truth, args = zoo(version)
    sess = _sess(version, d / "core")
    addr = _addr(args[truth["names"].index("bigclosure")])
    doc = json_line(sess.run("jsclosure", ["--json", addr])[0], "jsclosure")
    got = {v["name"]: v["value"].get("value") for v in doc["variables"]}
    assert all(got.get(f"v{i}") == i for i in range(80)), got


@pytest.mark.parametrize("version", VERSIONS)
def test_jsframe_closure(version: str) -> None:
    d, truth, args = zoo(version)
    sess = _sess(version, d / "core")
    st = json_line(sess.run("jsstack", ["--json", "-a"])[0], "jsstack")
    idx = [f["index"] for f in st["frames"] if f.get("function") == "zoo"][0]
    fj = json_line(sess.run("jsframe", ["--json", str(idx)])[0], "jsframe")
    names = [c["name"] for c in fj["closure"]]
    assert "ZOO" in names and "truth" in names
    text = sess.run("jsframe", ["-v", str(idx)])[0]
    assert "closure ZOO:" in text


ZOO_MARK = "@@ZOO-VALUE@@"


def _zoo_in_one_stop(debugger: str) -> str:
    """A debugger command line that prints `jsstack -v --json`, then, for each
    argument of its zoo frame, the output of _commands' two commands, each
    after ZOO_MARK: the values are read in the same stop of a running process
    as the stack that gave their addresses."""
    run = debugger_run_source(debugger)
    half = len(ZOO_MARK) // 2  # split, so that lldb's echo of the line does not hold it
    code = (run + "import json\n"
            "s = _run('jsstack -v --json')\n"
            "print(s.rstrip())\n"
            "d = json.loads(next((l for l in s.splitlines() if l.startswith('{')), '{}'))\n"
            "fr = [f for f in d.get('frames', []) if f.get('function') == 'zoo']\n"
            f"m = {ZOO_MARK[:half]!r} + {ZOO_MARK[half:]!r}\n"
            "for c in (_commands(fr[0]['args']) if fr else []):\n"
            "    print(m)\n"
            "    print(_run(c).rstrip())\n")
    # The debugger's Python builds the commands with this module's own functions.
    code = inspect.getsource(_addr) + inspect.getsource(_commands) + code
    return f"{'python' if debugger == 'gdb' else 'script'} exec({code!r})"


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
@pytest.mark.parametrize("version", VERSIONS)
def test_live_process(version: str, debugger: str) -> None:
    """Attach to a running node, print the zoo, detach: values right, process unharmed."""
    runner = run_gdb if debugger == "gdb" else run_lldb
    with LiveNode(version, "values.js") as node:
        truth = read_json(node.dir, "expected-values.json")
        # The process is running: a stop can land mid-transition (an OSR entry, a
        # prologue), so take a few samples until the zoo frame shows. Each
        # attach prints every value of the zoo frame it found, in that stop.
        outs: list[str] = []
        for _ in range(5):
            out = runner(version, [_zoo_in_one_stop(debugger)], pid=node.pid)[0]
            stack, *outs = out.split(ZOO_MARK)
            doc = json_line(stack)
            fr = [f for f in doc.get("frames", []) if f.get("function") == "zoo"]
            if fr:
                break
        assert fr, doc
        args = fr[0]["args"]
        assert len(args) == len(truth["names"])
        assert len(outs) == 2 * len(args), out[-3000:]
        outs = [o.strip("\n") for o in outs]
        bad = _check_outputs(version, truth, outs)
        assert not bad, "\n".join(bad)
        time.sleep(0.3)
        assert node.alive()
        t = node.cpu_time()
        time.sleep(0.5)
        assert node.cpu_time() > t


@pytest.mark.parametrize("version", VERSIONS)
def test_type_names_from_v8(version: str) -> None:
    """V8's own names of its instance types (its ToString(InstanceType), read
    from the binary) agree with every v8dbg_type_* symbol, name the ten
    context types the metadata leaves unnamed in the order layouts.py derives
    them for a stripped binary, and name every object of a real heap."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.heap import census
    from v8dbg.inferior.elf import ElfFile
    from v8dbg.v8 import layouts, metadata, typenames
    binary = ElfFile(str(node_binary(version)))
    names = typenames.read(binary, binary.symbols_matching(typenames.SYMBOL_PATTERN))
    raw = metadata._scan(binary)[0]
    symbols = {v: k.split("__")[-1] for k, v in sorted(raw.items())
               if k.startswith("v8dbg_type_")}
    by_number: dict[int, set[str]] = {}
    for k, v in raw.items():
        if k.startswith("v8dbg_type_"):
            by_number.setdefault(v, set()).add(k.split("__")[-1])
    assert len(symbols) > 150
    # One number may carry two class names (DependentCode is a WeakArrayList).
    wrong = {n: (by_number[n], names.get(n)) for n in symbols if names.get(n) not in by_number[n]}
    assert not wrong, wrong
    assert len(names) > len(symbols) + 40
    md = metadata.load(binary)
    first, last = md.consts["FirstContextType"], md.consts["LastContextType"]
    assert [names[t] for t in range(first, last + 1)] == [
        f"{k}_CONTEXT_TYPE" for k in ("AWAIT", "BLOCK", "CATCH", "DEBUG_EVALUATE", "EVAL",
                                      "FUNCTION", "MODULE", "NATIVE", "SCRIPT", "WITH")]
    for name, (anchor, delta) in layouts._DERIVED_TYPES.items():
        base = md.types.get(anchor, md.consts.get(anchor))
        if base is not None and name in names.values():
            assert names.get(base + delta) == name, (name, base + delta, names.get(base + delta))
    # Every object on a real heap has a name.
    d, _truth, _args = zoo(version)
    prog = _sess(version, d / "core").program()
    seen = set()
    for p in census.scan(prog).pages:
        for _a, m, _s in census.object_starts(prog, p):
            seen.add(prog.heap.map_type(m))
    unnamed = sorted(t for t in seen if t not in md.type_names)
    assert not unnamed, unnamed


def test_text_rendering() -> None:
    """Numbers and strings as JavaScript writes them; layout rules of util.inspect."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.values.inspect import js_number, quote, render
    cases = {1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-7", 1e-6: "0.000001",
             123.456: "123.456", -2.0: "-2", 5e-324: "5e-324", 2.0 ** 60: "1152921504606847000"}
    for x, want in cases.items():
        assert js_number(x) == want, x
    assert quote("it's") == '"it\'s"' and quote("a'b\"c") == "`a'b\"c`" and quote("\n") == "'\\n'"
    n = {"type": "number", "value": 1}
    nested = {"type": "object", "constructor": "Object", "elements": [], "properties": [
        {"key": "a", "value": {"type": "object", "constructor": "Object", "elements": [],
                               "properties": [{"key": "b", "value": n}]}}]}
    assert render(nested) == "{ a: { b: 1 } }"
    arr = {"type": "array", "length": 3, "elements": [n, {"type": "hole"}, n],
           "properties": [{"key": "x y", "value": n}]}
    assert render(arr) == "[ 1, <1 empty item>, 1, 'x y': 1 ]"


# -- hand-built memory ------------------------------------------------------

class FakeBackend:
    """Sparse memory made of a few byte blocks; everything else unreadable."""

    def __init__(self) -> None:
        self.blocks: dict[int, bytearray] = {}

    def add(self, addr: int, data: bytes | bytearray) -> None:
        self.blocks[addr] = bytearray(data)

    def read(self, addr: int, size: int) -> bytes:
        for start, data in self.blocks.items():
            if start <= addr and addr + size <= start + len(data):
                return bytes(data[addr - start: addr - start + size])
        from v8dbg.errors import TargetMemoryError
        raise TargetMemoryError(addr, size)

    def threads(self):
        return []

    def selected_thread(self):
        return None

    def mappings(self):
        return []

    def executable(self):
        return None

    def pid(self):
        return None

    def generation(self) -> int:
        return 0


class Builder:
    """Lays out V8 objects for one node line's metadata in fake memory."""

    def __init__(self, version: str) -> None:
        sys.path.insert(0, str(ROOT))
        from v8dbg.program import Program
        from v8dbg.values.decoder import Values
        self.be = FakeBackend()
        self.prog = Program(self.be, str(node_binary(version)))
        self.md = self.prog.md
        self.next = 0x10000000
        self.mem = bytearray(1 << 24)
        self.base = self.next
        self.be.add(self.base, self.mem)
        self.mem = self.be.blocks[self.base]
        self.meta_map = self.map(self.md.types["MAP_TYPE"], meta=True)
        self.Values = Values

    def alloc(self, size: int) -> int:
        a = self.next
        self.next += (size + 15) & ~7
        return a

    def put(self, addr: int, fmt: str, *vals) -> None:
        struct.pack_into(fmt, self.mem, addr - self.base, *vals)

    def map(self, itype: int, meta: bool = False) -> int:
        a = self.alloc(80)
        self.put(a, "<Q", (getattr(self, "meta_map", a + 1)) if not meta else a + 1)
        self.put(a + self.md.off("Map", "instance_type"), "<H", itype)
        return a + 1

    def string(self, text: bytes) -> int:
        m = self.map(self.md.types.get("SEQ_ONE_BYTE_STRING_TYPE", 40))
        a = self.alloc(16 + len(text))
        self.put(a, "<Q", m)
        self.put(a + 12, "<i", len(text))
        self.mem[a - self.base + 16: a - self.base + 16 + len(text)] = text
        return a + 1

    def values(self):
        return self.Values(self.prog)


def _timed(fn):
    t = time.monotonic()
    out = fn()
    assert time.monotonic() - t < 10
    return out


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[-1]])
def test_deep_cons_chain(version: str) -> None:
    """A cons string 100000 deep ends in a clear error or a short value, fast."""
    b = Builder(version)
    leaf = b.string(b"ab")
    cons_map = b.map(b.md.types.get("CONS_ONE_BYTE_STRING_TYPE", 41))
    cur = leaf
    n = 100000
    for i in range(n):
        a = b.alloc(32)
        b.put(a, "<Q", cons_map)
        b.put(a + 12, "<i", 2 * (i + 2))
        b.put(a + 16, "<Q", cur)
        b.put(a + 24, "<Q", leaf)
        cur = a + 1
    vals = b.values()
    v = _timed(lambda: vals.decode(cur, 2, 50))
    assert v["type"] in ("string", "other")
    if v["type"] == "string":
        assert v["length"] == 2 * (n + 1) and len(v["value"]) <= 50
    else:
        assert "deep" in v.get("error", "") or "nested" in v.get("error", "")


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[-1]])
def test_absurd_string_length(version: str) -> None:
    b = Builder(version)
    s = b.string(b"hello")
    b.put(s - 1 + 12, "<i", 0x7FFFFFF0)
    v = _timed(lambda: b.values().decode(s))
    assert v["type"] == "other" and "length" in v["error"]


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[-1]])
def test_map_pointer_to_garbage(version: str) -> None:
    b = Builder(version)
    a = b.alloc(32)
    b.put(a, "<Q", 0xdead0001)  # unreadable map
    v = _timed(lambda: b.values().decode(a + 1))
    assert v["type"] == "other" and v["address"] == hex(a + 1)
    a2 = b.alloc(32)
    junk = b.alloc(32)
    b.put(junk, "<Q", 0x4141414141414141)
    b.put(a2, "<Q", junk + 1)  # a "map" whose own map is junk
    v = _timed(lambda: b.values().decode(a2 + 1))
    assert v["type"] == "other"


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[-1]])
def test_cyclic_prototype_and_huge_array(version: str) -> None:
    """A prototype chain that loops and an array claiming 2**30 elements."""
    b = Builder(version)
    md = b.md
    om = b.map(md.types["JS_OBJECT_TYPE"])
    obj = b.alloc(64)
    b.put(obj, "<Q", om)
    b.put(om - 1 + md.off("Map", "prototype"), "<Q", obj + 1)  # its own prototype
    b.put(om - 1 + md.off("Map", "instance_size_in_words"), "<B", 3)
    b.put(om - 1 + md.off("Map", "inobject_properties_start_or_constructor_function_index"), "<B", 3)
    empty = b.alloc(16)
    fa_map = b.map(md.types.get("FIXED_ARRAY_TYPE", 174))
    b.put(empty, "<QQ", fa_map, 0)
    b.put(obj + 8, "<QQ", empty + 1, empty + 1)
    v = _timed(lambda: b.values().decode(obj + 1))
    assert v["type"] in ("object", "other")
    am = b.map(md.types["JS_ARRAY_TYPE"])
    b.put(am - 1 + md.off("Map", "bit_field2"), "<B", 2 << 2)
    arr = b.alloc(32)
    big = b.alloc(16)
    b.put(big, "<QQ", fa_map, (1 << 30) << 32)
    b.put(arr, "<QQQQ", am, empty + 1, big + 1, (1 << 30) << 32)
    v = _timed(lambda: b.values().decode(arr + 1, 2, 10))
    assert v["type"] in ("array", "other")
    if v["type"] == "array":
        assert v["length"] == 1 << 30 and v.get("truncated")


@pytest.mark.parametrize("version", VERSIONS)
def test_module_closures(version: str) -> None:
    """jsclosure in an ES module: module, block and function scopes, innermost first."""
    d = make_core(version, "closures.mjs")
    want = read_json(d, "expected-closures.json")
    sess = _sess(version, d / "core")
    st = json_line(sess.run("jsstack", ["-v", "--json"])[0], "jsstack")
    die = [f for f in st["frames"] if f.get("function") == "die"][0]
    for name, arg in zip(("inc", "named"), die["args"]):
        doc = json_line(sess.run("jsclosure", ["--json", arg["address"]])[0], "jsclosure")
        assert doc["function"] == name
        got = [(v["name"], v["value"]) for v in doc["variables"]]
        names = [n for n, _ in got]
        for var, value in want[name]:
            assert var in names, (name, var, names)
            v = dict(got)[var]
            if value is not None:
                assert v.get("value") == value, (name, var, v)
        order = [names.index(var) for var, _ in want[name]]
        assert order == sorted(order), (name, names)
