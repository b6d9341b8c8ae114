"""`v8dbg catch`: stop a running node process the moment a system call
fails the asked way, print its JS stack, write a core, and let it run on.

A BPF program on the call's exit tracepoint, filtered in the kernel by pid
and return value, sends SIGSTOP from inside the failing call
(bpf_send_signal): the process stops on its way back to user space, at the
instruction after the call, not some calls later. Then gdb writes the core,
the process is continued, and the stack is read from the core with the same
decoders as `jsstack --core`.
"""

from __future__ import annotations

import argparse
import errno as errno_mod
import json
import os
import signal
import sys
import time

from ..errors import V8DbgError
from .standalone import Parser, run

USAGE = "catch --pid PID --syscall NAME [--errno E] [--core FILE] [--count N] [--json]"
SUMMARY = "stop a running node process when a system call fails, write a core, let it run on"
STOP_WAIT = 5.0
RELEASE_WAIT = 5.0  # seconds to watch for a stop the probe sent as bpftrace ended


def parser() -> argparse.ArgumentParser:
    p = Parser("catch", USAGE, description=(
        "Wait until the process's system call NAME fails (with errno E, or "
        "any error), stop it right there, print its JavaScript stack, write a "
        "core (sparse) and let it run on; with --count N, the first N times. "
        "The filter runs in the kernel (BPF, through bpftrace); needs root."))
    p.add_argument("--pid", type=int, required=True, help="the node process")
    p.add_argument("--syscall", required=True, metavar="NAME",
                   help="the system call, as the kernel names it (close, openat, connect...)")
    p.add_argument("--errno", metavar="E", help="only this error (EBADF or its number)")
    p.add_argument("--core", metavar="FILE",
                   help="where to write the core (default core.PID; the Nth of --count "
                        "N gets .N added from the second on)")
    p.add_argument("--count", type=int, default=1, metavar="N",
                   help="catch the first N failures (default 1)")
    p.add_argument("--duration", type=float, metavar="S",
                   help="give up after S seconds (default: wait until Ctrl-C)")
    p.add_argument("--json", action="store_true",
                   help="one JSON line per catch: {pid, tid, syscall, errno, core}")
    return p


def main(argv: list[str]) -> int:
    """Run the catch command; returns the exit status."""
    p = parser()

    def check(args: argparse.Namespace) -> None:
        try:
            args.errno_code = errno_number(args.errno) if args.errno else None
        except V8DbgError as e:
            raise p.problem(str(e)) from None
        if args.count < 1:
            raise p.problem("--count must be 1 or more")
        if not args.syscall.replace("_", "").isalnum():
            raise p.problem(f"--syscall {args.syscall!r} is not a system call name")
    return run(p, argv, lambda args: _catch(args, args.errno_code), check)


def errno_number(text: str) -> int:
    """EBADF or 9 -> 9."""
    if text.isdigit():
        return int(text)
    code = getattr(errno_mod, text.upper(), None)
    if not isinstance(code, int):
        raise V8DbgError(f"--errno {text}: no such error name (EBADF, ENOENT, ... or a number)")
    return code


def program(pid: int, syscall: str, code: int | None, count: int) -> str:
    cond = f"args->ret == -{code}" if code is not None else "args->ret < 0 && args->ret > -4096"
    return f"""
tracepoint:syscalls:sys_exit_{syscall} /pid == {pid} && {cond} && @caught < {count}/ {{
  signal("SIGSTOP");
  @caught = @caught + 1;
  printf("%d %d\\n", tid, -args->ret);
}}
END {{ clear(@caught); }}
"""


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read(512)
    except OSError:
        return False
    at = data.rfind(b")")
    return data[at + 2:at + 3] in (b"T", b"t")


