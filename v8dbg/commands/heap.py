"""Heap commands: findjsobjects, findjsinstances, findjsrefs, jsretainers, jsheapsnapshot,
jsfunctions, nodeinfo.

All of them start from one census of the heap (heap/census.py), kept in
`prog.heap_state` so that later commands on the same target reuse it.
"""

from __future__ import annotations

import argparse
import errno
import os
import time

from ..errors import TargetMemoryError, V8DbgError
from ..heap import census, graph, retained, snapshot
from ..heap.compare import grown
from ..heap.functions import functions
from ..heap.groups import groups, instances, proxies
from ..heap.isolates import Isolate, choose, isolates
from ..heap.nodeinfo import node_info
from ..heap.paths import retainers
from ..heap.refs import refs as find_refs
from ..heap.shapes import Shapes
from ..program import Program
from .base import ArgumentError, Progress, Result, Session, command, hexaddr


DEFAULT_PATHS = 5  # retaining paths jsretainers shows


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


def _census(prog: Program, heap: int, with_graph: bool = False,
            where: str | None = None) -> census.Census:
    """The isolate's census, with a progress line while it is taken. With
    with_graph, for the commands that need the heap's graph too: the graph
    built now, its nodes from the census's own walk of the pages (one walk
    for both; its arrays' temporary files in `where`); the census alone
    where the graph cannot be built here."""
    st = prog.heap_state
    c = st.census.get(heap)
    if c is not None:
        return c
    line = Progress("scanning the heap")
    try:
        if with_graph and heap not in st.graphs and graph.can_build():
            try:
                graph.build(prog, heap, line, where)
            except graph.GraphTooBig:
                pass  # (the census alone, walked again; the commands say why)
        return census.of(prog, heap, line)
    finally:
        line.done()


def _reachable(prog: Program, heap: int) -> graph.Reachable:
    """What of the census some GC root reaches, with a progress line while the
    heap's graph is built."""
    r = prog.heap_state.reachable.get(heap)
    if r is not None:
        return r
    line = Progress("following references from the GC roots")
    try:
        return graph.reachable(prog, heap, line)
    finally:
        line.done()


def _graph(prog: Program, heap: int) -> None:
    """The heap's graph and what its roots reach, with a progress line while it
    is built (for what needs the graph itself, not the census split by it)."""
    if heap in prog.heap_state.graphs:
        return
    line = Progress("following references from the GC roots")
    try:
        graph.reached(graph.build(prog, heap, line))
    finally:
        line.done()


def _shapes(prog: Program) -> Shapes:
    return prog.shapes


def _props_text(props: list[str], limit: int = 6) -> str:
    shown = ", ".join(props[:limit])
    if len(props) > limit:
        shown += f", ... ({len(props)} in all)"
    return shown


def _open_baseline(prog: Program, path: str) -> Program:
    """The program of an earlier core, read with the same node binary."""
    if not os.path.isfile(path):
        raise V8DbgError(f"--baseline: no such core file: {path}")
    from ..inferior.corefile import CoreBackend
    binary = prog.binary.path
    backend = CoreBackend(path, binary)
    old, new = backend.main_build_id(), prog.binary.build_id
    if old and new and old != new:
        raise V8DbgError(f"--baseline: {path} is a core of another program or node build "
                         f"(build-id {old}), not of {binary} ({new})")
    return Program(backend, binary)


