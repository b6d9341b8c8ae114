"""JavaScript stack segments from V8's own thread-local state.

A thread's JavaScript runs in segments: C++ enters JS through an entry frame,
and JS calls back into C++ through an exit frame. V8 keeps, per isolate, the
fp of the innermost exit frame (`c_entry_fp`) and of the outermost entry
frame (`js_entry_sp`); each entry frame saves the `c_entry_fp` of the segment
below it. Following that chain finds every JS frame from memory alone, so a
stack whose native frames cannot be unwound (a library missing on this
machine) still shows all of its JavaScript.

A fast API call (optimized code calling C++ directly) builds no exit frame:
V8 records its caller's fp and pc in the isolate instead, and the innermost
segment starts there.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import TargetMemoryError, V8DbgError
from ..inferior.backend import Registers
from ..inferior.unwind import MachineFrame, follows_call, walk
from ..v8 import layouts, pages

if TYPE_CHECKING:
    from ..program import Program

MAX_SEGMENTS = 256
MAX_FRAMES_PER_SEGMENT = 8192
SEARCH_BYTES = 256 << 10  # below a Heap, where its Isolate's ThreadLocalTop may lie


@dataclass
class ThreadTop:
    """One isolate's thread-local stack state."""

    isolate: int
    heap: int
    c_entry_fp: int
    js_entry_sp: int
    handler: int
    top: int = 0  # the ThreadLocalTop itself
    exits: list[int] = field(default_factory=list)  # exit-frame fps, innermost first
    fast_fp: int = 0  # the caller of a fast API call running now (0: none)
    fast_pc: int = 0  # a pc in that caller's code, as V8 recorded it


def _words(prog: Program, top: int,
           facts: dict[str, int] | None = None) -> tuple[int, int, int, int]:
    md, mem = prog.md, prog.mem
    f = facts or {n: md.const(n) for n in ("TopIsolate", "TopCEntryFp", "TopJsEntrySp",
                                            "TopHandler")}
    return (mem.u64(top + f["TopIsolate"]), mem.u64(top + f["TopCEntryFp"]),
            mem.u64(top + f["TopJsEntrySp"]), mem.u64(top + f["TopHandler"]))


def _plausible(c_entry_fp: int, js_entry_sp: int) -> bool:
    if c_entry_fp & 7 or js_entry_sp & 7:
        return False
    if c_entry_fp and js_entry_sp and not c_entry_fp < js_entry_sp:
        return False
    return not (c_entry_fp and not js_entry_sp)


def _top_of(prog: Program, heap: int) -> ThreadTop | None:
    """The ThreadLocalTop of the isolate owning `heap`, checked by its pointer back:
    at the release's own offsets, else at those of another release of its line
    (node patches V8 within a line), else searched for."""
    md = prog.md
    names = ("IsolateHeap", "IsolateThreadLocalTop", "TopIsolate", "TopCEntryFp",
             "TopJsEntrySp", "TopHandler")
    try:
        own = {n: md.const(n) for n in names}
    except V8DbgError:
        own = None
    candidates = [own] if own else []
    for facts in layouts.thread_top_variants(md):
        if facts not in candidates:
            candidates.append(facts)
    for facts in candidates:
        try:
            iso = heap - facts["IsolateHeap"]
            top = iso + facts["IsolateThreadLocalTop"]
            back, cef, jes, handler = _words(prog, top, facts)
            if back == iso and _plausible(cef, jes):
                return ThreadTop(iso, heap, cef, jes, handler, top)
        except (TargetMemoryError, KeyError):
            continue
    return _search_top(prog, heap)


def _search_top(prog: Program, heap: int) -> ThreadTop | None:
    """Find the ThreadLocalTop near the Heap by its isolate_ pointer, when the
    table's Isolate offsets do not hold (a release that moved members). A
    candidate must hold an outermost entry frame on some thread's stack."""
    md = prog.md
    try:
        off_iso = md.const("TopIsolate")
    except V8DbgError:
        return None
    stacks = _thread_stacks(prog)
    if not stacks:
        return None

    def on_stack(a: int) -> bool:
        return any(lo <= a < hi for lo, hi in stacks)

    page = 4096
    lo = (heap - SEARCH_BYTES) & ~(page - 1)
    for base in range(heap & ~(page - 1), lo - page, -page):
        try:
            data = prog.mem.read(base, page)
        except TargetMemoryError:
            continue
        for i, w in enumerate(struct.unpack(f"<{page // 8}Q", data)):
            top = base + 8 * i - off_iso
            # isolate_ points back to the Isolate, which starts below its ThreadLocalTop.
            if not lo <= w < top or top - w > SEARCH_BYTES:
                continue
            try:
                back, cef, jes, handler = _words(prog, top)
            except TargetMemoryError:
                continue
            if back == w and jes and _plausible(cef, jes) and on_stack(jes) \
                    and (not cef or on_stack(cef)):
                return ThreadTop(w, heap, cef, jes, handler, top)
    return None


def _thread_stacks(prog: Program) -> list[tuple[int, int]]:
    """[sp, end of its mapping) of each thread with registers."""
    out = []
    try:
        threads = prog.backend.threads()
    except Exception:
        return out
    for t in threads[:4096]:
        regs = t.regs
        if regs is None or not regs.rsp:
            continue
        end = _stack_end(prog, regs.rsp)
        if end is not None:
            out.append((regs.rsp, end))
    return out


def thread_tops(prog: Program) -> list[ThreadTop]:
    """Every isolate's ThreadLocalTop with its chain of exit frames and the
    fast API call it runs, if any (cached)."""
    cached = prog.stack.thread_tops
    if cached is not None:
        return cached
    out: list[ThreadTop] = []
    try:
        heaps = pages.find_heaps(prog, pages.layout(prog))
    except (TargetMemoryError, V8DbgError):
        heaps = {}
    for heap in sorted(heaps):
        t = _top_of(prog, heap)
        if t is not None:
            t.fast_fp, t.fast_pc = _fast_call(prog, t)
            if t.c_entry_fp or not t.fast_fp:
                t.exits = exit_chain(prog, t.c_entry_fp)
            else:
                # Running JS has no innermost exit frame (c_entry_fp is 0): the
                # chain to the segments below starts at the fast call's caller.
                t.exits = exit_chain(prog, t.fast_fp)[1:]
            out.append(t)
    prog.stack.thread_tops = out
    return out


def _fast_call(prog: Program, t: ThreadTop) -> tuple[int, int]:
    """The (fp, pc) V8 recorded for the fast API call running now, or (0, 0).

    The words are IsolateData's: from the ThreadLocalTop where the table
    places them there, else from the Isolate; a line without them gives none.
    """
    md = prog.md
    try:
        if "TopFastCCallerFp" in md.consts:
            fp_at, pc_at = t.top + md.const("TopFastCCallerFp"), t.top + md.const("TopFastCCallerPc")
        elif "IsolateFastCCallerFp" in md.consts:
            fp_at = t.isolate + md.const("IsolateFastCCallerFp")
            pc_at = t.isolate + md.const("IsolateFastCCallerPc")
        else:
            return 0, 0
        fp, pc = prog.mem.u64(fp_at), prog.mem.u64(pc_at)
    except (TargetMemoryError, V8DbgError):
        return 0, 0
    # The caller runs JS on this isolate's stack: below its outermost entry
    # frame and below the innermost exit frame, whose segments lie further up.
    if not fp or not pc or fp & 7 or not t.js_entry_sp or fp >= t.js_entry_sp \
            or (t.c_entry_fp and fp >= t.c_entry_fp) or t.js_entry_sp - fp > 64 << 20:
        return 0, 0
    return fp, pc


FAST_CALL_SCAN_BYTES = 64 << 10
FAST_CALL_PC_AHEAD = 32  # at most this far from a recorded pc to its call's return address


def fast_call_frame(prog: Program, t: ThreadTop, rsp: int) -> MachineFrame | None:
    """The optimized frame that made the fast API call running on this thread.

    Its pc is the call's return address, found on the stack just below the
    frame (the slot the call pushed, which also gives the frame's sp): the pc
    V8 recorded where the table says it is one, else the first return address
    after a call within a few bytes of it.
    """
    if not t.fast_fp or not rsp <= t.fast_fp:
        return None
    ahead = prog.md.const("FastCCallerPcAhead", 0)
    lo = max(rsp, t.fast_fp - FAST_CALL_SCAN_BYTES) & ~7
    try:
        words = prog.mem.read(lo, t.fast_fp - lo)
    except TargetMemoryError:
        return None
    n = len(words) // 8
    for i, w in enumerate(reversed(struct.unpack(f"<{n}Q", words[:8 * n]))):
        if (w == t.fast_pc and not ahead) or (ahead and t.fast_pc < w <= t.fast_pc + FAST_CALL_PC_AHEAD
                                               and follows_call(prog, w)):
            slot = lo + 8 * (n - 1 - i)
            return MachineFrame(w, slot + 8, t.fast_fp, False)
    # No return slot found: the recorded pc still names the code and its frame.
    return MachineFrame(t.fast_pc, t.fast_fp, t.fast_fp, False)


def _entry_types(prog: Program) -> set[int]:
    return {v for k, v in prog.md.consts.items()
            if k in ("frametype_EntryFrame", "frametype_ConstructEntryFrame")}


def exit_chain(prog: Program, c_entry_fp: int) -> list[int]:
    """The fp of each segment's exit frame, innermost first: from an exit
    frame, the fp chain leads through JS frames to the entry frame, which
    saved the next segment's c_entry_fp."""
    md, mem = prog.md, prog.mem
    entry = _entry_types(prog)
    off_marker = md.const("off_fp_context_or_frame_type", md.const("off_fp_context"))
    next_off = md.const("EntryFrameNextExitFp")
    out: list[int] = []
    e = c_entry_fp
    while e and len(out) < MAX_SEGMENTS and (not out or e > out[-1]):
        out.append(e)
        fp, nxt = e, 0
        try:
            for _ in range(MAX_FRAMES_PER_SEGMENT):
                up = mem.u64(fp)
                if up <= fp or up & 7:
                    break
                fp = up
                marker = mem.i64(fp + off_marker)
                if not marker & 1 and 0 <= marker < 1 << 16 and (marker >> 1) in entry:
                    nxt = mem.u64(fp + next_off)
                    break
        except TargetMemoryError:
            break
        if nxt and nxt <= fp:
            break
        e = nxt
    return out


def _entry_fp(prog: Program, fp: int) -> int | None:
    """The fp of the entry frame that ends the segment whose innermost frame
    has this fp: up the fp chain to the frame marked entry (None: not found)."""
    md, mem = prog.md, prog.mem
    entry = _entry_types(prog)
    off_marker = md.const("off_fp_context_or_frame_type", md.const("off_fp_context"))
    try:
        for _ in range(MAX_FRAMES_PER_SEGMENT):
            up = mem.u64(fp)
            if up <= fp or up & 7:
                return None
            fp = up
            marker = mem.i64(fp + off_marker)
            if not marker & 1 and 0 <= marker < 1 << 16 and (marker >> 1) in entry:
                return fp
    except TargetMemoryError:
        return None
    return None


def js_spans(prog: Program, t: ThreadTop, rsp: int) -> tuple[list[tuple[int, int]], bool]:
    """[low, high) of each JavaScript segment of the isolate's thread whose
    stack pointer is rsp: the V8 frames (JS, builtin, stub, exit, internal)
    between an exit frame and the entry frame that began the segment, and
    whether every segment was bounded so. An exit frame's segment starts at
    the sp it saved (below it run the C++ frames it called); the segment
    ends below the entry frame's saved c_entry_fp, so the C++ callee-saved
    registers the entry frame keeps, and the C++ frames above it, are left
    out (V8 visits neither). JS running with no exit frame below it (a core
    taken while JS ran, a fast API call) is bounded by rsp instead."""
    md, mem = prog.md, prog.mem
    if not t.js_entry_sp:
        return [], True
    below = md.const("EntryFrameNextExitFp")
    out: list[tuple[int, int]] = []
    exits = list(t.exits)
    exact = True
    if not t.c_entry_fp:
        # JS runs now, with no exit frame below it: the running segment from
        # rsp (the frames of a fast API call's C++ function with it) up to
        # its entry frame; without a fast call, the older segments' entry
        # frames are unknown too, and the span reaches the outermost one.
        top = None
        if t.fast_fp:
            e = _entry_fp(prog, t.fast_fp)
            top = e + below if e else None
        if top is None:
            top, exits = t.js_entry_sp, []
        if not rsp < top:
            return [], False
        out.append((rsp & ~7, top))
        exact = False
    for e in exits:
        try:
            sp = mem.u64(e + md.const("ExitFrameSpOffset"))
        except TargetMemoryError:
            sp = e
        if not sp <= e or e - sp > 1 << 20:
            sp = e
        top = _entry_fp(prog, e)
        if top is None:
            # Its entry frame not found: up to the outermost one, conservatively.
            out.append((sp, t.js_entry_sp))
            exact = False
            continue
        out.append((sp, top + below))
    return out, exact


