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


MAX_CHUNKS = 1 << 22  # chunks walked in one malloc heap (a cap that is hit is said)
TCACHE_COUNTS = 64 * 2  # tcache_perthread_struct: uint16 counts[64], then entries[64]
TCACHE_CHUNK = 0x290  # its chunk, the first of the main arena's heap (glibc 2.30 on)


def free_chunks(start: int, end: int,
                read: Callable[[int, int], bytes]) -> tuple[list[tuple[int, int]], bool]:
    """The freed chunks' bodies ([start, end)) of the malloc heap that begins at
    START (the main arena's, chunk after chunk up to its top chunk), and whether
    the walk stopped at its cap. Nothing when the region is no malloc heap (the
    walk does not end at its top chunk). A chunk is free when the next one's
    PREV_INUSE bit is clear, or when it sits in a thread cache: its second
    word is then the process's tcache key (read from a cached chunk the main
    thread's tcache_perthread_struct, the heap's first chunk, lists)."""
    try:
        if struct.unpack("<Q", read(start + 8, 8))[0] & ~7 != TCACHE_CHUNK:
            return [], False
        data = read(start, end - start)
    except Exception:
        return [], False
    n = len(data) & ~15
    chunks = []
    p = 0
    while p + 16 <= n:
        if len(chunks) >= MAX_CHUNKS:
            return [], True
        size = struct.unpack_from("<Q", data, p + 8)[0] & ~7
        if size < 32 or size % 16 or p + size > n:
            if size >= 32 and size % 16 == 0 and chunks:
                break  # the top chunk, to the mapping's end or past it
            return [], False
        chunks.append((p, size))
        p += size
    if len(chunks) < 2:
        return [], False
    key = _tcache_key(data, start, chunks[0])
    out = []
    for i, (p, size) in enumerate(chunks[:-1]):
        nxt = chunks[i + 1][0]
        prev_inuse = struct.unpack_from("<Q", data, nxt + 8)[0] & 1
        cached = key and size >= 32 and struct.unpack_from("<Q", data, p + 24)[0] == key
        if not prev_inuse or cached:
            out.append((start + p + 16, start + p + size))
    return out, False


def _tcache_key(data: bytes, start: int, first: tuple[int, int]) -> int:
    """The tcache key (the second word of every chunk in a thread cache), read
    through the heap's tcache_perthread_struct's lists; 0 if none is cached."""
    p, size = first
    if size < 16 + TCACHE_COUNTS + 64 * 8:
        return 0
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
