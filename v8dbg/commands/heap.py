"""Heap commands: findjsobjects, findjsinstances, findjsrefs, jsfunctions, nodeinfo.

All of them start from one census of the heap (heap/census.py), kept in
`prog.heap_state` so that later commands on the same target reuse it.
"""

from __future__ import annotations

import argparse
import bisect
from array import array
import struct
import time
from dataclasses import dataclass, field

from ..heap import census, refedges
from ..v8 import pages
from ..v8 import slots
from ..heap.isolates import Isolate, choose, isolates
from .base import Progress, Result, Session, command, hexaddr
from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..heap.shapes import Shapes
from ..program import Program
from ..v8.scopes import ScopeInfo

MAX_DICT_SHAPES = 20000  # dictionary-mode objects whose keys are read one by one
MAX_REF_HITS = 10000
MAX_LIFT = 64  # internal arrays whose owner findjsrefs looks up


def _isolate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--isolate", metavar="N",
                   help="the isolate to scan: its number in jsisolates, or its Heap address "
                        "(default: the one the selected thread runs)")
    p.add_argument("--thread", type=int, metavar="TID",
                   help="scan the isolate that thread TID runs (a worker's thread)")


def _pick(prog: Program, args: argparse.Namespace, address: int | None = None) -> Isolate:
    return choose(prog, getattr(args, "isolate", None), getattr(args, "thread", None), address)


def _where(prog: Program, iso: Isolate) -> str:
    """The line that says which isolate a command looked at."""
    n = len(isolates(prog))
    more = f"; {n - 1} more, see jsisolates and --isolate" if n > 1 else ""
    return f"in {iso.describe()}{more}"


def _census(prog: Program, heap: int) -> census.Census:
    c = prog.heap_state.census.get(heap)
    if c is not None:
        return c
    prog_line = Progress("scanning the heap")
    try:
        c = census.scan(prog, heap, prog_line)
    finally:
        prog_line.done()
    if not c.total_objects:
        raise V8DbgError(f"no live V8 heap object could be read ({len(c.pages)} heap pages "
                         "found): the heap in this target is unreadable or damaged")
    return c


def _shapes(prog: Program) -> Shapes:
    return prog.shapes


@dataclass
class Group:
    constructor: str
    properties: list[str]
    count: int = 0
    size: int = 0
    representative: int = 0
    maps: list[int] = field(default_factory=list)


def _groups(prog: Program, heap: int) -> list[Group]:
    """Live JS objects grouped by constructor name and property names."""
    cached = prog.heap_state.groups.get(heap)
    if isinstance(cached, list):
        return cached
    c = _census(prog, heap)
    sh = _shapes(prog)
    groups: dict[tuple[str, tuple[str, ...]], Group] = {}
    dict_budget = MAX_DICT_SHAPES
    for st in c.maps.values():
        if st.addresses is None or not st.count or sh.is_closure_type(st.instance_type):
            continue
        try:
            shape = sh.shape(st.map, st.addresses[0])
        except (DecodeError, TargetMemoryError):
            continue
        per = st.size // st.count if st.count else 0
        if shape.dictionary and st.count <= dict_budget:
            dict_budget -= st.count
            for a in st.addresses:
                name, names = sh.name_and_properties(a, st.map)
                key = (name, tuple(names))
                g = groups.get(key)
                if g is None:
                    g = groups[key] = Group(key[0], list(key[1]), representative=a)
                g.count += 1
                g.size += per
                if st.map not in g.maps:
                    g.maps.append(st.map)
            continue
        key = (shape.constructor, tuple(shape.properties))
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(key[0], list(key[1]), representative=st.addresses[0])
        g.count += st.count
        g.size += st.size
        g.maps.append(st.map)
    out = sorted(groups.values(), key=lambda g: (-g.count, g.constructor, g.properties))
    prog.heap_state.groups[heap] = out
    return out


def _props_text(props: list[str], limit: int = 6) -> str:
    shown = ", ".join(props[:limit])
    if len(props) > limit:
        shown += f", ... ({len(props)} in all)"
    return shown


@command("findjsobjects", "heap census: live objects grouped by constructor and properties",
         "Walk V8's heap and count the live JavaScript objects, one row per object "
         "shape (constructor name and property names), most numerous first.")