def _stack_end(prog: Program, sp: int) -> int | None:
    regs = pages.regions(prog)
    i = bisect.bisect_right([r[0] for r in regs], sp) - 1
    if i < 0 or sp >= regs[i][1]:
        return None
    return regs[i][1]


def top_for(prog: Program, regs: Registers) -> ThreadTop | None:
    """The isolate running JavaScript on the thread with these registers: the
    one whose outermost entry frame lies on this thread's stack."""
    tops = thread_tops(prog)
    if not tops:
        return None
    end = _stack_end(prog, regs.rsp)
    if end is None:
        return None
    for t in tops:
        if t.js_entry_sp and regs.rsp <= t.js_entry_sp < end:
            return t
    return None


def exit_frame(prog: Program, fp: int) -> MachineFrame:
    """The exit frame at fp; its pc is the return address just below the sp it saved."""
    pc = 0
    try:
        sp = prog.mem.u64(fp + prog.md.const("ExitFrameSpOffset"))
        if sp < fp:
            pc = prog.mem.u64(sp - 8)
        else:
            sp = fp
    except (TargetMemoryError, V8DbgError):
        sp = fp
    return MachineFrame(pc, sp, fp, False)


def caller_regs(prog: Program, fp: int) -> Registers | None:
    try:
        return Registers(prog.mem.u64(fp + 8), fp + 16, prog.mem.u64(fp))
    except TargetMemoryError:
        return None


@dataclass
class Recovery:
    """What the thread-state walk had to do, for the warning a command prints."""

    lost_at: int | None = None  # pc where native unwinding stopped
    used: bool = False  # frames were added from V8's thread state


def complete(prog: Program, regs: Registers, machine: list[MachineFrame],
             limit: int) -> tuple[list[MachineFrame], Recovery]:
    """The machine frames with every JS segment of the thread in place.

    Frames of the native walk are kept up to a frame in a library that is
    missing here (whatever was unwound past it is a guess), or up to where the
    walk skipped an exit frame V8 recorded; from there the walk restarts at
    the next exit frame of V8's chain.
    """
    rec = Recovery()
    lost = _first_lost(prog, machine)
    try:
        t = top_for(prog, regs)
    except (TargetMemoryError, V8DbgError):
        t = None
    fast = fast_call_frame(prog, t, regs.rsp) if t is not None else None
    if t is None or not (t.exits or fast):
        if lost is not None:
            rec.lost_at = machine[lost].pc
        return machine, rec
    # Segment starts, innermost first: the fast API call's caller, then each exit frame.
    pending = ([fast.fp] if fast else []) + list(t.exits)
    out: list[MachineFrame] = []
    frames = machine
    for _ in range(MAX_SEGMENTS + 1):
        for mf in frames:
            if pending and mf.sp > pending[0] and not (mf.fp == pending[0] and not mf.native):
                break  # the walk went past an exit frame without finding it
            if pending and mf.fp == pending[0] and not mf.native:
                pending.pop(0)
            out.append(mf)
            if len(out) >= limit:
                return out, rec
            if _is_lost(prog, mf):
                if rec.lost_at is None:
                    rec.lost_at = mf.pc
                break
        if not pending:
            break
        e = pending.pop(0)
        rec.used = True
        ef = fast if fast is not None and e == fast.fp else exit_frame(prog, e)
        cr = caller_regs(prog, e)
        start = out[-1].sp if out else regs.rsp
        bridge = _bridge(prog, start, ef, regs.rbp) if start < ef.sp else []
        frames = bridge + [ef] + (walk(prog, cr, limit) if cr is not None else [])
    return out, rec


BRIDGE_SCAN_BYTES = 64 << 10
BRIDGE_FRAMES = 64


