"""Benchmark: loading v8dbg and one `jsstack` of a 50-frame stack, per front end and node line.

Each figure is the median wall time of a debugger run doing the step, minus
the median of the same run without it, so the debugger's own start-up (and
lldb's symbol loading) is not counted. Usage: python3 bench/stack.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support import GDB, LLDB, VERSIONS, make_core, node_binary  # noqa: E402

PLUGIN = {"gdb": f"source {ROOT}/plugins/gdb/v8dbg.py",
          "lldb": f"command script import {ROOT}/plugins/lldb/v8dbg.py"}


def argv(frontend: str, version: str, core: Path, steps: list[str]) -> list[str]:
    node = str(node_binary(version))
    if frontend == "cli":
        if not steps:
            return [sys.executable, "-c", "import v8dbg.cli"]
        if steps == ["load"]:
            return [sys.executable, "-m", "v8dbg", "v8dbg"]
        return [sys.executable, "-m", "v8dbg", "jsstack", "--core", str(core), "--binary", node]
    cmds = []
    if "load" in steps:
        cmds.append(PLUGIN[frontend])
        # Loading includes reading the binary's metadata: a cheap command that needs it.
        cmds.append("jsstack -n 0")
    if "jsstack" in steps:
        cmds.append("jsstack")
    if frontend == "gdb":
        a = [GDB, "-nx", "-q", "-batch"]
        for c in cmds:
            a += ["-ex", c]
        return a + [node, str(core)]
    a = [LLDB, "--no-lldbinit", "-b", "-c", str(core), node]
    for c in cmds:
        a += ["-o", c]
    return a


def timed(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--versions", nargs="*", default=VERSIONS)
    args = ap.parse_args()
    print("| node | front end | load plugin + metadata (s) | jsstack, 50 frames (s) |")
    print("|---|---|---|---|")
    for v in args.versions:
        core = make_core(v, "deep.js") / "core"
        for fe in ("cli", "gdb", "lldb"):
            base = timed(argv(fe, v, core, []), args.runs)
            load = timed(argv(fe, v, core, ["load"]), args.runs)
            full = timed(argv(fe, v, core, ["load", "jsstack"]), args.runs)
            if fe == "cli":
                # The CLI's jsstack run includes loading; report load separately.
                print(f"| {v} | {fe} | {load - base:.3f} | {full - load:.3f} |")
            else:
                print(f"| {v} | {fe} | {load - base:.3f} | {full - load:.3f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
