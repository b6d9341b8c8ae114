"""A running process seen through ptrace: the live backend of the profiler.

Every thread is attached with PTRACE_SEIZE, which neither stops it nor
changes how signals reach it. A sample stops one thread with
PTRACE_INTERRUPT (never SIGSTOP, which the process could see), reads its
registers, copies the top of its stack with one process_vm_readv and lets
it run again at once: the thread is held for the few syscalls in between.
Everything else -- heap objects, code -- is read afterwards, while the
thread runs, with process_vm_readv; reads of the copied stack come from the
copy, so the unwinder sees the stack as it was at the sample.

While attached, a signal sent to a traced thread stops it until the tracer
passes the signal on, so `pump` must run often: the sampler calls it between
samples and waits for SIGCHLD (blocked, taken with sigtimedwait) rather
than sleeping blindly.

With `transient`, no thread stays seized between samples: each sample
seizes the thread, stops it, copies, and detaches (as py-spy does), so a
signal sent to the process between samples reaches it as without us. This
is the fallback where perf events (perf.py) are not allowed.

Only ctypes and the C library: no other dependency.
"""

from __future__ import annotations

import bisect
import ctypes
import errno
import os
import signal
import time
from dataclasses import dataclass

from ..errors import TargetMemoryError, V8DbgError
from .backend import Mapping, Registers, ThreadInfo, proc_map_lines, thread_name
from .disasm import Disassembly, disassemble

PTRACE_CONT = 7
PTRACE_GETREGS = 12
PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_LISTEN = 0x4208
PTRACE_EVENT_STOP = 128
WALL = 0x40000000  # __WALL: wait for clone children (threads) too

_REG_NAMES = ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax "
              "rip cs eflags rsp ss fs_base gs_base ds es fs gs").split()
_GROUP_STOP_SIGNALS = (signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)

MAX_STACK_COPY = 1 << 20  # V8 limits a JS stack to ~1 MB; deeper frames are not walked
STOP_TIMEOUT = 2.0  # seconds to wait for an interrupted thread to stop
SPIN_POLLS = 20  # waitpid polls before sleeping on SIGCHLD
SYNC_WAIT = 0.002  # seconds a sample waits for its stop before it is left pending
MAX_THREADS = 4096


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _UserRegs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in _REG_NAMES]


_libc = ctypes.CDLL(None, use_errno=True)
_ptrace = _libc.ptrace
_ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
_ptrace.restype = ctypes.c_long
_vm_readv = _libc.process_vm_readv
_vm_readv.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                      ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.c_ulong]
_vm_readv.restype = ctypes.c_ssize_t


def vm_read(pid: int, address: int, size: int, buf: ctypes.Array | None = None) -> bytes | None:
    """`size` bytes of process `pid` at `address` by process_vm_readv, which
    neither stops the process nor needs to trace it (only the permission to);
    None when not all of them can be read. `buf`: a scratch buffer to reuse."""
    if size <= 0 or address < 0 or address + size > 1 << 64:
        return None
    if buf is None or size > len(buf):
        buf = ctypes.create_string_buffer(size)
    local = _IoVec(ctypes.addressof(buf), size)
    remote = _IoVec(address, size)
    if _vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) != size:
        return None
    return ctypes.string_at(ctypes.addressof(buf), size)


def _call(request: int, tid: int, addr: int = 0, data: int = 0) -> int:
    """ptrace(2); returns 0 or the errno."""
    ctypes.set_errno(0)
    r = _ptrace(request, tid, addr, data)
    return ctypes.get_errno() if r == -1 else 0


class TargetGone(V8DbgError):
    """The traced process exited (or was killed) while we were attached."""


@dataclass
class Snapshot:
    """One thread at one instant: registers and a copy of its stack's top."""

    tid: int
    regs: Registers
    stack_base: int  # address of stack[0]
    stack: bytes
    held_ns: int  # from the thread seen stopped to it running again
    time: float  # monotonic seconds when taken
    on_cpu: bool = True  # running or runnable when the sample was asked for


