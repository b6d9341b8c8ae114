"""Benchmark: what `v8dbg trace gc|threadpool|http` costs the process it traces.

One node process per mode runs a workload flat out and prints how much it
has done, every 250 ms, on stdout: `gc` allocates and drops objects (young
GCs many times a second), `threadpool` keeps 4 tiny crypto.pbkdf2 jobs in
the pool at all times (the worst case: the probes' cost against jobs of a
few µs), `http` is a server that a separate node client (keep-alive, 16
requests in flight) loads with GETs. In that same process, phases follow:
untraced, traced, untraced, ... (--rounds times); each traced phase is
compared with the mean of the untraced phases on either side of it, so
slow drift of the machine cancels out. What a user would do instead is
restart with `--trace-gc` or write bpftrace by hand: the first is not
possible on a running process; the second is what `trace` generates.

`threadpool-ms` is the same with jobs of about a millisecond; `http-10k`
the server under a client that offers 10,000 requests a second (the issue's
measure), where the CPU per request is what tracing changes. Each phase
also reads the target's CPU time (/proc/PID/stat: user + system, where the
probes' kernel work is counted), per unit of work: on a shared machine the
wall throughput moves with the neighbours, the CPU per unit much less.

Usage: python3 bench/trace.py [--version V] [--seconds S] [--rounds N]
       [--modes gc,threadpool,threadpool-ms,http,http-10k]
(root, bpftrace)
"""

from __future__ import annotations

import argparse
import os
import signal
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

WORKLOADS = {
    "gc": r"""
let n = 0, keep = [];
setInterval(() => console.log(n), 250);
(function spin() {
  const until = Date.now() + 20;
  while (Date.now() < until) { keep = []; for (let i = 0; i < 1000; i++) keep.push({ i }); n++; }
  setImmediate(spin);
})();
""",
    "threadpool": r"""
const crypto = require('crypto');
let n = 0;
setInterval(() => console.log(n), 250);
function one() { crypto.pbkdf2('pw', 'salt', 1, 32, 'sha256', () => { n++; one(); }); }
for (let i = 0; i < 4; i++) one();
""",
    # The same with jobs of about a millisecond (10,000 iterations): what a
    # real pbkdf2, zlib of real data or fs call pays.
    "threadpool-ms": r"""
const crypto = require('crypto');
let n = 0;
setInterval(() => console.log(n), 250);
function one() { crypto.pbkdf2('pw', 'salt', 10000, 32, 'sha256', () => { n++; one(); }); }
for (let i = 0; i < 4; i++) one();
""",
    "http": r"""
const http = require('http');
let n = 0;
setInterval(() => console.log(n), 250);
http.createServer((req, res) => { n++; res.end('ok'); }).listen(18777, '127.0.0.1');
""",
}

CLIENT = r"""
const http = require('http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function one() {
  http.get({ host: '127.0.0.1', port: 18777, path: '/bench', agent }, (res) => {
    res.resume(); res.on('end', one);
  }).on('error', () => setTimeout(one, 50));
}
setTimeout(() => { for (let i = 0; i < 16; i++) one(); }, 300);
"""


# The measure for `trace http`: a load of 10,000 requests a second
# (10 every millisecond, at most 64 in flight), not flat out; the server's
# throughput then stays at the offered rate while it keeps up, and what
# tracing costs shows as its CPU per request.
CLIENT_10K = r"""
const http = require('http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
let inflight = 0;
function one() {
  inflight++;
  http.get({ host: '127.0.0.1', port: 18777, path: '/bench', agent }, (res) => {
    res.resume(); res.on('end', () => inflight--);
  }).on('error', () => inflight--);
}
setTimeout(() => setInterval(() => { for (let i = 0; i < 10 && inflight < 64; i++) one(); }, 1), 300);
"""


class Counter:
    """The workload's running count, read from its stdout."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.value = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            try:
                self.value = int(line)
            except ValueError:
                pass


TICK = os.sysconf("SC_CLK_TCK")
Phase = tuple[float, float]  # (units of work a second, the target's CPU µs per unit)


def cpu_seconds(pid: int) -> float:
    """The target's user + system CPU time (probe hits count as its system time)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rate(counter: Counter, seconds: float) -> Phase:
    a, c0, t0 = counter.value, cpu_seconds(counter.proc.pid), time.monotonic()
    time.sleep(seconds)
    n = counter.value - a
    return n / (time.monotonic() - t0), (cpu_seconds(counter.proc.pid) - c0) / max(n, 1) * 1e6


def traced_rate(mode: str, pid: int, counter: Counter, seconds: float) -> Phase:
    what = mode.split("-")[0]
    tracer = subprocess.Popen([sys.executable, "-m", "v8dbg", "trace", what, "--pid", str(pid)],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        while "v8dbg: tracing" not in (tracer.stderr.readline() or "v8dbg: tracing"):  # type: ignore[union-attr]
            pass
        return rate(counter, seconds)
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.communicate(timeout=60)


def bench(mode: str, version: str, seconds: float, rounds: int) -> None:
    d = Path(tempfile.mkdtemp(prefix="v8dbg-bench-trace-"))
    (d / "w.js").write_text(WORKLOADS[mode.replace("-10k", "")])
    proc = subprocess.Popen([str(node_binary(version)), str(d / "w.js")], stdout=subprocess.PIPE,
                            text=True)
    client = None
    try:
        if mode in ("http", "http-10k"):
            (d / "c.js").write_text(CLIENT if mode == "http" else CLIENT_10K)
            client = subprocess.Popen([str(node_binary(version)), str(d / "c.js")])
        counter = Counter(proc)
        time.sleep(2.0)  # warm up
        base = [rate(counter, seconds)]
        losses, extra = [], []
        for _ in range(rounds):
            traced, traced_cpu = traced_rate(mode, proc.pid, counter, seconds)
            base.append(rate(counter, seconds))
            ref = (base[-1][0] + base[-2][0]) / 2
            ref_cpu = (base[-1][1] + base[-2][1]) / 2
            losses.append(100.0 * (ref - traced) / ref)
            extra.append(100.0 * (traced_cpu - ref_cpu) / ref_cpu)
            print(f"  {mode}: untraced {ref:,.0f}/s ({ref_cpu:.1f} µs CPU each), traced "
                  f"{traced:,.0f}/s ({traced_cpu:.1f} µs CPU each): {losses[-1]:+.1f} % "
                  f"throughput lost, {extra[-1]:+.1f} % CPU per unit", flush=True)
        print(f"{mode} (node {version}): throughput lost while traced, median of {rounds}: "
              f"{statistics.median(losses):+.1f} % ({', '.join(f'{x:+.1f}' for x in losses)}); "
              f"CPU per unit {statistics.median(extra):+.1f} % "
              f"({', '.join(f'{x:+.1f}' for x in extra)}); "
              f"untraced {statistics.median(b[0] for b in base):,.0f}/s", flush=True)
    finally:
        for p in (client, proc):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default="24.21.0")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="gc,threadpool,threadpool-ms,http,http-10k")
    a = ap.parse_args()
    with open("/proc/loadavg") as fh:
        print(f"load average at start: {fh.read().split()[0]}")
    for mode in a.modes.split(","):
        bench(mode, a.version, a.seconds, a.rounds)
    with open("/proc/loadavg") as fh:
        print(f"load average at end: {fh.read().split()[0]}")


if __name__ == "__main__":
    main()
