"""V8's variable-length integers (base/vlq.h): 7 bits a byte, low bits first.

Position tables sign their numbers by zigzag; translations (deoptimization
data) put the sign in the lowest bit above the magnitude. One reader of the
bytes for both.
"""

from __future__ import annotations

from ..errors import DecodeError

MAX_SHIFT = 63  # a 64-bit number at most


def uvlq(data: bytes, pos: int, what: str = "a number") -> tuple[int, int]:
    """(unsigned value, position after it); a DecodeError naming `what` when
    the data ends inside it or it runs past 64 bits."""
    value = 0
    shift = 0
    while True:
        if pos >= len(data) or shift > MAX_SHIFT:
            raise DecodeError(f"{what} ends inside a number")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def zigzag(data: bytes, pos: int, what: str = "a number") -> tuple[int, int]:
    """A zigzag-signed number, as position tables store them."""
    value, pos = uvlq(data, pos, what)
    return (value >> 1) ^ -(value & 1), pos


def signed(data: bytes, pos: int, what: str = "a number") -> tuple[int, int]:
    """A number with its sign in the lowest bit, as translations store them."""
    u, pos = uvlq(data, pos, what)
    return (-(u >> 1) if u & 1 else u >> 1), pos
