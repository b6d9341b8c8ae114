"""Benchmark: heap census of 1,000,000 small objects vs V8's own heap snapshot.

One node process builds 1,000,000 instances of a small class (each with a
string and a two-element array: about 4 million heap objects), times
`v8.writeHeapSnapshot()` on itself, then aborts. On the core we time
`findjsobjects` (the first scan) and the commands that reuse it, in the
standalone CLI and inside gdb and lldb, and record each process's peak RSS.

Usage: python3 bench/census.py [--version 24.21.0] [--count 1000000] [--frontends cli,gdb,lldb]
                               [--no-snapshot] [--runs N]

`--count 25000000 --no-snapshot` is the big-heap figure: a 4 GB heap whose
core has some 15,700 program headers (V8's snapshot of it is left out: it
would take minutes and many GB of memory).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from support import GDB, LLDB, node_binary  # noqa: E402

SCRIPT = r"""
'use strict';
const v8 = require('v8');
const fs = require('fs');
const path = require('path');
const out = process.env.V8DBG_OUT;
class Item { constructor(i) { this.id = i; this.name = 'item-' + i; this.pair = [i, i + 1]; } }
const items = [];
for (let i = 0; i < COUNT; i++) items.push(new Item(i));
globalThis.items = items;
const t0 = process.hrtime.bigint();
if (SNAPSHOT) v8.writeHeapSnapshot(path.join(out, 'bench.heapsnapshot'));
const seconds = SNAPSHOT ? Number(process.hrtime.bigint() - t0) / 1e9 : null;
fs.writeFileSync(path.join(out, 'snapshot.json'), JSON.stringify({ seconds, count: items.length }));
process.abort();
"""


def make_core(version: str, count: int, workdir: Path,
              snapshot: bool = True) -> tuple[Path, float | None]:
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    js = workdir / "bench.js"
    js.write_text(SCRIPT.replace("COUNT", str(count))
                  .replace("SNAPSHOT", "true" if snapshot else "false"))

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    env = dict(os.environ, V8DBG_OUT=str(workdir))
    subprocess.run([str(node_binary(version)), "--max-old-space-size=8192", str(js)], cwd=workdir,
                   env=env, preexec_fn=limits, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=1800)
    cores = sorted(workdir.glob("core*"))
    if not cores:
        raise SystemExit("node left no core (check `ulimit -c` and /proc/sys/kernel/core_pattern)")
    snap = json.loads((workdir / "snapshot.json").read_text())
    (workdir / "bench.heapsnapshot").unlink(missing_ok=True)
    return cores[0], snap["seconds"]


def cli(version: str, core: Path, command: str) -> tuple[float, float, str]:
    argv = [sys.executable, "-m", "v8dbg", *command.split(), "--core", str(core),
            "--binary", str(node_binary(version))]
    return _fresh_child(argv)


CPU: list[float] = []  # CPU seconds (user + system) of the last child
CLI_RUNS = 5


def _fresh_child(argv: list[str]) -> tuple[float, float, str]:
    """Run argv in a child whose peak RSS and CPU time are measured on their own."""
    # As an installed package runs: Python's compiled-bytecode cache in use,
    # even where the environment turns writing it off.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT,
                         env=env)
    out = p.stdout.read() if p.stdout else b""
    _pid, _status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    CPU[:] = [ru.ru_utime + ru.ru_stime]
    return wall, ru.ru_maxrss / 1024, out.decode(errors="replace")


def debugger(frontend: str, version: str, core: Path,
             commands: list[str]) -> tuple[list[tuple[float, float]], float, str]:
    """Each command's own (wall, CPU) time inside one debugger session, and its peak RSS."""
    node = str(node_binary(version))
    if frontend == "gdb":
        argv = [GDB, "-nx", "-q", "-batch", "-ex", f"source {ROOT}/plugins/gdb/v8dbg.py",
                "-ex", "python import time"]
        for c in commands:
            argv += ["-ex", "python _t = (time.perf_counter(), time.process_time())", "-ex", c,
                     "-ex", "python print('@@T %.3f %.3f' % (time.perf_counter() - _t[0], "
                     "time.process_time() - _t[1]))"]
        argv += [node, str(core)]
    else:
        argv = [LLDB, "--no-lldbinit", "-b", "-c", str(core), node,
                "-o", f"command script import {ROOT}/plugins/lldb/v8dbg.py",
                "-o", "script import time"]
        for c in commands:
            argv += ["-o", "script _t = (time.perf_counter(), time.process_time())", "-o", c,
                     "-o", "script print('@@T %.3f %.3f' % (time.perf_counter() - _t[0], "
                     "time.process_time() - _t[1]))"]
    _wall, rss, out = _fresh_child(argv)
    times = [(float(line.split()[1]), float(line.split()[2]))
             for line in out.splitlines() if line.startswith("@@T ")]
    return times, rss, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="24.21.0")
    ap.add_argument("--count", type=int, default=1000000)
    ap.add_argument("--frontends", default="cli,gdb,lldb")
    ap.add_argument("--workdir", default=str(ROOT / ".cache" / "bench-census"))
    ap.add_argument("--reuse-core", action="store_true", help="use the core of a previous run")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="do not time V8's own heap snapshot (for heaps of many GB)")
    ap.add_argument("--runs", type=int, default=CLI_RUNS, help="fresh CLI processes timed")
    args = ap.parse_args()
    work = Path(args.workdir) / args.version
    if args.reuse_core and (work / "snapshot.json").exists() and sorted(work.glob("core*")):
        core = sorted(work.glob("core*"))[0]
        snap_s = json.loads((work / "snapshot.json").read_text())["seconds"]
    else:
        core, snap_s = make_core(args.version, args.count, work, snapshot=not args.no_snapshot)
    from v8dbg.inferior.elf import ElfFile
    print(f"node {args.version}, {args.count} instances, core {core.stat().st_size >> 20} MB, "
          f"{ElfFile(str(core)).phnum} program headers")
    if snap_s is not None:
        print(f"v8.writeHeapSnapshot() in the live process: {snap_s:.2f} s")
    fes = args.frontends.split(",")
    if "cli" in fes:
        # A few fresh processes: on a shared machine one run's wall time is noisy.
        # A first run, not timed, leaves the compiled bytecode behind.
        cli(args.version, core, "--version")
        runs = []
        for _ in range(args.runs):
            wall, rss, out = cli(args.version, core, "findjsobjects --json")
            runs.append((wall, CPU[0], rss, out))
        walls = sorted(r[0] for r in runs)
        wall = walls[len(walls) // 2]
        cpu = sorted(r[1] for r in runs)[len(runs) // 2]
        rss = max(r[2] for r in runs)
        out = runs[-1][3]
        doc = next((json.loads(l) for l in out.splitlines() if l.startswith("{")), {})
        items = sum(g["count"] for g in doc.get("groups", []) if g["constructor"] == "Item")
        faster = f"; {snap_s / wall:.1f}x faster than the snapshot" if snap_s else ""
        print(f"cli  findjsobjects, {args.runs} fresh processes: median {wall:.2f} s wall "
              f"(each: {', '.join(f'{r[0]:.2f}' for r in runs)}), median {cpu:.2f} s CPU "
              f"(whole process), peak RSS {rss:.0f} MB; Item count {items}, "
              f"{doc.get('total_objects')} live objects{faster}")
        print(f"     load average at the end: {os.getloadavg()[0]:.2f}")
        wall0, _r, _o = cli(args.version, core, "--version")
        print(f"     (python start-up and command loading alone: {wall0:.2f} s wall, "
              f"{CPU[0]:.2f} s CPU)")
    for fe in ("gdb", "lldb"):
        if fe not in fes:
            continue
        _w, _r, first = cli(args.version, core, "findjsinstances -n 1 --json Item")
        found = next((json.loads(l) for l in first.splitlines() if l.startswith("{")), {})
        item = (found.get("instances") or ["0x1"])[0]
        cmds = ["findjsobjects -c Item", "findjsinstances -n 1 Item", "jsfunctions -n Item",
                "findjsobjects -c Item", f"findjsrefs {item}"]
        times, rss, out = debugger(fe, args.version, core, cmds)
        if len(times) != len(cmds):
            print(f"{fe}: could not time the commands:\n{out[-2000:]}")
            continue
        _t0, rss0, _o = debugger(fe, args.version, core, ["jsstack -n 1"])
        names = ("findjsobjects (first scan)", "findjsinstances", "jsfunctions",
                 "findjsobjects again", "findjsrefs of one Item")
        print(f"{fe:4} " + "; ".join(f"{n} {w:.2f} s wall / {c:.2f} s CPU"
                                     for n, (w, c) in zip(names, times)))
        print(f"     debugger peak RSS {rss:.0f} MB (the same debugger with only `jsstack -n 1`: "
              f"{rss0:.0f} MB)")


if __name__ == "__main__":
    main()
