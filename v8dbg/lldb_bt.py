"""lldb's own `bt` names JavaScript frames, through its frame-format setting.

lldb unwinds through V8's frames already (they keep rbp as a frame pointer)
but shows each as a bare address. The plugin adds `${script.frame:...}` to
lldb's `frame-format`, right after the pc: lldb calls `frame_text` for each
frame it prints (`bt`, `thread backtrace`, `frame select`, `up`, `down`),
which returns what `jsstack` says of that frame -- `function
(script:line:column) [tier]`, a line for each frame that optimized code
inlined, innermost first -- or nothing, and lldb's own format goes on.
A frame lldb has a symbol for (other than a V8 builtin's) costs one check
and no reading of the target. `v8dbg bt off` takes the hook out again.
"""

from __future__ import annotations

import lldb  # type: ignore[import-not-found]

from .commands.btframes import BtFrames, frame_label
from .inferior.backend import Registers

HOOK = "${script.frame:v8dbg.lldb_bt.frame_text}"
AFTER = ("${frame.pc}${ansi.normal}", "${frame.pc}")

_frames: list[BtFrames] = []


def use(frames: BtFrames) -> None:
    """The lookups the hook answers from (the lldb adapter's session)."""
    _frames[:] = [frames]


def _innermost(thread) -> Registers | None:
    f = thread.GetFrameAtIndex(0)
    if not f.IsValid():
        return None
    return Registers(f.GetPC(), f.GetSP(), f.GetFP())


def frame_text(frame, internal_dict) -> str:
    """What lldb prints after a frame's pc: its JS name, or nothing."""
    try:
        return _text(frame)
    except Exception:  # never break lldb's own backtrace
        return ""


def _text(frame) -> str:
    if not _frames:
        return ""
    sym = frame.GetSymbol()
    if sym.IsValid() and not (sym.GetName() or "").startswith("Builtins_"):
        return ""  # native code lldb names itself
    thread = frame.GetThread()
    regs = _innermost(thread)
    if regs is None:
        return ""
    nxt = thread.GetFrameAtIndex(frame.GetFrameID() + 1)
    at = _frames[0].at(thread.GetThreadID(), regs, frame.GetPC(), frame.GetSP(), frame.GetFP(),
                       (nxt.GetPC(), nxt.GetFP()) if nxt.IsValid() else None)
    if at is None or not at.v8:
        return ""
    labels = [lb for lb in (frame_label(fr) for fr in at.frames) if lb]
    if not labels:
        return ""
    more = "".join(f"\n    frame #{frame.GetFrameID()}: 0x{frame.GetPC():016x} {lb}"
                   for lb in labels[1:])
    return f" {labels[0]}{more}"


def _format(debugger) -> str | None:
    """The frame-format setting as `settings show` quotes it (re-enterable)."""
    values = lldb.SBDebugger.GetInternalVariableValue("frame-format", debugger.GetInstanceName())
    if values is None or values.GetSize() < 1:
        return None
    return values.GetStringAtIndex(0)


def _set_format(debugger, value: str) -> bool:
    res = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(f"settings set frame-format {value}", res)
    return res.Succeeded()


def installed(debugger) -> bool:
    fmt = _format(debugger)
    return fmt is not None and HOOK in fmt


def install(debugger) -> str | None:
    """Put the hook after the pc in frame-format; a message if it cannot."""
    fmt = _format(debugger)
    if fmt is None:
        return "v8dbg: lldb has no frame-format setting"
    if HOOK in fmt:
        return None
    for anchor in AFTER:
        if anchor in fmt:
            if _set_format(debugger, fmt.replace(anchor, anchor + HOOK, 1)):
                return None
            break
    return "v8dbg: frame-format has no ${frame.pc} to put JavaScript names after; bt is unchanged"


def remove(debugger) -> None:
    """Take the hook out of frame-format, leaving the rest of it as it is now."""
    fmt = _format(debugger)
    if fmt is not None and HOOK in fmt:
        _set_format(debugger, fmt.replace(HOOK, ""))
