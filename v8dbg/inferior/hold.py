"""A running process held still while it is read: the standalone `--pid`.

Every thread is seized (PTRACE_SEIZE) and interrupted (PTRACE_INTERRUPT,
never SIGSTOP, which the process could see), its registers copied; memory is
read with process_vm_readv; then every thread is detached and runs on. A
signal that reached a thread while it was held is handed back as it is let
go, so the process sees it as it would have.

Whatever needs no target memory (the node binary's ELF, its symbols, V8's
metadata) is done before `stop`, so the pause is only the reads. A command
that walks the whole heap asks for `copy_for_walk` first: the process's
private memory is copied into buffers of ours and the process let go at
once, so the pause is the copy and the walk reads the copy.

If v8dbg dies while holding the process (even by SIGKILL), the kernel
detaches its tracees, and threads it had stopped run on.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import re
import time
from dataclasses import dataclass

from ..errors import TargetMemoryError, V8DbgError
from .backend import Mapping, Registers, ThreadInfo, proc_map_lines, thread_name
from .disasm import Disassembly, disassemble
from .ptrace import (PTRACE_DETACH, PTRACE_EVENT_STOP, PTRACE_GETREGS, PTRACE_INTERRUPT,
                     PTRACE_SEIZE, WALL, _call, _IoVec, _UserRegs, _vm_readv, permission_hint,
                     process_state, thread_ids, vm_read)

STOP_TIMEOUT = 2.0  # seconds to wait for one interrupted thread to stop
MAX_ROUNDS = 16  # looks for threads started while the others were being stopped
CHUNK = 1 << 30  # bytes per process_vm_readv of a copy (the kernel caps one call near 2 GB)
MAX_COPY_SHARE = 0.5  # copy at most this share of this machine's available memory
MADV_POPULATE_WRITE = 23  # Linux 5.14+
IOV_MAX = 1024  # iovecs per process_vm_readv


def check_pid(pid: int) -> None:
    """Refuse, in one line, a process that cannot be held and read."""
    state = process_state(pid)
    if state is None:
        raise V8DbgError(f"no process {pid}")
    if state in ("Z", "X"):
        raise V8DbgError(f"process {pid} is a zombie: it has exited and its parent has not "
                         "collected it; there is no memory left to read")
    if state == "t":
        raise V8DbgError(f"cannot trace process {pid}: {permission_hint(pid)}")
    if state == "T":
        raise V8DbgError(f"process {pid} is stopped (by SIGSTOP or job control); v8dbg leaves "
                         f"it as it is: `kill -CONT {pid}` lets it run, then try again")


def _prefer_cpu() -> int | None:
    """A better scheduling priority while the process is held, when allowed
    (root, CAP_SYS_NICE): on a busy machine, waiting for a CPU with the
    process stopped would be most of the pause. The old one, to restore."""
    try:
        was = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, max(was - 10, -20))
        return was
    except OSError:
        return None


def _restore_cpu(was: int | None) -> None:
    """Back to the old priority once the process is let go: what is left (a
    heap walk of the copy) must not take the CPU from it."""
    if was is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, was)
        except OSError:
            pass


@dataclass
class _Held:
    tid: int
    regs: Registers | None = None
    signal: int = 0  # a signal it stopped with: delivered as it is let go
    stopped: bool = False


class Hold:
    """The threads of one process, seized; `stop` holds them all, `resume`
    lets them all go (detached). `paused_ns` is how long they were held."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.threads: dict[int, _Held] = {}
        self.paused_ns = 0
        self.not_stopped: list[int] = []  # threads that did not stop in time (in the kernel)
        self._t0 = 0
        self._nice: int | None = None
        self.held = False

    def _seize(self, tid: int, main: bool) -> bool:
        err = _call(PTRACE_SEIZE, tid)
        if err and main:
            if err == errno.ESRCH:
                raise V8DbgError(f"no process {self.pid}")
            if err == errno.EPERM:
                raise V8DbgError(f"cannot trace process {self.pid}: {permission_hint(self.pid)}")
            raise V8DbgError(f"cannot trace process {self.pid}: {os.strerror(err)}")
        if err:
            return False
        self.threads[tid] = _Held(tid)
        return True

    def stop(self) -> None:
        """Seize and interrupt every thread, and wait until each is stopped."""
        if not thread_ids(self.pid):
            raise V8DbgError(f"no process {self.pid}")
        self._nice = _prefer_cpu()
        self._t0 = time.perf_counter_ns()
        self.held = True
        self._seize(self.pid, main=True)
        for _ in range(MAX_ROUNDS):
            new = [t for t in thread_ids(self.pid) if t not in self.threads]
            for tid in new:
                self._seize(tid, main=False)
            waiting = [th for th in self.threads.values() if not th.stopped]
            if not waiting and not new:
                break
            for th in waiting:
                if _call(PTRACE_INTERRUPT, th.tid):
                    self.threads.pop(th.tid, None)  # gone meanwhile
            for th in waiting:
                if th.tid in self.threads:
                    self._wait_stopped(th)
        if self.pid not in self.threads:
            self.resume()
            raise V8DbgError(f"process {self.pid} exited while v8dbg stopped it")

    def _wait_stopped(self, th: _Held) -> None:
        deadline = time.monotonic() + STOP_TIMEOUT
        polls = 0
        while True:
            try:
                got, status = os.waitpid(th.tid, WALL | os.WNOHANG)
            except ChildProcessError:
                self.threads.pop(th.tid, None)
                return
            except InterruptedError:
                continue
            if got == th.tid:
                if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                    self.threads.pop(th.tid, None)
                    return
                if os.WIFSTOPPED(status):
                    if status >> 16 != PTRACE_EVENT_STOP:
                        # A signal on its way: held here; it goes on when we let go.
                        th.signal = os.WSTOPSIG(status)
                    th.stopped = True
                    regs = _UserRegs()
                    if not _call(PTRACE_GETREGS, th.tid, 0, ctypes.addressof(regs)):
                        th.regs = Registers(regs.rip, regs.rsp, regs.rbp)
                    return
                continue
            polls += 1
            if time.monotonic() > deadline:
                # In an uninterruptible wait in the kernel: it runs no code of its own.
                self.not_stopped.append(th.tid)
                th.stopped = True
                return
            if polls > 50:
                time.sleep(0.0002)

    def resume(self) -> None:
        """Let every thread go (detach); safe to call more than once."""
        if not self.held:
            return
        for th in list(self.threads.values()):
            if th.tid in self.not_stopped:
                # Detaching needs a stop; it stops when it leaves the kernel.
                _call(PTRACE_INTERRUPT, th.tid)
                self._wait_stopped(th)
            _call(PTRACE_DETACH, th.tid, 0, th.signal)
        self.paused_ns = time.perf_counter_ns() - self._t0
        self.held = False
        _restore_cpu(self._nice)