def _findjsobjects(p: argparse.ArgumentParser):
    p.add_argument("-c", metavar="NAME", help="only objects whose constructor is NAME")
    p.add_argument("-p", metavar="PROP", help="only objects that have property PROP")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        t0 = time.monotonic()
        iso = _pick(prog, args)
        c = _census(prog, iso.heap)
        groups = _groups(prog, iso.heap)
        if args.c is not None:
            groups = [g for g in groups if g.constructor == args.c]
        if args.p is not None:
            groups = [g for g in groups if args.p in g.properties]
        seconds = round(max(c.seconds, time.monotonic() - t0), 3)
        data = {"groups": [{"constructor": g.constructor, "properties": g.properties,
                            "count": g.count, "size": g.size,
                            "representative": hexaddr(g.representative)} for g in groups],
                "total_objects": c.total_objects, "seconds": seconds,
                "unswept_pages": c.unswept_pages, "damaged_pages": len(c.damaged_pages),
                "skipped_bytes": c.skipped_bytes, "left_out": c.left_out,
                "isolate": iso.to_json()}
        lines = [f"{'REPRESENTATIVE':>16} {'COUNT':>9} {'SIZE':>11}  CONSTRUCTOR {{PROPERTIES}}"]
        for g in groups:
            lines.append(f"{hexaddr(g.representative):>16} {g.count:>9} {g.size:>11}  "
                         f"{g.constructor}" + (f" {{{_props_text(g.properties)}}}"
                                               if g.properties else ""))
        lines.append(f"{sum(g.count for g in groups)} objects in {len(groups)} groups "
                     f"({c.total_objects} live heap objects, {len(c.pages)} pages, "
                     f"{seconds:.2f} s)")
        if c.damaged_pages:
            lines.append(f"warning: {len(c.damaged_pages)} heap pages could not be walked to "
                         f"their end ({c.skipped_bytes} bytes skipped): objects there may be "
                         "missing from the counts")
        if c.unswept_pages:
            lines.append(f"{c.unswept_pages} pages were not yet swept after the last full GC: "
                         "only their objects marked live were counted")
        lines.append(_where(prog, iso))
        return Result(data, "\n".join(lines))

    return run


def instances(prog: Program, heap: int, name: str) -> list[int] | array:
    """Addresses of the live objects whose constructor name is `name`, ascending."""
    c = _census(prog, heap)
    sh = _shapes(prog)
    parts: list = []
    for g in _groups(prog, heap):
        if g.constructor != name:
            continue
        for m in g.maps:
            st = c.maps.get(m)
            if st is None or st.addresses is None:
                continue
            if sh.shape(m, st.addresses[0]).dictionary:
                want = g.properties
                parts.append([a for a in st.addresses
                              if sh.name_and_properties(a, m) == (name, want)])
            else:
                parts.append(st.addresses)
    if len(parts) == 1:
        return parts[0]  # one map: already in address order
    return sorted(set(a for part in parts for a in part))


@command("findjsinstances", "addresses of the objects made by a constructor",
         "List the live objects whose constructor name is NAME (as findjsobjects "
         "shows it), ready to pass to jsprint.")
def _findjsinstances(p: argparse.ArgumentParser):
    p.add_argument("-n", type=int, metavar="N", help="list at most N addresses")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("name", metavar="NAME", help="constructor name")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        if args.n is not None and args.n < 0:
            raise V8DbgError("findjsinstances: -n takes a number of addresses >= 0")
        iso = _pick(prog, args)
        found = instances(prog, iso.heap, args.name)
        shown = list(found if args.n is None else found[:args.n])
        data = {"constructor": args.name, "count": len(found),
                "instances": [hexaddr(a) for a in shown], "isolate": iso.to_json()}
        lines = [hexaddr(a) or "" for a in shown]
        more = len(found) - len(shown)
        lines.append(f"{len(found)} instances of {args.name}"
                     + (f" ({more} not shown)" if more else ""))
        if not found:
            lines.append(f"no live object has the constructor name '{args.name}'; "
                         "findjsobjects lists the names on the heap")
        lines.append(_where(prog, iso))
        return Result(data, "\n".join(lines))

    return run


# -- findjsrefs --------------------------------------------------------------------------------

@dataclass
class Ref:
    holder: int
    holder_type: str
    constructor: str | None
    via: str


