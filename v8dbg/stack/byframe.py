"""A thread's decoded frames looked up by one machine frame, as a debugger sees it.

gdb's unwinder and frame decorator and lldb's frame-format hook ask about
one of their own frames at a time, by its pc and stack pointer. The answer
is what `jsstack` decoded for that machine frame (several frames when
optimized code inlined others) and the machine frame of its caller, so the
debugger's `bt` and `jsstack` come from one walk and agree frame by frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..inferior.backend import Registers
from ..inferior.unwind import MachineFrame
from .segments import caller_regs

if TYPE_CHECKING:
    from ..program import Program
    from .frames import Frame

# Frames of the walk on one frame pointer a debugger's unwinder may step over.
MAX_SHARED_FP = 2


@dataclass
class FrameAt:
    """What one machine frame holds: its frames, innermost first, and its caller."""

    frames: list[Frame]
    caller: MachineFrame | None

    @property
    def v8(self) -> bool:
        """True when some frame of it is JavaScript or V8-internal."""
        return any(fr.kind != "native" for fr in self.frames)


class FrameIndex:
    """The machine frames of one thread's walk, keyed by (pc, sp) and (pc, fp)."""

    def __init__(self, machine: list[MachineFrame], frames: list[Frame]) -> None:
        self.machine = machine
        self._frames: dict[int, list[Frame]] = {}
        for fr in frames:
            self._frames.setdefault(fr.depth, []).append(fr)
        self._by_sp: dict[tuple[int, int], int] = {}
        self._by_fp: dict[tuple[int, int], int] = {}
        for depth, mf in enumerate(machine):
            self._by_sp.setdefault((mf.pc, mf.sp), depth)
            if not mf.native:
                self._by_fp.setdefault((mf.pc, mf.fp), depth)

    def at(self, pc: int, sp: int, fp: int | None = None,
           next_frame: tuple[int, int] | None = None) -> FrameAt | None:
        """The machine frame running pc with this sp (else this fp), or None.

        A debugger that unwinds by itself (lldb) may step over a frame of the
        walk that runs on this one's frame pointer (the caller of a stub that
        has set up no frame): given the (pc, fp) of the debugger's next
        frame, such frames are added to this one's. (Both: a function that
        calls itself through a stub returns to the same pc twice.)"""
        depth = self._by_sp.get((pc, sp))
        if depth is None and fp is not None:
            depth = self._by_fp.get((pc, fp))
        if depth is None:
            return None
        frames = list(self._frames.get(depth, []))
        last = depth
        while next_frame is not None and last + 1 < len(self.machine) and \
                last - depth < MAX_SHARED_FP and \
                self.machine[last + 1].fp == self.machine[depth].fp and \
                (self.machine[last + 1].pc, self.machine[last + 1].fp) != next_frame:
            last += 1
            frames += self._frames.get(last, [])
        caller = self.machine[last + 1] if last + 1 < len(self.machine) else None
        return FrameAt(frames, caller)


def is_v8_code(prog: Program, pc: int) -> bool:
    """pc is in V8's builtins or in JIT code on V8's heap (no module's unwind
    tables cover it)."""
    if prog.builtin_at(pc) is not None:
        return True
    if prog.module_for(pc) is not None:
        return False
    try:
        return prog.codes.code_for_pc(pc) is not None
    except (DecodeError, TargetMemoryError, V8DbgError):
        return False


def caller_of(prog: Program, index: FrameIndex | None, pc: int, sp: int,
              fp: int) -> Registers | None:
    """The registers of the caller of the V8 frame running pc: from the
    thread's walk where it holds this frame, else by V8's frame layout
    (caller's fp at [fp], return address at [fp+8], caller's sp fp+16).
    None for a frame that is not V8's (the debugger unwinds it)."""
    at = index.at(pc, sp, fp) if index is not None else None
    if at is not None:
        if not at.v8 and not is_v8_code(prog, pc):
            return None
        c = at.caller
        return Registers(c.pc, c.sp, c.fp) if c is not None else None
    if not is_v8_code(prog, pc):
        return None
    return caller_regs(prog, fp)
