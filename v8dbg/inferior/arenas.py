"""glibc's secondary malloc arenas: the heaps malloc gives threads other than
the main one, each in its own 64 MB-aligned mapping that starts with a
`heap_info` (its arena, the previous heap of that arena, its size)."""

from __future__ import annotations

import struct
from typing import Callable

HEAP_MAX = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit targets


def secondary_heaps(regions: list[tuple[int, int]],
                    read: Callable[[int, int], bytes]) -> list[tuple[int, int]]:
    """[start, end) of each region that is a secondary arena's heap."""
    out = []
    for s, e in regions:
        if s % HEAP_MAX or e - s > HEAP_MAX:
            continue
        try:
            ar, prev, size = struct.unpack("<3Q", read(s, 24))
        except Exception:
            continue
        first = s < ar < s + 0x100 and not prev  # the arena's own state follows
        later = prev and not prev % HEAP_MAX and ar & 7 == 0 and ar > 0x10000
        if (first or later) and 0 < size <= HEAP_MAX and size % 4096 == 0:
            out.append((s, e))
    return out
