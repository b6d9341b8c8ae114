"""A process that outlives the tool and lets a stopped target run on.

`catch` stops its target with SIGSTOP from the kernel and resumes it after
the core is written. If the tool dies in between (SIGKILL, the OOM killer),
nothing of it is left to send SIGCONT. So before the probe is attached, a
small watchdog is started in a session of its own: it holds the read end of
a pipe whose only writer is the tool. The kernel closes that writer however
the tool dies; the watchdog then reads end-of-file, waits until the tool's
stopping machinery is gone (the bpftrace that could stop the target again,
a gdb still attached writing a core), and continues the target if it is
stopped. Every wait is bounded.

Protocol on the pipe: lines `watch PID` (a helper process that can still
stop or hold the target: wait for it to end) and `done` (the tool finished
on its own path: exit without acting).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

# How long after the tool died the watchdog keeps looking: a gdb writing a
# big core may hold the target that long (corewrite.GCORE_TIMEOUT), then a
# quiet spell shows nothing is left to stop it again.
HELPERS_WAIT = 330.0
QUIET = 0.5
POLL = 0.02


def status(pid: int) -> tuple[str, int] | None:
    """(state letter, tracer pid) of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            text = fh.read()
    except OSError:
        return None
    state, tracer = "?", 0
    for ln in text.splitlines():
        if ln.startswith("State:"):
            state = ln.split()[1]
        elif ln.startswith("TracerPid:"):
            tracer = int(ln.split()[1])
    return None if state in ("Z", "X") else (state, tracer)


def _alive(pid: int) -> bool:
    st = status(pid)
    return st is not None


def release(target: int, helpers: list[int], deadline: float) -> bool:
    """Wait for the helpers to end (SIGTERM, then SIGKILL, to those still
    running after 5 s: they are the dead tool's), continuing the target
    whenever it is stopped and no debugger holds it (a gdb writing a core
    is waited for, not killed), until it has run untraced and unstopped
    for QUIET seconds with no helper left. True if it had to continue it."""
    asked = time.monotonic()
    quiet_since: float | None = None
    continued = False
    while time.monotonic() < deadline:
        helpers = [h for h in helpers if _alive(h)]
        for h in helpers:
            if time.monotonic() - asked > 5.0:
                try:
                    os.kill(h, signal.SIGKILL if time.monotonic() - asked > 10.0 else signal.SIGTERM)
                except ProcessLookupError:
                    pass
        st = status(target)
        if st is None:
            return continued
        state, tracer = st
        if state in ("T", "t") and tracer == 0:
            try:
                os.kill(target, signal.SIGCONT)
            except ProcessLookupError:
                return continued
            continued = True
            quiet_since = None
        elif state not in ("T", "t") and tracer == 0 and not helpers:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= QUIET:
                return continued
        else:
            quiet_since = None
        time.sleep(POLL)
    return continued


def main(argv: list[str]) -> int:
    """`python -m v8dbg.inferior.watchdog TARGET FD`: read FD until EOF."""
    target, fd = int(argv[0]), int(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the tool's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    helpers: list[int] = []
    buf = b""
    while True:
        try:
            data = os.read(fd, 4096)
        except InterruptedError:
            continue
        if not data:
            break
        buf += data
        *lines, buf = buf.split(b"\n")
        for ln in lines:
            word = ln.split()
            if word[:1] == [b"done"]:
                return 0
            if word[:1] == [b"watch"] and len(word) == 2 and word[1].isdigit():
                helpers.append(int(word[1]))
    release(target, helpers, time.monotonic() + HELPERS_WAIT)
    return 0


class Watchdog:
    """The tool's side: start it, name helpers to it, say done."""

    def __init__(self, target: int) -> None:
        r, self._w = os.pipe()
        os.set_inheritable(r, True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "v8dbg.inferior.watchdog", str(target), str(r)],
            pass_fds=(r,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        os.close(r)
        # Only the tool writes: children it starts later must not hold the pipe open.
        os.set_inheritable(self._w, False)

    def watch(self, pid: int) -> None:
        """A process that can stop or hold the target: wait for its end."""
        self._send(f"watch {pid}\n")

    def done(self) -> None:
        """The tool has let the target go itself: the watchdog just exits."""
        self._send("done\n")
        try:
            os.close(self._w)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _send(self, text: str) -> None:
        try:
            os.write(self._w, text.encode())
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
