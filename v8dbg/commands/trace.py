"""`v8dbg trace gc|threadpool|http`: what a running node process does, traced
by BPF uprobes in the kernel, without restarting or stopping it.

Standalone command line only. bpftrace runs the probe program (attached to
this pid only, the counts and histograms kept in the kernel); on every way
out (the duration, Ctrl-C, SIGTERM, the target exiting, an error) it is
stopped and its maps read, so no probe stays behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any, Callable

from ..errors import V8DbgError
from .standalone import Parser, run

USAGE = "trace gc|threadpool|http --pid PID [--duration S] [--json]"
SUMMARY = "trace GCs, thread-pool work or HTTP requests of a running node process (BPF)"
WHATS = ("gc", "threadpool", "http")


class Terminated(Exception):
    """SIGTERM: stop tracing the way Ctrl-C does."""


def parser() -> argparse.ArgumentParser:
    p = Parser("trace", USAGE, description=(
        "Trace a running node process without restarting it, as the DTrace "
        "scripts of old did: `gc` each garbage collection with its type and "
        "pause; `threadpool` each unit of libuv thread-pool work by the kind of "
        "job (PBKDF2, Zlib, FSReq, an add-on's function), queue wait apart from "
        "run time; `http` server requests per method and URL, from the request "
        "parsed to the first write of its response. Counts and power-of-two "
        "histograms are kept in the kernel (BPF uprobes through bpftrace, "
        "attached to this process only); needs root. Without --duration, "
        "tracing goes on until Ctrl-C or the process exits."))
    p.add_argument("what", choices=WHATS, help="what to trace")
    p.add_argument("--pid", type=int, required=True, help="the node process")
    p.add_argument("--duration", type=float, metavar="S",
                   help="seconds to trace (default: until Ctrl-C)")
    p.add_argument("--json", action="store_true", help="one JSON document (the contract's)")
    return p


def main(argv: list[str]) -> int:
    """Run the trace command; returns the exit status."""
    p = parser()

    def check(args: argparse.Namespace) -> None:
        if args.duration is not None and not args.duration > 0:
            raise p.problem("--duration must be a number of seconds above 0")
        if args.pid <= 0:
            raise p.problem("--pid must be a process id")
    return run(p, argv, _trace, check)


def target_binary(pid: int) -> str:
    """The node binary process `pid` runs (for uprobes: the file on disk)."""
    from ..inferior.bpftrace import process_gone
    if process_gone(pid):
        raise V8DbgError(f"no process {pid}")
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError as e:
        raise V8DbgError(f"cannot see process {pid}'s executable (/proc/{pid}/exe): "
                         f"{e.strerror}; run v8dbg as root") from None
    if exe.endswith(" (deleted)"):
        raise V8DbgError(f"process {pid} runs {exe}: the binary was replaced on disk, "
                         "uprobes cannot be placed in it")
    return exe


def run_program(pid: int, program: str, duration: float | None, unsafe: bool = False,
                syscalls: bool = False,
                on_lines: Callable[[list[str]], bool] | None = None,
                on_start: Callable[[int], None] | None = None,
                on_tick: Callable[[list[str]], None] | None = None) -> tuple[Any, str, float]:
    """Run a bpftrace program against `pid` until the duration ends, Ctrl-C,
    SIGTERM, the target exits, or `on_lines` (fed the printf lines) says
    stop; returns (output, why it stopped, seconds traced). bpftrace is
    stopped on every path; `on_start` is told its pid once it runs;
    `on_tick` is fed the new printf lines (maybe none) about 4 times a second."""
    from ..inferior.bpftrace import Run, check_privileges, engine, ensure_tracefs, process_gone
    engine()
    check_privileges()
    if syscalls:
        note = ensure_tracefs()
        if note:
            print(f"v8dbg: {note}", file=sys.stderr)

    def term(_sig, _frame):
        raise Terminated()

    old = signal.signal(signal.SIGTERM, term)
    run = None
    why = "duration"
    started = time.monotonic()
    try:
        run = Run(program, pid, unsafe=unsafe)
        if on_start:
            on_start(run.proc.pid)
        run.wait_attached()
        started = time.monotonic()
        print(f"v8dbg: tracing process {pid}"
              + (f" for {duration:g} s" if duration else ", Ctrl-C to stop"), file=sys.stderr)
        while True:
            left = None if duration is None else duration - (time.monotonic() - started)
            if left is not None and left <= 0:
                break
            lines = run.poll(min(0.25, left) if left is not None else 0.25)
            if on_tick:
                on_tick(lines)
            if on_lines and lines and on_lines(lines):
                why = "done"
                break
            if process_gone(pid):
                why = "exited"
                break
            if not run.running():
                raise V8DbgError(run.failure())
    except KeyboardInterrupt:
        why = "interrupted"
    except Terminated:
        why = "terminated"
    finally:
        elapsed = time.monotonic() - started
        out = run.stop() if run is not None else None
        signal.signal(signal.SIGTERM, old)
    return out, why, elapsed


def _worker_timer(args: argparse.Namespace, exe: str, elf: Any, sites: Any) -> tuple[Any, str | None]:
    """For `threadpool` on a line whose uv__queue_work entry would be
    single-stepped: perf-event uprobes in libuv's worker() that time the
    jobs an add-on queues with uv_queue_work (tracing/uvwork.py), or None
    and why not (perf events refused: those jobs are then counted untimed)."""
    if args.what != "threadpool":
        return None, None
    from ..tracing import uvwork
    ws = uvwork.worker_sites(elf, sites)
    if ws is None:
        return None, None
    try:
        return uvwork.WorkerTimer(args.pid, exe, elf, ws), None
    except V8DbgError as e:  # PerfUnavailable, or the binary not mapped where expected
        why = f"perf-event uprobes refused ({e}): uv_queue_work jobs of add-ons are counted, not timed"
        print(f"v8dbg: {why}", file=sys.stderr)
        return None, why


def _trace(args: argparse.Namespace) -> int:
    from ..inferior.elf import open_elf
    from ..v8 import probes
    from ..tracing import gc, http, threadpool

    from ..inferior.bpftrace import check_privileges, engine
    engine()
    check_privileges()  # before anything else: the one thing a user must change
    exe = target_binary(args.pid)
    elf = open_elf(exe)
    mod = {"gc": gc, "threadpool": threadpool, "http": http}[args.what]
    sites = probes.find(elf, mod.SITES, getattr(mod, "OPTIONAL", []))
    timer, untimed_why = _worker_timer(args, exe, elf, sites)
    fed = 0

    def tick(lines: list[str]) -> None:
        # Ctrl-C and SIGTERM held off while lines and hits are taken in (they
        # land after: no line counted fed that the joiner did not get).
        nonlocal fed
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            timer.tick(lines)  # type: ignore[union-attr]
            fed += len(lines)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    try:
        program = (threadpool.program(sites, exe, args.pid, elf, worker_timed=True)
                   if timer is not None else mod.program(sites, exe, args.pid, elf))
        out, why, elapsed = run_program(args.pid, program, args.duration,
                                        syscalls=args.what == "http",
                                        on_tick=tick if timer is not None else None)
    except BaseException:
        if timer is not None:
            timer.close()  # nothing stays attached on any way out
        raise
    joined = timer.finish(out.lines[fed:]) if timer is not None else None
    if timer is not None and timer.why is not None:
        untimed_why = f"{timer.why}: uv_queue_work jobs of add-ons are counted, not timed"
        print(f"v8dbg: {untimed_why}", file=sys.stderr)
    report = (mod.decode(out, sites) if args.what == "gc"
              else threadpool.decode(out, elf, args.pid, joined, untimed_why)
              if args.what == "threadpool" else mod.decode(out, elf))
    from . import trace_output
    text = (trace_output.to_json(args.what, report, elapsed) if args.json
            else trace_output.to_text(args.what, report, args.pid, elapsed))
    status = 0
    if why == "exited":
        print(f"v8dbg: process {args.pid} exited after {elapsed:.2f} s of tracing; "
              "what was traced until then follows", file=sys.stderr)
        status = 1
    elif why in ("interrupted", "terminated") and args.duration is not None:
        status = 130
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return status
