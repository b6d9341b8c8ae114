"""findjsobjects against V8's own heap snapshot, on every line and front end.

Two fixtures write `v8.writeHeapSnapshot()` just before they abort:
census_mixed.js (a varied heap: classes, prototypes, collections, promises,
typed arrays, errors, node's own modules, literals, a few thousand objects
of several shapes, some dropped) and census_tsc.js (TypeScript's compiler
from the npm registry type-checking a project). The snapshot's `object`
nodes, counted by name, must equal findjsobjects' counts per constructor.

Left out of the comparison, and why:
- snapshot nodes of other types than `object` and `regexp`: strings,
  numbers, code, arrays (FixedArrays), hidden and native nodes are no JS
  objects; `closure` nodes (functions and bound functions) are what
  jsfunctions counts, not findjsobjects.
- `regexp` nodes are named by their source; their number is compared with
  findjsobjects' `RegExp` row.
- `object` nodes named `system / ...` (V8's contexts and other internals
  the snapshot files as objects), and the global object and global proxy,
  whose names the snapshot decorates with the embedder's context name
  (`global (global*)`, `Object [JSGlobalObject]`); findjsobjects says
  `global`.

Object literal boilerplates (the first copy of each object or array literal,
which an AllocationSite's `transition_info` edge points at) are counted on
both sides: V8's snapshot reaches them through that edge and names them
`Object` or `Array`, and so does findjsobjects (it once left them out; on
TypeScript's compile that was some 145 objects, about 60 `Array` and 80
`Object`, fewer than the snapshot's on every line). The test checks that
the snapshots here hold such boilerplates, so that they are compared.

Every name's count is exact, `Object` too. Proxies are no objects there: V8
names an `object` node only for a JSObject, and a JSProxy is a receiver but
no JSObject, so the snapshot files it as `system / JSProxy` (hidden or native
type). findjsobjects leaves proxies out of its rows likewise and counts them
apart; its `proxies` must equal the snapshot's `system / JSProxy` nodes.
(Node's CommonJS loader keeps two, `wrapperProxy` and
`CircularRequirePrototypeWarningProxy`, and node 18 a third, `processConfig`
(process.config): before proxies were left out, the census had that many
`Object`s more than the snapshot.)

Objects made from API templates are named as V8 names them: by their
map's constructor, an API function, as any instance (node's binding
objects: `process`, `ModuleWrap`, ...); the class name of a
FunctionTemplateInfo that is itself a map's constructor names its objects
too, but no object of node's heap has one on any supported line (V8 makes
such maps only for remote instances, FunctionTemplate::NewRemoteInstance).
An API object that is a prototype with no prototype of its own is no
instance and has no constructor to be named by: V8 names it `Object`, not by
its template's class name (census_mixed.js makes one of zlib's handle).

The same cores must give byte-identical findjsobjects --json (but for the
timing) in the CLI, gdb and lldb, with NumPy and without (V8DBG_NO_NUMPY=1).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import pytest

from heapsnapshot import transient
from support import (CACHE, FRONTENDS, VERSIONS, json_line, make_core, node_binary, read_json,
                     run, run_cli)

MIXED = "census_mixed.js"
TSC = "census_tsc.js"
TSC_DIR = CACHE / "npm" / "typescript-5.6.3"
_DECORATED = re.compile(r"\[JSGlobal|^global( |$)")


@lru_cache(maxsize=None)
def mixed_dir(version: str) -> Path:
    return make_core(version, MIXED)


@lru_cache(maxsize=None)
def tsc_dir(version: str) -> Path:
    if not (TSC_DIR / "lib" / "typescript.js").exists():
        pytest.skip("TypeScript is missing: run scripts/setup.sh")
    return make_core(version, TSC, env={"V8DBG_TSC_DIR": str(TSC_DIR)}, timeout=1200)


@lru_cache(maxsize=None)
def snapshot(d: Path, name: str) -> tuple[Counter, int, int]:
    """(count per object name, number of literal boilerplates among them, number
    of proxies) from a heap snapshot."""
    snap = json.loads((d / name).read_text())
    meta = snap["snapshot"]["meta"]
    nf, ef = meta["node_fields"], meta["edge_fields"]
    ntypes, etypes = meta["node_types"][0], meta["edge_types"][0]
    k, ke = len(nf), len(ef)
    ti, ni, eci = nf.index("type"), nf.index("name"), nf.index("edge_count")
    eti, eni, eto = ef.index("type"), ef.index("name_or_index"), ef.index("to_node")
    nodes, edges, strings = snap["nodes"], snap["edges"], snap["strings"]
    boiler = set()
    pos = 0
    for i in range(0, len(nodes), k):
        n = nodes[i + eci]
        if strings[nodes[i + ni]] == "system / AllocationSite":
            for j in range(pos, pos + n * ke, ke):
                to = edges[j + eto]
                if etypes[edges[j + eti]] == "internal" and \
                        strings[edges[j + eni]] == "transition_info" and \
                        ntypes[nodes[to + ti]] == "object":
                    boiler.add(to)
        pos += n * ke
    counts: Counter = Counter()
    proxies = 0
    for i in range(0, len(nodes), k):
        t = ntypes[nodes[i + ti]]
        if strings[nodes[i + ni]] == "system / JSProxy":
            proxies += 1
        elif t == "regexp":
            counts["RegExp"] += 1
        elif t == "object":
            name = strings[nodes[i + ni]]
            if not name.startswith("system /") and not _DECORATED.search(name):
                counts[name] += 1
    return counts, len(boiler), proxies


def census_counts(doc: dict) -> Counter:
    mine: Counter = Counter()
    for g in doc["groups"]:
        if g["constructor"] != "global":
            mine[g["constructor"]] += g["count"]
    return mine


def compare(doc: dict, snap: Counter, boilerplates: int, proxies: int,
            gone: Counter | None = None) -> None:
    """Every name's count equal to the snapshot's, less at most the objects
    only the call writing the snapshot held (GONE, `heapsnapshot.transient`):
    garbage by the time of the core, so not counted as reachable."""
    mine = census_counts(doc)
    gone = gone or Counter()
    assert boilerplates > 20, "the snapshot holds no literal boilerplates to compare"
    assert "left_out" not in doc
    assert doc["proxies"] == proxies, (doc["proxies"], proxies)
    assert doc["damaged_pages"] == 0 and doc["skipped_bytes"] == 0, doc
    wrong = {n: (mine[n], snap[n]) for n in set(mine) | set(snap)
             if not snap[n] - gone[n] <= mine[n] <= snap[n]}
    assert not wrong, f"findjsobjects vs snapshot, by name: {wrong}"


@contextmanager
def numpy_off(off: bool):
    old = os.environ.get("V8DBG_NO_NUMPY")
    if off:
        os.environ["V8DBG_NO_NUMPY"] = "1"
    try:
        yield
    finally:
        if off:
            if old is None:
                os.environ.pop("V8DBG_NO_NUMPY", None)
            else:
                os.environ["V8DBG_NO_NUMPY"] = old


@lru_cache(maxsize=None)
def program(version: str):
    """v8dbg's own API on the mixed core."""
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    return Program(CoreBackend(str(mixed_dir(version) / "core"), str(node_binary(version))),
                   str(node_binary(version)))


