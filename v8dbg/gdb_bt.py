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
from .stack.byframe import FrameAt
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
            at = frames_at(self.frames, self.busy, dec.inferior_frame())
        except Exception:
            return [_named_native(dec)]
        if at is None or not at.v8:
            return [_named_native(dec)]
        out = []
        for fr in at.frames:
            label = frame_label(fr)
            out.append(JsFrame(dec, label) if label else dec)
        return out or [dec]


def frames_at(frames: BtFrames, busy: list[bool], frame) -> FrameAt | None:
    """What jsstack decoded for one of gdb's frames (None: not the target's V8)."""
    pc = int(frame.pc())
    sp, fp = int(frame.read_register("rsp")), int(frame.read_register("rbp"))
    regs = _innermost()
    if regs is None:
        return None
    busy[0] = True
    try:
        return frames.at(_tid(), regs, pc, sp, fp)
    finally:
        busy[0] = False


# gdb 13 applies frame filters to `bt` only; `frame`, `up`, `down` and `info
# frame` print a JS frame as `??`. Their post-hooks (user-defined commands gdb
# runs after a command) add the frame's JS names. A hook the user had already
# defined keeps its body, and gets it back alone when v8dbg's bt is off.
HOOKED = {"hookpost-frame": "frame", "frame hookpost-level": "frame",
          "frame hookpost-address": "frame", "frame hookpost-pc": "frame",
          "frame hookpost-function": "frame", "hookpost-up": "frame", "hookpost-down": "frame",
          "info hookpost-frame": "info"}
_CALL = 'python __import__("v8dbg.gdb_bt").gdb_bt.name_selected("{}")'
_active: list[Hooks] = []


def name_selected(how: str) -> None:
    """Print the JS and V8-internal frames of gdb's selected frame, as `bt` names
    them: under gdb's frame line (`frame`, `up`, `down`) or as `info frame`'s
    ` JavaScript:` lines. Nothing for a native frame or while the target runs."""
    if not _active or not _active[0].installed:
        return
    hooks = _active[0]
    try:
        at = frames_at(hooks.frames, hooks.busy, gdb.selected_frame())
    except Exception:  # a hook that fails would print a Python error after gdb's own
        return
    if at is None or not at.v8:
        return
    for fr in at.frames:
        label = frame_label(fr)
        if label:
            gdb.write(f" JavaScript: {label}\n" if how == "info" else f"    {label}\n")


def _user_body(name: str) -> list[str]:
    """The lines of user-defined command NAME (none when it is not defined)."""
    try:
        text = gdb.execute(f"show user {name}", to_string=True)
    except gdb.error:
        return []
    lines = text.splitlines()
    return [line[2:] if line.startswith("  ") else line for line in lines[1:]]


def _define(name: str, body: list[str]) -> None:
    """(Re)define user command NAME without gdb asking to confirm it."""
    confirm = gdb.parameter("confirm")
    gdb.execute("set confirm off", to_string=True)
    try:
        gdb.execute("\n".join([f"define {name}", *body, "end"]), to_string=True)
    finally:
        gdb.execute(f"set confirm {'on' if confirm else 'off'}", to_string=True)


class Hooks:
    """The unwinder, the frame filter and the frame-command hooks, installed
    and removed together."""

    def __init__(self, frames: BtFrames) -> None:
        self.busy = [False]
        self.frames = frames
        self.unwinder = JsUnwinder(frames, self.busy)
        self.filter = JsFrameFilter(frames, self.busy)
        self.installed = False
        self._users: dict[str, list[str]] = {}
        _active[:] = [self]

    def install(self) -> None:
        if self.installed:
            return
        register_unwinder(None, self.unwinder, replace=True)
        gdb.frame_filters[NAME] = self.filter
        for name, how in HOOKED.items():
            call = _CALL.format(how)
            body = [line for line in _user_body(name) if line.strip() != call]
            self._users[name] = body
            try:
                _define(name, [call, *body])
            except gdb.error:
                pass  # this gdb cannot hook that command: bt still names the frames
        self.installed = True

    def remove(self) -> None:
        if not self.installed:
            return
        gdb.frame_unwinders[:] = [u for u in gdb.frame_unwinders if u is not self.unwinder]
        gdb.frame_filters.pop(NAME, None)
        for name, body in self._users.items():
            try:
                _define(name, body)
            except gdb.error:
                pass
        self._users.clear()
        gdb.invalidate_cached_frames()
        self.installed = False