def _baseline_result(prog: Program, iso: Isolate, c: census.Census, rows: list,
                     kept: list[int] | None, args: argparse.Namespace, pick_rows,
                     t0: float) -> Result:
    """findjsobjects --baseline: the rows that grew since the older core."""
    old = _open_baseline(prog, args.baseline)
    old_iso = choose(old, None, None)
    old_c = _census(old, old_iso.heap)
    old_rows = pick_rows(old, old_iso.heap, args)
    old_kept = _retained(old, old_iso.heap, old_rows) if kept is not None else None
    out = grown(rows, old_rows, kept, old_kept, args.sort)
    seconds = round(time.monotonic() - t0, 3)
    data = {"groups": [{"constructor": r.group.constructor, "properties": r.group.properties,
                        "count": r.group.count, "size": r.group.size,
                        "baseline_count": r.old_count, "baseline_size": r.old_size,
                        "count_growth": r.count_growth, "size_growth": r.size_growth,
                        **({"retained": r.retained, "baseline_retained": r.old_retained,
                            "retained_growth": r.retained_growth} if kept is not None else {}),
                        "representative": hexaddr(r.group.representative)} for r in out],
            "total_objects": c.total_objects, "seconds": seconds,
            "unswept_pages": c.unswept_pages, "damaged_pages": len(c.damaged_pages),
            "skipped_bytes": c.skipped_bytes,
            "proxies": proxies(prog, iso.heap), "isolate": iso.to_json(),
            "baseline": {"core": args.baseline, "total_objects": old_c.total_objects,
                         "damaged_pages": len(old_c.damaged_pages)}}
    rh = f" {'RETAINED':>11} {'+RETAINED':>11}" if kept is not None else ""
    lines = [f"{'REPRESENTATIVE':>16} {'COUNT':>9} {'+COUNT':>9} {'SIZE':>11} {'+SIZE':>11}{rh}"
             "  CONSTRUCTOR {PROPERTIES}"]
    for r in out:
        g = r.group
        rc = f" {r.retained:>11} {r.retained_growth:>+11}" if kept is not None else ""
        lines.append(f"{hexaddr(g.representative):>16} {g.count:>9} {r.count_growth:>+9} "
                     f"{g.size:>11} {r.size_growth:>+11}{rc}  {g.constructor}"
                     + (f" {{{_props_text(g.properties)}}}" if g.properties else ""))
    lines.append(f"{len(out)} groups grew since {args.baseline} ({old_c.total_objects} live heap "
                 f"objects then, {c.total_objects} now; {seconds:.2f} s)")
    for which, cc in (("this core", c), ("the baseline", old_c)):
        if cc.damaged_pages:
            lines.append(f"warning: {len(cc.damaged_pages)} heap pages of {which} could not be "
                         f"walked to their end ({cc.skipped_bytes} bytes skipped): objects there "
                         "may be missing from the counts")
    lines.append(_where(prog, iso))
    return Result(data, "\n".join(lines))


def _retained(prog: Program, heap: int, rows: list) -> list[int]:
    """Each row's retained size, with a progress line while the graph is made."""
    line = Progress("building the heap graph")
    try:
        return retained.of_groups(prog, heap, rows, line)
    finally:
        line.done()


@command("findjsobjects", "heap census: live objects grouped by constructor and properties",
         "Walk V8's heap and count the live JavaScript objects, one row per object "
         "shape (constructor name and property names), most numerous first.")