@dataclass
class _Copy:
    """[start, end) of the process, copied into buf from offset start - base."""

    start: int
    end: int
    buf: mmap.mmap
    base: int


@dataclass
class _Region:
    """A readable mapping of the process; `runs`: the parts that hold data."""

    start: int
    end: int
    copy: bool  # what a heap walk may read that can change (not a read-only file)
    runs: list[tuple[int, int]]


def memory_map(pid: int) -> list[_Region]:
    """The process's readable mappings, each with the runs of its pages that
    hold data: of an anonymous mapping, the pages in use (from
    /proc/PID/pagemap); of a file, all of it (a page not in memory yet holds
    the file's bytes).

    A page never touched reads as zeros: V8 and the C library reserve
    hundreds of MB they never touch (node 24: 509 MB of 565 MB, 14 MB in
    use), which need neither a copy nor a search for heap pages. Reading
    such a page through process_vm_readv would map it into the process, too.
    """
    out: list[_Region] = []
    try:
        fd: int | None = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY)
    except OSError:
        fd = None
    try:
        for lo, hi, perms, _off, path in proc_map_lines(pid):
            if not perms.startswith("r") or path.strip() in ("[vvar]", "[vsyscall]", "[vdso]"):
                continue
            is_file = path.startswith("/")
            runs = [(lo, hi)]
            if not is_file and fd is not None:
                n = (hi - lo) >> 12
                try:
                    data = os.pread(fd, n * 8, (lo >> 12) * 8)
                except OSError:
                    data = b""
                if len(data) == n * 8:
                    runs = _runs(data, lo)
            out.append(_Region(lo, hi, not is_file or "w" in perms, runs))
    finally:
        if fd is not None:
            os.close(fd)
    return out