@dataclass
class _Thread:
    tid: int
    stat_fd: int | None = None
    stack: tuple[int, int] | None = None  # the mapping holding its stack pointer
    signal_pending: int = 0  # a signal it stopped with, to hand back when resumed
    stopped: bool = False  # in a ptrace stop we took for a sample, not yet resumed
    want: bool = False  # interrupted, stop not seen yet: sample it when it comes
    want_on_cpu: bool = True
    stale: bool = False  # an interrupt's stop still to come, after a sample at a signal stop
    last: Snapshot | None = None
    seized: bool = True  # traced now (a transient tracer lets go after each sample)


def permission_hint(pid: int) -> str:
    """Why we may not trace `pid`, and how to allow it."""
    tracer = _status_field(pid, "TracerPid")
    if tracer and tracer != "0":
        return (f"process {pid} is already traced by process {tracer} (a debugger?); "
                "detach it first")
    uid = _status_field(pid, "Uid")
    if uid and os.geteuid() != 0 and uid.split()[0] != str(os.geteuid()):
        return (f"process {pid} belongs to uid {uid.split()[0]}: run v8dbg as that user "
                "or as root")
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as fh:
            scope = fh.read().strip()
    except OSError:
        scope = None
    if scope and scope != "0" and os.geteuid() != 0:
        return (f"kernel.yama.ptrace_scope is {scope}, which forbids tracing a process "
                "that is not our child: run v8dbg as root (or with CAP_SYS_PTRACE), or "
                "allow it with `sudo sysctl kernel.yama.ptrace_scope=0`")
    return ("ptrace was refused (in a container, start it with `--cap-add=SYS_PTRACE`, "
            "and a seccomp profile that allows ptrace; on a host, run v8dbg as root)")


def _status_field(pid: int, name: str) -> str | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(name + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def thread_ids(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if t.isdigit())[:MAX_THREADS]
    except OSError:
        return []


def process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, D, Z, ...), None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read(1024)
    except OSError:
        return None
    return _state_of(data)


def _state_of(data: bytes) -> str | None:
    at = data.rfind(b")")
    if at < 0 or at + 2 >= len(data):
        return None
    return chr(data[at + 2])