def _findjsobjects(p: argparse.ArgumentParser):
    p.add_argument("-c", metavar="NAME", help="only objects whose constructor is NAME")
    p.add_argument("-p", metavar="PROP", help="only objects that have property PROP")
    p.add_argument("--retained", action="store_true",
                   help="add each row's retained size: the bytes its objects hold alive "
                        "together (the DevTools retained sizes of its objects that no other "
                        "object of the row dominates, summed)")
    p.add_argument("--sort", choices=("count", "size", "retained"), default="count",
                   help="order of the rows (retained implies --retained; default count)")
    p.add_argument("--baseline", metavar="OLDCORE",
                   help="only the rows that grew since OLDCORE, an earlier core of the same "
                        "program (same node binary), most grown first (by --sort)")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    _isolate_args(p)

    def pick_rows(prog: Program, heap: int, args: argparse.Namespace) -> list:
        rows = groups(prog, heap)
        if args.c is not None:
            rows = [g for g in rows if g.constructor == args.c]
        if args.p is not None:
            rows = [g for g in rows if args.p in g.properties]
        return rows

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        t0 = time.monotonic()
        iso = _pick(prog, args)
        c = _census(prog, iso.heap, with_graph=True)
        reach = _reachable(prog, iso.heap)
        rows = pick_rows(prog, iso.heap, args)
        want_retained = args.retained or args.sort == "retained"
        kept = _retained(prog, iso.heap, rows) if want_retained else []
        if args.baseline is not None:
            return _baseline_result(prog, iso, c, rows, kept if want_retained else None,
                                    args, pick_rows, t0)
        order = sorted(range(len(rows)), key=lambda i: (
            -(kept[i] if args.sort == "retained" else
              rows[i].size if args.sort == "size" else rows[i].count), i))
        rows = [rows[i] for i in order]
        kept = [kept[i] for i in order] if want_retained else []
        seconds = round(max(c.seconds, time.monotonic() - t0), 3)
        data = {"groups": [{"constructor": g.constructor, "properties": g.properties,
                            "count": g.count, "size": g.size,
                            **({"retained": kept[i]} if want_retained else {}),
                            "representative": hexaddr(g.representative)}
                           for i, g in enumerate(rows)],
                "total_objects": c.total_objects, "seconds": seconds,
                "unswept_pages": c.unswept_pages, "damaged_pages": len(c.damaged_pages),
                "skipped_bytes": c.skipped_bytes,
                "proxies": proxies(prog, iso.heap), "unreachable": reach.unreachable,
                "isolate": iso.to_json()}
        rh = f" {'RETAINED':>11}" if want_retained else ""
        lines = [f"{'REPRESENTATIVE':>16} {'COUNT':>9} {'SIZE':>11}{rh}  CONSTRUCTOR {{PROPERTIES}}"]
        for i, g in enumerate(rows):
            rc = f" {kept[i]:>11}" if want_retained else ""
            lines.append(f"{hexaddr(g.representative):>16} {g.count:>9} {g.size:>11}{rc}  "
                         f"{g.constructor}" + (f" {{{_props_text(g.properties)}}}"
                                               if g.properties else ""))
        lines.append(f"{sum(g.count for g in rows)} objects in {len(rows)} groups "
                     f"({c.total_objects} live heap objects, {len(c.pages)} pages, "
                     f"{seconds:.2f} s)")
        if data["proxies"] and args.c is None and args.p is None:
            lines.append(f"{data['proxies']} proxies besides (JSProxy objects, which V8's "
                         "heap snapshot files apart from objects too)")
        if reach.unreachable is None:
            lines.append(f"garbage not told apart ({reach.why}): objects no GC root reaches "
                         "any more are counted too")
        elif reach.unreachable:
            lines.append(f"{reach.unreachable} objects besides that no GC root reaches any more "
                         "(garbage the next GC frees), not counted")
        g = prog.heap_state.graphs.get(iso.heap)
        lines.extend(f"note: {n}" for n in (g.root_notes if g is not None else []))
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


@command("findjsinstances", "addresses of the objects made by a constructor",
         "List the live objects whose constructor name is NAME (as findjsobjects "
         "shows it), ready to pass to jsprint.")
def _findjsinstances(p: argparse.ArgumentParser):
    p.add_argument("-n", type=int, metavar="N", help="list at most N addresses")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("name", metavar="NAME", help="constructor name")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        if args.n is not None and args.n < 0:
            raise ArgumentError("findjsinstances: -n takes a number of addresses >= 0")
        prog = sess.program()
        iso = _pick(prog, args)
        _census(prog, iso.heap, with_graph=True)
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


def _check_object(prog: Program, target: int) -> None:
    """A clear error unless target is a tagged pointer to a V8 heap object."""
    if target & 1 == 0:
        raise V8DbgError(f"0x{target:x} is not a heap object pointer (tagged pointers are odd)")
    try:
        prog.mem.read(target - 1, 8)
    except TargetMemoryError:
        raise V8DbgError(f"0x{target:x} is not in the target's memory") from None
    if not _shapes(prog).h.is_valid_object(target):
        raise V8DbgError(f"0x{target:x} is not a V8 heap object (its map is not a Map)")


