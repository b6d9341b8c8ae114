"""Heap census: every live object of an isolate's heap, grouped by map.

Pages come from `v8dbg.v8.pages`, each is walked by `walk`. Object literal
boilerplates (the first copy of each literal, kept in its AllocationSite)
are counted like any object: V8's heap snapshot reaches them through the
site's `transition_info` edge and names them `Object` or `Array`.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import V8DbgError
from ..interrupt import check_interrupted
from ..v8.pages import (MAX_LAB_SEARCH_BYTES, MAX_LAB_SEARCHES, Page, _Layout, _numpy, _plan,
                        find_pages, labs_at)
from . import mapped
from .walk import NumpyPages, Walker, _code_owners, page_objects, walk_page

if TYPE_CHECKING:
    from ..program import Program


@dataclass
class MapStats:
    """Live objects of one map (addresses kept for JS objects only)."""

    map: int
    instance_type: int
    size: int = 0  # bytes of all objects
    count: int = 0
    addresses: Any = None  # array('Q'), or a memoryview of a file's pages (`_aside`)


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


def scan(prog: Program, heap: int | None = None, progress=None,
         use_numpy: bool | None = None, objects=None, where: str | None = None) -> Census:
    """The census of one isolate's heap; cached on the program until it runs again.

    With `objects` (and NumPy), each page's walk keeps every object it
    steps over and hands them to objects(page, PageObjects) before the next
    page is read (a damaged page's once it is walked again, after the
    others): the heap graph's nodes from the census's own walk."""
    cached = prog.heap_state.census.get(heap) if heap is not None else None
    if cached is not None and use_numpy is None:
        return cached
    t0 = time.monotonic()
    lay = _Layout(prog)
    h = prog.heap
    heap, pages = find_pages(prog, lay, heap)
    live = _plan(prog, heap, pages, lay)
    w = Walker(prog, h)
    if objects is not None:
        prog.heap_state.walker = w  # the one `objects` classifies maps with
    np = _numpy() if use_numpy is not False else None
    nw = NumpyPages(w, np) if np is not None else None
    acc: dict[int, array] = {}  # map -> addresses, in page order
    total = unknown = skipped = 0
    damaged: list = []
    total_bytes = sum(p.end - p.start for p in live)
    done = 0
    code_owners = _code_owners(w, live)

    def walked(p):
        if objects is not None and np is not None:
            po = page_objects(np, w, nw, p, code_owners)
            return po.result, po
        sink: dict[int, array] = {}
        r = walk_page(w, nw, p, code_owners, sink)
        for m, a in sink.items():
            r.records.setdefault(m, a)
        return r, None

    # Pages damaged from an address: walked again once native memory is
    # read (once, for all of them) for allocation areas that end there.
    later: list = []
    # The records of each page from the first one put off on, by its number:
    # added to the census's in page order once that page is walked again.
    records: dict[int, dict] = {}

    def merge(recs: dict) -> None:
        for m, a in recs.items():
            got = acc.get(m)
            if got is None:
                got = acc[m] = array("Q")
            if isinstance(a, array):
                got.extend(a)
            else:
                got.frombytes(a.astype("<u8", copy=False).tobytes())

    def tally(p, r, po, k: int) -> None:
        nonlocal total, unknown, skipped, done
        if po is not None:
            objects(p, po)
        total += r.count
        unknown += r.unknown
        if r.damaged:
            damaged.append((k, p.address))
            skipped += r.skipped
        if later:
            records[k] = r.records
        else:
            merge(r.records)
        done += p.end - p.start
        if progress is not None:
            progress.update(done, total_bytes)

    for k, p in enumerate(live):
        check_interrupted()
        r, po = walked(p)
        if r.damaged and r.damaged_at and len(later) < MAX_LAB_SEARCHES:
            later.append((p, r.damaged_at, k))
            continue
        tally(p, r, po, k)
    if later:
        # An area's unused rest skipped where that walks the page to its end.
        found = labs_at(prog, pages, [t for _, t, _ in later], [MAX_LAB_SEARCH_BYTES])
        for p, top, k in later:
            lab = found.get(top)
            if lab is not None:
                p.skips.append((lab[1], lab[2]))
                p.skips.sort()
            r, po = walked(p)  # (again: the first walk's bytes are reused since)
            if lab is not None and r.damaged:
                p.skips.remove((lab[1], lab[2]))
                r, po = walked(p)
            tally(p, r, po, k)
    for k in sorted(records):
        merge(records.pop(k))
    damaged = [a for _, a in sorted(damaged)]  # (in page order)
    if np is not None:
        acc = _aside(np, acc, where)
    # In map-address order, so every front end lists (and picks representatives) alike.
    stats: dict[int, MapStats] = {}
    for m in sorted(acc):
        info = w.cache.get(m)
        stats[m] = MapStats(m, info[2] if info else -1, addresses=acc[m])
    for st in stats.values():
        info = w.cache.get(st.map)
        st.count = len(st.addresses or ())
        st.size = st.count * 8 * (info[1] if info else 0)
    c = Census(live, stats, total, total_bytes, time.monotonic() - t0, unknown, heap,
               sum(1 for p in live if p.marks is not None), damaged, skipped)
    if use_numpy is None:
        prog.heap_state.census[heap] = c
    prog.heap_state.walker = w
    return c


def _aside(np, acc: dict[int, array], where: str | None = None) -> dict[int, Any]:
    """The census's addresses (8 bytes a JS object), every map's in one
    temporary file's pages (heap/mapped.py), each map's a memoryview of
    its part: the census is kept for as long as the target does not run
    on, beside every later phase's arrays, and its addresses are read only
    now and then (a row's members, the graph's lookups); resident only then.
    The file is in `where` (else the system's temporary directory); where
    no such file can be made, they are kept as they are."""
    if not any(len(a) for a in acc.values()):
        return acc
    out = mapped.aside(np, list(acc.values()), np.uint64, where)
    if out is None:
        return acc
    view = memoryview(out)
    got: dict[int, Any] = {}
    at = 0
    for m in list(acc):
        k = len(acc.pop(m))
        got[m] = view[at:at + k]
        at += k
    return got


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


def of(prog: Program, heap: int, progress=None, objects=None, where: str | None = None) -> Census:
    """The census of one isolate's heap, taken once per target state; an error
    when the heap holds no readable object at all. `objects`, `where`: see
    `scan` and `_aside`."""
    c = scan(prog, heap, progress, objects=objects, where=where)
    if not c.total_objects:
        raise V8DbgError(f"no live V8 heap object could be read ({len(c.pages)} heap pages "
                         "found): the heap in this target is unreadable or damaged")
    return c
