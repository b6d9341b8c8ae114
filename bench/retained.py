"""Benchmark: retained sizes of a leaking heap, from its core, vs V8's snapshot + DevTools.

One node process leaks COUNT sessions (each a Session {id, user, record},
its Record {id, body} and the body's array of 8 numbers, behind a Map and an
array on globalThis: three JS objects and a few more heap objects each),
times `v8.writeHeapSnapshot()` on itself, then aborts. What a user would do
instead of v8dbg is that snapshot, then DevTools' loading of it (its own
snapshot worker computing retained sizes, tests/tools/devtools_retained.mjs):
both are timed. On the core, v8dbg's `findjsobjects --retained` (census,
heap graph, dominator tree, the rows' retained sizes) is timed in the CLI,
with the peak RSS of each process, and the dominator tree alone.

Both sides run in fresh processes, --v8-runs and --runs times (3 each by
default: each run's figures, then their medians): V8's writer in as many
node processes, each making a heap of the same program (the last one's
core is the one v8dbg reads; the others exit once written); v8dbg on that
core. (V8's CPU is counted around its writer's call alone; v8dbg's, its
whole process: Python's start-up and reading the core included.) One V8
run alone said little: on one earlier day its CPU ranged from 4.2 to 6.5 s
on the same kind of heap.

Usage: python3 bench/retained.py [--version 24.21.0] [--count 400000] [--no-devtools]
                                 [--runs 3] [--v8-runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from heapsnapshot import DEVTOOLS, TOOL, TYPESCRIPT  # noqa: E402
from support import CACHE, node_binary  # noqa: E402

SCRIPT = r"""
'use strict';
const v8 = require('v8');
const fs = require('fs');
const path = require('path');
const out = process.env.V8DBG_OUT;
class Record { constructor(id) { this.id = id; this.body = [id, id + 1, id + 2, id + 3, id + 4, id + 5, id + 6, id + 7]; } }
class Session { constructor(id) { this.id = id; this.user = 'user-' + id; this.record = new Record(id); } }
globalThis.byId = new Map();
globalThis.all = [];
for (let i = 0; i < COUNT; i++) { const s = new Session(i); byId.set(i, s); all.push(s); }
const hs = v8.getHeapStatistics();
const t0 = process.hrtime.bigint();
const c0 = process.cpuUsage();
v8.writeHeapSnapshot(path.join(out, 'bench.heapsnapshot'));
const c1 = process.cpuUsage(c0);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
fs.writeFileSync(path.join(out, 'snapshot.json'),
                 JSON.stringify({ seconds, cpu: (c1.user + c1.system) / 1e6,
                                  heap_total: hs.total_heap_size, heap_used: hs.used_heap_size }));
if (process.env.V8DBG_NO_CORE) process.exit(0);  // (a run that only times V8's writer)
process.abort();
"""


def heap_size(sj: dict) -> str:
    """The heap's size as the process saw it before writing (v8.getHeapStatistics())."""
    if "heap_total" not in sj:
        return "the heap's size: not recorded with this core (make it again with --fresh)"
    return (f"the heap's size: {sj['heap_total'] / 2**20:.0f} MB (total_heap_size), "
            f"{sj['heap_used'] / 2**20:.0f} MB used")


def installed_env() -> dict[str, str]:
    """The environment to time v8dbg in as an installed package runs (pip
    compiles its modules' bytecode when it installs them): the bytecode
    written now, and read by the child even where the environment turns
    writing it off (PYTHONDONTWRITEBYTECODE), so that no timed run spends
    its first 0.1-0.2 s compiling v8dbg from source."""
    # (Where the checkout cannot be written, the runs compile from source.)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "v8dbg")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], **kw) -> tuple[float, float, int, subprocess.CompletedProcess]:
    """Wall seconds, CPU seconds, peak RSS (kB) and output of one child process."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, **kw)
        _, status, usage = os.wait4(proc.pid, 0)
        dt = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return dt, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, subprocess.CompletedProcess(
            cmd, proc.returncode, out.read(), err.read())


def v8_writes(node: Path, work: Path, count: int, runs: int) -> list[dict]:
    """V8's writer timed in `runs` fresh node processes, each making the same
    heap (SCRIPT) and writing its snapshot, as v8dbg is timed in fresh
    processes: the last one writes into `work` and leaves the core there,
    the others into folders of their own (their snapshots removed once
    measured) and exit. Each run's snapshot.json, with the process's peak
    RSS (kB) as "rss" and its snapshot's size as "bytes"."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    script = work / "bench.js"
    script.write_text(SCRIPT.replace("COUNT", str(count)))
    got = []
    for k in range(max(runs, 1)):
        last = k == max(runs, 1) - 1
        out = work if last else work / f"v8-run-{k + 1}"
        out.mkdir(exist_ok=True)
        env = dict(os.environ, V8DBG_OUT=str(out))
        env.pop("V8DBG_NO_CORE", None)
        if not last:
            env["V8DBG_NO_CORE"] = "1"
        _, _, rss, p = timed([str(node), "--max-old-space-size=8192", str(script)], cwd=out,
                             preexec_fn=limits, env=env)
        if not (out / "snapshot.json").exists() or (not last and p.returncode != 0):
            sys.exit(f"bench: node run {k + 1} of {runs} wrote no snapshot (exit {p.returncode}): "
                     f"{p.stderr.strip()[-500:]}")
        sj = json.loads((out / "snapshot.json").read_text())
        sj["rss"] = rss
        sj["bytes"] = (out / "bench.heapsnapshot").stat().st_size
        if not last:
            shutil.rmtree(out)
        got.append(sj)
    core = work / "core"
    if not core.exists():
        cands = sorted(work.glob("core*"))
        if not cands:
            sys.exit("bench: no core written (ulimit -c, kernel.core_pattern)")
        cands[0].rename(core)
    return got