@lru_cache(maxsize=None)
def addresses(version: str) -> dict[str, str]:
    """Addresses the commands below are about, read from the core with v8dbg's own API."""
    d = mixed_dir(version)
    out = run_cli(version, d / "core", ["findjsobjects -p sliced --json"])[0]
    holder = json_line(out)["groups"][0]["representative"]
    doc = json_line(run_cli(version, d / "core", [f"jsprint --json -d 1 {holder}"])[0])
    props = {p["key"]: p["value"]["address"] for p in doc["properties"]}
    prog = program(version)
    md, mem = prog.md, prog.mem

    def fld(addr: str, cls: str, name: str) -> int:
        return mem.u64(int(addr, 16) - 1 + md.off(cls, name))

    args = fld(props["bound"], "JSBoundFunction", "bound_arguments")
    ctx = fld(props["counter"], "JSFunction", "context")
    tally_slot = mem.u64(ctx - 1 + md.off("FixedArray", "data") + 8 * 2)
    return {**props,
            "shared": hex(fld(props["counter"], "JSFunction", "shared")),
            "parent": hex(fld(props["sliced"], "SlicedString", "parent")),
            "first": hex(fld(props["cons"], "ConsString", "first")),
            "second": hex(fld(props["cons"], "ConsString", "second")),
            "target": hex(fld(props["bound"], "JSBoundFunction", "bound_target_function")),
            "bound_this": hex(fld(props["bound"], "JSBoundFunction", "bound_this")),
            "bound_arg": hex(mem.u64(args - 1 + md.off("FixedArray", "data"))),
            "tally_slot_type": md.type_names.get(prog.mem.u16(
                mem.u64(tally_slot - 1) - 1 + md.off("Map", "instance_type")), "?")
            if tally_slot & 1 else "smi"}


