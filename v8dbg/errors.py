"""The one error type users see: every failure ends as one `v8dbg: ...` line."""

from __future__ import annotations


class V8DbgError(Exception):
    """A failure to report to the user as a single clear line."""


class TargetMemoryError(V8DbgError):
    """Target memory at an address could not be read."""

    def __init__(self, address: int, size: int, why: str = "not readable") -> None:
        super().__init__(f"memory at 0x{address:x} ({size} bytes) is {why}")
        self.address = address
        self.size = size


class DecodeError(V8DbgError):
    """Target memory was read but does not hold what was expected."""


# Set while a command runs with --debug (or V8DBG_DEBUG=1): the reasons
# decoders give for what they could not decode then also say where in v8dbg
# the failure was detected, for bug reports.
DEBUG = False
_WHERE_FRAMES = 4


def why(e: BaseException) -> str:
    """The reason an error gives, with its origin in debug mode."""
    text = str(e)
    if not DEBUG or e.__traceback__ is None:
        return text
    import os
    import traceback
    tb = traceback.extract_tb(e.__traceback__)[-_WHERE_FRAMES:]
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}"
                        for f in reversed(tb))
    return f"{text} [{type(e).__name__} at {where}]"
