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


MAX_CHUNKS = 1 << 22  # chunks walked in one region (a cap that is hit is said)
TCACHE_COUNTS = 64 * 2  # tcache_perthread_struct: uint16 counts[64], then entries[64]
TCACHE_CHUNK = 0x290  # its chunk, the first of a thread's heap (glibc 2.30 on)
PAGE = 4096


WINDOW = 16 << 20  # bytes of a region read at a time (memory bounded on big heaps)


class _Window:
    """Words of [start, end) read a bounded piece at a time, in walking order."""

    def __init__(self, start: int, end: int, read: Callable[[int, int], bytes]) -> None:
        self.start, self.end, self.read = start, end, read
        self.lo, self.data = start, b""

    def word(self, a: int) -> int | None:
        """The 8 bytes at address a, None past the region's end (or unreadable)."""
        if not (self.lo <= a and a + 8 <= self.lo + len(self.data)):
            if a + 8 > self.end:
                return None
            self.lo = a & ~15
            self.data = self.read(self.lo, min(WINDOW, self.end - self.lo))
            if a + 8 > self.lo + len(self.data):
                return None
        return struct.unpack_from("<Q", self.data, a - self.lo)[0]


def free_chunks(start: int, end: int, read: Callable[[int, int], bytes],
                key: int = 0) -> tuple[list[tuple[int, int]], int, bool]:
    """The bodies ([start, end)) of the freed chunks of the region, if it is a
    malloc heap: walked chunk after chunk from its start to its end, through
    the fencepost pairs (two 16-byte chunks) that end a segment when malloc
    went on in another mapping, whose next chunk starts the next page.
    Returns them, the tcache key found, and whether the walk hit its cap. A
    region the walk does not cover exactly is no heap: nothing. The region
    is read a window at a time, never whole.

    A chunk is free when the next header's PREV_INUSE bit is clear, or when
    it sits in a thread cache: its second word is then the tcache key (KEY,
    or read through the thread's tcache_perthread_struct when that is the
    region's first chunk)."""
    try:
        head = read(start, 16)
        first = struct.unpack("<2Q", head)
        if first[0] or first[1] & ~7 < 32 or (first[1] & ~7) % 16 or not first[1] & 1:
            return [], key, False
        win = _Window(start, end, read)
        n = (end - start) & ~15
        out: list[tuple[int, int]] = []
        count = 0
        # The chunk before (offset, size, whether a thread cache holds it),
        # judged free or not at the next header.
        prev: tuple[int, int, bool] | None = None
        p = 0
        while p + 16 <= n:
            if count >= MAX_CHUNKS:
                return [], key, True
            hdr = win.word(start + p + 8)
            if hdr is None:
                return [], key, False
            size = hdr & ~7
            if size == 16:  # a fencepost pair: the segment's end
                if prev is not None:  # free()ing the chunk before clears its bit
                    _judge(start, prev, not hdr & 1, out)
                    prev = None
                p = (start + p + 32 + PAGE - 1) // PAGE * PAGE - start
                continue
            if size < 32 or size % 16 or p + size > n:
                return [], key, False
            if count == 0 and size == TCACHE_CHUNK:
                key = _tcache_key(start, n, p, read) or key
            if prev is not None:
                _judge(start, prev, not hdr & 1, out)
            prev = (p, size, bool(key) and win.word(start + p + 24) == key)
            count += 1
            p += size
        if prev is not None:
            _judge(start, prev, False, out)
    except Exception:
        return [], key, False
    if count < 2:
        return [], key, False
    return out, key, False


def _judge(start: int, chunk: tuple[int, int, bool], free: bool,
           out: list[tuple[int, int]]) -> None:
    """Add chunk's body to out if it is free (said by the next header) or cached."""
    p, size, cached = chunk
    if free or cached:
        out.append((start + p + 16, start + p + size))


def _tcache_key(start: int, n: int, p: int, read: Callable[[int, int], bytes]) -> int:
    """The tcache key (the second word of every chunk in a thread cache), read
    through the heap's tcache_perthread_struct (the chunk at offset p) lists;
    0 if none is cached."""
    ents = read(start + p + 16 + TCACHE_COUNTS, 8 * 64)
    seen: dict[int, int] = {}
    for i in range(64):
        e = struct.unpack_from("<Q", ents, 8 * i)[0]
        if start + 16 <= e < start + n - 8 and not e & 15:
            try:
                k = struct.unpack("<Q", read(e + 8, 8))[0]
            except Exception:
                continue
            if k:
                seen[k] = seen.get(k, 0) + 1
    if not seen:
        return 0
    k, c = max(seen.items(), key=lambda kv: kv[1])
    return k if c >= 2 or len(seen) == 1 else 0
