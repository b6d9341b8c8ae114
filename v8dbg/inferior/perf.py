"""A running process sampled through the kernel's perf events: it never stops.

Each sampled thread gets a software clock event (PERF_COUNT_SW_CPU_CLOCK,
counting the thread's own time on a CPU) that fires every 1/rate seconds
of it on average (each period drawn at random around that, so that a loop
cannot run in step with the clock). At each firing the kernel writes a sample into a ring buffer we map:
the instruction pointer, the thread, a CLOCK_MONOTONIC time stamp, the user
registers (rip, rsp, rbp: what the unwinder starts from) and a copy of the
top of the user stack. The thread is interrupted for that copy, microseconds,
and is neither stopped nor traced: signals reach it as without us. This is
how `perf record --call-graph dwarf` samples, and what the eBPF profilers
(parca) take in the kernel.

The stack copy is STACK_COPY bytes from the sampled rsp, the most a sample
can hold (a record's size is a 16-bit field). It holds the frames the
profile is about -- the innermost ones -- on any realistic JS stack; frames
beyond it (the outer native frames of the event loop, which do not change
while JavaScript runs above them) are read from the running process, as
heap objects and code are, with process_vm_readv.

Only ctypes, mmap and the C library: no other dependency.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import random
import select
import struct
from dataclasses import dataclass, field
from typing import Any

from ..errors import V8DbgError
from .backend import Registers, thread_name
from .ptrace import Snapshot, thread_ids

SYS_PERF_EVENT_OPEN = 298  # x86-64
PERF_TYPE_SOFTWARE = 1
PERF_COUNT_SW_CPU_CLOCK = 0
SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME, SAMPLE_READ = 1 << 0, 1 << 1, 1 << 2, 1 << 4
SAMPLE_REGS_USER, SAMPLE_STACK_USER = 1 << 12, 1 << 13
SAMPLE_TYPE = (SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_READ | SAMPLE_REGS_USER
               | SAMPLE_STACK_USER)
# perf_event_x86_regs: bp 6, sp 7, ip 8; a sample lists them in that order.
REGS_MASK = (1 << 6) | (1 << 7) | (1 << 8)
# attr flag bits
F_DISABLED, F_EXCLUDE_KERNEL, F_EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
F_USE_CLOCKID = 1 << 25
CLOCK_MONOTONIC = 1
ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER5: up to sample_max_stack
IOC_ENABLE, IOC_DISABLE, IOC_SET_OUTPUT = 0x2400, 0x2401, 0x2405
IOC_PERIOD = 0x40082404  # _IOW('$', 4, u64)
JITTER = 0.25  # each period drawn from [1 - JITTER, 1 + JITTER] times the mean
RECORD_LOST, RECORD_SAMPLE = 2, 9
STACK_COPY = 65528 - 256  # the most a sample may hold, leaving room for its other fields
RING_PAGES = 2048  # 8 MiB per thread: ~128 samples (a record is as long as the copy asked for)
MIN_RING_PAGES = 32
MAX_RECORDS = 10000  # records taken from one ring in one read (the rest at the next)


class _Attr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("config", ctypes.c_uint64), ("sample_period", ctypes.c_uint64),
                ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
                ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64),
                ("config2", ctypes.c_uint64), ("branch_sample_type", ctypes.c_uint64),
                ("sample_regs_user", ctypes.c_uint64), ("sample_stack_user", ctypes.c_uint32),
                ("clockid", ctypes.c_int32), ("sample_regs_intr", ctypes.c_uint64),
                ("aux_watermark", ctypes.c_uint32), ("sample_max_stack", ctypes.c_uint16),
                ("reserved", ctypes.c_uint16)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_ioctl = _libc.ioctl
_ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong]
_ioctl.restype = ctypes.c_int
_PAGE = mmap.PAGESIZE


class PerfUnavailable(V8DbgError):
    """perf events may not be used here; the message says why."""


def _paranoid() -> str | None:
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _why(err: int, pid: int) -> str:
    if err == errno.ENOENT and not os.path.exists("/proc/sys/kernel/perf_event_paranoid"):
        return "this kernel has no perf events"
    if err in (errno.EACCES, errno.EPERM):
        level = _paranoid()
        if level is not None and level not in ("-1", "0", "1", "2") and os.geteuid() != 0:
            return (f"kernel.perf_event_paranoid is {level}: only root (or CAP_PERFMON) "
                    "may sample")
        return (f"perf_event_open was refused: {os.strerror(err)} (in a container, its "
                "seccomp profile must allow perf_event_open, and it needs CAP_PERFMON; "
                f"kernel.perf_event_paranoid is {level})")
    if err == errno.ENOSYS:
        return "perf_event_open is not available (ENOSYS: blocked by seccomp?)"
    if err == errno.ESRCH:
        return f"no process {pid}"
    return f"perf_event_open failed: {os.strerror(err)}"


@dataclass
class _Ring:
    tid: int
    fd: int
    buf: mmap.mmap
    size: int  # bytes of the data area
    last: Snapshot | None = None
    clock: int = -1  # the thread's clock (its CPU ns) at its last sample read
    more: list[int] = field(default_factory=list)  # events writing into this ring too


class PerfSampler:
    """Clock events on chosen threads of one process, their samples as Snapshots.

    Snapshots carry the sampled registers and stack copy, so the ptrace
    backend's reader (process_vm_readv, no attach) serves everything else.
    The rings (one a thread, opened, drained, closed) are the same for any
    event: a subclass changes `_open_fds` and `_sample` (inferior/perf_uprobes.py).
    """

    def __init__(self, pid: int, rate: float) -> None:
        self.pid = pid
        self.period_ns = max(int(1e9 / rate), 10000)
        self.rings: dict[int, _Ring] = {}
        self.lost = 0  # samples the kernel dropped (a ring full) or could not write
        self.released: set[int] = set()
        self.exclude_kernel = False
        self.pages = RING_PAGES
        self.started = False  # events are enabled as they open once sampling has started
        self._rng = random.Random(pid)
        self._period = ctypes.c_uint64(self.period_ns)

    # -- opening ------------------------------------------------------------

    def _attr(self) -> _Attr:
        a = _Attr()
        a.type, a.size, a.config = PERF_TYPE_SOFTWARE, ATTR_SIZE, PERF_COUNT_SW_CPU_CLOCK
        a.sample_period = self.period_ns
        a.sample_type = SAMPLE_TYPE
        a.flags = F_DISABLED | F_EXCLUDE_HV | F_USE_CLOCKID | \
            (F_EXCLUDE_KERNEL if self.exclude_kernel else 0)
        a.clockid = CLOCK_MONOTONIC
        a.wakeup_events = 1
        a.sample_regs_user = REGS_MASK
        a.sample_stack_user = STACK_COPY
        return a

    def _open_fd(self, tid: int) -> int:
        """perf_event_open for one thread; kernel samples are asked for first
        (a thread in a system call is then still sampled, at its user
        registers), without them where perf_event_paranoid forbids them."""
        for _ in range(2):
            a = self._attr()
            ctypes.set_errno(0)
            fd = _syscall(SYS_PERF_EVENT_OPEN, ctypes.byref(a), tid, -1, -1, 8)  # CLOEXEC
            if fd >= 0:
                return fd
            err = ctypes.get_errno()
            if err in (errno.EACCES, errno.EPERM) and not self.exclude_kernel:
                self.exclude_kernel = True
                continue
            raise PerfUnavailable(_why(err, self.pid))
        raise PerfUnavailable(_why(errno.EACCES, self.pid))

    def _open_fds(self, tid: int) -> list[int]:
        """The thread's events: the first gets the ring, the others write into it."""
        return [self._open_fd(tid)]

    def open(self, tid: int) -> None:
        """Start sampling one thread (its ring mapped, its events enabled)."""
        fd, *more = self._open_fds(tid)
        while True:
            try:
                buf = mmap.mmap(fd, (1 + self.pages) * _PAGE, mmap.MAP_SHARED,
                                mmap.PROT_READ | mmap.PROT_WRITE)
                break
            except OSError as e:
                # Locked memory is limited (perf_event_mlock_kb): smaller rings.
                if e.errno in (errno.EPERM, errno.ENOMEM) and self.pages > MIN_RING_PAGES:
                    self.pages //= 2
                    continue
                for f in (fd, *more):
                    os.close(f)
                raise PerfUnavailable(f"cannot map a perf ring buffer: {e.strerror}") from None
        ring = _Ring(tid, fd, buf, self.pages * _PAGE, more=more)
        for f in more:
            if _ioctl(f, IOC_SET_OUTPUT, fd) != 0:
                err = ctypes.get_errno()
                self.rings[tid] = ring
                self._close(tid)
                raise PerfUnavailable(f"perf events cannot share a ring: {os.strerror(err)}")
        self.rings[tid] = ring
        if self.started:
            for f in (fd, *more):
                _ioctl(f, IOC_ENABLE, 0)

    def start(self) -> None:
        """Enable every event opened so far (they open disabled: nothing is
        written before the sampling clock starts)."""
        self.started = True
        for r in self.rings.values():
            for f in (r.fd, *r.more):
                _ioctl(f, IOC_ENABLE, 0)

    def attach(self, all_threads: bool) -> None:
        """The main thread, and with `all_threads` every other one (disabled
        until `start`); raises PerfUnavailable when perf events are refused."""
        if not thread_ids(self.pid):
            raise V8DbgError(f"no process {self.pid}")
        self.open(self.pid)
        if all_threads:
            self.refresh_threads()

    def refresh_threads(self) -> list[int]:
        return self._open_new(thread_ids(self.pid))

    def _open_new(self, tids: list[int]) -> list[int]:
        """Open the events of those of `tids` not open or let go yet; the
        threads opened (one gone meanwhile is left out)."""
        new = []
        for tid in tids:
            if tid in self.rings or tid in self.released:
                continue
            try:
                self.open(tid)
            except V8DbgError:
                continue
            new.append(tid)
        return new

    def release(self, tid: int) -> None:
        """Stop sampling one thread (not a JavaScript thread)."""
        if tid != self.pid:
            self._close(tid)
            self.released.add(tid)

    def _close(self, tid: int) -> None:
        r = self.rings.pop(tid, None)
        if r is None:
            return
        for f in (r.fd, *r.more):
            _ioctl(f, IOC_DISABLE, 0)
        r.buf.close()
        for f in (r.fd, *r.more):
            os.close(f)

    def close(self) -> None:
        for tid in list(self.rings):
            self._close(tid)

    @property
    def threads(self) -> dict[int, _Ring]:
        return self.rings

    def thread_name(self, tid: int) -> str | None:
        return thread_name(self.pid, tid)

    # -- reading --------------------------------------------------------------

    def wait(self, timeout: float) -> bool:
        """Sleep until a ring has data or `timeout` seconds pass; False when
        every sampled thread has exited (their events hang up)."""
        if not self.rings:
            return False
        p = select.poll()
        for r in self.rings.values():
            p.register(r.fd, select.POLLIN)
        try:
            events = p.poll(max(timeout, 0.0) * 1000)
        except InterruptedError:
            return True
        hung = {fd for fd, ev in events if ev & select.POLLHUP}
        for tid, r in list(self.rings.items()):
            if r.fd in hung and not self._has_data(r):
                self._close(tid)
        return bool(self.rings)

    def _has_data(self, r: _Ring) -> bool:
        head, tail = struct.unpack_from("<QQ", r.buf, 1024)
        return head != tail

    def take(self) -> list[Any]:
        """Every sample written since the last call, oldest first per thread."""
        out: list[Any] = []
        for r in list(self.rings.values()):
            out.extend(self._drain(r))
        return out

    def _drain(self, r: _Ring) -> list[Any]:
        buf, size = r.buf, r.size
        head = struct.unpack_from("<Q", buf, 1024)[0]
        tail = struct.unpack_from("<Q", buf, 1032)[0]
        out = []
        n = 0
        while tail < head and n < MAX_RECORDS:
            n += 1
            hdr = self._bytes(buf, size, tail, 8)
            rtype, _misc, rsize = struct.unpack("<IHH", hdr)
            if rsize < 8 or tail + rsize > head:
                break  # torn: the kernel writes whole records; never expected
            rec = self._bytes(buf, size, tail, rsize)
            tail += rsize
            if rtype == RECORD_SAMPLE:
                snap = self._sample(rec, r)
                if snap is not None:
                    out.append(snap)
                else:
                    self.lost += 1
            elif rtype == RECORD_LOST:
                self.lost += struct.unpack_from("<Q", rec, 16)[0]
        # At the cap, what is left stays in the ring for the next read.
        struct.pack_into("<Q", buf, 1032, tail)
        if out:
            self._rearm(r)
        return out

    def _rearm(self, r: _Ring) -> None:
        """The next period of a thread's clock drawn at random around the
        mean. A fixed period locks in step with a loop whose iterations
        take a divisor of it, and then samples the same few places of it
        over and over: shares 5 points off or more, from run to run. The
        kernel restarts the clock at the new period; the thread's CPU time
        since its last sample is taken off it, so the mean rate holds, but
        never below the shortest period: the clock keeps that period until
        the next read, which may come several samples later.
        """
        try:
            now = struct.unpack("<Q", os.read(r.fd, 8))[0]
        except (OSError, struct.error):
            return
        since = max(now - r.clock, 0) if r.clock >= 0 else 0
        want = self.period_ns * self._rng.uniform(1 - JITTER, 1 + JITTER) - since
        self._period.value = max(int(want), int(self.period_ns * (1 - JITTER)))
        _ioctl(r.fd, IOC_PERIOD, ctypes.addressof(self._period))

    @staticmethod
    def _bytes(buf: mmap.mmap, size: int, at: int, n: int) -> bytes:
        off = _PAGE + at % size
        end = off + n
        if end <= _PAGE + size:
            return buf[off:end]
        first = _PAGE + size - off
        return buf[off:_PAGE + size] + buf[_PAGE:_PAGE + n - first]

    def _sample(self, rec: bytes, r: _Ring) -> Any:
        """IP, PID/TID, TIME, READ (the clock's count), REGS_USER (abi, bp,
        sp, ip), STACK_USER (size, data, dyn_size)."""
        try:
            _ip, _pid, tid, t, count, abi = struct.unpack_from("<QIIQQQ", rec, 8)
            r.clock = count
            at = 48
            if abi == 0:  # no user registers: a kernel thread
                return None
            bp, sp, ip = struct.unpack_from("<QQQ", rec, at)
            at += 24
            (ssize,) = struct.unpack_from("<Q", rec, at)
            at += 8
            data = rec[at:at + ssize]
            dyn = struct.unpack_from("<Q", rec, at + ssize)[0] if ssize else 0
        except struct.error:
            return None
        return Snapshot(tid, Registers(ip, sp, bp), sp, data[:min(dyn, ssize)], 0,
                        t / 1e9, True)