def v8_lines(runs: list[dict]) -> list[str]:
    """Each V8 run's figures, then their medians where more than one."""
    lines = [f"V8 writeHeapSnapshot() in a fresh process: {sj['seconds']:7.2f} s, "
             f"CPU {sj['cpu']:6.2f} s, the process's peak RSS {sj['rss'] / 1024:.0f} MB; "
             + heap_size(sj) for sj in runs]
    if len(runs) > 1:
        med = {k: statistics.median(sj[k] for sj in runs) for k in ("seconds", "cpu", "rss")}
        lines.append(f"V8, median of {len(runs)} processes:        {med['seconds']:7.2f} s, "
                     f"CPU {med['cpu']:6.2f} s, the process's peak RSS {med['rss'] / 1024:.0f} MB")
    return lines


def median_line(got: list[tuple[float, float, int]]) -> str | None:
    """The medians of v8dbg's runs (wall s, CPU s, peak RSS kB), where more than one."""
    if len(got) < 2:
        return None
    dt, cpu, rss = (statistics.median(x) for x in zip(*got))
    return (f"v8dbg, median of {len(got)} runs:          {dt:7.2f} s, CPU {cpu:6.2f} s, "
            f"peak RSS {rss / 1024:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="24.21.0")
    ap.add_argument("--count", type=int, default=400000)
    ap.add_argument("--no-devtools", action="store_true")
    ap.add_argument("--runs", type=int, default=3, help="v8dbg runs on the core (medians shown)")
    ap.add_argument("--v8-runs", type=int, default=3,
                    help="fresh node processes timing V8's writer (the last one's core is kept)")
    args = ap.parse_args()
    node = node_binary(args.version)
    work = CACHE / "bench" / f"retained-{args.version}-{args.count}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    v8 = v8_writes(node, work, args.count, args.v8_runs)
    core = work / "core"
    snap = work / "bench.heapsnapshot"
    print(f"node {args.version}, {args.count} sessions: core {core.stat().st_size / 1e9:.2f} GB, "
          f"snapshot {snap.stat().st_size / 1e6:.0f} MB")
    for line in v8_lines(v8):
        print(line)
    if not args.no_devtools:
        dt, cpu, rss, p = timed([str(node), "--max-old-space-size=16384", str(TOOL), str(DEVTOOLS),
                            str(TYPESCRIPT), str(CACHE / "devtools-build" / "1.0.1705227"), str(snap),
                            str(work / "devtools.json")])
        print(f"DevTools loads it (retained sizes):  {dt:7.2f} s, CPU {cpu:6.2f} s, "
              f"peak RSS {rss / 1024:.0f} MB"
              + ("" if p.returncode == 0 else f" (failed: {p.stderr.strip()[-200:]})"))
    env = installed_env()
    got = []
    for _ in range(max(args.runs, 1)):
        dt, cpu, rss, p = timed([sys.executable, "-m", "v8dbg", "findjsobjects", "--retained",
                                 "--sort", "retained", "--json", "--core", str(core),
                                 "--binary", str(node)], cwd=ROOT, env=env)
        if p.returncode != 0:
            sys.exit(f"bench: findjsobjects --retained failed: {p.stdout[-500:]}{p.stderr[-500:]}")
        doc = json.loads(next(line for line in p.stdout.splitlines() if line.startswith("{")))
        top = ", ".join(f"{g['constructor']} {g['retained']}" for g in doc["groups"][:3])
        print(f"v8dbg findjsobjects --retained:      {dt:7.2f} s, CPU {cpu:6.2f} s, "
              f"peak RSS {rss / 1024:.0f} MB ({top})")
        got.append((dt, cpu, rss))
    if median_line(got):
        print(median_line(got))
    code = ("import sys, time; sys.path.insert(0, %r)\n"
            "from v8dbg.inferior.corefile import CoreBackend\nfrom v8dbg.program import Program\n"
            "from v8dbg.heap import graph, retained\nfrom v8dbg.heap.isolates import choose\n"
            "p = Program(CoreBackend(%r, %r), %r); h = choose(p, None, None).heap\n"
            "t = time.process_time(); g = graph.build(p, h); t1 = time.process_time()\n"
            "retained.tree(p, h); t2 = time.process_time()\n"
            "print(g.nodes, g.edges, round(t1 - t, 2), round(t2 - t1, 2))\n"
            % (str(ROOT), str(core), str(node), str(node)))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    n, m, tg, td = p.stdout.split()
    print(f"  of which, in CPU, the census and graph ({n} nodes, {m} edges): {float(tg):.2f} s, "
          f"the dominator tree: {float(td):.2f} s")


if __name__ == "__main__":
    main()