def batch(version: str) -> list[str]:
    a = addresses(version)
    return ["findjsobjects --json", "jsfunctions -n counter --json",
            f"jsclosure --json {a['shared']}", f"jsclosure --json {a['counter']}",
            f"jsprint --json {a['gadgetProto']}", f"jsconstructor --json {a['gadgetProto']}",
            f"findjsrefs --json {a['parent']}", f"findjsrefs --json {a['first']}",
            f"findjsrefs --json {a['second']}", f"findjsrefs --json {a['target']}",
            f"findjsrefs --json {a['bound_this']}", f"findjsrefs --json {a['bound_arg']}",
            "findjsobjects"]


@lru_cache(maxsize=None)
def outputs(frontend: str, version: str, no_numpy: bool = False) -> tuple[str, ...]:
    """The batch in one debugger run (or CLI processes) per front end; without
    NumPy only its census, the one output compared then."""
    cmds = ["findjsobjects --json"] if no_numpy else batch(version)
    with numpy_off(no_numpy):
        return tuple(run(frontend, version, mixed_dir(version) / "core", cmds))


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_counts_equal_snapshot(frontend: str, version: str) -> None:
    d = mixed_dir(version)
    snap, boilerplates, proxies = snapshot(d, read_json(d, "expected-mixed.json")["snapshot"])
    doc = json_line(outputs(frontend, version)[0])
    compare(doc, snap, boilerplates, proxies,
            transient(d / read_json(d, "expected-mixed.json")["snapshot"]))
    mine = census_counts(doc)
    assert doc["proxies"] >= 2
    # What the fixture made, as V8 names it.
    assert mine["Widget"] == 3000 + 1  # and Gadget.prototype, named by its parent's constructor
    assert mine["Gadget"] == 1200 and mine["OldStyle"] == 700 and mine["Dropped"] == 0
    assert mine["Ledger"] == 50 and mine["Tagged"] == 6
    kl = [g for g in doc["groups"] if g["properties"] == ["kappa", "lambda"]]
    # 333 made, and the literal's boilerplate, which V8's snapshot counts too.
    assert [(g["constructor"], g["count"]) for g in kl] == [("Object", 333 + 1)], kl
    for name in ("Map", "Set", "WeakMap", "Promise", "Error", "Math", "JSON"):
        assert mine[name] == snap[name] > 0, name
    text = outputs(frontend, version)[-1]
    assert "could not be walked" not in text


