"""Uprobes as perf events, on one process's threads: the kernel's uprobe PMU
opened with perf_event_open, no BPF and no tracefs.

Each event is an instruction of a file (its path and file offset); on a hit
the kernel writes the thread, a CLOCK_MONOTONIC time (the clock bpftrace's
nsecs read, so hits join what a bpftrace program printed) and chosen user
registers into the thread's ring -- the rings, their draining and closing
are the profiler's (inferior/perf.py). The events are per thread: an
inherited per-thread event cannot have a ring, so threads that start later
are opened when `refresh_threads` sees them. A probe anywhere in a function
(not only its first instruction) is allowed, which the distribution's
bpftrace refuses.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from dataclasses import dataclass

from ..errors import V8DbgError
from .backend import thread_name
from .ptrace import thread_ids
from .perf import (F_DISABLED, F_EXCLUDE_HV, F_USE_CLOCKID, ATTR_SIZE, CLOCK_MONOTONIC,
                   SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME, SAMPLE_REGS_USER, SYS_PERF_EVENT_OPEN,
                   PerfSampler, PerfUnavailable, _Attr, _Ring, _syscall, _why)

UPROBE_TYPE = "/sys/bus/event_source/devices/uprobe/type"
# perf_event_x86_regs numbers, by the names bpftrace's reg() uses.
REGS = {"ax": 0, "bx": 1, "cx": 2, "dx": 3, "si": 4, "di": 5, "bp": 6, "sp": 7, "ip": 8,
        **{f"r{i}": 8 + i for i in range(8, 16)}}
RING_PAGES = 64  # 256 KiB a thread: ~5000 hits between two reads


@dataclass
class Hit:
    """One probe hit: which instruction (its runtime address), where, when, the register."""
    ip: int
    tid: int
    time_ns: int
    reg: int


def uprobe_type() -> int:
    """The uprobe PMU's perf event type, or PerfUnavailable."""
    try:
        with open(UPROBE_TYPE) as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        raise PerfUnavailable(f"this kernel has no uprobe perf events ({UPROBE_TYPE})") from None


class UprobeEvents(PerfSampler):
    """Uprobes at `offsets` of file `path` on every thread of process `pid`,
    each hit with register `reg`; one ring a thread, shared by its events."""

    def __init__(self, pid: int, path: str, offsets: list[int], reg: str,
                 thread_name: str | None = None) -> None:
        super().__init__(pid, 1.0)
        # Only threads named so, once any is (others released), and never
        # the main thread: a thread with a perf event pays at every context
        # switch, hit or not.
        self.only_named = thread_name
        self.kind = uprobe_type()
        self._path = ctypes.create_string_buffer(path.encode())  # kept alive: config1 points here
        self.offsets = offsets
        self.regs_mask = 1 << REGS[reg]
        self.pages = RING_PAGES

    def attach(self, all_threads: bool = True) -> None:
        """The events opened (raises PerfUnavailable when refused: tried on
        the main thread, which is then let go) on the threads that may hit."""
        if not thread_ids(self.pid):
            raise V8DbgError(f"no process {self.pid}")
        self.open(self.pid)
        self._close(self.pid)
        self.released.add(self.pid)
        self.refresh_threads()

    def refresh_threads(self) -> list[int]:
        tids = [t for t in thread_ids(self.pid) if t != self.pid]
        if self.only_named:
            named = {t for t in tids if thread_name(self.pid, t) == self.only_named}
            if named:
                for t in [t for t in self.rings if t not in named]:
                    self._close(t)
                    self.released.add(t)
                tids = [t for t in tids if t in named]
        return self._open_new(tids)

    def _uprobe_attr(self, offset: int) -> _Attr:
        a = _Attr()
        a.type, a.size, a.config = self.kind, ATTR_SIZE, 0  # config bit 0 clear: not a return probe
        a.config1 = ctypes.addressof(self._path)
        a.config2 = offset
        a.sample_period = 1
        a.sample_type = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_REGS_USER
        a.flags = F_DISABLED | F_EXCLUDE_HV | F_USE_CLOCKID
        a.clockid = CLOCK_MONOTONIC
        a.wakeup_events = 0  # woken at half a ring: the rings are read on a timer
        a.sample_regs_user = self.regs_mask
        return a

    def _open_fds(self, tid: int) -> list[int]:
        fds: list[int] = []
        for off in self.offsets:
            a = self._uprobe_attr(off)
            ctypes.set_errno(0)
            fd = _syscall(SYS_PERF_EVENT_OPEN, ctypes.byref(a), tid, -1, -1, 8)  # CLOEXEC
            if fd < 0:
                err = ctypes.get_errno()
                for f in fds:
                    os.close(f)
                if err == errno.ESRCH:
                    raise PerfUnavailable(f"no thread {tid}")
                raise PerfUnavailable(_why(err, self.pid))
            fds.append(fd)
        return fds

    def _sample(self, rec: bytes, r: _Ring) -> Hit | None:
        """IP, PID/TID, TIME, REGS_USER (abi, the one register)."""
        try:
            ip, _pid, tid, t, abi = struct.unpack_from("<QIIQQ", rec, 8)
            if abi == 0:
                return None
            (reg,) = struct.unpack_from("<Q", rec, 40)
        except struct.error:
            return None
        return Hit(ip, tid, t, reg)

    def _rearm(self, r: _Ring) -> None:
        """A probe fires at every hit: no clock to re-arm."""
