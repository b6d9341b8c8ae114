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


def free_chunks(start: int, end: int, read: Callable[[int, int], bytes],
                key: int = 0) -> tuple[list[tuple[int, int]], int, bool]:
    """The bodies ([start, end)) of the freed chunks of the region, if it is a
    malloc heap: walked chunk after chunk from its start to its end, through
    the fencepost pairs (two 16-byte chunks) that end a segment when malloc
    went on in another mapping, whose next chunk starts the next page.
    Returns them, the tcache key found, and whether the walk hit its cap. A
    region the walk does not cover exactly is no heap: nothing.

    A chunk is free when the next header's PREV_INUSE bit is clear, or when
    it sits in a thread cache: its second word is then the tcache key (KEY,
    or read through the thread's tcache_perthread_struct when that is the
    region's first chunk)."""
    try:
        head = read(start, 16)
        first = struct.unpack("<2Q", head)
        if first[0] or first[1] & ~7 < 32 or (first[1] & ~7) % 16 or not first[1] & 1:
            return [], key, False
        data = read(start, end - start)
    except Exception:
        return [], key, False
    n = len(data) & ~15
    chunks: list[tuple[int, int]] = []
    p = 0
    while p + 16 <= n:
        if len(chunks) >= MAX_CHUNKS:
            return [], key, True
        size = struct.unpack_from("<Q", data, p + 8)[0] & ~7
        if size == 16:  # a fencepost pair: the segment's end
            p = (start + p + 32 + PAGE - 1) // PAGE * PAGE - start
            continue
        if size < 32 or size % 16 or p + size > n:
            return [], key, False
        chunks.append((p, size))
        p += size
    if len(chunks) < 2:
        return [], key, False
    if chunks[0][1] == TCACHE_CHUNK:
        key = _tcache_key(data, start, chunks[0]) or key
    out = []
    for p, size in chunks:
        nxt = p + size
        free = nxt + 16 <= n and not struct.unpack_from("<Q", data, nxt + 8)[0] & 1
        cached = key and struct.unpack_from("<Q", data, p + 24)[0] == key
        if free or cached:
            out.append((start + p + 16, start + p + size))
    return out, key, False


def _tcache_key(data: bytes, start: int, first: tuple[int, int]) -> int:
    """The tcache key (the second word of every chunk in a thread cache), read
    through the heap's tcache_perthread_struct's lists; 0 if none is cached."""
    p, size = first
    seen: dict[int, int] = {}
    for i in range(64):
        e = struct.unpack_from("<Q", data, p + 16 + TCACHE_COUNTS + 8 * i)[0]
        if start + 16 <= e < start + len(data) - 8 and not e & 15:
            k = struct.unpack_from("<Q", data, e - start + 8)[0]
            if k:
                seen[k] = seen.get(k, 0) + 1
    if not seen:
        return 0
    k, c = max(seen.items(), key=lambda kv: kv[1])
    return k if c >= 2 or len(seen) == 1 else 0
