"""Benchmark: what a heap command's peak memory costs per node and per edge.

Issue 18 bounds `findjsobjects --retained` by "a few bytes per object and
edge". One heap's peak cannot say which: nodes and edges grow together. So
this makes cores of two kinds of leak, whose edges per node differ tenfold,
at two sizes each, and fits the peak RSS of each run to

    peak = fixed + per_node * nodes + per_edge * edges

by least squares over all the cores (nodes and edges as the heap graph
counts them). The kinds:

- sessions: bench/retained.py's leak (a Session, its Record and the
  Record's array of 8 numbers: about 3.5 edges a node);
- wide: objects of 40 properties each, every one a reference to one of 64
  shared objects (about 20 to 40 edges a node).

Cores are kept under .cache/bench/footprint-VERSION (--fresh makes them
again). Each command runs RUNS times per core in the standalone CLI (as an
installed package runs: bytecode compiled first); the median peak is fitted.
Also shown: the peak of a process that only loads v8dbg and NumPy.

Usage: python3 bench/footprint.py [--version 24.21.0] [--runs 3] [--fresh]
       [--command retained|snapshot]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from retained import installed_env, timed  # noqa: E402
from support import CACHE, node_binary  # noqa: E402

LEAKS = {
    "sessions": r"""
'use strict';
class Record { constructor(id) { this.id = id; this.body = [id, id + 1, id + 2, id + 3, id + 4, id + 5, id + 6, id + 7]; } }
class Session { constructor(id) { this.id = id; this.user = 'user-' + id; this.record = new Record(id); } }
globalThis.byId = new Map();
globalThis.all = [];
for (let i = 0; i < COUNT; i++) { const s = new Session(i); byId.set(i, s); all.push(s); }
process.abort();
""",
    "wide": r"""
'use strict';
const shared = [];
for (let i = 0; i < 64; i++) shared.push({ i });
class Wide { constructor(j) { for (let k = 0; k < 40; k++) this['p' + k] = shared[(j + k) & 63]; } }
globalThis.all = [];
for (let j = 0; j < COUNT; j++) all.push(new Wide(j));
process.abort();
""",
}
CORES = [("sessions", 200000), ("sessions", 400000), ("sessions", 800000),
         ("wide", 100000), ("wide", 200000)]

COUNT_GRAPH = (
    "import sys; sys.path.insert(0, %r)\n"
    "from v8dbg.inferior.corefile import CoreBackend\nfrom v8dbg.program import Program\n"
    "from v8dbg.heap import graph\nfrom v8dbg.heap.isolates import choose\n"
    "p = Program(CoreBackend(%r, %r), %r); g = graph.build(p, choose(p, None, None).heap)\n"
    "print(g.nodes, g.edges)\n")


def make_core(node: Path, work: Path, kind: str, count: int) -> Path:
    """The core of one leak, made once and kept."""
    core = work / "core"
    if (work / "done").exists():
        return core
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / "leak.js").write_text(LEAKS[kind].replace("COUNT", str(count)))

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    subprocess.run([str(node), "--max-old-space-size=8192", "leak.js"], cwd=work,
                   preexec_fn=limits, capture_output=True)
    if not core.exists():
        cands = sorted(work.glob("core*"))
        if not cands:
            sys.exit("bench: no core written (ulimit -c, kernel.core_pattern)")
        cands[0].rename(core)
    (work / "done").write_text("")
    return core


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="24.21.0")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fresh", action="store_true", help="make the cores again")
    ap.add_argument("--command", choices=["retained", "snapshot"], default="retained")
    args = ap.parse_args()
    node = node_binary(args.version)
    base = CACHE / "bench" / f"footprint-{args.version}"
    if args.fresh and base.exists():
        shutil.rmtree(base)
    env = installed_env()
    _, _, rss, _ = timed([sys.executable, "-c", "import v8dbg.commands.cli, v8dbg.numpylib as n; n.load()"],
                         cwd=ROOT, env=env)
    print(f"node {args.version}, `{args.command}`; a process that only loads v8dbg and NumPy: "
          f"peak RSS {rss / 1024:.0f} MB")
    rows = []
    for kind, count in CORES:
        core = make_core(node, base / f"{kind}-{count}", kind, count)
        p = subprocess.run([sys.executable, "-c", COUNT_GRAPH % (str(ROOT), str(core), str(node), str(node))],
                           capture_output=True, text=True, env=env)
        if p.returncode:
            sys.exit(f"bench: counting the graph failed: {p.stderr.strip()[-300:]}")
        n, m = map(int, p.stdout.split())
        peaks, cpus = [], []
        with tempfile.TemporaryDirectory() as tmp:
            if args.command == "retained":
                cmd = ["findjsobjects", "--retained", "--sort", "retained", "--json"]
            else:
                cmd = ["jsheapsnapshot", "-o", str(Path(tmp) / "out.heapsnapshot")]
            for _ in range(args.runs):
                _, cpu, rss, q = timed([sys.executable, "-m", "v8dbg", *cmd, "--core", str(core),
                                        "--binary", str(node)], cwd=ROOT, env=env)
                if q.returncode:
                    sys.exit(f"bench: v8dbg failed: {q.stderr.strip()[-300:]}")
                peaks.append(rss / 1024)
                cpus.append(cpu)
        peak = statistics.median(peaks)
        rows.append((n, m, peak))
        print(f"{kind:9s} {count:7d}: {n:9d} nodes, {m:9d} edges: peak RSS {peak:6.1f} MB "
              f"(runs: {', '.join(f'{x:.0f}' for x in peaks)}), CPU {statistics.median(cpus):.2f} s, "
              f"{peak * 2**20 / (n + m):.1f} bytes a node and edge all in")
    import numpy as np
    a = np.array([[1.0, n, m] for n, m, _ in rows])
    y = np.array([p * 2**20 for _, _, p in rows])
    (fixed, per_node, per_edge), *_ = np.linalg.lstsq(a, y, rcond=None)
    worst = max(abs(float(r)) for r in (a @ np.array([fixed, per_node, per_edge]) - y)) / 2**20
    print(f"fit: peak = {fixed / 2**20:.1f} MB + {per_node:.1f} bytes a node + {per_edge:.1f} bytes an edge "
          f"(off by at most {worst:.1f} MB on these cores)")


if __name__ == "__main__":
    main()