class _RefFinder:
    def __init__(self, prog: Program, heap: int) -> None:
        self.prog = prog
        self.c = _census(prog, heap)
        self.sh = _shapes(prog)
        self.v = self.sh.v
        self.h = self.sh.h
        md = self.h.md
        self.t = md.types
        self.ctx_lo = md.consts.get("FirstContextType", -1)
        self.ctx_hi = md.consts.get("LastContextType", -2)
        self.js_first = md.types.get("JS_PROXY_TYPE", 1024)
        self.cells = slots.wrapper_types(self.h)
        self._starts: dict[int, tuple[list[int], list[tuple[int, int, int]]]] = {}
        self._pages = sorted(self.c.pages, key=lambda p: p.start)
        self._page_starts = [p.start for p in self._pages]

    def holders(self, target: int, cap: int = MAX_REF_HITS) -> list[tuple[int, int]]:
        """(object, slot address) for each live object slot holding `target`."""
        pat = struct.pack("<Q", target)
        out: list[tuple[int, int]] = []
        for p in self._pages:
            try:
                data = pages.bulk(self.prog).read(p.start, p.end - p.start)
            except Exception:
                continue
            data = bytes(data)
            pos = data.find(pat)
            hits = []
            while pos >= 0 and len(hits) < cap:
                if pos % 8 == 0:
                    hits.append(p.start + pos)
                pos = data.find(pat, pos + 1)
            for slot in hits:
                obj = self._object_at(p, slot)
                if obj is not None and obj != target:
                    out.append((obj, slot))
            if len(out) >= cap:
                break
        return out

    def _object_at(self, p: pages.Page, addr: int) -> int | None:
        ent = self._starts.get(p.address)
        if ent is None:
            objs = census.object_starts(self.prog, p)
            ent = ([a - 1 for a, _m, _s in objs], objs)
            if len(self._starts) > 256:
                self._starts.clear()
            self._starts[p.address] = ent
        keys, objs = ent
        i = bisect.bisect_right(keys, addr) - 1
        if i < 0:
            return None
        a, _m, size = objs[i]
        if a - 1 < addr < a - 1 + 8 * size:  # not the map word: a reference slot
            return a
        return None

    def itype(self, obj: int) -> int:
        return self.h.instance_type(obj)

    def refs(self, target: int) -> list[Ref]:
        out: list[Ref] = []
        lifted = 0
        for obj, slot in self.holders(target):
            try:
                t = self.itype(obj)
            except (DecodeError, TargetMemoryError):
                continue
            if t >= self.js_first:
                out.extend(self._from_receiver(obj, t, target, slot))
            elif self.ctx_lo <= t <= self.ctx_hi:
                out.extend(self._from_context(obj, slot))
            elif t in self.cells:
                # A context cell wraps one closure variable: the context holds it.
                for ctx, cslot in self.holders(obj, 16):
                    if self.ctx_lo <= self.itype(ctx) <= self.ctx_hi:
                        out.extend(self._from_context(ctx, cslot))
            elif self.h.is_string_type(t) and refedges.field_name(self.h, obj, t, slot):
                out.append(Ref(obj, "string", None, refedges.field_name(self.h, obj, t, slot)
                               or "?"))
            elif lifted < MAX_LIFT:
                lifted += 1
                out.extend(self._lift(obj, t, target, slot))
        seen = set()
        uniq = []
        for r in out:
            k = (r.holder, r.via)
            if k not in seen:
                seen.add(k)
                uniq.append(r)
        return uniq

    def _ctor(self, obj: int) -> str | None:
        try:
            return self.sh.shape(self.h.map_of(obj), obj).constructor
        except (DecodeError, TargetMemoryError):
            return None

    def _from_receiver(self, obj: int, t: int, target: int, slot: int) -> list[Ref]:
        kind = "function" if self.sh.is_closure_type(t) else \
            "array" if t == self.t.get("JS_ARRAY_TYPE") else "object"
        for pr in self._props(obj):
            if pr.value == target and not pr.accessor:
                return [Ref(obj, kind, self._ctor(obj), self.v.key_text(pr.key, 200) or "?")]
        off = slot - (obj - 1)
        via = refedges.field_name(self.h, obj, t, slot) or f"<internal slot +{off}>"
        return [Ref(obj, kind, self._ctor(obj), via)]

    def _props(self, obj: int):
        try:
            return self.v.own_properties(obj, 4096)
        except (DecodeError, TargetMemoryError):
            return []

    def _from_context(self, ctx: int, slot: int) -> list[Ref]:
        index = (slot - (ctx - 1) - 16) // 8
        name = f"<slot {index}>"
        try:
            si = self.h.array_get(ctx, 0)
            for loc in ScopeInfo(self.h, self.v.s, si).context_locals():
                if loc.slot == index:
                    name = loc.name
                    break
        except (DecodeError, TargetMemoryError):
            pass
        return [Ref(ctx, "context", None, f"closure:{name}")]

    def _lift(self, arr: int, t: int, target: int, slot: int) -> list[Ref]:
        """Who owns an internal array (elements, property array, Map/Set table)."""
        index = (slot - (arr - 1) - 16) // 8
        out = []
        om, os_ = self.t.get("ORDERED_HASH_MAP_TYPE"), self.t.get("ORDERED_HASH_SET_TYPE")
        for owner, _s in self.holders(arr, 64):
            try:
                ot = self.itype(owner)
            except (DecodeError, TargetMemoryError):
                continue
            if ot < self.js_first:
                continue
            name = self.h.type_name(ot)
            if t in (om, os_) and name in ("JS_MAP_TYPE", "JS_SET_TYPE"):
                kind = "map" if name == "JS_MAP_TYPE" else "set"
                out.append(Ref(owner, kind, self._ctor(owner), self._table_via(arr, index, kind)))
                continue
            elems = self.h.field(owner, "JSObject", "elements")
            props = self.h.field(owner, "JSReceiver", "raw_properties_or_hash")
            named = refedges.field_name(self.h, owner, ot, _s)
            if named and named not in ("elements", "raw_properties_or_hash"):
                # An array one field of the owner holds (a bound function's arguments).
                kind = refedges.holder_kind(self.h, ot)
                out.append(Ref(owner, kind, self._ctor(owner), f"{named}[{index}]"))
            elif elems == arr:
                kind = "array" if name == "JS_ARRAY_TYPE" else "object"
                out.append(Ref(owner, kind, self._ctor(owner), self._element_via(arr, t, index)))
            elif props == arr:
                via = "?"
                for pr in self._props(owner):
                    if pr.value == target and not pr.accessor:
                        via = self.v.key_text(pr.key, 200) or "?"
                        break
                out.append(Ref(owner, "object", self._ctor(owner), via))
        return out

    def _element_via(self, arr: int, t: int, index: int) -> str:
        if t == self.t.get("NUMBER_DICTIONARY_TYPE"):
            # Entries of 3 slots after 4 header/prefix slots: the key precedes the value.
            try:
                key = self.h.array_get(arr, index - 1)
                if self.h.is_smi(key):
                    return f"[{self.h.smi(key)}]"
            except TargetMemoryError:
                pass
            return "[?]"
        return f"[{index}]"

    def _table_via(self, table: int, index: int, kind: str) -> str:
        try:
            buckets = self.h.smi(self.h.array_get(table, 2))
        except TargetMemoryError:
            return kind
        width = 3 if kind == "map" else 2
        rel = index - 3 - buckets
        if rel < 0:
            return kind
        entry, part = divmod(rel, width)
        if kind == "set":
            return f"set entry {entry}"
        if part == 0:
            return f"map key (entry {entry})"
        try:
            key = self.h.array_get(table, 3 + buckets + entry * width)
            text = self.v.key_text(key, 60) if self.h.is_heap(key) or self.h.is_smi(key) else None
        except (DecodeError, TargetMemoryError):
            text = None
        return f"map value of key {text!r}" if text is not None else f"map value (entry {entry})"


