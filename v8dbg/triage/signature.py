"""A crash's signature: the frames of the program that crashed, normalized.

As Socorro does for native crashes, the frames that say nothing about where
the program went wrong are skipped -- node's own library (`node:...`
scripts), V8's builtins (no script), the throw and abort machinery -- and the
top few of the rest name the bucket. Each frame is its function and script
basename, without line or column, so cores of one crash site fall into one
bucket across node releases, deployment paths and the data the program held;
direct recursion counts once, as its depth follows the data.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

TOP_FRAMES = 3  # program frames a signature names
SEPARATOR = " | "

# Native frames of the way down to abort() and of V8's throw: never the crash site.
_NATIVE_MACHINERY = re.compile(
    r"^(\?\?|raise|abort|__GI_|__pthread_kill|pthread_kill|__restore_rt|_start|__libc_start"
    r"|node::Abort\b|node::.*AbortHandler|node::Assert|node::OnFatalError|node::Dump"
    r"|v8::base::OS::Abort|V8_Fatal|v8::internal::Isolate::(Throw|CreateMessage|ReThrow)"
    r"|v8::internal::Runtime_(Throw|ReThrow)|v8::internal::FatalProcessOutOfMemory)")


@dataclass(frozen=True)
class SigFrame:
    """One JS (or native) frame as triage keeps it: where, and what."""

    function: str
    script: str | None  # None for native frames and V8 builtins
    line: int | None = None
    column: int | None = None
    native: bool = False

    @property
    def key(self) -> str:
        """The frame in a signature: function and script basename, no position."""
        if self.native:
            return self.function
        return f"{self.function} ({os.path.basename(self.script or '') or '?'})"

    @property
    def where(self) -> str:
        """The frame with its position, for people."""
        if self.native:
            return f"{self.function} (native)"
        pos = f":{self.line}:{self.column}" if self.line else ""
        return f"{self.function} at {self.script or '<builtin>'}{pos}"


def program_frame(f: SigFrame) -> bool:
    """A frame of the program itself: a script that is not node's own library."""
    return not f.native and bool(f.script) and not f.script.startswith("node:")  # type: ignore[union-attr]


def _collapse(frames: list[SigFrame]) -> list[SigFrame]:
    out: list[SigFrame] = []
    for f in frames:
        if out and out[-1].key == f.key:
            continue
        out.append(f)
    return out


def signature_frames(frames: list[SigFrame], top: int = TOP_FRAMES) -> list[SigFrame]:
    """The frames a signature is made of, innermost first: the program's own
    JS frames, or when there are none (a crash in native code), the native
    frames past the abort machinery."""
    js = _collapse([f for f in frames if program_frame(f)])
    if js:
        return js[:top]
    native = [f for f in frames if f.native and not _NATIVE_MACHINERY.match(f.function)]
    return _collapse(native)[:top]


def signature(frames: list[SigFrame], top: int = TOP_FRAMES) -> str:
    """The bucket name of a crash with these frames (innermost first)."""
    picked = signature_frames(frames, top)
    if not picked:
        return "(no frames)"
    text = SEPARATOR.join(f.key for f in picked)
    return text if not picked[0].native else f"native: {text}"