def _catch(args: argparse.Namespace, code: int | None) -> int:
    from ..inferior.bpftrace import TRACEFS, check_privileges, engine, ensure_tracefs
    from ..inferior.corewrite import gcore
    from ..inferior.watchdog import Watchdog, release
    from . import trace

    pid = args.pid
    engine()
    check_privileges()
    exe = trace.target_binary(pid)
    note = ensure_tracefs()
    if note:
        print(f"v8dbg: {note}", file=sys.stderr)
    if not os.path.isdir(os.path.join(TRACEFS, "events", "syscalls", f"sys_exit_{args.syscall}")):
        raise V8DbgError(f"no system call {args.syscall} with an exit tracepoint on this kernel")
    base = os.path.abspath(args.core or f"core.{pid}")
    caught: list[dict] = []

    def on_lines(lines: list[str]) -> bool:
        for ln in lines:
            parts = ln.split()
            if len(parts) != 2:
                continue
            tid, err = int(parts[0]), int(parts[1])
            n = len(caught) + 1
            path = base if n == 1 else f"{base}.{n}"
            deadline = time.monotonic() + STOP_WAIT
            while not _stopped(pid) and time.monotonic() < deadline:
                time.sleep(0.001)
            try:
                gcore(pid, path)
            finally:
                _resume(pid)
            name = errno_mod.errorcode.get(err, str(err))
            hit = {"pid": pid, "tid": tid, "syscall": args.syscall, "errno": name, "core": path}
            caught.append(hit)
            if args.json:
                print(json.dumps(hit))
            else:
                print(f"v8dbg: {args.syscall}() failed with {name} in thread {tid}; core "
                      f"written to {path}; process {pid} continued")
                sys.stdout.flush()
                print(jsstack_of_core(path, exe))
            sys.stdout.flush()
        return len(caught) >= args.count

    # If this process dies with the target stopped (SIGKILL while the core
    # is written), the watchdog continues it once bpftrace and gdb are gone.
    dog = Watchdog(pid)
    failed: V8DbgError | None = None
    continued = False
    try:
        _out, why, elapsed = trace.run_program(pid, program(pid, args.syscall, code, args.count),
                                               args.duration, unsafe=True, syscalls=True,
                                               on_lines=on_lines, on_start=dog.watch)
    except V8DbgError as e:
        failed = e
    finally:
        if len(caught) < args.count:
            # The probe was still armed as bpftrace ended (it died, the time
            # ran out, Ctrl-C): a last hit may have stopped the target with
            # nothing left to write its core and continue it. Never leave it
            # stopped, also when the stop lands a moment later.
            continued = release(pid, [], time.monotonic() + RELEASE_WAIT)
        elif _stopped(pid):
            _resume(pid)
        dog.done()
    if failed is not None:
        if continued:
            raise V8DbgError(f"{failed} while catching {args.syscall}(); process {pid} was "
                             f"continued from the failing call it was stopped at, without a "
                             f"core ({len(caught)} of {args.count} caught)")
        raise failed
    if len(caught) < args.count:
        what = f"{args.syscall}() failing" + (f" with {args.errno}" if args.errno else "")
        if why == "exited":
            print(f"v8dbg: process {pid} exited after {elapsed:.2f} s; {len(caught)} of "
                  f"{args.count} {what} caught", file=sys.stderr)
            return 1
        if why in ("interrupted", "terminated"):
            return 130
        print(f"v8dbg: no {what} in {elapsed:.2f} s ({len(caught)} of {args.count} caught)",
              file=sys.stderr)
        return 1
    return 0


def jsstack_of_core(core: str, binary: str) -> str:
    """`jsstack` of the core just written, as `v8dbg jsstack --core` prints it."""
    from ..inferior.corefile import CoreBackend
    from ..inferior.solibs import SearchPath
    from . import load_all
    from .base import Session
    load_all()
    box: list = []

    def factory():
        if not box:
            box.append(CoreBackend(core, binary, SearchPath.parse(None, None)))
        return box[0]

    text, _ok = Session(factory, binary).run("jsstack", [])
    return text


def _resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass
