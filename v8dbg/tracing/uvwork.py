"""Timing the jobs an add-on queues with uv_queue_work itself where their
work function (uv__queue_work) starts with an instruction the kernel would
single-step (node 18 to 24): two perf-event uprobes inside libuv's worker(),
on its direct calls just before and just after `w->work(w)` (emulated), join
the uv_queue_work record bpftrace prints for each such job (w, the add-on's
work_cb, the time) by w. bpftrace cannot place these probes (the
distribution's 0.17 refuses a probe off a function's start); the kernel's
uprobe PMU can (inferior/perf_uprobes.py)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..errors import V8DbgError
from ..inferior.backend import proc_maps
from ..inferior.elf import ElfFile
from ..inferior.perf_uprobes import UprobeEvents
from ..inferior.uprobes import cheap_entry
from ..v8.layouts import POOL_THREAD_NAME
from ..v8.probes import Sites

LINE = "@tpq"  # what the bpftrace program prints for each job to join
GRACE_NS = 5_000_000_000  # a run no queue record claims within this is another job's
MAX_PENDING = 1_000_000  # runs and queue records held unjoined at once


@dataclass
class WorkerSites:
    """Where worker() calls out around the job: link-time addresses, the
    register holding &w->wq at both, and wq's offset in struct uv__work."""
    before: int
    after: int
    reg: str
    wq_off: int


def worker_sites(elf: ElfFile, sites: Sites) -> WorkerSites | None:
    """The line's two call sites in worker(), checked against the binary
    (each a call rel32 of uv_mutex_unlock / uv_mutex_lock, emulated); None
    where the line needs none (uv__queue_work's entry is cheap) or the
    binary does not match the table."""
    fact = sites.facts.get("uv_worker_work_calls")
    worker = sites.addrs.get("uv_worker")
    if not fact or worker is None:
        return None
    queue_fn = sites.addrs.get("uv_work_functions.0")
    if queue_fn is not None and cheap_entry(elf, queue_fn):
        return None
    before, after, reg, wq_off = fact
    for off, callee in ((before, "uv_mutex_unlock"), (after, "uv_mutex_lock")):
        at = worker + off
        code = elf.read(at, 5) or b""
        target = sites.addrs.get(callee)
        if len(code) != 5 or code[0] != 0xE8 or target is None or not cheap_entry(elf, at):
            return None
        if at + 5 + int.from_bytes(code[1:], "little", signed=True) != target:
            return None
    return WorkerSites(worker + before, worker + after, reg, wq_off)


@dataclass
class Timed:
    """One joined job, µs."""
    key: int  # the add-on's work_cb
    wait_us: int
    run_us: int
    total_us: int