@command("findjsrefs", "objects that hold a reference to an object",
         "Find every live object with a slot pointing at ADDR and say how it holds "
         "it: a property, an array index, a closure variable, a Map or Set entry.")
def _findjsrefs(p: argparse.ArgumentParser):
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", metavar="ADDR", help="the object (a tagged pointer)")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        target = sess.evaluate(args.addr)
        prog = sess.program()
        if target & 1 == 0:
            raise V8DbgError(f"0x{target:x} is not a heap object pointer (tagged pointers are odd)")
        try:
            prog.mem.read(target - 1, 8)
        except TargetMemoryError:
            raise V8DbgError(f"0x{target:x} is not in the target's memory") from None
        if not _shapes(prog).h.is_valid_object(target):
            raise V8DbgError(f"0x{target:x} is not a V8 heap object (its map is not a Map)")
        iso = _pick(prog, args, target)
        refs = _RefFinder(prog, iso.heap).refs(target)
        data = {"target": hexaddr(target),
                "refs": [{"holder": hexaddr(r.holder), "holder_type": r.holder_type,
                          "constructor": r.constructor, "via": r.via} for r in refs],
                "isolate": iso.to_json()}
        lines = []
        for r in refs:
            who = r.constructor or r.holder_type
            lines.append(f"{hexaddr(r.holder)} {r.holder_type:8} {who} {r.via}")
        lines.append(f"{len(refs)} references to {hexaddr(target)}")
        lines.append(_where(prog, iso))
        return Result(data, "\n".join(lines))

    return run