def _bridge(prog: Program, lo: int, ef: MachineFrame, rbp: int) -> list[MachineFrame]:
    """Native frames between where unwinding stopped and an exit frame.

    A stack word that is a return address (just after a call) into code with
    unwind tables may start a walk; the walk is taken only when it arrives
    exactly at the exit frame's pc and sp, so a stale word never adds frames.
    """
    mem = prog.mem
    end = min(ef.sp, lo + BRIDGE_SCAN_BYTES)
    lo = (lo + 7) & ~7
    try:
        words = [mem.u64(a) for a in range(lo, end + 16, 8)]
    except TargetMemoryError:
        return []
    calls = [i for i, w in enumerate(words[:(end - lo) // 8]) if _after_call(prog, w)]
    # Frame bases of code that keeps rbp as a frame pointer: the saved caller's
    # rbp (further up, at most the exit frame's fp) under a return address.
    after = set(calls)
    bases = [lo + 8 * i for i in range(len(words) - 1)
             if lo + 8 * i < words[i] <= ef.fp and (i + 1 in after or words[i + 1] == ef.pc)]
    for i in calls:
        addr = lo + 8 * i
        if _calls_known_code(prog, words[i]):
            # The innermost frame found must have called into what could not be
            # unwound; a direct call to code with unwind tables is a stale word.
            continue
        above = [b for b in bases if b > addr][:2]
        for guess in [rbp] + above:
            got = _bridge_walk(prog, words[i], addr, guess, ef)
            if got:
                return got
    return []


def _bridge_walk(prog: Program, pc: int, addr: int, rbp: int,
                 ef: MachineFrame) -> list[MachineFrame]:
    frames = walk(prog, Registers(pc, addr + 8, rbp), BRIDGE_FRAMES, caller=True)
    for i, mf in enumerate(frames):
        if mf.pc == ef.pc and mf.sp == ef.sp:
            got = frames[:i]
            return got if got and all(f.native for f in got) else []
        if mf.sp > ef.sp or not mf.native:
            break
    return []


def _calls_known_code(prog: Program, w: int) -> bool:
    """True when the call before w goes directly to a function of a module
    that is here (not through the PLT, not to a library that is missing)."""
    try:
        code = prog.mem.read(w - 5, 5)
    except TargetMemoryError:
        return False
    if code[0] != 0xE8:
        return False  # an indirect call: its target is unknown
    target = (w + struct.unpack("<i", code[1:])[0]) & ((1 << 64) - 1)
    lm = prog.module_for(target)
    if lm is None or lm.elf is None or lm.cfi is None:
        return False
    link = lm.link_address(target)
    if link is None:
        return False
    for sec in lm.elf.sections:
        if sec.name.startswith(".plt") and sec.addr <= link < sec.addr + sec.size:
            return False
    return lm.cfi.rule_at(link) is not None


def _after_call(prog: Program, w: int) -> bool:
    """True when w follows a call instruction in code with unwind tables."""
    lm = prog.module_for(w)
    if lm is None or lm.elf is None or lm.cfi is None or prog.builtin_at(w) is not None:
        return False
    link = lm.link_address(w - 1)
    if link is None or lm.cfi.rule_at(link) is None:
        return False
    return follows_call(prog, w)


def _is_lost(prog: Program, mf: MachineFrame) -> bool:
    lm = prog.module_for(mf.pc)
    return lm is not None and lm.elf is None


def _first_lost(prog: Program, machine: list[MachineFrame]) -> int | None:
    for i, mf in enumerate(machine):
        if _is_lost(prog, mf):
            return i
    return None


def loss_message(prog: Program, rec: Recovery) -> str | None:
    """One line naming the library native unwinding could not go through."""
    if rec.lost_at is None:
        return None
    lm = prog.module_for(rec.lost_at)
    if lm is None:
        return None
    found = lm.found
    if found is not None:
        bid = f" (build-id {found.want})" if found.want else ""
        what = f"{lm.path}{bid}, which {found.problem or 'could not be read'}"
    else:
        what = f"{lm.path}, which could not be read"
    js = "; JavaScript frames come from V8's own thread state" if rec.used else ""
    return (f"native unwinding stops in {what}{js}; for the native frames, point v8dbg at "
            "the library (--sysroot DIR / --solib-path DIR; gdb: set sysroot / "
            "set solib-search-path; lldb: target modules add FILE)")
