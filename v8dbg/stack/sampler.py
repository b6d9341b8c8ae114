"""Sampling profiler: stacks of a running process, decoded while it runs on.

A sample is a snapshot (registers and a copy of the stack's top, written
by the kernel for a perf event, or taken in microseconds through ptrace);
the frames are decoded afterwards,
exactly as `jsstack` decodes them (every tier, inlined frames expanded, the
executing line), but each JavaScript machine frame is looked up first in a
cache keyed by what the frame holds: its JSFunction and, by tier, its
bytecode array and offset or its pc. A hit is revalidated by re-reading a
few words of the target (the function's map and SharedFunctionInfo, the
bytecode array's or code object's map); a mismatch means a GC moved
something, so the entry and the decoder's own caches are dropped and the
frame is decoded afresh.
"""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..errors import DecodeError, TargetMemoryError
from ..inferior.ptrace import STOP_TIMEOUT, SYNC_WAIT
from ..inferior.unwind import MachineFrame, walk
from .frames import INTERPRETER_BUILTINS, MAX_STUB_WORDS, STUB_NOTE, Frame, StackDecoder

if TYPE_CHECKING:
    from ..program import Program

MAX_CACHE = 50000  # decoded machine frames kept
MAX_DEPTH = 2048  # machine frames walked per sample
PUMP_EVERY = 8  # machine frames decoded between two looks at the tracer's events
WORKER_ENTRY = "node::worker::Worker::Run"  # the native frame under every worker's loop
THREAD_RESCAN = 0.5  # seconds between looks for new threads (--threads all)


@dataclass(frozen=True)
class ProfileFrame:
    """One frame as a profile shows it; equal frames merge in the flame graph."""

    name: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    kind: str = "js"  # js, native, or a pseudo frame: thread, idle, program


IDLE = ProfileFrame("(idle)", kind="idle")
PROGRAM = ProfileFrame("(program)", kind="program")


@dataclass
class ThreadSamples:
    """The samples of one thread, each a stack of frame ids, root first."""

    tid: int
    name: str
    main: bool
    stacks: list[tuple[int, ...]] = field(default_factory=list)


@dataclass
class Profile:
    pid: int
    rate: float
    frames: list[ProfileFrame] = field(default_factory=list)
    threads: list[ThreadSamples] = field(default_factory=list)
    started: float = 0.0  # monotonic
    elapsed: float = 0.0
    ticks: int = 0  # times the sampling clock fired
    skipped_off_cpu: int = 0
    failed: int = 0  # threads that could not be stopped or read at a tick
    waiting: int = 0  # ticks a thread skipped, its last sample waiting for it to get a CPU
    held_ns: list[int] = field(default_factory=list)
    stop_reason: str | None = None  # None: --duration reached
    cpu_seconds: float | None = None  # perf: the sampled threads' time on a CPU meanwhile

    @property
    def samples(self) -> int:
        return sum(len(t.stacks) for t in self.threads)


@dataclass
class _Entry:
    frames: tuple  # of (ProfileFrame, inlined)
    checks: tuple  # of (address, word that must still be there)


class _CachingDecoder(StackDecoder):
    """jsstack's decoder, remembering function names per (JSFunction, SharedFunctionInfo).

    Finding a name can mean reading the function's own properties and its
    receiver's; a profiler asks for the same few functions thousands of times.
    """

    def __init__(self, prog: Program) -> None:
        super().__init__(prog)
        self._names: dict[tuple[int, int], str] = {}

    def display_name(self, fn: int, sfi: int, receiver: int | None = None) -> str:
        key = (fn, sfi)
        name = self._names.get(key)
        if name is None:
            name = super().display_name(fn, sfi, receiver)
            if len(self._names) > MAX_CACHE:
                self._names.clear()
            self._names[key] = name
        return name

    def forget(self) -> None:
        """Drop everything cached about heap objects (a GC moved some)."""
        self._names.clear()
        self.code._cache.clear()
        self.f._line_cache.clear()
        self.h._type_cache.clear()


class StackSampler:
    """Turns one snapshot into profile frames, innermost first."""

    def __init__(self, prog: Program, native: bool = False,
                 pump: Callable[[], None] | None = None) -> None:
        self.prog = prog
        self.dec = _CachingDecoder(prog)
        self.native = native
        self.pump = pump or (lambda: None)
        md = prog.md
        self.h = self.dec.h
        self.o_map = self.h.o_map
        self.o_shared = md.off("JSFunction", "shared")
        self.o_code_start = None if md.const("CodeInstructionsInline") else \
            md.off("Code", "instruction_start")
        self.exit_marker = md.consts.get("frametype_BuiltinExitFrame")
        self.exit_target = md.consts.get("BuiltinExitFrameTargetOffset")
        self.construct = {md.consts.get("frametype_ConstructFrame"),
                          md.consts.get("frametype_FastConstructFrame")} - {None}
        self._cache: dict[tuple, _Entry] = {}
        self._builtins: dict[int, str | None] = {}
        self.hits = self.misses = self.failures = 0

    def prepare(self) -> None:
        """Load what the first samples would otherwise wait for (module list,
        symbols, the bytecode size table baseline frames need), before the
        target is attached and the sampling clock starts."""
        prog = self.prog
        prog.modules()
        main = prog.main_module()
        if main is not None:
            prog.symbolize(main.start)
        prog.bytecode_sizes

    # -- one sample ---------------------------------------------------------

    def decode(self, regs) -> tuple[list[ProfileFrame], bool]:
        """(frames innermost first, native ones included, and whether any frame
        is V8's: JS or internal).

        The caller has pointed the backend at the snapshot's stack copy.
        """
        prog = self.prog
        prog.mem.clear()  # the heap has moved on since the last sample
        machine = walk(prog, regs, MAX_DEPTH)
        groups: list[tuple] = []  # per machine frame: ("js"|"native"|"internal"|"construct", frames)
        for depth, mf in enumerate(machine):
            if depth % PUMP_EVERY == PUMP_EVERY - 1:
                self.pump()
            try:
                groups.append(self._machine_frame(mf, depth > 0 and not mf.interrupted))
            except Exception:  # racing a running process: any decoding may fail
                groups.append(("js", ((ProfileFrame("<unknown>"), False),)))
        out: list[ProfileFrame] = []
        v8 = False
        for i, (kind, frames) in enumerate(groups):
            if kind in ("internal", "construct"):
                v8 = True
                continue
            if kind == "native":  # kept here (they tell a worker's thread), dropped later
                out.extend(f for f, _ in frames)
                continue
            v8 = True
            nxt = groups[i + 1][0] if i + 1 < len(groups) else None
            for f, inlined in frames:
                if nxt == "construct" and not inlined:
                    f = ProfileFrame("new " + f.name, f.file, f.line, f.column, f.kind)
                out.append(f)
        return out, v8

    def runs_isolate(self, frames: list[ProfileFrame], v8: bool) -> bool:
        """A thread runs an isolate when it runs V8 frames or sits in a worker's loop."""
        if v8:
            return True
        return any(f.kind == "native" and f.name.startswith(WORKER_ENTRY) for f in frames)

    def _builtin_at(self, pc: int) -> str | None:
        try:
            return self._builtins[pc]
        except KeyError:
            pass
        b = self.prog.builtin_at(pc)
        if len(self._builtins) > MAX_CACHE:
            self._builtins.clear()
        self._builtins[pc] = b
        return b

    def _machine_frame(self, mf: MachineFrame, caller: bool) -> tuple:
        dec = self.dec
        if mf.native:
            return self._convert(dec.decode_machine_frame(mf, caller))
        builtin = self._builtin_at(mf.pc)
        if builtin is None and self.prog.module_for(mf.pc) is not None:
            return self._convert(dec.decode_machine_frame(mf, caller))
        mem = self.prog.mem
        try:
            ctx = mem.i64(mf.fp + dec.off_marker)
            if ctx & 1 == 0:  # a frame-type marker
                marker = ctx >> 1 if 0 <= ctx < 1 << 16 else -1
                if marker != self.exit_marker or self.exit_target is None:
                    return ("construct" if marker in self.construct else "internal"), ()
                key: tuple = ("x", mem.u64(mf.fp + self.exit_target))
            else:
                fn = mem.u64(mf.fp + dec.off_function)
                if builtin is None:
                    key = ("j", mf.pc, fn, caller)
                elif builtin in INTERPRETER_BUILTINS or builtin.endswith("Handler"):
                    key = ("i", fn, mem.u64(mf.fp + dec.off_bc_array),
                           mem.u64(mf.fp + dec.off_bc_offset))
                elif caller or not self._has_script(fn):
                    key = ("b", fn, builtin, caller)
                else:
                    # A stub on a script function's frame: where that function
                    # is comes from its interpreter slots or from a return
                    # address just above sp (StackDecoder._under_stub).
                    key = ("b", fn, builtin, caller, mem.u64(mf.fp + dec.off_bc_array),
                           mem.u64(mf.fp + dec.off_bc_offset),
                           bytes(mem.read(mf.sp, 8 * MAX_STUB_WORDS)))
        except TargetMemoryError:
            return self._convert(dec.decode_machine_frame(mf, caller))
        entry = self._cache.get(key)
        if entry is not None:
            if self._valid(entry):
                self.hits += 1
                return "js", entry.frames
            self.failures += 1
            self._cache.clear()
            dec.forget()
        self.misses += 1
        # The interrupted pc's line as V8's CPU profiler files it; a return
        # address's as Error().stack does (see Codes.first_position_wins).
        dec.code.first_position_wins = not caller
        try:
            frames = dec.decode_machine_frame(mf, caller)
        finally:
            dec.code.first_position_wins = False
        kind, conv = self._convert(frames)
        if kind == "js" and not any(f.note for f in frames if f.note != STUB_NOTE):
            checks = self._checks(key, frames, mf.pc)
            if checks is not None:
                if len(self._cache) > MAX_CACHE:
                    self._cache.clear()
                self._cache[key] = _Entry(conv, checks)
        return kind, conv

    def _has_script(self, fn: int) -> bool:
        """Is fn a script's function (not one of V8's JS builtins)?"""
        f = self.dec.f
        try:
            return f.is_function(fn) and f.script(f.shared(fn)) is not None
        except (DecodeError, TargetMemoryError, ValueError):
            return False

    def _native(self, fr: Frame) -> ProfileFrame:
        name = fr.symbol or "??"
        return ProfileFrame(name, fr.module, kind="native")

    def _convert(self, frames: list[Frame]) -> tuple:
        if not frames:
            return "internal", ()
        stub = None
        if frames[0].kind == "internal":
            if frames[0].frame_type in ("ConstructFrame", "FastConstructFrame"):
                return "construct", ()
            if len(frames) == 1 or frames[1].kind != "js":
                return "internal", ()
            # A stub running on its caller's frame: the stub, then the caller.
            stub, frames = frames[0], frames[1:]
        if frames[0].kind == "native":
            return "native", ((self._native(frames[0]), False),)
        out = []
        if stub is not None:
            out.append((ProfileFrame(stub.symbol or "(stub)", None, None, None), True))
        for fr in frames:
            name = fr.function or "(anonymous)"
            if fr.tier == "builtin" or fr.script is None:
                out.append((ProfileFrame(name, None, None, None), fr.inlined))
            else:
                out.append((ProfileFrame(name, fr.script, fr.line, fr.column), fr.inlined))
        return "js", tuple(out)

    def _checks(self, key: tuple, frames: list[Frame], pc: int) -> tuple | None:
        """Words to re-read before trusting this entry again."""
        mem = self.prog.mem
        outer = frames[-1]
        fn, sfi = outer.function_address, outer.sfi
        if fn is None or sfi is None:
            return None
        try:
            checks = [(fn - 1 + self.o_map, mem.u64(fn - 1 + self.o_map)),
                      (fn - 1 + self.o_shared, sfi)]
            if key[0] == "i" and self.h.is_heap(key[2]):
                checks.append((key[2] - 1 + self.o_map, mem.u64(key[2] - 1 + self.o_map)))
            elif key[0] == "j":
                info = self.dec.code._cache.get(pc)
                if info is None:
                    return None
                checks.append((info.code - 1 + self.o_map, mem.u64(info.code - 1 + self.o_map)))
                if self.o_code_start is not None:
                    checks.append((info.code - 1 + self.o_code_start, info.start))
        except TargetMemoryError:
            return None
        if mem.u64(fn - 1 + self.o_shared) != sfi:
            return None
        return tuple(checks)

    def _valid(self, entry: _Entry) -> bool:
        mem = self.prog.mem
        try:
            return all(mem.u64(a) == w for a, w in entry.checks)
        except TargetMemoryError:
            return False


# -- the sampling loop --------------------------------------------------------

class _Stop:
    """Set by SIGINT / SIGTERM: the loop ends at its next turn and detaches."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._old: dict[int, object] = {}

    def __enter__(self) -> "_Stop":
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except (ValueError, OSError):  # not the main thread
                pass
        return self

    def _handle(self, signum: int, _frame) -> None:
        self.reason = "interrupted"

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)  # type: ignore[arg-type]


class _Collector:
    """Profile frames interned, stacks filed per thread: what both samplers record."""

    def __init__(self, prof: Profile, main_tid: int) -> None:
        self.prof = prof
        self.main_tid = main_tid
        self.index: dict[ProfileFrame, int] = {}
        self.by_tid: dict[int, ThreadSamples] = {}

    def frame_id(self, f: ProfileFrame) -> int:
        i = self.index.get(f)
        if i is None:
            i = self.index[f] = len(self.prof.frames)
            self.prof.frames.append(f)
        return i

    def record(self, tid: int, frames: list[ProfileFrame], on_cpu: bool) -> None:
        ts = self.by_tid.get(tid)
        if ts is None:
            main = tid == self.main_tid
            label = (f"main thread {tid}" if main else f"worker thread {tid}")
            ts = self.by_tid[tid] = ThreadSamples(tid, label, main)
        if not frames:
            frames = [PROGRAM if on_cpu else IDLE]
        ts.stacks.append(tuple(self.frame_id(f) for f in reversed(frames)))

    def finish(self) -> None:
        self.prof.threads = sorted(self.by_tid.values(), key=lambda t: (not t.main, t.tid))


def _sample_frames(sampler: StackSampler, backend, snap, role: dict[int, bool], main_tid: int,
                   release: Callable[[int], None]) -> list[ProfileFrame] | None:
    """One sample's frames, decoded from its registers and stack copy; None for
    a thread that runs no isolate (decided at its first sample, then let go)."""
    tid = snap.tid
    backend.use(snap)
    try:
        frames, v8 = sampler.decode(snap.regs)
    finally:
        backend.use(None)
    if tid not in role:
        role[tid] = tid == main_tid or sampler.runs_isolate(frames, v8)
        if not role[tid]:
            release(tid)  # not a JavaScript thread: let it be
    if not role[tid]:
        return None
    if not sampler.native:
        frames = [f for f in frames if f.kind != "native"]
    return frames


def run(tracer, sampler: StackSampler, backend, rate: float, duration: float | None,
        all_threads: bool, idle: bool) -> Profile:
    """Sample until `duration` passes, the target exits, or SIGINT/SIGTERM.

    `tracer` is a ptrace Tracer, already attached; it is detached here, in
    every case, before returning.
    """
    prof = Profile(tracer.pid, rate)
    col = _Collector(prof, tracer.pid)
    record = col.record
    role: dict[int, bool] = {}  # tid -> runs an isolate (decided at its first sample)
    period = 1.0 / rate
    start = next_tick = next_scan = 0.0
    end: float | None = None
    rng = random.Random(tracer.pid)

    def take(tid: int, classify: bool = False) -> None:
        """One sample of one thread; `classify` only decides whether it runs an isolate."""
        if tracer.pending(tid):
            prof.waiting += 1  # its last sample is still to come: no CPU since
            return
        on_cpu = tracer.on_cpu(tid)
        if not classify and not on_cpu and not idle:
            prof.skipped_off_cpu += 1
            return
        snap = tracer.sample(tid, on_cpu, wait=STOP_TIMEOUT if classify else SYNC_WAIT)
        if snap is None:
            if not classify and not tracer.pending(tid):
                prof.failed += 1
            return
        use(snap, classify)

    def late() -> None:
        """Samples of threads that stopped after their tick (they were waiting for a CPU)."""
        for snap in tracer.take_ready():
            if role.get(snap.tid, True):
                use(snap)

    def use(snap, classify: bool = False) -> None:
        frames = _sample_frames(sampler, backend, snap, role, tracer.pid, tracer.release)
        if classify or frames is None:
            return
        prof.held_ns.append(snap.held_ns)
        record(snap.tid, frames, snap.on_cpu)

    with _Stop() as stop:
        try:
            if all_threads:
                for tid in sorted(tracer.threads):
                    take(tid, classify=True)
            # The clock starts once the threads are known.
            start = next_tick = prof.started = time.monotonic()
            end = start + duration if duration is not None else None
            next_scan = start + THREAD_RESCAN
            while stop.reason is None:
                now = time.monotonic()
                if end is not None and now >= end:
                    break
                if tracer.exited or not tracer.alive():
                    prof.stop_reason = "exited"
                    break
                if now < next_tick:
                    wait = next_tick - now
                    if end is not None:
                        wait = min(wait, max(end - now, 0.0))
                    tracer.wait_events(wait)
                    late()
                    continue
                # The next tick, a little jittered so a periodic workload cannot alias.
                next_tick += period * rng.uniform(0.75, 1.25)
                if next_tick < now - period:
                    next_tick = now  # far behind: no burst to catch up
                prof.ticks += 1
                if all_threads and now >= next_scan:
                    next_scan = now + THREAD_RESCAN
                    for tid in tracer.refresh_threads():
                        take(tid, classify=True)
                tids = [tid for tid in sorted(tracer.threads) if role.get(tid, True)] \
                    if all_threads else [tracer.pid]
                for tid in tids:
                    if tid in tracer.threads:
                        take(tid)
                    tracer.pump()
                    late()
            if stop.reason is not None:
                prof.stop_reason = stop.reason
        finally:
            prof.elapsed = time.monotonic() - start if start else 0.0
            tracer.detach()
    if tracer.exited and prof.stop_reason is None:
        prof.stop_reason = "exited"
    col.finish()
    return prof


PERF_POLL = 0.05  # seconds between looks at the clock and the process when no sample comes


def run_perf(perf, sampler: StackSampler, backend, rate: float, duration: float | None,
             all_threads: bool) -> Profile:
    """Sample through perf events until `duration` passes, the target exits,
    or SIGINT/SIGTERM. The process never stops: the kernel writes each
    sample (registers, stack copy) to a ring buffer, read here and decoded
    as the ptrace samples are.

    `perf` is a PerfSampler with its events open but not started; they are
    closed here, in every case, before returning.
    """
    from ..inferior.ptrace import process_state

    prof = Profile(perf.pid, rate)
    col = _Collector(prof, perf.pid)
    role: dict[int, bool] = {}  # tid -> runs an isolate (decided at its first sample)
    start = 0.0

    def use(snap) -> None:
        if snap.tid in perf.released:
            return
        frames = _sample_frames(sampler, backend, snap, role, perf.pid, perf.release)
        if frames is not None:
            col.record(snap.tid, frames, True)

    ran: dict[int, int] = {}  # tid -> its CPU time (ns) when sampling started or it was found

    with _Stop() as stop:
        try:
            perf.start()
            for tid in perf.threads:
                ran[tid] = _cpu_ns(perf.pid, tid)
            start = prof.started = time.monotonic()
            end = start + duration if duration is not None else None
            next_scan = start + THREAD_RESCAN
            while stop.reason is None:
                now = time.monotonic()
                if end is not None and now >= end:
                    break
                if process_state(perf.pid) in (None, "Z", "X"):
                    prof.stop_reason = "exited"
                    break
                wait = PERF_POLL if end is None else min(PERF_POLL, max(end - now, 0.0))
                perf.wait(wait)
                for snap in perf.take():
                    if end is None or snap.time <= end:
                        use(snap)
                if all_threads and now >= next_scan:
                    next_scan = now + THREAD_RESCAN
                    for tid in perf.refresh_threads():
                        ran[tid] = _cpu_ns(perf.pid, tid)
            if stop.reason is not None:
                prof.stop_reason = stop.reason
            prof.elapsed = time.monotonic() - start
            cpu = sum(max(_cpu_ns(perf.pid, tid) - ns, 0) for tid, ns in ran.items()
                      if role.get(tid, tid == perf.pid) and ns >= 0)
            prof.cpu_seconds = cpu / 1e9
            for snap in perf.take():  # written before the end, not yet read
                if snap.time <= start + prof.elapsed:
                    use(snap)
        finally:
            if not prof.elapsed and start:
                prof.elapsed = time.monotonic() - start
            perf.close()
    prof.failed = perf.lost
    col.finish()
    # A clock event fires only while its thread runs: the clock achieved is
    # the busiest thread's, and the ticks a sampled thread spent off a CPU
    # are those it was not sampled at.
    busiest = max((len(t.stacks) for t in prof.threads), default=0)
    prof.ticks = busiest + perf.lost
    sampled = [t for t, r in role.items() if r] or [perf.pid]
    expected = int(prof.elapsed * rate) * len(sampled)
    prof.skipped_off_cpu = max(0, expected - prof.samples - perf.lost)
    return prof


def _cpu_ns(pid: int, tid: int) -> int:
    """A thread's time on a CPU so far (ns, /proc/.../schedstat); -1 when unknown."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1