# -- findjsrefs --------------------------------------------------------------------------------


@command("findjsrefs", "objects that hold a reference to an object",
         "Find every object with a reference to ADDR and say how it holds it, naming "
         "the edge as V8's heap snapshot does: a property, an array index, a closure "
         "variable, a field, a Map's or Set's table slot.")
def _findjsrefs(p: argparse.ArgumentParser):
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", metavar="ADDR", help="the object (a tagged pointer)")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        target = sess.evaluate(args.addr)
        prog = sess.program()
        _check_object(prog, target)
        iso = _pick(prog, args, target)
        _census(prog, iso.heap)
        line = Progress("following references")
        try:
            found = find_refs(prog, iso.heap, target, progress=line)
        finally:
            line.done()
        refs = found.refs
        data = {"target": hexaddr(target),
                "refs": [{"holder": hexaddr(r.holder), "holder_type": r.holder_type,
                          "constructor": r.constructor, "via": r.via,
                          **({"name": r.name} if r.name is not None else {})} for r in refs],
                "isolate": iso.to_json()}
        if found.notes:
            data["notes"] = found.notes
        lines = []
        for r in refs:
            who = r.constructor or r.holder_type
            if r.name is not None:  # as util.inspect names a function
                who = f"[{who}: {r.name}]" if r.name else f"[{who} (anonymous)]"
            lines.append(f"{hexaddr(r.holder)} {r.holder_type:8} {who} {r.via}")
        lines.append(f"{len(refs)} references to {hexaddr(target)}")
        lines.extend(f"note: {n}" for n in found.notes)
        lines.append(_where(prog, iso))
        return Result(data, "\n".join(lines))

    return run


# -- jsretainers -------------------------------------------------------------------------------

@command("jsretainers", "why an object is alive: its shortest retaining paths from a GC root",
         "Print the shortest chains of references from a GC root to the object at ADDR "
         "(as DevTools' Retainers view), shortest first: one path through each object "
         "that holds it directly. Each step names the edge that holds the next as "
         "V8's heap snapshot does: a property, an array index, a closure variable, "
         "a field, an internal array's slot. Weak references never retain.")
def _jsretainers(p: argparse.ArgumentParser):
    p.add_argument("-n", type=int, default=DEFAULT_PATHS, metavar="N",
                   help=f"show at most N paths (default {DEFAULT_PATHS})")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", metavar="ADDR", help="the object (a tagged pointer)")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        if args.n < 1:
            raise ArgumentError("-n must be at least 1")
        target = sess.evaluate(args.addr)
        prog = sess.program()
        _check_object(prog, target)
        iso = _pick(prog, args, target)
        _census(prog, iso.heap, with_graph=True)
        line = Progress("following references from the GC roots")
        try:
            r = retainers(prog, iso.heap, target, args.n, line)
        finally:
            line.done()
        data = {"target": hexaddr(target), "reachable": r.reachable,
                "paths": [[s.to_json() for s in path] for path in r.paths],
                "isolate": iso.to_json()}
        if r.notes:
            data["notes"] = r.notes
        lines = []
        if not r.reachable:
            lines.append(f"{hexaddr(target)} is garbage: no GC root reaches it any more "
                         "(the next GC frees it)")
        for k, path in enumerate(r.paths):
            lines.append(f"path {k + 1} ({len(path) - 1} references):")
            for s in path:
                if s.address is None:
                    lines.append(f"  {s.constructor}")
                    continue
                what = s.constructor or s.type
                if s.constructor and s.type not in ("object", "root"):
                    what = f"{s.constructor} ({s.type})"
                lines.append(f"  {'-> ' + s.edge if s.edge else '->'} {hexaddr(s.address)} {what}")
        if r.reachable:
            more = r.holders - len(r.paths)
            lines.append(f"{len(r.paths)} retaining paths to {hexaddr(target)}"
                         + (f" ({more} more holders not shown: -n)" if more > 0 else ""))
        lines.extend(f"note: {n}" for n in r.notes)
        lines.append(_where(prog, iso))
        return Result(data, "\n".join(lines))

    return run


