"""Running one bpftrace program against one process, and always stopping it.

bpftrace (from the distribution) is the engine: it compiles the program,
attaches each uprobe with perf_event_open for this pid only, keeps the maps
in the kernel and prints them as JSON when asked to stop. Its probes live as
long as its file descriptors, so they go when it exits, however it exits;
PR_SET_PDEATHSIG makes it exit when we do.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from ..errors import V8DbgError

PR_SET_PDEATHSIG = 1
# Lines bpftrace 0.17 prints that say nothing about this run: a memlock limit
# it no longer needs (the kernel accounts BPF memory by cgroup), and a
# detach it attempts through tracefs for probes it made with perf_event_open.
_NOISE = ("RLIMIT_MEMLOCK", "uprobe_events", "failed to detach probe", "kprobe_events")
ATTACH_TIMEOUT = 60.0
_READY = "@@v8dbg-attached@@"
STOP_TIMEOUT = 20.0
MAX_EVENTS = 1_000_000


@dataclass
class Output:
    """What the program left: its maps by name, printf lines, and counts."""
    maps: dict[str, object] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    lines_dropped: int = 0  # printf lines past MAX_EVENTS
    lost: int = 0  # events the kernel could not hand over (bpftrace's own count)


def engine() -> str:
    """The bpftrace to run, or one clear error."""
    path = os.environ.get("V8DBG_BPFTRACE") or shutil.which("bpftrace")
    if not path:
        raise V8DbgError("tracing needs bpftrace (the distribution's package: "
                         "`apt-get install bpftrace`); it is not on PATH")
    return path


def check_privileges() -> None:
    """Root, or CAP_BPF with CAP_PERFMON; otherwise one clear error."""
    if os.geteuid() == 0:
        return
    try:
        with open("/proc/self/status") as fh:
            eff = next(int(ln.split()[1], 16) for ln in fh if ln.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError):
        eff = 0
    cap_perfmon, cap_bpf = 38, 39
    if eff & (1 << cap_bpf) and eff & (1 << cap_perfmon):
        return
    raise V8DbgError("tracing needs root (or CAP_BPF and CAP_PERFMON): it loads BPF "
                     "programs and uprobes; run it with sudo")


TRACEFS = "/sys/kernel/tracing"


def ensure_tracefs() -> str | None:
    """Mount tracefs when it is not (bpftrace reads tracepoint formats there);
    returns a note saying so, or None when it was there."""
    if os.path.isdir(os.path.join(TRACEFS, "events")):
        return None
    r = subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True,
                       text=True)
    if r.returncode != 0 or not os.path.isdir(os.path.join(TRACEFS, "events")):
        raise V8DbgError(f"system-call tracepoints need tracefs at {TRACEFS}, and it could not "
                         f"be mounted: {(r.stderr or r.stdout).strip()[:200]}")
    return f"mounted tracefs at {TRACEFS} (bpftrace reads the system-call tracepoints there)"


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    os.setsid()  # our Ctrl-C is ours to pass on, after the maps are read


class Run:
    """One bpftrace process: started attached, read while it runs, stopped."""

    def __init__(self, program: str, pid: int, unsafe: bool = False) -> None:
        self.pid = pid
        self.out = Output()
        self._err: list[str] = []
        self._buf = b""
        self._ebuf = b""
        self._ended = False
        self.attached = False
        self.probes = 0
        argv = [engine(), "-f", "json", "-p", str(pid)]
        if unsafe:
            argv.append("--unsafe")
        # bpftrace says "attached" before it attaches; BEGIN runs once it has.
        argv += ["-e", 'BEGIN { printf("%s\\n", "' + _READY + '"); }\n' + program]
        env = dict(os.environ, BPFTRACE_STRLEN="64", BPFTRACE_MAP_KEYS_MAX="65536")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env,
                                     preexec_fn=_die_with_parent)
        os.set_blocking(self.proc.stdout.fileno(), False)  # type: ignore[union-attr]
        os.set_blocking(self.proc.stderr.fileno(), False)  # type: ignore[union-attr]

    # -- reading -------------------------------------------------------------

    def _take(self, timeout: float) -> list[dict]:
        """JSON documents bpftrace printed within `timeout` seconds."""
        fds = [self.proc.stdout, self.proc.stderr]
        ready, _, _ = select.select(fds, [], [], timeout)
        docs: list[dict] = []
        for f in ready:
            try:
                data = os.read(f.fileno(), 1 << 16)  # type: ignore[union-attr]
            except BlockingIOError:
                continue
            if f is self.proc.stderr:
                # Whole lines only: a read may end mid-line, and the noise is
                # told by what its line holds.
                self._ebuf += data
                *whole, self._ebuf = self._ebuf.split(b"\n")
                if not data and self._ebuf:
                    whole, self._ebuf = [*whole, self._ebuf], b""
                self._err += [t for t in (ln.decode("utf-8", "replace") for ln in whole)
                              if t.strip() and not any(n in t for n in _NOISE)]
                continue
            if not data:
                self._ended = True
                continue
            self._buf += data
            *whole, self._buf = self._buf.split(b"\n")
            for ln in whole:
                if ln.strip():
                    try:
                        docs.append(json.loads(ln))
                    except ValueError:
                        self._err.append(ln.decode("utf-8", "replace"))
        for d in docs:
            self._keep(d)
        return docs

    def _keep(self, doc: dict) -> None:
        kind = doc.get("type")
        if kind in ("map", "hist", "stats"):
            self.out.maps.update(doc.get("data") or {})
        elif kind == "printf":
            if str(doc.get("data", "")).strip() == _READY:
                self.attached = True
            elif len(self.out.lines) < MAX_EVENTS:
                self.out.lines.append(str(doc.get("data", "")))
            else:
                self.out.lines_dropped += 1
        elif kind == "lost_events":
            self.out.lost += int((doc.get("data") or {}).get("events", 0))

    def wait_attached(self) -> int:
        """Block until every probe is attached; returns how many."""
        deadline = time.monotonic() + ATTACH_TIMEOUT
        while time.monotonic() < deadline:
            for d in self._take(0.2):
                if d.get("type") == "attached_probes":
                    self.probes = int((d.get("data") or {}).get("probes", 0))
            if self.attached:
                return self.probes
            if self.proc.poll() is not None:
                self._take(0)
                raise V8DbgError(self.failure())
        self.stop()
        raise V8DbgError(f"bpftrace did not attach within {ATTACH_TIMEOUT:.0f} s")

    def poll(self, timeout: float) -> list[str]:
        """printf lines that came within `timeout` seconds (they are kept too)."""
        before = len(self.out.lines)
        self._take(timeout)
        return self.out.lines[before:]

    def running(self) -> bool:
        return self.proc.poll() is None

    def failure(self) -> str:
        """Why bpftrace stopped, in one line."""
        tail = self._ebuf.decode("utf-8", "replace")
        err = " ".join([*self._err, *([tail] if not any(n in tail for n in _NOISE) else [])])
        err = err.strip()
        low = err.lower()
        if "operation not permitted" in low or "permission denied" in low:
            return ("BPF is not permitted here (a container without CAP_BPF/CAP_PERFMON, "
                    f"or kernel.unprivileged_bpf_disabled): {err[:300]}")
        if process_gone(self.pid):
            return f"process {self.pid} exited"
        rc = self.proc.returncode
        if not err and rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"bpftrace was killed ({name})"
        return f"bpftrace failed: {err[:400] or f'exit status {rc}'}"

    # -- stopping ------------------------------------------------------------

    def stop(self) -> Output:
        """Ask bpftrace to print its maps and exit; kill it if it will not."""
        # bpftrace 0.17 now and then misses a SIGINT (it arrives while its
        # event loop is not yet waiting): ask again each second.
        deadline = time.monotonic() + STOP_TIMEOUT
        asked = 0.0
        while time.monotonic() < deadline and not (self._ended and self.proc.poll() is not None):
            if self.proc.poll() is None and time.monotonic() - asked > 1.0:
                asked = time.monotonic()
                try:
                    self.proc.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass
            self._take(0.1)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._take(0)
        return self.out


def process_gone(pid: int) -> bool:
    """True once `pid` has exited (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read(512)
    except OSError:
        return True
    at = data.rfind(b")")
    return at < 0 or data[at + 2:at + 3] in (b"Z", b"X")
