"""gdb's own `bt` through JavaScript: an unwinder and a frame filter.

gdb cannot unwind V8's builtins and JIT code (they have no unwind tables):
its backtrace stops at the first of them. The unwinder gives gdb the caller
of each V8 frame from v8dbg's walk of the thread (the one `jsstack` shows),
and the frame filter names each JS frame `function (script:line:column)
[tier]`; a frame of optimized code that inlined others is followed by a
frame line for each, innermost first, as jsstack lists them. `v8dbg bt off`
removes both, `v8dbg bt on` puts them back.
"""

from __future__ import annotations

from typing import Iterator

import gdb  # type: ignore[import-not-found]
from gdb.FrameDecorator import FrameDecorator  # type: ignore[import-not-found]
from gdb.unwinder import Unwinder, register_unwinder  # type: ignore[import-not-found]

from .commands.btframes import BtFrames, frame_label
from .inferior.backend import Registers

NAME = "v8dbg"


class _FrameId:
    """What gdb tells frames apart by: the caller's sp and the frame's pc
    (gdb 13 takes them as gdb.Value only)."""

    def __init__(self, sp, pc) -> None:
        self.sp = sp
        self.pc = pc


def _tid() -> int:
    t = gdb.selected_thread()
    return (t.ptid[1] or t.ptid[0]) if t is not None else 0


def _innermost() -> Registers | None:
    """The selected thread's innermost registers (frame 0 exists by the time
    gdb unwinds a frame above it)."""
    try:
        f = gdb.newest_frame()
        return Registers(int(f.read_register("rip")), int(f.read_register("rsp")),
                         int(f.read_register("rbp")))
    except (gdb.error, RuntimeError, ValueError):
        return None


class JsUnwinder(Unwinder):
    """Carries gdb through V8's frames: each one's caller as v8dbg's walk found it."""

    def __init__(self, frames: BtFrames, busy: list[bool]) -> None:
        super().__init__(NAME)
        self.frames = frames
        self.busy = busy

    def __call__(self, pending):
        if self.busy[0]:
            return None  # gdb asked again while v8dbg reads the target: its own unwinders
        self.busy[0] = True
        try:
            return self._unwind(pending)
        except Exception:  # never break gdb's own backtrace
            return None
        finally:
            self.busy[0] = False

    def _unwind(self, pending):
        rip = pending.read_register("rip")
        pc, sp, fp = int(rip), int(pending.read_register("rsp")), int(pending.read_register("rbp"))
        own = Registers(pc, sp, fp)
        regs = (lambda: own) if pending.level() == 0 else _innermost
        caller = self.frames.caller(_tid(), regs, pc, sp, fp)
        if caller is None or caller.rsp <= sp:
            return None
        word = gdb.lookup_type("unsigned long")
        info = pending.create_unwind_info(_FrameId(gdb.Value(caller.rsp).cast(word),
                                                   gdb.Value(pc).cast(word)))
        info.add_saved_register("rip", gdb.Value(caller.rip).cast(rip.type))
        info.add_saved_register("rsp", gdb.Value(caller.rsp).cast(word))
        info.add_saved_register("rbp", gdb.Value(caller.rbp).cast(word))
        return info


class JsFrame(FrameDecorator):
    """A JS or V8-internal frame, named as jsstack names it."""

    def __init__(self, base, label: str) -> None:
        super().__init__(base)
        self.label = label

    def function(self):
        return self.label

    def filename(self):
        return None

    def line(self):
        return None

    def frame_args(self):
        return None

    def frame_locals(self):
        return None


def _named_native(dec):
    """A frame without debug info named as gdb's own `bt` names it: once a
    frame filter is installed, gdb 13 names such a frame from its minimal
    symbol and leaves some C++ names empty (an anonymous namespace's)."""
    try:
        frame = dec.inferior_frame()
        if frame.function() is None and frame.name():
            return JsFrame(dec, frame.name())
    except (gdb.error, RuntimeError):
        pass
    return dec


class JsFrameFilter:
    """Names JS frames in `bt`; one line per inlined frame, innermost first."""

    def __init__(self, frames: BtFrames, busy: list[bool]) -> None:
        self.name = NAME
        self.priority = 100
        self.enabled = True
        self.frames = frames
        self.busy = busy

    def filter(self, it: Iterator) -> Iterator:
        for dec in it:
            yield from self._named(dec)

    def _named(self, dec) -> list:
        try:
            frame = dec.inferior_frame()
            pc = int(frame.pc())
            sp, fp = int(frame.read_register("rsp")), int(frame.read_register("rbp"))
            regs = _innermost()
            if regs is None:
                return [dec]
            self.busy[0] = True
            try:
                at = self.frames.at(_tid(), regs, pc, sp, fp)
            finally:
                self.busy[0] = False
        except Exception:
            return [_named_native(dec)]
        if at is None or not at.v8:
            return [_named_native(dec)]
        out = []
        for fr in at.frames:
            label = frame_label(fr)
            out.append(JsFrame(dec, label) if label else dec)
        return out or [dec]


class Hooks:
    """The unwinder and the frame filter, installed and removed together."""

    def __init__(self, frames: BtFrames) -> None:
        busy = [False]
        self.unwinder = JsUnwinder(frames, busy)
        self.filter = JsFrameFilter(frames, busy)
        self.installed = False

    def install(self) -> None:
        if self.installed:
            return
        register_unwinder(None, self.unwinder, replace=True)
        gdb.frame_filters[NAME] = self.filter
        self.installed = True

    def remove(self) -> None:
        if not self.installed:
            return
        gdb.frame_unwinders[:] = [u for u in gdb.frame_unwinders if u is not self.unwinder]
        gdb.frame_filters.pop(NAME, None)
        gdb.invalidate_cached_frames()
        self.installed = False