class Tracer:
    """The threads of one process, seized with ptrace, sampled one at a time.

    Must be used from the thread that created it (ptrace requests come from
    the attaching thread), and SIGCHLD must stay blocked in that thread.
    """

    def __init__(self, pid: int, transient: bool = False) -> None:
        self.pid = pid
        self.transient = transient
        self.threads: dict[int, _Thread] = {}
        self.released: set[int] = set()  # threads let go for good: not JavaScript threads
        self.exited = False
        self.exit_status: str | None = None
        self._maps: list[tuple[int, int]] = []
        self._maps_time = 0.0
        self._buf = ctypes.create_string_buffer(MAX_STACK_COPY)
        self.ready: list[Snapshot] = []
        self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})

    # -- attaching --------------------------------------------------------

    def attach(self, all_threads: bool = False) -> None:
        """Seize the main thread (and, with `all_threads`, every other one);
        raise one clear error when we may not."""
        if not thread_ids(self.pid):
            raise V8DbgError(f"no process {self.pid}")
        err = _call(PTRACE_SEIZE, self.pid)
        if err == errno.EPERM:
            raise V8DbgError(f"cannot trace process {self.pid}: {permission_hint(self.pid)}")
        if err == errno.ESRCH:
            raise V8DbgError(f"no process {self.pid}")
        if err:
            raise V8DbgError(f"cannot trace process {self.pid}: {os.strerror(err)}")
        self._add(self.pid)
        if all_threads:
            self.refresh_threads()

    def alive(self) -> bool:
        """False once the process has exited (a zombie counts as exited)."""
        if self.exited:
            return False
        return process_state(self.pid) not in (None, "Z", "X")

    def release(self, tid: int) -> None:
        """Stop tracing one thread (one we will not sample)."""
        if tid in self.threads and tid != self.pid:
            self._detach_one(tid)
            self.released.add(tid)

    def refresh_threads(self) -> list[int]:
        """Seize threads started since the last look; returns the new ones."""
        new = []
        for tid in thread_ids(self.pid):
            if tid in self.threads or tid in self.released:
                continue
            if _call(PTRACE_SEIZE, tid) == 0:
                self._add(tid)
                new.append(tid)
        return new

    def _add(self, tid: int) -> None:
        th = _Thread(tid)
        try:
            th.stat_fd = os.open(f"/proc/{self.pid}/task/{tid}/stat", os.O_RDONLY)
        except OSError:
            th.stat_fd = None
        self.threads[tid] = th

    def thread_name(self, tid: int) -> str | None:
        return thread_name(self.pid, tid)

    def on_cpu(self, tid: int) -> bool:
        """True when the thread is running or runnable (state R), not blocked."""
        th = self.threads.get(tid)
        if th is None or th.stat_fd is None:
            return False
        try:
            data = os.pread(th.stat_fd, 512, 0)
        except OSError:
            return False
        return _state_of(data) == "R"

    # -- events -------------------------------------------------------------

    def pump(self) -> None:
        """Handle every stop and exit the kernel has queued for us (never blocks)."""
        for _ in range(100000):
            try:
                tid, status = os.waitpid(-1, WALL | os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if tid == 0:
                return
            self._event(tid, status, sampling=False)

    def wait_events(self, timeout: float) -> None:
        """Sleep until the next ptrace event or `timeout` seconds, then pump."""
        if timeout > 0:
            try:
                signal.sigtimedwait([signal.SIGCHLD], timeout)
            except InterruptedError:
                pass
        self.pump()

    def _event(self, tid: int, status: int, sampling: bool) -> str:
        """Act on one wait status; returns what it was: gone, group, other, or,
        when `sampling` (the thread is left stopped): trap (our interrupt) or
        signal (a signal on its way, kept to pass on when it is resumed)."""
        th = self.threads.get(tid)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            self._forget(tid)
            if tid == self.pid:
                self.exited = True
                self.exit_status = (f"exited with status {os.WEXITSTATUS(status)}"
                                    if os.WIFEXITED(status) else
                                    f"was killed by signal {os.WTERMSIG(status)}")
            return "gone"
        if not os.WIFSTOPPED(status):
            return "other"
        sig = os.WSTOPSIG(status)
        event = status >> 16
        if event == PTRACE_EVENT_STOP:
            if sig in _GROUP_STOP_SIGNALS:
                # Stopped by a stop signal: it stays stopped, as without us.
                _call(PTRACE_LISTEN, tid)
                return "group"
            if sampling:
                return "trap"
            if th is not None and th.want:  # a sample left pending: take it now
                th.want = False
                snap = self._snapshot(th, "trap", th.want_on_cpu)
                if snap is not None:
                    self.ready.append(snap)
                return "other"
            if th is not None:
                th.stale = False
            _call(PTRACE_CONT, tid, 0, 0)  # an interrupt we no longer need
            return "other"
        if event == 0:
            # A signal on its way to the thread: pass it on (after a sample if we wanted one).
            if th is not None:
                th.signal_pending = sig
            if sampling:
                return "signal"
            if th is not None and th.want:
                th.want = False
                snap = self._snapshot(th, "signal", th.want_on_cpu)
                if snap is not None:
                    self.ready.append(snap)
                return "other"
            if th is not None:
                th.signal_pending = 0
            _call(PTRACE_CONT, tid, 0, sig)
            return "other"
        _call(PTRACE_CONT, tid, 0, 0)
        return "other"

    def _forget(self, tid: int) -> None:
        th = self.threads.pop(tid, None)
        if th is not None and th.stat_fd is not None:
            try:
                os.close(th.stat_fd)
            except OSError:
                pass

    def _wait_stop(self, tid: int, timeout: float, sampling: bool) -> str:
        """Wait for `tid` to stop; other threads' events are handled meanwhile."""
        deadline = time.monotonic() + timeout
        spins = 0
        while True:
            try:
                got, status = os.waitpid(tid, WALL | os.WNOHANG)
            except ChildProcessError:
                self._forget(tid)
                return "gone"
            except InterruptedError:
                continue
            if got == tid:
                what = self._event(tid, status, sampling)
                if what != "other":
                    return what
                continue
            spins += 1
            if spins < SPIN_POLLS:
                continue  # a running thread stops within microseconds: poll first
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            try:
                signal.sigtimedwait([signal.SIGCHLD], min(left, 0.05))
            except InterruptedError:
                pass

    # -- sampling -------------------------------------------------------------

    def sample(self, tid: int, on_cpu: bool = True,
               wait: float = SYNC_WAIT) -> Snapshot | None:
        """Stop one thread, copy its registers and stack top, let it run on.

        A thread on a CPU stops within microseconds. One waiting for a CPU
        stops only when it gets one: after `wait` seconds the sample is left
        pending and taken when the stop comes (see `take_ready`). None when
        the thread is gone, stopped by a signal, pending, or still has a stop
        of an earlier sample to come.
        """
        th = self.threads.get(tid)
        if th is None or th.want or th.stale:
            return None
        if not th.seized:
            err = _call(PTRACE_SEIZE, tid)
            if err:
                if err == errno.ESRCH:
                    self._reap(tid)
                return None
            th.seized = True
        err = _call(PTRACE_INTERRUPT, tid)
        if err:
            if err == errno.ESRCH:
                self._reap(tid)
            return None
        what = self._wait_stop(tid, wait, sampling=True)
        if what == "timeout":
            th.want, th.want_on_cpu = True, on_cpu
            return None
        if what not in ("trap", "signal"):
            return None
        return self._snapshot(th, what, on_cpu)

    def pending(self, tid: int) -> bool:
        th = self.threads.get(tid)
        return th is not None and (th.want or th.stale)

    def take_ready(self) -> list[Snapshot]:
        """Samples taken since the last call for threads that stopped late."""
        out, self.ready = self.ready, []
        return out

    def _snapshot(self, th: _Thread, what: str, on_cpu: bool) -> Snapshot | None:
        """The thread is in a ptrace stop: copy, resume, and only then build the sample."""
        # Held from here: a thread that was waiting for a CPU when interrupted
        # stops only once it gets one, and was not held by us meanwhile.
        t0 = time.perf_counter_ns()
        tid = th.tid
        # At a signal-delivery stop the registers are still those of the
        # interrupted code: as good a sample as our own stop.
        th.stopped = True
        regs = _UserRegs()
        err = _call(PTRACE_GETREGS, tid, 0, ctypes.addressof(regs))
        base = copied = 0
        if not err:
            base, copied = self._copy_stack(th, regs.rsp)
        sig, th.signal_pending = th.signal_pending, 0
        if self.transient:
            # Let go: the interrupt still pending after a signal stop goes with us.
            _call(PTRACE_DETACH, tid, 0, sig)
            th.seized = False
        else:
            _call(PTRACE_CONT, tid, 0, sig)
        th.stopped = False
        if what == "signal" and th.seized:
            # Our interrupt is still pending: it stops the thread again once the
            # handler is set up. That stop is no sample (pump lets it go); until
            # it has come, the thread is not interrupted again.
            th.stale = True
        held = time.perf_counter_ns() - t0
        if err:
            return None
        # The copy leaves the shared buffer only now, with the thread running again.
        data = ctypes.string_at(ctypes.addressof(self._buf), copied) if copied > 0 else b""
        snap = Snapshot(tid, Registers(regs.rip, regs.rsp, regs.rbp), base, data, held,
                        time.monotonic(), on_cpu)
        th.last = snap
        return snap

    def _reap(self, tid: int) -> None:
        try:
            got, status = os.waitpid(tid, WALL | os.WNOHANG)
            if got == tid:
                self._event(tid, status, sampling=False)
                return
        except ChildProcessError:
            pass
        if not os.path.exists(f"/proc/{self.pid}/task/{tid}"):
            self._forget(tid)

    def _stack_region(self, th: _Thread, sp: int) -> tuple[int, int] | None:
        if th.stack is not None and th.stack[0] <= sp < th.stack[1]:
            return th.stack
        now = time.monotonic()
        if not self._maps or now - self._maps_time > 0.5:
            self._maps = [(lo, hi) for lo, hi, perms, _o, _p in proc_map_lines(self.pid)
                          if perms.startswith("rw")]
            self._maps_time = now
        starts = [lo for lo, _ in self._maps]
        i = bisect.bisect_right(starts, sp) - 1
        if i >= 0 and self._maps[i][0] <= sp < self._maps[i][1]:
            th.stack = self._maps[i]
            return th.stack
        return None

    def _copy_stack(self, th: _Thread, sp: int) -> tuple[int, int]:
        """One read into the shared buffer: from the page holding sp to the end of
        its mapping (capped); returns (address copied from, bytes copied)."""
        base = sp & ~0xFFF
        region = self._stack_region(th, sp)
        end = min(region[1], base + MAX_STACK_COPY) if region else base + 64 * 1024
        return base, self.read_into(base, end - base)

    def read_into(self, address: int, size: int) -> int:
        """process_vm_readv into the shared buffer; the bytes read (partial ok)."""
        size = min(size, MAX_STACK_COPY)
        local = _IoVec(ctypes.addressof(self._buf), size)
        remote = _IoVec(address, size)
        return _vm_readv(self.pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)

    # -- detaching ------------------------------------------------------------

    def detach(self) -> None:
        """Let every thread go, running as before; SIGCHLD is unblocked again."""
        try:
            for tid in list(self.threads):
                self._detach_one(tid)
            self.pump()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)

    def _detach_one(self, tid: int) -> None:
        """A thread must be in a ptrace stop to detach: stop it first."""
        th = self.threads.get(tid)
        if th is None:
            return
        if not th.seized:
            what = "released"
        elif th.stopped:
            what = "trap"
        elif _call(PTRACE_INTERRUPT, tid) == 0:
            what = self._wait_stop(tid, STOP_TIMEOUT, sampling=True)
        else:
            what = "gone"
        if what in ("trap", "signal", "group"):
            # A signal it stopped with is delivered as we let go.
            _call(PTRACE_DETACH, tid, 0, th.signal_pending)
        th.stopped = False
        self._forget(tid)


