"""`v8dbg profile`: sample a running node process into a flame graph.

Standalone command line only (a debugger stops the process it is attached
to; the profiler must not). The profile goes to -o FILE, or as folded
stacks to stdout; one summary line goes to stderr at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from ..errors import V8DbgError
from . import profile_output
from .standalone import Parser, run

USAGE = ("profile --pid PID [--rate HZ] [--duration S] [--threads main|all] [--idle] "
         "[--native] [--sampler perf|ptrace] [-o FILE] [--format folded|speedscope|svg]")
SUMMARY = "sample a running node process (no restart) into a flame graph"
MAX_RATE = 10000.0


def parser() -> argparse.ArgumentParser:
    p = Parser("profile", USAGE, description=(
        "Sample the JavaScript stacks of a running node process, without "
        "restarting it. Through perf events (the default where the kernel "
        "allows them) the process never stops: the kernel copies a thread's "
        "registers and stack top at each tick of its CPU clock. Otherwise "
        "through ptrace: each sample attaches, stops one thread for "
        "microseconds, copies, and detaches. The frames are decoded meanwhile, "
        "as jsstack shows them. Without --duration, sampling goes on until "
        "Ctrl-C or the process exits."))
    p.add_argument("--pid", type=int, required=True, help="the node process")
    p.add_argument("--rate", type=float, default=99.0, metavar="HZ",
                   help="samples per second and thread (default 99)")
    p.add_argument("--duration", type=float, metavar="S",
                   help="seconds to sample (default: until Ctrl-C)")
    p.add_argument("--threads", choices=("main", "all"), default="main",
                   help="the main thread only (default), or every thread that runs "
                        "JavaScript (worker_threads), each rooted at its thread")
    p.add_argument("--idle", action="store_true",
                   help="also sample threads that are blocked (in the event loop, a "
                        "sync call); otherwise only threads on a CPU count")
    p.add_argument("--native", action="store_true",
                   help="keep native (C/C++) frames; V8-internal frames are always folded away")
    p.add_argument("--sampler", choices=("perf", "ptrace"),
                   help="how to sample (default: perf events, ptrace where they are "
                        "not allowed or with --idle)")
    p.add_argument("-o", dest="output", metavar="FILE",
                   help="write here (format from the extension: .svg, .speedscope.json "
                        "or .json, .folded or .txt); default: folded stacks on stdout")
    p.add_argument("--format", choices=profile_output.FORMATS,
                   help="output format, whatever FILE is called")
    return p


def main(argv: list[str]) -> int:
    """Run the profile command; returns the exit status."""
    p = parser()

    def check(args: argparse.Namespace) -> None:
        problem = _check_args(args)
        if problem:
            raise p.problem(problem)
    return run(p, argv, _profile, check)


def _check_args(args: argparse.Namespace) -> str | None:
    if not 0 < args.rate <= MAX_RATE:
        return f"--rate must be above 0 and at most {MAX_RATE:g} samples a second"
    if args.duration is not None and not args.duration > 0:
        return "--duration must be a number of seconds above 0"
    if args.pid <= 0:
        return "--pid must be a process id"
    if args.idle and args.sampler == "perf":
        return ("--idle needs --sampler ptrace: a perf clock event fires only while "
                "its thread is on a CPU")
    if args.output:
        d = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(d):
            return f"cannot write {args.output}: no directory {d}"
    return None


def _profile(args: argparse.Namespace) -> int:
    from ..inferior.perf import PerfSampler, PerfUnavailable
    from ..inferior.ptrace import process_state

    pid = args.pid
    if process_state(pid) in (None, "Z", "X"):
        raise V8DbgError(f"no process {pid}")
    fmt = args.format or profile_output.format_for(args.output)
    title = f"node process {pid}: {' '.join(_argv(pid))[:120]}"
    all_threads = args.threads == "all"
    perf: PerfSampler | None = None
    why_ptrace = "asked for (--sampler ptrace)"
    if args.idle:
        why_ptrace = "--idle samples blocked threads; a perf clock event fires only on a CPU"
    elif args.sampler != "ptrace":
        perf = PerfSampler(pid, args.rate)
        try:
            perf.attach(all_threads)  # opened disabled: nothing sampled yet
        except PerfUnavailable as e:
            perf.close()
            if args.sampler == "perf":
                raise V8DbgError(f"cannot sample process {pid} through perf events: {e}") \
                    from None
            perf, why_ptrace = None, f"perf events not allowed: {e}"
    try:
        return _sample(args, pid, fmt, title, perf, why_ptrace, all_threads)
    finally:
        if perf is not None:
            perf.close()


def _sample(args: argparse.Namespace, pid: int, fmt: str, title: str, perf,
            why_ptrace: str, all_threads: bool) -> int:
    from ..program import Program
    from ..stack.sampler import StackSampler, run, run_perf
    from ..inferior.ptrace import PtraceBackend, Tracer

    args.sampler_used = "perf" if perf is not None else "ptrace"
    tracer = perf if perf is not None else Tracer(pid, transient=True)
    backend = PtraceBackend(tracer)
    exe = backend.executable()
    if exe is None:
        raise V8DbgError(f"cannot see process {pid}'s executable (/proc/{pid}/exe): "
                         "it belongs to another user; run v8dbg as that user or as root")
    try:
        prog = Program(backend)
    except V8DbgError as e:
        raise V8DbgError(f"process {pid} ({exe}) is not a node process v8dbg can read: {e}") \
            from None
    prog.check_binary()
    if perf is not None:
        sampler = StackSampler(prog, native=args.native)
        sampler.prepare()
        print(f"v8dbg: profile: sampling process {pid} through perf events (a CPU-clock "
              f"event per thread, {args.rate:g} Hz of its CPU time): it never stops",
              file=sys.stderr, flush=True)
        prof = run_perf(perf, sampler, backend, args.rate, args.duration, all_threads)
        exit_status = None
    else:
        assert isinstance(tracer, Tracer)
        sampler = StackSampler(prog, native=args.native, pump=tracer.pump)
        sampler.prepare()
        _prefer_cpu()
        tracer.attach(all_threads=all_threads)
        print(f"v8dbg: profile: sampling process {pid} through ptrace ({why_ptrace}): each "
              "sample stops a thread for microseconds, then detaches", file=sys.stderr,
              flush=True)
        prof = run(tracer, sampler, backend, args.rate, args.duration,
                   all_threads=all_threads, idle=args.idle)
        exit_status = tracer.exit_status

    status = 0
    if prof.stop_reason == "exited":
        why = f" ({exit_status})" if exit_status else ""
        print(f"v8dbg: process {pid} exited{why} after {prof.elapsed:.2f} s of sampling; "
              f"writing the {prof.samples} samples taken", file=sys.stderr)
        status = 1
    elif prof.stop_reason == "interrupted" and args.duration is not None:
        status = 130  # cut short: what was taken is still written
    text = profile_output.render(prof, fmt, title)
    if args.output:
        try:
            profile_output.write(text, args.output)
        except OSError as e:
            raise V8DbgError(f"cannot write {args.output}: {e.strerror}") from None
    else:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
    print(summary(prof, args), file=sys.stderr)
    return status


def _prefer_cpu() -> None:
    """Ask for a better scheduling priority, when allowed (root, CAP_SYS_NICE).

    A sampled thread stays stopped until the profiler gets a CPU to resume
    it; on a busy machine that wait, not the sampling, dominates the time
    the target is held.
    """
    try:
        os.setpriority(os.PRIO_PROCESS, 0, max(os.getpriority(os.PRIO_PROCESS, 0) - 10, -20))
    except OSError:
        pass


def summary(prof, args: argparse.Namespace) -> str:
    held = sorted(prof.held_ns)
    if held:
        med = statistics.median(held) / 1000.0
        p99 = held[min(len(held) - 1, int(len(held) * 0.99))] / 1000.0
        share = 100.0 * sum(held) / 1e9 / prof.elapsed if prof.elapsed > 0 else 0.0
        hold = (f"target held per sample: median {med:.0f} µs, p99 {p99:.0f} µs "
                f"({share:.2f}% of the time)")
    else:
        hold = "no sample held the target"
        if getattr(args, "sampler_used", None) == "perf":
            hold += " (perf events)"
    rate = prof.ticks / prof.elapsed if prof.elapsed > 0 else 0.0
    threads = len(prof.threads)
    who = f" of {threads} threads" if threads > 1 else ""
    line = (f"v8dbg: profile: {prof.samples} samples{who} in {prof.elapsed:.2f} s "
            f"({rate:.1f} Hz achieved, {args.rate:g} Hz asked); {hold}")
    if prof.cpu_seconds:
        line += (f"; the sampled threads ran {prof.cpu_seconds:.2f} s on a CPU "
                 f"({prof.samples / prof.cpu_seconds:.1f} samples per CPU second)")
    if prof.skipped_off_cpu:
        line += f"; {prof.skipped_off_cpu} off-CPU samples skipped"
        if not prof.samples:
            line += " (the process was idle: --idle samples it anyway)"
    if prof.waiting:
        line += (f"; {prof.waiting} ticks skipped, the thread waiting for a CPU since its "
                 "last sample (a busy machine)")
    if prof.failed:
        line += f"; {prof.failed} samples failed"
    return line


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
