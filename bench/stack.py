"""Benchmark: loading v8dbg (plugin + the binary's metadata) and one `jsstack`
of a 50-frame stack, for each front end and node line.

Times are taken inside the front end's own Python, so the debugger's start-up
(and lldb's loading of its own symbols) is not counted: `load` is importing
the plugin and building the program (metadata, build-id check); `jsstack` is
the first full `jsstack` of the core. Each figure is the median of --runs
fresh debugger runs. A cold run (empty v8dbg cache) is shown separately.

Usage: python3 bench/stack.py [--runs N] [--versions V ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support import GDB, LLDB, VERSIONS, make_core, node_binary  # noqa: E402

MARK = "V8DBG-BENCH "

CLI = """
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from v8dbg.commands import Session, load_all
from v8dbg.inferior.corefile import CoreBackend
load_all()
b = CoreBackend({core!r}, {node!r})
s = Session(lambda: b, {node!r})
s.program()
t1 = time.perf_counter()
text, ok = s.run("jsstack", [])
t2 = time.perf_counter()
assert ok and text.count(" at ") >= 45, text
print({mark!r} + json.dumps({{"load": t1 - t0, "jsstack": t2 - t1}}))
"""

def gdb_script(root: str) -> str:
    return f"""
import json, sys, time, gdb
t0 = time.perf_counter()
gdb.execute("source {root}/plugins/gdb/v8dbg.py")
import v8dbg.gdb
v8dbg.gdb.SESSION.program()
t1 = time.perf_counter()
text = gdb.execute("jsstack", to_string=True)
t2 = time.perf_counter()
assert text.count(" at ") >= 45, text
print({MARK!r} + json.dumps({{"load": t1 - t0, "jsstack": t2 - t1}}))
"""


def lldb_script(root: str) -> list[str]:
    return [
        "script import time, json; _t0 = time.perf_counter()",
        f"command script import {root}/plugins/lldb/v8dbg.py",
        "script import v8dbg.lldb; v8dbg.lldb.SESSION.program(); _t1 = time.perf_counter()",
        "script _r = lldb.SBCommandReturnObject(); "
        "lldb.debugger.GetCommandInterpreter().HandleCommand('jsstack', _r); "
        "_t2 = time.perf_counter(); assert _r.GetOutput().count(' at ') >= 45",
        f"script print({MARK!r} + json.dumps({{'load': _t1 - _t0, 'jsstack': _t2 - _t1}}))",
    ]


def one_run(frontend: str, version: str, core: Path, env: dict) -> dict:
    node = str(node_binary(version))
    if frontend == "cli":
        code = CLI.format(root=str(ROOT), core=str(core), node=node, mark=MARK)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    elif frontend == "gdb":
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
            fh.write(gdb_script(str(ROOT)))
        p = subprocess.run([GDB, "-nx", "-q", "-batch", "-ex", f"source {fh.name}", node, str(core)],
                           capture_output=True, text=True, env=env)
        os.unlink(fh.name)
    else:
        args = [LLDB, "--no-lldbinit", "-b", "-c", str(core), node]
        for c in lldb_script(str(ROOT)):
            args += ["-o", c]
        p = subprocess.run(args, capture_output=True, text=True, env=env)
    for line in (p.stdout + p.stderr).splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    raise RuntimeError(f"{frontend} {version}: no timing\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--versions", nargs="*", default=VERSIONS)
    args = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="v8dbg-bench-cache-"))
    env = dict(os.environ, V8DBG_CACHE=str(cache))
    print("| node | front end | load, cold cache (s) | load (s) | jsstack, 50 frames (s) |")
    print("|---|---|---|---|---|")
    try:
        for v in args.versions:
            core = make_core(v, "deep.js") / "core"
            for fe in ("cli", "gdb", "lldb"):
                shutil.rmtree(cache, ignore_errors=True)
                cold = one_run(fe, v, core, env)["load"]
                runs = [one_run(fe, v, core, env) for _ in range(args.runs)]
                load = statistics.median(r["load"] for r in runs)
                js = statistics.median(r["jsstack"] for r in runs)
                print(f"| {v} | {fe} | {cold:.3f} | {load:.3f} | {js:.3f} |", flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