@dataclass
class Joiner:
    """Queue records (from bpftrace's lines) and runs (from the perf hits)
    joined by w as they come; what stays unjoined is reported, never cut."""
    before_ip: int  # the two sites' runtime addresses
    after_ip: int
    wq_off: int
    queued: dict[int, deque] = field(default_factory=dict)  # w -> (t, key), oldest first
    runs: deque = field(default_factory=deque)  # (w, start, end)
    current: dict[int, tuple[int, int]] = field(default_factory=dict)  # tid -> (w, start)
    done: list[Timed] = field(default_factory=list)
    held: int = 0  # queue records held unjoined
    dropped: int = 0  # records past MAX_PENDING
    lost: int = 0  # hits the kernel could not write (a ring full)
    newest: int = 0
    unseen: dict[int, int] = field(default_factory=dict)  # key -> jobs whose run no probe saw

    def lines(self, lines: list[str]) -> None:
        for ln in lines:
            parts = ln.split()
            if len(parts) != 4 or parts[0] != LINE:
                continue
            w, key, t = (int(p) for p in parts[1:])
            if self.held >= MAX_PENDING:
                self.dropped += 1
                continue
            self.queued.setdefault(w, deque()).append((t, key))
            self.held += 1

    def hits(self, hits: list) -> None:
        before, after = self.before_ip, self.after_ip
        for h in sorted(hits, key=lambda h: h.time_ns):
            w = h.reg - self.wq_off
            self.newest = max(self.newest, h.time_ns)
            if h.ip == before:
                self.current[h.tid] = (w, h.time_ns)
            elif h.ip == after:
                cur = self.current.pop(h.tid, None)
                if cur is not None and cur[0] == w:
                    if len(self.runs) >= MAX_PENDING:
                        self.dropped += 1
                    else:
                        self.runs.append((w, cur[1], h.time_ns))

    def join(self, final: bool = False) -> None:
        """Runs joined to the latest queue record of their w before them;
        runs no record claims within GRACE_NS (node's and libuv's own jobs:
        the probes see every job) are let go."""
        keep: deque = deque()
        while self.runs:
            w, start, end = self.runs.popleft()
            q = self.queued.get(w)
            rec = None
            while q and q[0][0] <= start:
                if rec is not None:
                    # An earlier job of the same request address that ran
                    # unseen (before the probes were placed): not timed.
                    self.unseen[rec[1]] = self.unseen.get(rec[1], 0) + 1
                rec = q.popleft()
                self.held -= 1
            if q is not None and not q:
                del self.queued[w]
            if rec is not None:
                t, key = rec
                self.done.append(Timed(key, (start - t) // 1000, (end - start) // 1000,
                                       (end - t) // 1000))
            elif not final and self.newest - end < GRACE_NS:
                keep.append((w, start, end))
        self.runs = keep

    def unjoined(self) -> dict[int, int]:
        """Queue records no run claimed (still running when tracing stopped,
        or run on a pool thread that started during the trace), by key."""
        out: dict[int, int] = dict(self.unseen)
        for q in self.queued.values():
            for _t, key in q:
                out[key] = out.get(key, 0) + 1
        return out


class WorkerTimer:
    """The two perf-event uprobes on process `pid`'s pool threads, read into
    a Joiner as tracing goes; `close` detaches them (every path must call
    it). Raises PerfUnavailable where perf events are refused.

    The probes are placed only once the first job to time is queued: they
    cost every pool job (some 9 µs of the target's CPU: two traps and the
    events' share of each context switch of a pool thread), and most
    programs never queue such a job. Jobs that run before they are in place
    are counted untimed."""

    def __init__(self, pid: int, exe: str, elf: ElfFile, ws: WorkerSites) -> None:
        offs = [elf.vaddr_to_offset(a) for a in (ws.before, ws.after)]
        if None in offs:
            raise V8DbgError(f"worker()'s call sites are not in {exe}'s file")
        ips = [runtime_address(pid, exe, o) for o in offs]  # type: ignore[arg-type]
        self.joiner = Joiner(ips[0], ips[1], ws.wq_off)
        self._make = lambda: UprobeEvents(pid, exe, offs, ws.reg,  # type: ignore[arg-type]
                                          thread_name=POOL_THREAD_NAME)
        self.events: UprobeEvents | None = None
        self.why: str | None = None  # why the probes could not be placed when needed
        # Opened once and closed at once: refused perf events are said at
        # the start, not at the first job.
        probe = self._make()
        try:
            probe.open(pid)
        finally:
            probe.close()

    def _place(self) -> None:
        ev = self._make()
        try:
            ev.attach(all_threads=True)
            ev.start()
        except V8DbgError as e:
            ev.close()
            self.why = f"perf-event uprobes refused ({e})"
            return
        except BaseException:
            ev.close()
            raise
        self.events = ev

    def tick(self, lines: list[str]) -> None:
        """New bpftrace lines and the hits since the last tick, joined; a
        pool thread started meanwhile gets its probes."""
        self.joiner.lines(lines)
        if self.events is None:
            if self.why is not None or not self.joiner.queued:
                return
            self._place()
            if self.events is None:
                return
        self.events.refresh_threads()
        self.joiner.hits(self.events.take())
        self.joiner.join()

    def finish(self, lines: list[str]) -> Joiner:
        """The last lines and hits joined, the probes detached."""
        try:
            self.joiner.lines(lines)
            for _ in range(64 if self.events is not None else 0):
                # A read takes at most MAX_RECORDS a ring; the rings are finite.
                hits = self.events.take()  # type: ignore[union-attr]
                if not hits:
                    break
                self.joiner.hits(hits)
            self.joiner.lost = self.events.lost if self.events is not None else 0
        finally:
            self.close()
        self.joiner.join(final=True)
        return self.joiner

    def close(self) -> None:
        if self.events is not None:
            self.events.close()


def runtime_address(pid: int, exe: str, off: int) -> int:
    """The runtime address of file offset `off` of `exe` in process `pid`."""
    for m in proc_maps(pid):
        if m.path == exe and m.offset <= off < m.offset + (m.end - m.start):
            return m.start + off - m.offset
    raise V8DbgError(f"process {pid} does not map {exe} at file offset {off:#x}")
