"""Heap census: every live object of an isolate's heap, grouped by map.

Pages come from `v8dbg.v8.pages`, each is walked by `walk`; what V8 keeps for
itself (object literal boilerplates in AllocationSites) is left out.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import TargetMemoryError, V8DbgError
from ..interrupt import check_interrupted
from ..v8.pages import Page, _Layout, _numpy, _plan, find_pages
from ..v8.tagged import Heap
from .walk import NumpyPages, Walker, _code_owners, walk_page

if TYPE_CHECKING:
    from ..program import Program


@dataclass
class MapStats:
    """Live objects of one map (addresses kept for JS objects only)."""

    map: int
    instance_type: int
    size: int = 0  # bytes of all objects
    count: int = 0
    addresses: array | None = None


@dataclass
class Census:
    pages: list[Page]
    maps: dict[int, MapStats]
    total_objects: int
    total_bytes: int
    seconds: float
    unknown_sizes: int  # objects whose size was found by resynchronising
    heap: int
    unswept_pages: int = 0  # pages whose live objects were told by their mark bits
    damaged_pages: list[int] = field(default_factory=list)  # pages the walk could not finish
    skipped_bytes: int = 0  # bytes of those pages the walk stepped over
    left_out: int = 0  # literal boilerplates V8 keeps for itself, not counted


def _leave_out_boilerplates(prog: Program, h: Heap, stats: dict[int, MapStats],
                            sites: list[int]) -> int:
    """Take the literal boilerplates V8 keeps in AllocationSites out of stats.

    V8 keeps one hidden copy of each object or array literal that has run
    (its boilerplate) to clone the next ones from; it is no object of the
    program, and V8's heap snapshot does not count it among them.
    """
    md = prog.md
    off = md.fields.get(("AllocationSite", "transition_info_or_boilerplate"))
    if off is None or not sites:
        return 0
    mem = prog.mem
    boiler: dict[int, set[int]] = {}
    for s in sites[:1 << 22]:
        try:
            b = mem.u64(s - 1 + off)
            if not h.is_heap(b):
                continue
            m = mem.u64(b - 1)
        except TargetMemoryError:
            continue
        if m in stats:
            boiler.setdefault(m, set()).add(b)
    n = 0
    for m, bs in boiler.items():
        st = stats[m]
        addrs = st.addresses
        if addrs is None:
            continue
        for b in bs:  # a few per map: each found and removed at C speed
            try:
                del addrs[addrs.index(b)]
                n += 1
            except ValueError:
                pass
        if not addrs:
            del stats[m]
    return n


def scan(prog: Program, heap: int | None = None, progress=None,
         use_numpy: bool | None = None) -> Census:
    """The census of one isolate's heap; cached on the program until it runs again."""
    cached = prog.heap_state.census.get(heap) if heap is not None else None
    if cached is not None and use_numpy is None:
        return cached
    t0 = time.monotonic()
    lay = _Layout(prog)
    h = prog.heap
    heap, pages = find_pages(prog, lay, heap)
    live = _plan(prog, heap, pages, lay)
    w = Walker(prog, h)
    np = _numpy() if use_numpy is not False else None
    nw = NumpyPages(w, np) if np is not None else None
    acc: dict[int, array] = {}  # map -> addresses, in page order
    total = unknown = skipped = 0
    damaged: list[int] = []
    total_bytes = sum(p.end - p.start for p in live)
    done = 0
    code_owners = _code_owners(w, live)
    for p in live:
        check_interrupted()
        r = walk_page(w, nw, p, code_owners, acc)
        total += r.count
        unknown += r.unknown
        if r.damaged:
            damaged.append(p.address)
            skipped += r.skipped
        for m, a in r.records.items():
            got = acc.get(m)
            if got is None:
                got = acc[m] = array("Q")
            if isinstance(a, array):
                got.extend(a)
            else:
                got.frombytes(a.astype("<u8", copy=False).tobytes())
        done += p.end - p.start
        if progress is not None:
            progress.update(done, total_bytes)
    # In map-address order, so every front end lists (and picks representatives) alike.
    stats: dict[int, MapStats] = {}
    sites: list[int] = []
    for m in sorted(acc):
        info = w.cache.get(m)
        addrs = acc[m]
        if info and info[2] == w.cls.allocation_site:
            sites.extend(addrs)
            continue
        st = stats[m] = MapStats(m, info[2] if info else -1, addresses=addrs)
    left_out = _leave_out_boilerplates(prog, h, stats, sites)
    for st in stats.values():
        info = w.cache.get(st.map)
        st.count = len(st.addresses or ())
        st.size = st.count * 8 * (info[1] if info else 0)
    total -= left_out
    c = Census(live, stats, total, total_bytes, time.monotonic() - t0, unknown, heap,
               sum(1 for p in live if p.marks is not None), damaged, skipped, left_out)
    if use_numpy is None:
        prog.heap_state.census[heap] = c
    prog.heap_state.walker = w
    return c


def object_starts(prog: Program, p: Page) -> list[tuple[int, int, int]]:
    """(address, map, size in words) of each live object of one page, as the census walks it."""
    w = prog.heap_state.walker
    if not isinstance(w, Walker):
        w = Walker(prog, prog.heap)
        prog.heap_state.walker = w
    words = w.read_page(p)
    if words is None:
        return []
    out: list[tuple[int, int, int]] = []
    if p.marks is not None:
        w.marked_walk(p, words, True, out)
    else:
        w.walk(p, words, True, out)
    return out


def of(prog: Program, heap: int, progress=None) -> Census:
    """The census of one isolate's heap, taken once per target state; an error
    when the heap holds no readable object at all."""
    c = scan(prog, heap, progress)
    if not c.total_objects:
        raise V8DbgError(f"no live V8 heap object could be read ({len(c.pages)} heap pages "
                         "found): the heap in this target is unreadable or damaged")
    return c
