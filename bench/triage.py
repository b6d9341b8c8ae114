"""Benchmark: `v8dbg triage` of a fleet of cores, in cores per second.

The fleet: the three crash sites of tests/fixtures/triage.js on two node
lines, --runs-per-site runs each (random data per run), each core listed
--copies times (links to it under other names: every listing is a task of its
own that opens and reads its core afresh; a triage run's fixed costs --
start-up, a worker's loading of each node binary's metadata -- are then spread
over as many tasks as a fleet's). Compared in one run:
what a user would do without triage (`v8dbg jsstack --core CORE` for each
core, one after another, reading the buckets off by eye), `triage
--workers 1`, `triage --workers 2`, and `triage --dask` on a local Dask
cluster (`dask scheduler` and N `dask worker` processes on 127.0.0.1). Each
figure is the median of --repeat runs of the whole fleet (wall time of the
command, start-up included; the cluster's own start-up not).

Usage: python3 bench/triage.py [--runs-per-site N] [--copies N] [--repeat N]
                               [--dask-workers 1 2 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support import make_core  # noqa: E402

LINES = ["20.20.2", "24.21.0"]
SITES = ["parse", "assert", "abort"]


def fleet(runs: int, copies: int, into: Path) -> list[Path]:
    cores = []
    for v in LINES:
        for site in SITES:
            for r in range(1, runs + 1):
                d = make_core(v, "triage.js", ("--abort-on-uncaught-exception",),
                              env={"V8DBG_TRIAGE": site, "V8DBG_RUN": str(r)})
                for k in range(copies):
                    link = into / f"core.{site}.{v}.{r}.{k}"
                    link.symlink_to(d / "core")
                    cores.append(link)
    return cores


def timed(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr[-2000:]}")
    return took


def one_by_one(cores: list[Path]) -> float:
    t = time.perf_counter()
    for c in cores:
        p = subprocess.run([sys.executable, "-m", "v8dbg", "jsstack", "--core", str(c)],
                           cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"jsstack {c} failed: {p.stderr[-2000:]}")
    return time.perf_counter() - t


class LocalCluster:
    """`dask scheduler` and N `dask worker` processes (one thread each) on 127.0.0.1."""

    def __init__(self, workers: int, tmp: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        dask = shutil.which("dask") or "dask"
        self.procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port",
                                        str(port), "--no-dashboard"], env=env, cwd=tmp,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)]
        for i in range(workers):
            self.procs.append(subprocess.Popen(
                [dask, "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                 "--local-directory", str(tmp / f"w{i}")], env=env, cwd=tmp,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        from distributed import Client
        deadline = time.monotonic() + 120
        while True:
            try:
                with Client(self.address, timeout=5) as c:
                    c.wait_for_workers(workers, timeout=60)
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.close()
                    raise
                time.sleep(0.5)

    def close(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs-per-site", type=int, default=4)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dask-workers", type=int, nargs="*", default=[1, 2])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="v8dbg-bench-triage-") as tmp_s:
        tmp = Path(tmp_s)
        (tmp / "cores").mkdir()
        cores = fleet(args.runs_per_site, args.copies, tmp / "cores")
        n = len(cores)
        triage = [sys.executable, "-m", "v8dbg", "triage", str(tmp / "cores"), "--json"]
        rows: list[tuple[str, float]] = []
        # jsstack one core at a time: timed on one listing of each core, scaled.
        distinct = cores[::args.copies]
        rows.append(("jsstack per core, one after another", args.copies * statistics.median(
            one_by_one(distinct) for _ in range(args.repeat))))
        for w in (1, 2):
            rows.append((f"triage --workers {w}", statistics.median(
                timed(triage + ["--workers", str(w)]) for _ in range(args.repeat))))
        for w in args.dask_workers:
            cluster = LocalCluster(w, tmp)
            try:
                rows.append((f"triage --dask (local cluster, {w} worker process"
                             f"{'es' if w > 1 else ''})", statistics.median(
                                 timed(triage + ["--dask", cluster.address])
                                 for _ in range(args.repeat))))
            finally:
                cluster.close()
        load = os.getloadavg()
        print(f"{n} cores ({len(SITES)} crash sites x {len(LINES)} node lines x "
              f"{args.runs_per_site} runs x {args.copies} listings), median of "
              f"{args.repeat}; load average "
              f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} CPUs")
        print(f"| {'how':56} | seconds | cores/s |")
        print(f"|{'-' * 58}|---------|---------|")
        for what, s in rows:
            print(f"| {what:56} | {s:7.2f} | {n / s:7.1f} |")
        base = dict(rows)["triage --workers 1"]
        print(f"2 workers: {base / dict(rows)['triage --workers 2']:.2f}x the speed of 1")
        print(json.dumps({"cores": n, "rows": rows}))


if __name__ == "__main__":
    main()