# -- jsfunctions -------------------------------------------------------------------------------

@command("jsfunctions", "functions grouped by their code, with closure counts",
         "List the JavaScript functions on the heap grouped by SharedFunctionInfo: "
         "name, where defined, how many closures exist (a closure leak shows as "
         "a large count) and one closure's address, for jsclosure and jssource "
         "(which take the SharedFunctionInfo too).")
def _jsfunctions(p: argparse.ArgumentParser):
    p.add_argument("-n", metavar="NAME", help="only functions named NAME")
    p.add_argument("-s", metavar="FILE", help="only functions defined in a script whose "
                   "path contains FILE")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        iso = _pick(prog, args)
        rows = functions(prog, iso.heap)
        if args.n is not None:
            rows = [r for r in rows if r["name"] == args.n]
        if args.s is not None:
            rows = [r for r in rows if r["script"] and args.s in r["script"]]
        lines = [f"{'SHARED':>16} {'CLOSURE':>16} {'CLOSURES':>8}  FUNCTION  SCRIPT:LINE:COLUMN"]
        for r in rows:
            where = f"{r['script']}:{r['line']}:{r['column']}" if r["script"] else "(no script)"
            lines.append(f"{r['shared']:>16} {r['closure']:>16} {r['closures']:>8}  "
                         f"{r['name'] or '(anonymous)'}  {where}")
        lines.append(f"{len(rows)} functions, {sum(r['closures'] for r in rows)} closures")
        lines.append(_where(prog, iso))
        return Result({"functions": rows, "isolate": iso.to_json()}, "\n".join(lines))

    return run


def closure_of(prog: Program, heap: int, sfi: int) -> int | None:
    """The lowest-addressed live closure of a SharedFunctionInfo (jsfunctions' "closure")."""
    for r in functions(prog, heap):
        if r["shared"] == hexaddr(sfi):
            return int(r["closure"], 16)
    return None


def functions(prog: Program, heap: int) -> list[dict]:
    cached = prog.heap_state.functions.get(heap)
    if cached is not None:
        return cached
    c = _census(prog, heap)
    sh = _shapes(prog)
    h = sh.h
    f = sh.f
    o_shared = h.md.off("JSFunction", "shared")
    by_sfi: dict[int, int] = {}
    first: dict[int, int] = {}
    for st in c.maps.values():
        if st.addresses is None or not sh.is_function_type(st.instance_type):
            continue
        for a in st.addresses:
            try:
                sfi = h.mem.u64(a - 1 + o_shared)
            except TargetMemoryError:
                continue
            by_sfi[sfi] = by_sfi.get(sfi, 0) + 1
            if sfi not in first or a < first[sfi]:
                first[sfi] = a
    rows = []
    for sfi, n in by_sfi.items():
        try:
            name = f.debug_name(sfi)
        except (DecodeError, TargetMemoryError):
            continue
        script = line = col = None
        try:
            sc = f.script(sfi)
            if sc is not None:
                script = f.script_name(sc)
                pos = f.start_position(sfi)
                if pos is not None:
                    lc = f.position_to_line_col(sc, pos)
                    line, col = lc.line, lc.column
        except (DecodeError, TargetMemoryError):
            pass
        rows.append({"name": name, "script": script, "line": line, "column": col,
                     "closures": n, "shared": hexaddr(sfi), "closure": hexaddr(first[sfi])})
    rows.sort(key=lambda r: (-r["closures"], r["name"] or "", r["shared"]))
    prog.heap_state.functions[heap] = rows
    return rows