# -- jsheapsnapshot ----------------------------------------------------------------------------

@command("jsheapsnapshot", "write the heap as a V8 .heapsnapshot (Chrome DevTools, memlab)",
         "Write the isolate's heap as the .heapsnapshot file this node line's V8 writes "
         "(v8.writeHeapSnapshot()), for Chrome DevTools' Memory tab (Load) or memlab. Only "
         "what a GC root reaches is written, as V8 collects garbage first. The file is "
         "written under a temporary name and renamed when complete: an interrupted run, "
         "or one whose disk fills, leaves no partial file.")
def _jsheapsnapshot(p: argparse.ArgumentParser):
    p.add_argument("-o", dest="output", metavar="FILE", required=True,
                   help="the file to write (`-` for standard output)")
    p.add_argument("--include-unreachable", action="store_true",
                   help="also write the objects no GC root reaches (garbage no GC has "
                        "freed yet); DevTools shows them apart")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        iso = _pick(prog, args)
        to_stdout = args.output == "-"
        # The graph's files beside the snapshot's (where the user has room for it).
        _census(prog, iso.heap, with_graph=True,
                where=None if to_stdout else
                os.path.dirname(os.path.abspath(os.path.expanduser(args.output))))
        _graph(prog, iso.heap)
        line = Progress("writing the heap snapshot")
        tmp = None
        try:
            if to_stdout:
                import sys
                out = sys.stdout.buffer
                sys.stdout.flush()
                w = snapshot.write(prog, iso.heap, out, args.include_unreachable, line)
                out.flush()
            else:
                path = os.path.abspath(os.path.expanduser(args.output))
                if os.path.isdir(path):
                    raise V8DbgError(f"-o {args.output}: is a directory")
                tmp = os.path.join(os.path.dirname(path),
                                   f".{os.path.basename(path)}.{os.getpid()}.tmp")
                try:
                    fh = open(tmp, "wb")
                except OSError as e:
                    raise V8DbgError(f"-o {args.output}: {e.strerror}") from None
                try:
                    with fh:
                        w = snapshot.write(prog, iso.heap, fh, args.include_unreachable, line,
                                           spill_dir=os.path.dirname(path))
                except OSError as e:
                    if e.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                        raise
                    # (A full disk or a file size limit: the part written goes below.)
                    raise V8DbgError(f"-o {args.output}: {e.strerror}: no file written") from None
                os.replace(tmp, path)
                tmp = None
        finally:
            line.done()
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
        where = "standard output" if to_stdout else args.output
        lines = [f"wrote {w.nodes} nodes, {w.edges} edges, {w.strings} strings "
                 f"({w.bytes} bytes) to {where}"]
        if w.unreachable:
            lines.append(f"{w.unreachable} objects no GC root reaches were left out "
                         "(--include-unreachable keeps them)")
        lines.extend(f"warning: {n}" for n in w.notes)
        lines.append(_where(prog, iso))
        text = "\n".join(lines)
        if to_stdout:
            import sys
            print(text, file=sys.stderr)
            text = ""
        return Result({"file": where, "nodes": w.nodes, "edges": w.edges}, text)

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
        _census(prog, iso.heap)
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
        _census(prog, iso.heap)
        info = node_info(prog, iso.heap)
        lines = [f"node {info['node_version'] or '?'} (V8 {info['v8_version']})",
                 f"pid       {info['pid']}",
                 f"execPath  {info['exec_path']}",
                 f"argv      {' '.join(info['argv'] or [])}",
                 f"execArgv  {' '.join(info['exec_argv'] or [])}",
                 _where(prog, iso)]
        return Result(dict(info, isolate=iso.to_json()), "\n".join(lines))

    return run


