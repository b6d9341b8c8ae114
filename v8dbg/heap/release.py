"""Memory a phase of the heap's analysis is done with, given back to the system.

The CLI keeps what the C library frees in its heap (commands/cli.py: no
mapping of its own for arrays below 32 MB, no trimming), so that the next
arrays reuse those pages without faulting them in again. The cost: the
temporaries of one phase that the next does not fit into stay resident on
top of what that phase holds. Between such phases (the writer's extra
edges and its typed edges) the allocator is asked (glibc's `malloc_trim`)
to return its free pages; elsewhere (no glibc) this does nothing.
"""

from __future__ import annotations

import ctypes
from typing import Any

_trim: Any = None


def free_pages() -> None:
    """Return the allocator's free pages to the system (glibc only)."""
    global _trim
    if _trim is None:
        _trim = False
        try:
            f = ctypes.CDLL(None).malloc_trim  # the process's own C library
        except (OSError, AttributeError, TypeError):
            f = None
        if f is not None:
            f.argtypes = [ctypes.c_size_t]
            f.restype = ctypes.c_int
            _trim = f
    if _trim:
        _trim(0)
