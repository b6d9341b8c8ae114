"""`v8dbg triage`: many cores grouped into crash buckets by signature.

Standalone command line only: it reads cores by the hundred, in a process
pool on this machine or on a Dask cluster, and prints the buckets; one
progress line on stderr while it runs, when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..triage import fleet, sources
from ..triage.crash import CoreCrash, CoreProblem
from ..triage.fleet import Bucket
from ..triage.signature import SigFrame
from .base import printable
from .standalone import Parser, run

USAGE = "triage PATH... [--binary-dir DIR] [--workers N] [--dask ADDRESS] [--json]"
SUMMARY = "group many cores into crash buckets by their JS stack's signature"
EXAMPLES = 3  # example cores named per bucket in the text output


def parser() -> argparse.ArgumentParser:
    p = Parser("triage", USAGE, description=(
        "Read the crashing thread's JavaScript stack of each core (as jsstack "
        "does, no heap walk) and group the cores by crash signature: the "
        "program's top JS frames (function and script name; node's own "
        "`node:` modules, V8 builtins and the throw/abort machinery skipped), "
        "so one crash site is one bucket across node releases and data. "
        "Buckets are listed by count with their node versions, the example "
        "core's frames and the thrown error. A core that cannot be read is "
        "listed as an error with the reason. Exit status 0 when at least one "
        "core was read, 1 when none was."))
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="core files, directories of them (walked), or with fsspec "
                        "installed, URLs of either (file://, s3://, ...)")
    p.add_argument("--binary-dir", action="append", default=[], metavar="DIR",
                   help="node binaries of the cores' releases, found by build-id (any "
                        "layout below DIR; repeatable); the path each core names is "
                        "tried first")
    p.add_argument("--workers", type=int, metavar="N",
                   help="cores read at once on this machine, each by a process of its "
                        "own (default: the CPUs this process may run on)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="read the cores on a Dask cluster (tcp://scheduler:8786): one task "
                        "per core, each worker reads it where it lies; needs "
                        "pip install 'v8dbg[dask]'")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    return p


def main(argv: list[str]) -> int:
    """Run the triage command; returns the exit status."""
    p = parser()

    def check(args: argparse.Namespace) -> None:
        if args.workers is not None and args.workers < 1:
            raise p.problem("--workers takes a number of processes >= 1")
        if args.workers is not None and args.dask:
            raise p.problem("--workers and --dask together: the cluster has its own workers")
        for d in args.binary_dir:
            if not os.path.isdir(d):
                raise p.problem(f"--binary-dir: {d} is not a directory")
    return run(p, argv, _triage, check, prefix_failures=True)


class _Progress:
    """`v8dbg: triage: 12/40 cores, 1 error` on stderr, when it is a terminal."""

    def __init__(self) -> None:
        try:
            self.terminal = os.isatty(2)
        except OSError:
            self.terminal = False
        self.shown = False

    def __call__(self, done: int, total: int, errors: int) -> None:
        if not self.terminal:
            return
        self.shown = True
        sys.stderr.write(f"\rv8dbg: triage: {done}/{total} cores, "
                         f"{errors} error{'s' if errors != 1 else ''}")
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def _triage(args: argparse.Namespace) -> int:
    found = sources.find(args.paths)
    progress = _Progress()
    try:
        results = fleet.run(found.cores, tuple(args.binary_dir), args.workers, args.dask,
                            progress)
    finally:
        progress.done()
    buckets, problems = fleet.buckets_of(results)
    problems = [CoreProblem(p, why) for p, why in found.problems] + problems
    if found.left_out:
        problems.append(CoreProblem(args.paths[-1], f"at least {found.left_out} more files "
                                    f"were left out: one run takes {sources.MAX_CORES} at most"))
    if args.json:
        print(json.dumps(to_json(buckets, problems)))
    else:
        print(printable(text(buckets, problems, len(found.cores))))
    return 0 if buckets else 1


def frame_json(f: SigFrame) -> dict:
    if f.native:
        return {"function": f.function, "script": None, "line": None, "column": None,
                "native": True}
    return {"function": f.function, "script": f.script, "line": f.line, "column": f.column}


def _core_json(c: CoreCrash) -> dict:
    d: dict = {"path": c.path, "node_version": c.node_version}
    if c.warnings:
        d["warnings"] = c.warnings  # what jsstack would have warned of, for this core
    return d


def to_json(buckets: list[Bucket], problems: list[CoreProblem]) -> dict:
    out = []
    for b in buckets:
        ex = b.example
        thrown = next((c.thrown for c in b.crashes if c.thrown is not None), None)
        out.append({
            "signature": b.signature, "count": b.count, "node_versions": b.node_versions,
            "frames": [frame_json(f) for f in ex.frames],
            "exception": None if thrown is None else
            {"constructor": thrown.constructor, "message": thrown.message},
            "cores": [_core_json(c) for c in b.crashes],
        })
    return {"buckets": out, "errors": [{"path": p.path, "error": p.error} for p in problems]}


def text(buckets: list[Bucket], problems: list[CoreProblem], total: int) -> str:
    read = sum(b.count for b in buckets)
    lines = [f"{len(buckets)} bucket{'s' if len(buckets) != 1 else ''} from {read} of "
             f"{total} cores" + (f"; {len(problems)} error{'s' if len(problems) != 1 else ''}"
                                 if problems else "")]
    for i, b in enumerate(buckets, 1):
        ex = b.example
        lines += ["", f"#{i} {b.count} core{'s' if b.count != 1 else ''}  "
                      f"node {', '.join(b.node_versions)}",
                  f"    {b.signature}"]
        thrown = next((c.thrown for c in b.crashes if c.thrown is not None), None)
        if thrown is not None:
            lines.append(f"    thrown: {thrown.text}")
        lines += [f"      {f.where}" for f in ex.frames]
        more = f" (+{b.count - EXAMPLES} more)" if b.count > EXAMPLES else ""
        lines.append(f"    cores: {', '.join(c.path for c in b.crashes[:EXAMPLES])}{more}")
    if problems:
        lines += ["", "errors:"] + [f"    {p.path}: {p.error}" for p in problems]
    return "\n".join(lines)
