"""Benchmark: what `v8dbg profile` costs the process it samples.

One node process runs a CPU-bound workload (integer loops in three
functions, as tests/fixtures/profile_hot.js) and reports how many rounds of
it are done, every 100 ms, on stdout. In that same process, phases follow
one another: unsampled, sampled through perf events at 99 Hz, unsampled,
through ptrace at 99 Hz, unsampled, through perf events at 999 Hz, ...
(--rounds times). The same again with a target that runs node's own
`--cpu-prof` (SIGPROF at 1 kHz) all along: unsampled, perf, ptrace. A sampled phase's throughput is compared with the mean of
the unsampled phases on either side of it, so slow drift of the machine
cancels out. Throughput is counted per wall-clock second (what a user sees;
on a busy machine the scheduler's treatment of a process that is stopped
and woken up often blurs it) and per second of the workload's own CPU time
(the work each sample adds to the target). The profiler's own summary gives
the time the target was held per sample (median and p99); the kernel's
count of the target's voluntary context switches tells how often it was
stopped (a ptrace stop is one; the workload itself makes none).

Then the same workload is run in fresh node processes with and without
node's own `--cpu-prof` (alternating, --rounds each), measured over the same
window after the same warm-up: the cost V8's profiler puts on it.

Usage: python3 bench/profile.py [--version V] [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support import node_binary  # noqa: E402

WORKLOAD = r"""
'use strict';
const fs = require('fs');
function hotAlpha(n) { let s = 0; for (let i = 0; i < n; i++) { s = (s + i * 7) % 1000003; } return s; }
function hotBeta(n) { let s = 1; for (let i = 0; i < n; i++) { s = (s * 3 + i) % 999983; } return s; }
function hotGamma(n) { let s = 2; for (let i = 0; i < n; i++) { s = (s ^ (i * 13)) % 1000033; } return s; }
function round() { return hotAlpha(5000) + hotBeta(3000) + hotGamma(2000); }
function main() {
  const limit = Number(process.argv[2] || 0) * 1e9;  // run this long (ns), 0: forever
  const t0 = process.hrtime.bigint();
  let rounds = 0, sink = 0, next = t0;
  for (;;) {
    for (let k = 0; k < 20; k++) { sink += round(); rounds++; }
    const now = process.hrtime.bigint();
    if (now >= next) {
      const cpu = process.cpuUsage();  // this process's CPU time, µs
      fs.writeSync(1, `${now} ${rounds} ${cpu.user + cpu.system}\n`);  // CLOCK_MONOTONIC ns
      next = now + 100000000n;
      if (limit && now - t0 > BigInt(limit)) break;
    }
  }
  return sink;
}
main();
"""

SUMMARY = re.compile(r"median (\d+) µs, p99 (\d+) µs \(([\d.]+)% of the time\)")
CONFIGS = {False: (("perf", 99), ("ptrace", 99), ("perf", 999)),  # plain target
           True: (("perf", 99), ("ptrace", 99))}  # the target runs --cpu-prof


class Counter:
    """Reads the workload's `time rounds` lines as they come."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.points: list[tuple[float, int, float]] = []
        self._t = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._t.start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            ns, n, cpu = line.split()
            self.points.append((int(ns) / 1e9, int(n), int(cpu) / 1e6))

    def rate(self, a: float, b: float) -> tuple[float, float]:
        """Rounds per wall-clock second and per CPU second of the workload,
        between monotonic times a and b (the nearest reports)."""
        pts = self.points
        lo = min(pts, key=lambda p: abs(p[0] - a))
        hi = min(pts, key=lambda p: abs(p[0] - b))
        return (hi[1] - lo[1]) / (hi[0] - lo[0]), (hi[1] - lo[1]) / (hi[2] - lo[2])


def stops(pid: int) -> int:
    """The main thread's voluntary context switches so far."""
    text = Path(f"/proc/{pid}/task/{pid}/status").read_text()
    return next(int(ln.split()[1]) for ln in text.splitlines()
                if ln.startswith("voluntary_ctxt_switches:"))


def sampled_phase(pid: int, sampler: str, rate: int,
                  seconds: float) -> tuple[float, float, str, int]:
    """Run the profiler for `seconds`; the window it sampled in, its summary
    (the last line of its stderr) and how often the target was stopped."""
    s0 = stops(pid)
    p = subprocess.run([sys.executable, "-m", "v8dbg", "profile", "--pid", str(pid), "--rate",
                        str(rate), "--duration", str(seconds), "--sampler", sampler,
                        "-o", "/dev/null"], cwd=ROOT, capture_output=True, text=True)
    end = time.monotonic()
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    # Sampling ends just before the profile is written and the process exits.
    return end - seconds + 0.2, end - 0.2, p.stderr.strip().splitlines()[-1], stops(pid) - s0