# Byte 7 of a pagemap entry (bits 56-63) -> 1 when the page is swapped out
# (bit 62) or present (63) and mapped only here (56), else 0. A page only
# ever read is present as the kernel's shared zero page: not in use (and
# each search for heap pages through untouched memory maps many).
_IN_USE = bytes(1 if b & 0x40 or b & 0x81 == 0x81 else 0 for b in range(256))
_RUN = re.compile(rb"\x01+")


def _runs(data: bytes, lo: int) -> list[tuple[int, int]]:
    """[a, b) runs of pages in use, from a region's pagemap entries."""
    flags = data[7::8].translate(_IN_USE)
    return [(lo + (m.start() << 12), lo + (m.end() << 12)) for m in _RUN.finditer(flags)]


def _available_memory() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 62


def _spans(layout: list[_Region]) -> list[tuple[int, int]]:
    return sorted(run for r in layout for run in r.runs)


def _fault_in(buf: mmap.mmap, at: int, size: int) -> None:
    """Give buf[at:at+size] its own pages now, not at the first write."""
    try:
        buf.madvise(MADV_POPULATE_WRITE, at, size)
        return
    except (OSError, ValueError, AttributeError):
        pass
    for off in range(at, at + size, 4096):
        buf[off] = 0


class HeldBackend:
    """The Backend interface over a held process: reads by process_vm_readv,
    from the copy once one is taken (`copy_for_walk`)."""

    kind = "pid"
    live = True

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self.hold = Hold(pid)
        self._copies: list[_Copy] = []
        self._starts: list[int] = []
        self._gen = 0
        self.limits: list[str] = []
        self.copied_bytes = 0
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except FileNotFoundError:
            raise V8DbgError(f"no process {pid}") from None
        except OSError:
            raise V8DbgError(f"cannot see process {pid}'s executable (/proc/{pid}/exe): it "
                             "belongs to another user; run v8dbg as that user or as root") \
                from None
        self._exe = exe[:-len(" (deleted)")] if exe.endswith(" (deleted)") else exe
        self._maps = [Mapping(lo, hi, off, path) for lo, hi, _p, off, path
                      in proc_map_lines(pid) if path.startswith("/")]
        # Where data is, for the search for heap pages and stacks; taken again
        # with the copy, at the stop.
        self._regions = _spans(memory_map(pid))
        self._buf = ctypes.create_string_buffer(1 << 16)
        self._ready: dict[tuple[int, int], mmap.mmap] = {}

    # -- holding ---------------------------------------------------------

    def stop(self) -> None:
        self.hold.stop()
        self._gen += 1  # whatever was read before the stop is stale

    def resume(self) -> None:
        self.hold.resume()

    def prepare_copy(self) -> None:
        """Make the buffers a copy would fill, and fault in the parts that
        will be written, before the process is stopped: zeroing our own
        pages is then no part of the pause."""
        want = [r for r in memory_map(self._pid) if r.copy]
        if sum(b - a for r in want for a, b in r.runs) > int(_available_memory() * MAX_COPY_SHARE):
            return
        for r in want:
            buf = mmap.mmap(-1, r.end - r.start)
            for a, b in r.runs:
                _fault_in(buf, a - r.start, b - a)
            self._ready[(r.start, r.end)] = buf

    def copy_for_walk(self) -> None:
        """Copy the memory a heap walk reads, then let the process go: the walk
        reads the copy, and the pause is the copy. Only the pages that hold
        data are copied (the others read as zeros, as in the process).
        Nothing to do when the process is not held (or a copy is taken)."""
        if not self.hold.held or self._copies:
            return
        layout = memory_map(self._pid)
        want = [r for r in layout if r.copy]
        total = sum(b - a for r in want for a, b in r.runs)
        room = int(_available_memory() * MAX_COPY_SHARE)
        if total > room:
            self.limits.append(
                f"the process's memory ({total >> 20} MB) is more than v8dbg may copy here "
                f"({room >> 20} MB, half the available memory): it is read in place, held "
                "for the whole command")
            return
        copies = []
        for r in want:
            lo, hi = r.start, r.end
            buf = self._ready.pop((lo, hi), None) or mmap.mmap(-1, hi - lo)
            if all(self._copy_into(buf, a - lo, a, b - a) == b - a for a, b in r.runs):
                # Only the runs: any other page reads from the process (a page
                # shared with a child after fork, say, not marked as ours).
                copies.extend(_Copy(a, b, buf, lo) for a, b in r.runs)
            else:
                buf.close()  # changed since it was listed: such reads go to the process
        for unused in self._ready.values():
            unused.close()
        self._ready.clear()
        copies.sort(key=lambda c: c.start)
        self._copies = copies
        self._starts = [c.start for c in copies]
        self.copied_bytes = sum(b - a for r in want for a, b in r.runs)
        self._regions = _spans(layout)
        self.hold.resume()

    def _copy_into(self, buf: mmap.mmap, at: int, address: int, size: int) -> int:
        """process_vm_readv of [address, address+size) to buf[at:]; bytes copied."""
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf)) + at
        done = 0
        while done < size:
            n = min(CHUNK, size - done)
            local = _IoVec(base + done, n)
            remote = _IoVec(address + done, n)
            r = _vm_readv(self._pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
            if r <= 0:
                break
            done += r
            if r < n:
                break
        return done

    def _copy_of(self, address: int, size: int) -> _Copy | None:
        import bisect
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0:
            c = self._copies[i]
            if address + size <= c.end:
                return c
        return None

    # -- Backend ---------------------------------------------------------

    def read(self, address: int, size: int) -> bytes:
        if size <= 0 or address < 0 or address + size > 1 << 64:
            raise TargetMemoryError(address, max(size, 0), "out of range")
        if self._copies:
            c = self._copy_of(address, size)
            if c is not None:
                return c.buf[address - c.base:address - c.base + size]
        data = vm_read(self._pid, address, size, self._buf)
        if data is None:
            raise TargetMemoryError(address, size)
        return data

    def read_many(self, addresses: list[int], size: int) -> list[bytes | None]:
        """`size` bytes at each address (None where unreadable), in one
        process_vm_readv per IOV_MAX addresses rather than one each."""
        out: list[bytes | None] = [None] * len(addresses)
        if self._copies or size <= 0:
            for i, a in enumerate(addresses):
                try:
                    out[i] = self.read(a, size)
                except TargetMemoryError:
                    pass
            return out
        i = 0
        while i < len(addresses):
            n = min(IOV_MAX, len(addresses) - i)
            buf = ctypes.create_string_buffer(n * size)
            local = _IoVec(ctypes.addressof(buf), n * size)
            remote = (_IoVec * n)(*[_IoVec(a, size) for a in addresses[i:i + n]])
            got = _vm_readv(self._pid, ctypes.byref(local), 1, remote, n, 0)
            whole = max(got, 0) // size  # the kernel stops at the first address it cannot read
            raw = buf.raw
            for k in range(whole):
                out[i + k] = raw[k * size:(k + 1) * size]
            i += whole + 1  # past the unreadable one (None)
        return out

    def read_into(self, address: int, buf: memoryview) -> bool:
        """Fill buf from the copy (a heap page), without a new buffer per read."""
        c = self._copy_of(address, len(buf)) if self._copies else None
        if c is None:
            return False
        off = address - c.base
        buf[:] = memoryview(c.buf)[off:off + len(buf)]
        return True

    def regions(self) -> list[tuple[int, int]]:
        return list(self._regions)

    def threads(self) -> list[ThreadInfo]:
        out = []
        for tid in thread_ids(self._pid) if not self.hold.threads else sorted(self.hold.threads):
            th = self.hold.threads.get(tid)
            out.append(ThreadInfo(tid, thread_name(self._pid, tid),
                                  th.regs if th is not None else None))
        return out

    def selected_thread(self) -> int | None:
        return self._pid

    def mappings(self) -> list[Mapping]:
        return self._maps

    def executable(self) -> str | None:
        return self._exe

    def pid(self) -> int | None:
        return self._pid

    def generation(self) -> int:
        return self._gen

    def disassemble(self, address: int, data: bytes) -> Disassembly:
        return disassemble(address, data)
