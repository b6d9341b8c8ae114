"""The debugger's own `bt` with v8dbg loaded: what it shows for each frame.

gdb's unwinder and frame decorator and lldb's frame-format hook ask about
one of the debugger's frames at a time; the answers come from the decoding
`jsstack` does (the stack layer's FrameIndex), looked up by pc and sp, and
are named here as `function (script:line:column) [tier]`.
"""

from __future__ import annotations

from typing import Callable

from ..program import Program
from ..stack.byframe import FrameAt, FrameIndex, caller_of
from ..stack.frames import Frame
from ..inferior.backend import Registers, ThreadInfo
from .base import Session


def frame_label(fr: Frame) -> str | None:
    """A frame as `bt` names it: a JS frame as `function (script:line:column) [tier]`,
    a V8-internal one as `<FrameType> builtin`; None for a native frame."""
    if fr.kind == "js":
        name = fr.function or "(anonymous)"
        if fr.constructor:
            name = f"new {name}"
        if fr.script is None:
            where = "<builtin>" if fr.tier == "builtin" else "<unknown>"
        elif fr.line:
            where = f"{fr.script}:{fr.line}:{fr.column}"
        else:
            where = fr.script
        tier = (fr.tier or "?") + (" inlined" if fr.inlined else "")
        note = f" ({fr.note})" if fr.note else ""
        return f"{name} ({where}) [{tier}]{note}"
    if fr.kind == "internal":
        return f"<{fr.frame_type}>" + (f" {fr.symbol}" if fr.symbol else "")
    return None


class BtFrames:
    """One front end's answers about its frames, for the target it has now.

    `key` names the target's state (it changes when a live target runs or
    another target is selected); a target that is not node is remembered
    under its key, so `bt` on a process without V8 pays for one failed
    look, not one per frame.
    """

    def __init__(self, session: Session, key: Callable[[], object]) -> None:
        self.session = session
        self.key = key
        self._not_v8: object = None

    def program(self) -> Program | None:
        k = self.key()
        if k == self._not_v8:
            return None
        try:
            if self.session.target_running():
                return None  # memory moves under a running thread: the debugger's own bt, quietly
            return self.session.program()
        except Exception:  # not node (V8DbgError), or unreadable: the debugger's own bt
            self._not_v8 = k
            return None

    def index(self, prog: Program, tid: int, regs: Registers) -> FrameIndex | None:
        """The thread's frames by machine frame (decoded once per target state)."""
        try:
            return prog.stack.index_of(ThreadInfo(tid, None, regs=regs))
        except Exception:
            return None

    def at(self, tid: int, regs: Registers, pc: int, sp: int, fp: int,
           next_frame: tuple[int, int] | None = None) -> FrameAt | None:
        """What jsstack decoded for the machine frame running pc at sp (else
        fp); with the (pc, fp) of the debugger's next frame, also the frames
        its unwinder stepped over (see FrameIndex.at)."""
        prog = self.program()
        if prog is None:
            return None
        idx = self.index(prog, tid, regs)
        return idx.at(pc, sp, fp, next_frame) if idx is not None else None

    def caller(self, tid: int, regs: Callable[[], Registers | None], pc: int, sp: int,
               fp: int) -> Registers | None:
        """The caller's registers of a V8 frame, or None to let the debugger unwind.
        `regs` gives the thread's innermost registers (asked for only when needed)."""
        prog = self.program()
        if prog is None:
            return None
        try:
            lm = prog.module_for(pc)
            if lm is not None and lm.cfi is not None and prog.builtin_at(pc) is None:
                return None  # native code with unwind tables: the debugger's own
            r = regs()
            idx = self.index(prog, tid, r) if r is not None else None
            return caller_of(prog, idx, pc, sp, fp)
        except Exception:
            return None