def same_process(node: str, seconds: float, rounds: int, cpu_prof: bool) -> dict:
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "workload.js"
        script.write_text(WORKLOAD)
        flags = ["--cpu-prof", f"--cpu-prof-dir={d}"] if cpu_prof else []
        proc = subprocess.Popen([node, *flags, str(script)], stdout=subprocess.PIPE, text=True)
        try:
            c = Counter(proc)
            time.sleep(2.0)  # warm up: optimized code
            runs: dict[tuple[str, int], list[tuple[float, float, str, int]]] = \
                {k: [] for k in CONFIGS[cpu_prof]}

            def unsampled() -> tuple[float, float]:
                a = time.monotonic()
                time.sleep(seconds)
                b = time.monotonic()
                return c.rate(a + 0.2, b - 0.2)

            for _ in range(rounds):
                for sampler, hz in CONFIGS[cpu_prof]:
                    before = unsampled()
                    a, b, text, n = sampled_phase(proc.pid, sampler, hz, seconds)
                    wall, cpu = c.rate(a, b)
                    after = unsampled()
                    runs[(sampler, hz)].append((wall / ((before[0] + after[0]) / 2),
                                                cpu / ((before[1] + after[1]) / 2), text, n))
        finally:
            proc.kill()
            proc.wait()
    out = {}
    for key, rs in runs.items():
        wall = [w for w, _, _, _ in rs]
        cpu = [x for _, x, _, _ in rs]
        held = [SUMMARY.search(t) for _, _, t, _ in rs]
        out[key] = {
            "wall_pct": [round(100 * (1 - x), 2) for x in wall],
            "median_wall_pct": round(100 * (1 - statistics.median(wall)), 2),
            "cpu_pct": [round(100 * (1 - x), 2) for x in cpu],
            "median_cpu_pct": round(100 * (1 - statistics.median(cpu)), 2),
            "held_median_us": [int(m.group(1)) for m in held if m],
            "held_p99_us": [int(m.group(2)) for m in held if m],
            "held_pct": [float(m.group(3)) for m in held if m],
            "summaries": [t for _, _, t, _ in rs],
            "stops": [n for _, _, _, n in rs],
        }
    return out


def cpu_prof(node: str, seconds: float, rounds: int) -> dict:
    """Throughput of fresh processes with and without --cpu-prof, alternating."""
    res: dict[str, list[float]] = {"plain": [], "cpu-prof": []}
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "workload.js"
        script.write_text(WORKLOAD)
        for _ in range(rounds):
            for kind in ("plain", "cpu-prof"):
                flags = ["--cpu-prof", f"--cpu-prof-dir={d}"] if kind == "cpu-prof" else []
                p = subprocess.run([node, *flags, str(script), str(seconds + 2.0)],
                                   capture_output=True, text=True, cwd=d)
                pts = [(int(a) / 1e9, int(b), int(c) / 1e6) for a, b, c in
                       (ln.split() for ln in p.stdout.splitlines())]
                t0 = pts[0][0]
                win = [pt for pt in pts if t0 + 2.0 <= pt[0]]  # after the same warm-up
                n = win[-1][1] - win[0][1]
                res[kind].append((n / (win[-1][0] - win[0][0]), n / (win[-1][2] - win[0][2])))
    wall = [b[0] / a[0] for a, b in zip(res["plain"], res["cpu-prof"])]
    cpu = [b[1] / a[1] for a, b in zip(res["plain"], res["cpu-prof"])]
    return {"wall_pct": [round(100 * (1 - x), 2) for x in wall],
            "median_wall_pct": round(100 * (1 - statistics.median(wall)), 2),
            "cpu_pct": [round(100 * (1 - x), 2) for x in cpu],
            "median_cpu_pct": round(100 * (1 - statistics.median(cpu)), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default="24.21.0")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each phase")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    node = str(node_binary(args.version))
    load = open("/proc/loadavg").read().split()[:3]
    print(f"node {args.version}, {args.rounds} rounds of {args.seconds:g} s phases; "
          f"load average at start {' '.join(load)}")
    for with_cpu_prof in (False, True):
        same = same_process(node, args.seconds, args.rounds, with_cpu_prof)
        target = "target running --cpu-prof" if with_cpu_prof else "plain target"
        for (sampler, hz), r in same.items():
            print(f"{target}, v8dbg profile --sampler {sampler} --rate {hz}: throughput lost "
                  f"per wall-clock second {r['median_wall_pct']}% (median; runs "
                  f"{r['wall_pct']}), per CPU second {r['median_cpu_pct']}% (runs "
                  f"{r['cpu_pct']}); target stopped {r['stops']} times; held per sample: "
                  f"median {r['held_median_us']} µs, p99 {r['held_p99_us']} µs; held "
                  f"{r['held_pct']}% of the time", flush=True)
            for t in r["summaries"]:
                print(f"    {t}")
    cp = cpu_prof(node, args.seconds, args.rounds)
    print(f"node --cpu-prof: throughput lost per wall-clock second {cp['median_wall_pct']}% "
          f"(median; runs {cp['wall_pct']}), per CPU second {cp['median_cpu_pct']}% "
          f"(runs {cp['cpu_pct']})")
    load = open("/proc/loadavg").read().split()[:3]
    print(f"load average at end {' '.join(load)}")


if __name__ == "__main__":
    main()
