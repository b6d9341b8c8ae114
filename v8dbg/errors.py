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
