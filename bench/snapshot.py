"""Benchmark: a .heapsnapshot from a core (v8dbg jsheapsnapshot) vs V8's own writer.

The heap is bench/retained.py's: one node process leaks COUNT sessions
(Session, Record and the Record's array each) behind a Map and an array,
times `v8.writeHeapSnapshot()` on itself (wall and CPU seconds, in the
process: what a user would do instead, stopping the service meanwhile),
then aborts. It does so in V8_RUNS fresh node processes (default 3), each
making a heap of the same program; the last one's core is kept under
.cache/bench/snapshot-VERSION-COUNT and reused, with every run's figures
(--fresh makes them again). On the core, `v8dbg jsheapsnapshot -o` is
timed in the CLI, with its peak RSS, beside the node processes' peak RSS
(a heap and V8's writer together) and both files' sizes.

v8dbg runs as an installed package does (its bytecode compiled first), RUNS
times on the same core (default 3). Each side's runs are shown, then their
medians: one V8 run alone said little (on one earlier day its CPU ranged
from 4.2 to 6.5 s on the same kind of heap).

Usage: python3 bench/snapshot.py [--version 24.21.0] [--count 400000] [--fresh] [--runs 3]
                                 [--v8-runs 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from retained import installed_env, median_line, timed, v8_lines, v8_writes  # noqa: E402
from support import CACHE, node_binary  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="24.21.0")
    ap.add_argument("--count", type=int, default=400000)
    ap.add_argument("--fresh", action="store_true", help="make the core again")
    ap.add_argument("--runs", type=int, default=3, help="v8dbg runs on the core (medians shown)")
    ap.add_argument("--v8-runs", type=int, default=3,
                    help="fresh node processes timing V8's writer, with --fresh or a first run")
    args = ap.parse_args()
    node = node_binary(args.version)
    work = CACHE / "bench" / f"snapshot-{args.version}-{args.count}"
    core = work / "core"
    if args.fresh or not (work / "done").exists():
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        (work / "v8-runs.json").write_text(json.dumps(v8_writes(node, work, args.count,
                                                                args.v8_runs)))
        (work / "done").write_text("ok")
    if not (work / "v8-runs.json").exists():
        sys.exit("bench: this core was made by an older bench/snapshot.py: --fresh")
    v8 = json.loads((work / "v8-runs.json").read_text())
    snap = work / "bench.heapsnapshot"
    print(f"node {args.version}, {args.count} sessions: core {core.stat().st_size / 1e9:.2f} GB, "
          f"V8's snapshot {snap.stat().st_size / 1e6:.0f} MB")
    for line in v8_lines(v8):
        print(line)
    out = work / "v8dbg.heapsnapshot"
    env = installed_env()
    got = []
    for _ in range(max(args.runs, 1)):
        # A new file each run, as V8's writer made one in a fresh folder:
        # replacing the last run's file would charge this run with the
        # freeing of its pages.
        out.unlink(missing_ok=True)
        dt, cpu, rss, p = timed([sys.executable, "-m", "v8dbg", "jsheapsnapshot", "-o", str(out),
                                 "--core", str(core), "--binary", str(node)], cwd=ROOT, env=env)
        if p.returncode != 0:
            sys.exit(f"bench: jsheapsnapshot failed: {p.stdout[-500:]}{p.stderr[-500:]}")
        said = p.stdout.splitlines()[0]
        print(f"v8dbg jsheapsnapshot from the core:    {dt:7.2f} s, CPU {cpu:6.2f} s, "
              f"peak RSS {rss / 1024:.0f} MB, file {out.stat().st_size / 1e6:.0f} MB ({said})")
        got.append((dt, cpu, rss))
    if median_line(got):
        print(median_line(got))


if __name__ == "__main__":
    main()