@pytest.mark.parametrize("version", VERSIONS)
def test_same_census_everywhere(version: str) -> None:
    """CLI, gdb and lldb, with NumPy and without, give the same JSON (but for the time)."""
    docs = {}
    for fe in FRONTENDS:
        for off in (False, True):
            doc = json_line(outputs(fe, version, off)[0])
            doc.pop("seconds")
            docs[(fe, off)] = json.dumps(doc, sort_keys=True)
    first = docs[("cli", False)]
    assert all(d == first for d in docs.values()), \
        [k for k, d in docs.items() if d != first]


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_functions_to_closure(frontend: str, version: str) -> None:
    """jsfunctions gives a closure per function; jsclosure takes it or the SharedFunctionInfo.

    `tally` is a mutable `let` number: from V8 14 (node 26) its context slot
    holds a ContextCell, which must read as its value.
    """
    a = addresses(version)
    outs = outputs(frontend, version)
    fn = json_line(outs[1])["functions"]
    assert [(f["shared"], f["closure"], f["closures"]) for f in fn] == \
        [(a["shared"], a["counter"], 1)]
    for out in outs[2:4]:
        doc = json_line(out)
        assert doc["function"] == "counter"
        assert doc["variables"][0]["name"] == "tally"
        assert doc["variables"][0]["value"] == {"type": "number", "value": 9}, doc
    if version.startswith("26."):
        assert a["tally_slot_type"] == "CONTEXT_CELL_TYPE"


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_inspect_names_prototypes(frontend: str, version: str) -> None:
    """jsprint and jsconstructor name Gadget.prototype as util.inspect does."""
    outs = outputs(frontend, version)
    expected = read_json(mixed_dir(version), "expected-mixed.json")
    assert expected["gadget_proto_inspect"] == "Widget {}"
    assert json_line(outs[4])["constructor"] == "Widget"
    assert json_line(outs[5])["constructor"] == "Widget"


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_refs_follow_snapshot_edges(frontend: str, version: str) -> None:
    """findjsrefs names each field by V8's own name for its edge: every name
    is an `internal` edge's name in V8's snapshot of the same heap (a bound
    argument through the function's `bindings` array and its slot `0`)."""
    import heapsnapshot
    a = addresses(version)
    outs = outputs(frontend, version)
    want = [(6, a["sliced"], "parent"), (7, a["cons"], "first"), (8, a["cons"], "second"),
            (9, a["bound"], "bound_function"), (10, a["bound"], "bound_this"),
            (11, a["bound"], "bindings[0]")]
    d = mixed_dir(version)
    snap = heapsnapshot.read(d / read_json(d, "expected-mixed.json")["snapshot"])
    internal = {snap.strings[int(x)] for x in
                snap.edge_name[snap.edge_type == snap.edge_types.index("internal")].tolist()}
    assert {"parent", "first", "second", "bound_function", "bound_this", "bindings",
            "0"} <= internal
    for i, holder, via in want:
        refs = json_line(outs[i])["refs"]
        assert any(r["holder"] == holder and r["via"] == via for r in refs), (via, refs)


@pytest.mark.parametrize("version", VERSIONS)
def test_api_template_names(version: str) -> None:
    """Objects made from API templates are named as V8 names them.

    The class name of every FunctionTemplateInfo on the heap reads at the
    offset layouts.py gives for the line: node's binding classes are there.
    An object whose map's constructor is such a template is named by its
    class name (node's heap has none: the loop checks whatever there is).
    zlib's native handle, made a prototype with no prototype, is `Object`
    though its map's constructor is the `Zlib` API function; its count, and
    every other name's, equals the snapshot's (test_counts_equal_snapshot).
    """
    from v8dbg.heap import census
    prog = program(version)
    c = census.scan(prog)
    h, sh, vals = prog.heap, prog.shapes, prog.values
    template = h.md.types["FUNCTION_TEMPLATE_INFO_TYPE"]
    names = set()
    for p in c.pages:
        for a, m, _ in census.object_starts(prog, p):
            if h.map_type(m) == template:
                names.add(sh.template_class_name(a))
    assert {"Zlib", "ContextifyScript", "ModuleWrap", "process"} <= names, sorted(map(str, names))
    for st in c.maps.values():
        ctor = vals.map_constructor(st.map)
        if st.addresses and h.is_heap(ctor) and h.instance_type(ctor) == template:
            assert sh.shape(st.map, st.addresses[0]).constructor == \
                sh.template_class_name(ctor)
    handle = int(addresses(version)["apiHandle"], 16)
    ctor = vals.map_constructor(h.map_of(handle))
    assert vals.f.is_function(ctor) and vals.function_name(ctor) == "Zlib"
    assert sh.name_of(handle, h.map_of(handle)) == "Object"


