"""Memory a phase of the heap's analysis is done with, given back to the system.

The CLI keeps what the C library frees in its heap (commands/cli.py: no
mapping of its own for arrays below 32 MB, no trimming), so that the next
arrays reuse those pages without faulting them in again. The cost: the
temporaries of one phase that the next does not fit into stay resident on
top of what that phase holds. Between such phases (the graph's walk and its
edges, the writer's naming, extra edges, typed edges and nodes, the
dominator tree's passes) the allocator is asked (glibc's `malloc_trim`) to
return its free pages; elsewhere (no glibc) this does nothing. The target's
page caches are emptied first (their 4 KB pages, scattered through the
allocator's heap, would pin the free pages around them), and the pages of
the files mapped (node's binary, the graph's arrays) let go. Within a phase
that makes and drops arrays a piece at a time, it is asked only once this
process has grown by some tens of MB since the last time
(`free_pages_if_grown`): seldom enough that the pages reused meanwhile are
not faulted in again each piece.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from ..inferior import backend, elf
from . import mapped

_trim: Any = None
# Set by a process that ends with its command (the standalone CLI: `one_shot`),
# whose allocator keeps what it frees for its next arrays anyway.
_one_shot = False
_at_trim = 0  # this process's own resident memory after the last trim
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _own_resident() -> int:
    """Bytes of this process's resident memory that are its own (not a
    file's pages), 0 where unknown."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            f = fh.read().split()
        return (int(f[1]) - int(f[2])) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def one_shot() -> None:
    """Say that this process ends with its command (the standalone CLI, which
    has its allocator keep freed memory): `free_pages(trim=False)` then
    keeps the allocator's free pages for the next phase. In a debugger's
    process, which lives on after the command, they are given back all
    the same."""
    global _one_shot
    _one_shot = True


def free_pages(arrays: bool = True, caches: bool = True, trim: bool = True) -> None:
    """Return the allocator's free pages to the system (glibc only), and the
    pages of the files mapped (the binary's: elf.release_pages; the graph's
    arrays: mapped.drop_all, unless `arrays` is false: a pass that reads
    them throughout), after emptying the target's page caches (their
    pages, scattered through the allocator's heap, would keep it from
    giving back the free ones around them; unless `caches` is false: within
    a phase, whose decoders read the same pages again, each a debugger's
    round trip in gdb or lldb). Without `trim`, in a process that ends with
    its command (`one_shot`), the allocator keeps its free pages (the
    files' pages and the caches go all the same): where the phase that
    follows makes arrays as large as those just freed, which would only
    fault the same pages in again (a heap snapshot of 2 million nodes:
    32,000 page faults fewer at eight such places, 0.04 to 0.09 s of its
    4.4 s of CPU, for 5 MB more at its peak). A debugger's process, which
    keeps what it holds after the command, trims there all the same."""
    global _trim
    elf.release_pages()
    if arrays:
        mapped.drop_all()
    if caches:
        backend.clear_caches()
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
    if _trim and (trim or not _one_shot):
        _trim(0)
        global _at_trim
        _at_trim = _own_resident()


def free_pages_if_grown(margin: int = 64 << 20, arrays: bool = True) -> None:
    """free_pages() (the page caches kept) when this process's own resident
    memory has grown by more than `margin` since the last: a phase that
    makes and drops arrays of varying sizes a piece at a time touches more
    and more of the allocator's free pages (held, never returned, in the
    CLI), and its resident size would grow to the allocator's high-water
    mark however little it holds at once. (Each trim's pages are faulted
    in again by the next pieces: at 32 MB a heap snapshot of 2 million
    nodes trimmed twelve times within its phases and took 70,000 more
    page faults, 0.12 s of CPU, than at 64 MB, for 4 MB less at its peak.)"""
    if _trim is False:
        return
    global _at_trim
    now = _own_resident()
    if now and now - _at_trim > margin:
        free_pages(arrays, caches=False)
    elif now and now < _at_trim:
        _at_trim = now  # (shrunk since: growth counts from here)