# -- jsisolates -------------------------------------------------------------------------------

@command("jsisolates", "the V8 isolates (main thread and workers) and the threads that run them",
         "List every V8 heap found in the target, one per isolate: the main thread's "
         "and each worker_threads worker's. The heap commands work on one isolate; "
         "pick another with --isolate N or --thread TID.")
def _jsisolates(p: argparse.ArgumentParser):
    p.add_argument("--json", action="store_true", help="print one line of JSON")

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        isos = isolates(prog)
        chosen = choose(prog)
        lines = [f"  {'#':>2} {'HEAP':>16} {'PAGES':>6} {'MB':>8}  THREADS"]
        for iso in isos:
            who = ", ".join(f"{tid}" + (f" ({name})" if name else "") for tid, name in iso.threads)
            mark = "*" if iso is chosen else " "
            lines.append(f"{mark} {iso.index:>2} {hexaddr(iso.heap):>16} {iso.pages:>6} "
                         f"{iso.bytes / (1 << 20):>8.1f}  {who or '(none found)'}")
        lines.append(f"{len(isos)} isolates; * = the one heap commands use by default")
        return Result({"isolates": [i.to_json() for i in isos], "default": chosen.index},
                      "\n".join(lines))

    return run


# -- nodeinfo ----------------------------------------------------------------------------------

@command("nodeinfo", "node and V8 versions, pid, argv and execPath of the target",
         "Read the target's own `process` object from the heap (and the V8 "
         "version from the binary).")
def _nodeinfo(p: argparse.ArgumentParser):
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        iso = _pick(prog, args)
        info = node_info(prog, iso.heap)
        lines = [f"node {info['node_version'] or '?'} (V8 {info['v8_version']})",
                 f"pid       {info['pid']}",
                 f"execPath  {info['exec_path']}",
                 f"argv      {' '.join(info['argv'] or [])}",
                 f"execArgv  {' '.join(info['exec_argv'] or [])}",
                 _where(prog, iso)]
        return Result(dict(info, isolate=iso.to_json()), "\n".join(lines))

    return run


def node_info(prog: Program, heap: int) -> dict:
    sh = _shapes(prog)
    v = sh.v
    h = sh.h
    proc = None
    for a in instances(prog, heap, "process"):
        if v.own_data_property(a, "execPath") is not None:
            proc = a
            break
    info: dict = {"node_version": None, "v8_version": prog.md.version_text, "pid": None,
                  "argv": None, "exec_argv": None, "exec_path": None}
    if proc is None:
        raise V8DbgError(f"node's process object was not found on the heap (V8 "
                         f"{prog.md.version_text}, pid {prog.backend.pid()}, from the binary "
                         "and the core)")

    def text(val: int | None) -> str | None:
        if val is None or not h.is_heap(val) or not v.is_string(val):
            return None
        return v.s.text(val, 1 << 16)

    def strings(val: int | None) -> list[str] | None:
        if val is None or not h.is_heap(val):
            return None
        try:
            n = h.smi(h.field(val, "JSArray", "length"))
            items = h.array_items(h.field(val, "JSObject", "elements"), min(max(n, 0), 4096))
        except (DecodeError, TargetMemoryError):
            return None
        return [text(x) or "" for x in items[:n]]

    info["node_version"] = text(v.own_data_property(proc, "version"))
    versions = v.own_data_property(proc, "versions")
    if versions is not None and h.is_heap(versions):
        v8 = text(v.own_data_property(versions, "v8"))
        if v8:
            info["v8_version"] = v8
    pid = v.own_data_property(proc, "pid")
    if pid is not None and h.is_smi(pid):
        info["pid"] = h.smi(pid)
    elif pid is not None and h.is_heap(pid):
        try:
            info["pid"] = int(h.mem.f64(pid - 1 + h.md.off("HeapNumber", "value")))
        except TargetMemoryError:
            pass
    if info["pid"] is None:
        info["pid"] = prog.backend.pid()
    info["argv"] = strings(v.own_data_property(proc, "argv"))
    info["exec_argv"] = strings(v.own_data_property(proc, "execArgv"))
    info["exec_path"] = text(v.own_data_property(proc, "execPath"))
    return info
