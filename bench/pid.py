"""Benchmark: what `COMMAND --pid` costs a running server, against gdb.

One node process holds a heap of about --mb MB (small objects, each with a
string and an array) and serves HTTP on 127.0.0.1; a client thread sends it
requests one after another all the while, each latency kept with its time.
Then, in turns (--runs each):

- `v8dbg jsstack --pid PID` and `v8dbg findjsobjects --pid PID`: wall time
  of the whole command (Python start-up included), the pause v8dbg says;
- what a user would do instead: `gdb -p PID -batch` with v8dbg loaded,
  running the same command (the process is stopped from gdb's attach to its
  detach).

For each, the longest latency of a request that was in flight during the
command, against the median latency of the requests outside every command.

Usage: python3 bench/pid.py [--version V] [--mb MB] [--runs N] [--no-gdb]
"""

from __future__ import annotations

import argparse
import http.client
import os
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
from support import GDB, node_binary  # noqa: E402

SERVER = r"""
'use strict';
const http = require('http');
const fs = require('fs');
class Item { constructor(i) { this.id = i; this.name = 'item-' + i; this.pair = [i, i + 1]; } }
const items = [];
const count = Number(process.argv[2]);
for (let i = 0; i < count; i++) items.push(new Item(i));
globalThis.items = items;
const server = http.createServer((req, res) => res.end(String(items.length)));
server.listen(0, '127.0.0.1', () => {
  if (global.gc) global.gc();
  const m = process.memoryUsage();
  fs.writeFileSync(process.argv[3], JSON.stringify({ port: server.address().port,
                                                     heap_used: m.heapUsed, rss: m.rss }));
});
"""

PAUSE = re.compile(r"paused ([\d.]+) ms")
ITEM_BYTES = 104  # heapUsed per Item with its string and array, measured on node 24


class Client:
    """Requests one after another on one connection; (start, end) of each."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.done: list[tuple[float, float]] = []
        self.retried = 0
        self.stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        while not self.stop.is_set():
            t0 = time.monotonic()
            for _ in range(3):
                try:
                    conn.request("GET", "/")
                    conn.getresponse().read()
                    break
                except (OSError, http.client.HTTPException):
                    # The server closed the kept-alive connection (its timer
                    # ran out while it was stopped): again, on a new one.
                    self.retried += 1
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.done.append((t0, time.monotonic()))
            time.sleep(0.002)

    def worst_during(self, t0: float, t1: float) -> float:
        lat = [e - s for s, e in self.done if e >= t0 and s <= t1]
        return max(lat) if lat else float("nan")


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return time.monotonic() - t0, p.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", default="24.21.0")
    ap.add_argument("--mb", type=int, default=100, help="heap size to build (MB)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-gdb", action="store_true")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-pid-"))
    (tmp / "server.js").write_text(SERVER)
    info = tmp / "info.json"
    count = args.mb * (1 << 20) // ITEM_BYTES
    node = subprocess.Popen([str(node_binary(args.version)), "--expose-gc",
                             str(tmp / "server.js"), str(count), str(info)])
    try:
        deadline = time.monotonic() + 300
        while not info.exists() or not info.read_text():
            if node.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.1)
        import json
        meta = json.loads(info.read_text())
        print(f"node {args.version}, pid {node.pid}: heapUsed {meta['heap_used'] >> 20} MB, "
              f"RSS {meta['rss'] >> 20} MB")
        load0 = os.getloadavg()
        client = Client(meta["port"])
        time.sleep(1.0)
        windows: list[tuple[float, float]] = []
        rows: dict[str, list[tuple[float, float | None, float]]] = {}
        gdb_load = ["-ex", f"source {ROOT / 'plugins' / 'gdb' / 'v8dbg.py'}"]
        for _ in range(args.runs):
            for name in ("jsstack", "findjsobjects"):
                runs = [(f"v8dbg {name} --pid",
                         [sys.executable, "-m", "v8dbg", name, "--pid", str(node.pid)])]
                if not args.no_gdb:
                    runs.append((f"gdb -p -batch, {name}",
                                 [GDB, "-q", "-nx", "-batch", "-p", str(node.pid), *gdb_load,
                                  "-ex", name]))
                for label, cmd in runs:
                    t0 = time.monotonic()
                    wall, err = timed(cmd)
                    t1 = time.monotonic()
                    windows.append((t0, t1))
                    m = PAUSE.search(err)
                    rows.setdefault(label, []).append(
                        (wall, float(m.group(1)) if m else None, client.worst_during(t0, t1)))
                    time.sleep(0.5)
        client.stop.set()
        outside = [e - s for s, e in client.done
                   if not any(e >= a and s <= b for a, b in windows)]
        base = statistics.median(outside) * 1000 if outside else float("nan")
        print(f"requests answered: {len(client.done)} ({client.retried} sent again on a new "
              f"connection); median latency outside the commands: {base:.1f} ms; "
              f"load average before: {load0}, after: {os.getloadavg()}")
        print("| command | wall (s), median | pause said (ms), median / max | "
              "worst request latency during it (ms), median / max |")
        print("|---|---|---|---|")
        for label, rs in rows.items():
            walls = [r[0] for r in rs]
            pauses = [r[1] for r in rs if r[1] is not None]
            worst = [r[2] * 1000 for r in rs]
            said = (f"{statistics.median(pauses):.1f} / {max(pauses):.1f}" if pauses else "—")
            print(f"| {label} | {statistics.median(walls):.2f} | {said} | "
                  f"{statistics.median(worst):.0f} / {max(worst):.0f} |")
    finally:
        node.kill()
        node.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