class PtraceBackend:
    """The Backend interface over a Tracer: memory by process_vm_readv.

    While a snapshot is in use, every byte its stack copy holds is read from
    the copy (a read that spans more takes the rest from the process); every
    other read goes to the running process.
    """

    kind = "ptrace"
    live = True

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self._pid = tracer.pid
        self._snap: Snapshot | None = None
        self._maps: list[Mapping] | None = None
        self._buf = ctypes.create_string_buffer(1 << 16)
        try:
            self._exe: str | None = os.readlink(f"/proc/{self._pid}/exe")
        except OSError:
            self._exe = None
        if self._exe and self._exe.endswith(" (deleted)"):
            self._exe = self._exe[:-len(" (deleted)")]

    def use(self, snap: Snapshot | None) -> None:
        self._snap = snap

    def read(self, address: int, size: int) -> bytes:
        s = self._snap
        if s is not None and s.stack:
            off = address - s.stack_base
            if 0 <= off and off + size <= len(s.stack):
                return s.stack[off:off + size]
            lo = max(address, s.stack_base)
            hi = min(address + size, s.stack_base + len(s.stack))
            if lo < hi:
                return self._overlaid(s, address, size, lo, hi)
        return self._read_live(address, size)

    def _overlaid(self, s: Snapshot, address: int, size: int, lo: int, hi: int) -> bytes:
        """A read that the stack copy covers in part (the memory layer reads
        whole pages; a perf sample's copy starts at sp, not at a page): the
        copied bytes from the copy, the rest from the process. Otherwise the
        innermost frames, near sp, would be read as the thread has them now."""
        copied = s.stack[lo - s.stack_base:hi - s.stack_base]
        before = self._read_live(address, lo - address) if lo > address else b""
        after = self._read_live(hi, address + size - hi) if address + size > hi else b""
        return before + copied + after

    def _read_live(self, address: int, size: int) -> bytes:
        if size <= 0 or address < 0 or address + size > 1 << 64:
            raise TargetMemoryError(address, max(size, 0), "out of range")
        data = vm_read(self._pid, address, size, self._buf)
        if data is None:
            raise TargetMemoryError(address, size)
        return data

    def threads(self) -> list[ThreadInfo]:
        out = []
        for tid, th in sorted(self.tracer.threads.items()):
            regs = th.last.regs if th.last is not None else None
            out.append(ThreadInfo(tid, self.tracer.thread_name(tid), regs))
        return out

    def selected_thread(self) -> int | None:
        return self._snap.tid if self._snap is not None else self._pid

    def mappings(self) -> list[Mapping]:
        if self._maps is None:
            self._maps = [Mapping(lo, hi, off, path) for lo, hi, _p, off, path
                          in proc_map_lines(self._pid) if path.startswith("/")]
        return self._maps

    def executable(self) -> str | None:
        return self._exe

    def pid(self) -> int | None:
        return self._pid

    def generation(self) -> int:
        return 0

    def disassemble(self, address: int, data: bytes) -> Disassembly:
        return disassemble(address, data)
