"""The heap graph's big arrays in pages of a temporary file, resident only while used.

The graph's node and edge arrays (some 20 bytes a node and 9 an edge) are
needed whole by every pass, but each pass reads them a part at a time (a
page of the heap, a range of nodes) or once through. Made in an unnamed
temporary file mapped shared, they are the kernel's page cache: `drop`
unmaps their pages from this process once a pass is done with them (the
data stays in the file's pages, and a later read maps them back without
reading the disk while memory allows), and under memory pressure the kernel
writes them to the file instead of the process growing. The file's blocks
are reserved when it is made, so that a full disk is an error at once (the
arrays are then made in memory, as they are where no file can be made),
never a fault when a page is first written.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from typing import Any

# Every mapping made here that is still in use: `drop_all` lets their pages go.
_MAPS: "weakref.WeakSet[mmap.mmap]" = weakref.WeakSet()


def file_array(np, count: int, dtype, where: str | None = None) -> Any:
    """A zeroed array of `count` items of `dtype`, in a temporary file's
    pages (in `where`, else the system's temporary directory), or in memory
    where no such file can be made."""
    size = max(int(count) * np.dtype(dtype).itemsize, 1)
    dirs = ([where] if where else []) + [None]
    for d in dirs:
        try:
            with tempfile.TemporaryFile(prefix=".v8dbg-graph-", dir=d) as f:
                os.posix_fallocate(f.fileno(), 0, size)
                mm = mmap.mmap(f.fileno(), size)  # (holds its own descriptor)
        except (OSError, ValueError):
            continue
        _MAPS.add(mm)
        return np.frombuffer(mm, dtype=dtype, count=int(count))
    return np.zeros(int(count), dtype=dtype)


def aside(np, parts: list, dtype, where: str | None = None) -> Any:
    """`parts` (arrays of `dtype`, or buffers of its items) one after another
    in one new file array, each piece's pages let go once written: for what
    is held long but read seldom (the census's addresses) or read once
    later (the dominator tree's sums), while other arrays are made in its
    place. None where no file can be made (nothing to gain by a copy in
    memory)."""
    total = sum(len(a) for a in parts)
    out = file_array(np, total, dtype, where)
    if _mapping(out) is None:
        return None
    at = 0
    for a in parts:
        a = np.frombuffer(a, dtype) if not isinstance(a, np.ndarray) else a
        for k in range(0, len(a), PIECE):
            b = a[k:k + PIECE]
            out[at:at + len(b)] = b
            at += len(b)
            drop(out)
    return out


# Items `aside` copies at a time: its pages let go after each.
PIECE = 1 << 17


def _mapping(a: Any) -> mmap.mmap | None:
    while a is not None and hasattr(a, "base") and not isinstance(a, (memoryview, mmap.mmap)):
        a = a.base
    if isinstance(a, memoryview):
        a = a.obj
    return a if isinstance(a, mmap.mmap) else None


def drop(*arrays: Any) -> None:
    """Unmap from this process the pages of these file arrays (kept in the
    file); arrays in memory are left as they are, and so is any mapping
    file_array did not make (an anonymous one would lose its data)."""
    seen: set[int] = set()
    for a in arrays:
        m = _mapping(a)
        if m is None or id(m) in seen or m not in _MAPS:
            continue
        seen.add(id(m))
        try:
            m.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError, AttributeError):
            pass


def drop_all() -> None:
    """`drop` every file array's pages: between the phases of an analysis
    (release.free_pages), each of which reads what it needs of them again."""
    for m in list(_MAPS):
        try:
            m.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError, AttributeError):
            pass