@pytest.mark.parametrize("version", VERSIONS)
def test_print_limit_follows_flag(version: str) -> None:
    """jsprint -N 100000 of a 100,000-element array shows every element."""
    big = addresses(version)["big"]
    out = run_cli(version, mixed_dir(version) / "core",
                  [f"jsprint --json -N 100000 {big}", f"jsprint --json {big}"])
    full, cut = json_line(out[0]), json_line(out[1])
    assert full["length"] == 100000 and len(full["elements"]) == 100000
    assert not full.get("truncated")
    assert full["elements"][-1] == {"type": "number", "value": 99999}
    assert cut["truncated"] and len(cut["elements"]) == 100


@pytest.mark.parametrize("version", VERSIONS)
def test_large_program_equals_snapshot(version: str) -> None:
    """TypeScript's compiler: every name's count equals the snapshot's (CLI; the
    front ends are shown to agree on the same census above)."""
    d = tsc_dir(version)
    expected = read_json(d, "expected-tsc.json")
    assert expected["typescript"] == "5.6.3" and expected["emitted"] == 80
    snap, boilerplates, proxies = snapshot(d, expected["snapshot"])
    doc = json_line(run_cli(version, d / "core", ["findjsobjects --json"])[0])
    assert doc["total_objects"] > 200000
    compare(doc, snap, boilerplates, proxies, transient(d / expected["snapshot"]))


def test_damaged_pages_are_reported() -> None:
    """Words overwritten in the middle of a heap page: the walk says so."""
    from v8dbg.heap import census
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    version = VERSIONS[-1]
    core = mixed_dir(version) / "core"

    class Damaged(CoreBackend):
        spots: list[tuple[int, int]] = []

        def read(self, addr: int, size: int) -> bytes:
            data = bytearray(super().read(addr, size))
            for lo, hi in self.spots:
                a, b = max(lo, addr), min(hi, addr + size)
                if a < b:
                    data[a - addr:b - addr] = b"\x41" * (b - a)
            return bytes(data)

        def read_into(self, addr: int, buf: memoryview) -> bool:
            # The walk's page reads: damaged alike.
            if not super().read_into(addr, buf):
                return False
            for lo, hi in self.spots:
                a, b = max(lo, addr), min(hi, addr + len(buf))
                if a < b:
                    buf[a - addr:b - addr] = b"\x41" * (b - a)
            return True

    def program(spots: list[tuple[int, int]]) -> Program:
        be = Damaged(str(core), str(node_binary(version)))
        be.spots = spots
        return Program(be, str(node_binary(version)))

    clean = census.scan(program([]))
    assert not clean.damaged_pages and not clean.skipped_bytes
    prog = program([])
    census.scan(prog)
    page = max((p for p in clean.pages if not p.young and p.end - p.start <= 1 << 18),
               key=lambda p: len(census.object_starts(prog, p)))
    mid = (page.start + page.end) // 2 & ~7
    for use_numpy in (True, False):
        hurt = census.scan(program([(mid, mid + 4096)]), use_numpy=use_numpy)
        assert hurt.damaged_pages == [page.address], hurt.damaged_pages
        assert hurt.skipped_bytes > 2048
        assert hurt.total_objects < clean.total_objects
    # findjsobjects says so: the JSON counts, and one warning line in the text.
    from v8dbg.commands import Session, load_all
    cmd = load_all()["findjsobjects"]
    damaged_be = Damaged(str(core), str(node_binary(version)))
    damaged_be.spots = [(mid, mid + 4096)]
    sess = Session(lambda: damaged_be, str(node_binary(version)))
    res = cmd.func(sess, cmd.parser.parse_args([]))
    assert res.data["damaged_pages"] == 1 and res.data["skipped_bytes"] > 2048
    warn = [line for line in res.text.splitlines() if line.startswith("warning:")]
    assert len(warn) == 1 and "could not be walked" in warn[0], res.text[-500:]
