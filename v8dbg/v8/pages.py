"""Where V8's heap pages are: found without DWARF, from their headers.

The node binary carries no description of V8's page headers, so pages are
found by looking at every 256 KiB-aligned address of the target's memory for
a header of the shape recorded per version in `layouts.py` (area start/end
inside the chunk, and a Heap pointer that all pages share). What of each page
holds live objects is planned here too: new-space from-space pages and
to-space pages past the current one are skipped, the unused tail [top, limit)
of each linear allocation area is cut out (the areas are found next to the
Heap object and in the space objects), and pages not yet swept after a full
GC carry their marking bitmap.
"""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import numpylib
from ..errors import TargetMemoryError, V8DbgError
from ..interrupt import check_interrupted
from ..inferior.backend import proc_regions
from .metadata import warn_once

if TYPE_CHECKING:
    from ..program import Program

PAGE_SIZE_LIMIT = 1 << 30  # a large-object page may be big, not bigger than this


# Far above real heaps (a 64 GB heap is some 250,000 pages of 256 KB); a cap
# that is hit is reported.
MAX_PAGES = 1 << 22


MIN_HEAP_PAGES = 3


MAX_REGION_PROBES = 1 << 24  # page-aligned places looked at: 4 TB of memory


LAB_SEARCH_BEFORE = 0x20000


# V8 12.4 keeps a space's allocation area (trusted space's, seen 242 KB past
# the Heap) well after it; stale memory past its top was walked as damage.
LAB_SEARCH_AFTER = 0x40000


OWNER_SEARCH = 0x400


@dataclass
class Page:
    """One V8 memory chunk: objects live in [start, end)."""

    address: int
    flags: int
    owner: int
    start: int
    end: int
    meta: int  # where the header fields were read (the page, or its metadata)
    heap: int = 0  # the Heap the page belongs to
    skips: list[tuple[int, int]] = field(default_factory=list)  # [top, limit) to skip
    young: bool = False
    # Not yet swept: the word indices (from `start`) of its marked, live
    # objects; None for a page whose every object is live.
    marks: list[int] | None = None


class _Layout:
    """Page header offsets for this V8 version (from layouts.py via metadata)."""

    def __init__(self, prog: Program) -> None:
        c = prog.md.consts
        try:
            self.align = c.get("PageAlignment", 1 << 18)
            self.meta_ptr = c["PageMetadataPointer"]  # 0: header fields are in the page
            self.meta_chunk = c.get("PageMetadataChunk", 0)
            self.flags = c["PageFlags"]
            self.heap = c["PageHeap"]
            self.area_start = c["PageAreaStart"]
            self.area_end = c["PageAreaEnd"]
            self.owner = c["PageOwner"]
            self.next = c.get("PageListNext", -1)
            self.prev = c.get("PageListPrev", -1)
            self.from_flag = c.get("PageFromFlag", 8)
            self.to_flag = c.get("PageToFlag", 16)
            self.sweep_state = c["PageSweepingState"]
            self.sweep_pending = c["PageSweepPending"]
            self.bitmap = c["PageMarkingBitmap"]
            self.mark_bits = c["PageMarkBits"]
            self.freed = c["PageFreedFlags"]
            self.meta_flags = c["PageMetaFlags"]
            self.meta_freed = c["PageMetaFreedFlags"]
        except KeyError as e:
            raise V8DbgError(f"no heap page layout for V8 {prog.md.version_text}: "
                             f"{e.args[0]} is missing from the layout table") from None


def bulk(prog: Program):
    """What to read whole pages from: a debugger's core file directly when it
    names one (far faster than the debugger's memory API, and the debugger
    does not map the pages into its own memory), else the backend."""
    st = prog.heap_state
    if st.bulk is not None:
        return st.bulk
    out = prog.backend
    fn = getattr(prog.backend, "core_file", None)
    if fn is not None and getattr(prog.backend, "kind", "") != "core":
        try:
            path = fn()
        except Exception:
            path = None
        if path and os.path.isfile(path):
            from ..inferior.corefile import CoreBackend
            try:
                cb = CoreBackend(path)
                if cb.pid() == prog.backend.pid() or not prog.backend.pid():
                    out = cb
            except V8DbgError:
                pass
    st.bulk = out
    return out


def regions(prog: Program) -> list[tuple[int, int]]:
    """Readable [start, end) ranges of the target, from the backend."""
    src = bulk(prog)
    fn = getattr(src, "regions", None)
    out: list[tuple[int, int]] = []
    if fn is not None:
        try:
            out = list(fn())
        except Exception:
            out = []
    if not out:
        pid = prog.backend.pid() if hasattr(prog.backend, "pid") else None
        if pid and getattr(prog.backend, "live", False):
            out = proc_regions(pid)
    return sorted(out)


def find_heaps(prog: Program, lay: _Layout) -> dict[int, list[Page]]:
    """Every V8 page of the target, grouped by the Heap (one per isolate) that owns it."""
    if prog.heap_state.heaps is not None:
        return prog.heap_state.heaps
    backend = bulk(prog)
    cands: list[Page] = []

    lo_img, hi_img = _image_range(prog)
    regs = regions(prog)
    reg_starts = [r[0] for r in regs]

    def readable(addr: int) -> bool:
        i = bisect.bisect_right(reg_starts, addr) - 1
        return i >= 0 and addr < regs[i][1]

    def in_binary(addr: int) -> bool:
        return lo_img <= addr < hi_img

    hdr = max(lay.flags, lay.meta_ptr) + 8
    need = max(lay.heap, lay.area_start, lay.area_end, lay.owner, lay.meta_flags) + 8
    size = max(hdr, need) if not lay.meta_ptr else hdr
    # A live process read by v8dbg itself reads every header in a few system
    # calls, not one each (the pause of `--pid` on a large heap).
    many = getattr(backend, "read_many", None)
    heads: dict[int, bytes] = {}
    if many is not None:
        places = [a for lo, hi in regs
                  for a in range((lo + lay.align - 1) // lay.align * lay.align, hi - 63,
                                 lay.align)][:MAX_REGION_PROBES]
        heads = {a: d for a, d in zip(places, many(places, size)) if d is not None}
    probes = 0
    for lo, hi in regs:
        a = (lo + lay.align - 1) // lay.align * lay.align
        while a + 64 <= hi and probes < MAX_REGION_PROBES:
            probes += 1
            if not probes & 255:
                check_interrupted()
            try:
                head = heads[a] if many is not None else backend.read(a, size)
            except Exception:
                a += lay.align
                continue
            page = _parse_header(a, head, lay, backend, need, in_binary, readable)
            if page is not None:
                cands.append(page)
            a += lay.align
    if not cands:
        raise V8DbgError("found no V8 heap pages in the target's memory"
                         " (is the core complete?)")
    if probes >= MAX_REGION_PROBES:
        warn_once(f"the target's memory was searched for heap pages only up to "
                  f"{MAX_REGION_PROBES} page-aligned places: pages past them are left out")
    if len(cands) > MAX_PAGES:
        warn_once(f"{len(cands)} heap pages found: only the first {MAX_PAGES} are read")
    heaps: dict[int, list[Page]] = {}
    read_only = _read_only(backend, [p for p in cands if not p.heap])
    for p in read_only:
        # The space is shrunk to what it holds once made: its page's tail
        # past the mapping is not there. (A whole word: a truncated core
        # may end within one, and pages are read as words.)
        i = bisect.bisect_right(reg_starts, p.start) - 1
        p.end = min(p.end, regs[i][1] & ~7)
    cands = [p for p in cands if p.heap]
    if not cands:
        raise V8DbgError("found no V8 heap pages in the target's memory"
                         " (is the core complete?)")
    for p in cands[:MAX_PAGES]:
        heaps.setdefault(p.heap, []).append(p)
    # A stray word pair that looks like a page header names a "heap" of one
    # page; a real isolate has at least a few pages of each of its spaces.
    real = {h: ps for h, ps in heaps.items() if len(ps) >= MIN_HEAP_PAGES}
    out = real or heaps
    prog.heap_state.heaps = out
    prog.heap_state.read_only = read_only
    return out


def read_only_pages(prog: Program, lay: _Layout) -> list[Page]:
    """The read-only space's pages: oddballs, the maps of strings and arrays,
    the empty arrays, internalized names every isolate shares (V8's heap
    snapshot files them under `(Read-only roots)`). The census leaves them
    out: nothing there is the program's."""
    find_heaps(prog, lay)
    return [Page(p.address, p.flags, p.owner, p.start, p.end, p.meta, 0)
            for p in prog.heap_state.read_only or []]


def find_pages(prog: Program, lay: _Layout, heap: int | None = None) -> tuple[int, list[Page]]:
    """The pages of one Heap (by default the one with the most pages), and its address.

    What walks them reads every page: a live process held still while it is
    read (`--pid`) is copied now and let go, and the walk reads the copy."""
    heaps = find_heaps(prog, lay)
    copy = getattr(prog.backend, "copy_for_walk", None)
    if copy is not None:
        copy()
    if heap is None:
        heap = max(heaps, key=lambda k: len(heaps[k]))
    if heap not in heaps:
        raise V8DbgError(f"0x{heap:x} is not the Heap of any isolate in the target")
    return heap, [Page(p.address, p.flags, p.owner, p.start, p.end, p.meta, p.heap)
                  for p in heaps[heap]]


def _image_range(prog: Program) -> tuple[int, int]:
    """Where the node binary's image (code, data and bss) sits in the target."""
    segs = [sg for sg in prog.binary.segments if sg.type == 1]
    if not segs:
        return (0, 1 << 64)
    lo = min(sg.vaddr for sg in segs)
    hi = max(sg.vaddr + sg.memsz for sg in segs)
    main = prog.main_module()
    bias = 0
    if main is not None and lo < main.start:
        bias = main.start - (lo - lo % 4096)
    return (lo + bias, hi + bias)


def _parse_header(a: int, head: bytes, lay: _Layout, backend, need: int,
                  in_binary, readable) -> Page | None:
    flags = struct.unpack_from("<Q", head, lay.flags)[0]
    if lay.meta_ptr:
        meta = struct.unpack_from("<Q", head, lay.meta_ptr)[0]
        if meta < 0x10000 or meta & 7 or not readable(meta):
            return None
        try:
            m = backend.read(meta, need)
        except Exception:
            return None
        # The metadata starts with the page's reservation: the page allocator
        # that made it, then the chunk. A page whose metadata was freed (a
        # pooled or released page, holding stale objects) has lost that
        # allocator pointer. The regular spaces' allocator is a static object
        # of the node binary; the code and trusted spaces' (V8 12.4+) sits in
        # the C heap, an object whose own first word (its vtable) is in the
        # binary.
        alloc, chunk = struct.unpack_from("<QQ", m, 0)
        # A read-only page's metadata (not a virtual class) has neither.
        bare = alloc == 0 and chunk == 0
        if not bare and (chunk != a or not _allocator(backend, alloc, in_binary, readable)):
            return None
    else:
        meta = a
        m = head
        bare = False
    heap = struct.unpack_from("<Q", m, lay.heap)[0]
    # (A read-only page, never freed, has a flag bit among those of freed ones.)
    if heap and (flags & lay.freed or (lay.meta_flags >= 0 and
                                       struct.unpack_from("<I", m, lay.meta_flags)[0]
                                       & lay.meta_freed)):
        return None  # given back to the OS soon: what it holds is dead
    start = struct.unpack_from("<Q", m, lay.area_start)[0]
    end = struct.unpack_from("<Q", m, lay.area_end)[0]
    owner = struct.unpack_from("<Q", m, lay.owner)[0]
    if not (a < start < end <= a + PAGE_SIZE_LIMIT) or start - a > 0x10000 or start & 7 \
            or end & 7 or (heap < 0x10000 and heap != 0) or heap & 7 or (bare and heap):
        return None
    return Page(a, flags, owner, start, end, meta, heap)


def _allocator(backend, a: int, in_binary, readable) -> bool:
    """Whether a is a page allocator: a static one in the node binary, or one
    in the C heap whose first word (its vtable) is in the binary."""
    if in_binary(a):
        return True
    if a < 0x10000 or a & 7 or not readable(a):
        return False
    try:
        return in_binary(struct.unpack("<Q", backend.read(a, 8))[0])
    except Exception:
        return False


def _read_only(backend, cands: list[Page]) -> list[Page]:
    """The pages of those whose header names no Heap that are the read-only
    space's: a page whose first object's map is in one of them (the space
    holds its own maps, the meta map first)."""
    maps: dict[int, int] = {}  # page start -> its first object's map
    for p in cands:
        try:
            w = struct.unpack("<Q", backend.read(p.start, 8))[0]
        except Exception:
            continue
        if w & 3 == 1:
            maps[p.start] = w - 1
    by_start = sorted((p for p in cands if p.start in maps), key=lambda p: p.start)
    starts = [p.start for p in by_start]

    def page_of(a: int) -> Page | None:
        i = bisect.bisect_right(starts, a) - 1
        return by_start[i] if i >= 0 and a < by_start[i].end else None

    # Those holding their own first map, then those whose first map is in a
    # page kept: a few rounds at most.
    kept = {p.start for p in by_start if page_of(maps[p.start]) is p}
    for _ in range(len(by_start)):
        more = {p.start for p in by_start if p.start not in kept
                and (q := page_of(maps[p.start])) is not None and q.start in kept}
        if not more:
            break
        kept |= more
    return [p for p in by_start if p.start in kept]


def _find_labs(prog: Program, heap: int, pages: list[Page], lay: _Layout) -> list[tuple[int, int, int]]:
    """Linear allocation areas (start, top, limit) next to the Heap and in space objects."""
    by_addr = {p.address: p for p in pages}
    out: list[tuple[int, int, int]] = []
    places = [(heap - LAB_SEARCH_BEFORE, LAB_SEARCH_BEFORE + LAB_SEARCH_AFTER)]
    for o in sorted({p.owner for p in pages if p.owner})[:64]:
        places.append((o, OWNER_SEARCH))
    seen = set()
    for base, size in places:
        data = _read_some(prog, base, size)
        if not data:
            continue
        n = len(data) // 8
        ws = struct.unpack(f"<{n}Q", data[:n * 8])
        for i in range(n - 2):
            s, t, lim = ws[i], ws[i + 1], ws[i + 2]
            if (s | t | lim) & 7 or not s <= t <= lim:
                continue
            pa = s - s % lay.align
            p = by_addr.get(pa)
            if p is None or not p.start <= s or lim > p.end:
                continue
            if (s, t, lim) not in seen:
                seen.add((s, t, lim))
                out.append((s, t, lim))
    return out


# Native memory read, in all, looking for the allocation areas of pages a
# walk found damaged (a background thread's: its LocalHeap's, next to
# neither the Heap nor a space), and the pages looked for at most; far above
# a real process's native memory.
MAX_LAB_SEARCH_BYTES = 16 << 30
MAX_LAB_SEARCHES = 8
_LAB_PIECE = 16 << 20


def labs_at(prog: Program, pages: list[Page], tops: list[int],
            budget: list[int]) -> dict[int, tuple[int, int, int]]:
    """The linear allocation areas (start, top, limit) whose tops are `tops`,
    by top: three words start <= top < limit in the page that holds the
    top, in native memory (outside V8's pages), read once for all of them.
    Memory past an area's top is not yet allocated, and holds whatever the
    page held before (a walk of it meets no object there, and calls it
    damage); the areas of V8's own spaces are found beside the Heap
    (`_find_labs`), those of the threads that allocate apart (compilers, in
    old space) only here, looked for where a walk is damaged. `budget`:
    bytes left to read."""
    want: dict[bytes, Page] = {}
    for top in tops:
        page = next((p for p in pages if p.start <= top < p.end), None)
        if page is not None and not top & 7:
            want[struct.pack("<Q", top)] = page
    out: dict[int, tuple[int, int, int]] = {}
    if not want:
        return out
    heap_spans = sorted((p.address, p.end) for p in pages)
    np = _numpy()
    for a, b in regions(prog):
        for lo, hi in _outside(a, b, heap_spans):
            at = lo
            while at < hi and budget[0] > 0 and len(out) < len(want):
                check_interrupted()
                size = min(_LAB_PIECE, hi - at, budget[0])
                try:
                    data = bulk(prog).read(at, size)
                except Exception:
                    data = b""
                budget[0] -= size
                for k in _words_at(np, data, at, want):
                    pat = bytes(data[k:k + 8])  # (a key, whatever a backend returns)
                    page = want[pat]
                    top = struct.unpack("<Q", pat)[0]
                    if top not in out and k >= 8 and k + 16 <= len(data):
                        s0 = struct.unpack_from("<Q", data, k - 8)[0]
                        lim = struct.unpack_from("<Q", data, k + 8)[0]
                        if not (s0 | lim) & 7 and page.start <= s0 <= top < lim <= page.end:
                            out[top] = (s0, top, lim)
                # (Overlapping the next piece by two words: a triple across the cut.)
                at += size - 16 if at + size < hi else size
    return out


def _words_at(np, data: bytes, at: int, want: dict[bytes, Page]) -> list[int]:
    """Byte offsets in `data` (read from `at`) of the 8-aligned words that
    are one of `want`'s: compared as words with NumPy (a byte search for an
    address, whose high bytes are zeros, crawls through zeroed memory),
    else by a search for each."""
    skew = -at & 7
    if np is not None:
        n = (len(data) - skew) // 8
        words = np.frombuffer(data, dtype="<u8", count=n, offset=skew)
        keys = np.frombuffer(b"".join(want), dtype="<u8")
        return [skew + 8 * int(i) for i in np.flatnonzero(np.isin(words, keys))]
    out = []
    for pat in want:
        k = data.find(pat)
        while k != -1:
            if not (at + k) & 7:
                out.append(k)
            k = data.find(pat, k + 1)
    return sorted(out)


def _outside(a: int, b: int, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[a, b) less the sorted spans."""
    out = []
    for s, e in spans:
        if e <= a or s >= b:
            continue
        if s > a:
            out.append((a, s))
        a = max(a, e)
    if a < b:
        out.append((a, b))
    return out


def _read_some(prog: Program, base: int, size: int) -> bytes:
    """As much of [base, base+size) as is readable, from the first readable page."""
    try:
        return bulk(prog).read(base, size)
    except Exception:
        pass
    step = 4096
    a = base - base % step
    parts = []
    started = False
    while a < base + size:
        try:
            blk = bulk(prog).read(a, step)
            if not started:
                blk = blk[max(0, base - a):]
                started = True
            parts.append(blk)
        except Exception:
            if started:
                break
        a += step
    return b"".join(parts)


def _plan(prog: Program, heap: int, pages: list[Page], lay: _Layout) -> list[Page]:
    """Decide which pages, and which parts of them, hold live objects."""
    labs = _find_labs(prog, heap, pages, lay)
    by_addr = {p.address: p for p in pages}
    for p in pages:
        p.young = bool(p.flags & (lay.from_flag | lay.to_flag))
    live = [p for p in pages if not p.flags & lay.from_flag]
    # The new-space allocation area tells which to-space page is current; the
    # pages after it in the space's list are unused (stale from earlier cycles).
    cur = None
    for s, t, lim in labs:
        p = by_addr.get(s - s % lay.align)
        if p is not None and p.flags & lay.to_flag and p.end - p.address <= lay.align:
            cur = p
            break
    if cur is not None and lay.next >= 0:
        before = {cur.address}
        link = cur
        for _ in range(4096):
            prev = _link(prog, link, lay.prev, lay)
            q = by_addr.get(prev) if prev else None
            if q is None or q.address in before:
                break
            before.add(q.address)
            link = q
        live = [p for p in live if not (p.flags & lay.to_flag and p.owner == cur.owner
                                        and p.address not in before)]
    for s, t, lim in labs:
        if t < lim:
            p = by_addr.get(s - s % lay.align)
            if p is not None:
                p.skips.append((t, lim))
    for p in live:
        p.skips.sort()
        p.marks = _marks(prog, p, lay)
    return live


def _marks(prog: Program, p: Page, lay: _Layout) -> list[int] | None:
    """For a page V8 has not swept yet, the word indices of its live objects.

    A swept page holds only live objects and free space. An unswept one
    still holds the objects the last full GC found dead, so only the
    objects whose first mark bit is set count. A page being swept whose
    bitmap is already clear has been swept to the end.
    """
    try:
        state = prog.mem.u64(p.meta + lay.sweep_state)
    except TargetMemoryError:
        return None
    if state == 0 or state > 16:  # swept, or not a state word at all (a damaged header)
        return None
    bits = lay.align // 8
    try:
        bm = bulk(prog).read(p.meta + lay.bitmap, bits // 8)
    except Exception:
        return None
    first = (p.start - p.address) >> 3
    last = (p.end - p.address) >> 3
    np = _numpy()
    if np is not None:
        idx = np.flatnonzero(np.unpackbits(np.frombuffer(bytes(bm), np.uint8),
                                           bitorder="little"))
        idx = idx[(idx >= first) & (idx < last)] - first
        marks = idx.tolist()
    else:
        marks = []
        for k, b in enumerate(bytes(bm)):
            if b:
                for j in range(8):
                    if b >> j & 1 and first <= 8 * k + j < last:
                        marks.append(8 * k + j - first)
    if not marks and state != lay.sweep_pending:
        return None
    if p.skips:
        gaps = [((t - p.start) >> 3, (lim - p.start) >> 3) for t, lim in p.skips]
        marks = [i for i in marks if not any(a <= i < b for a, b in gaps)]
    return marks


def _link(prog: Program, p: Page, off: int, lay: _Layout) -> int:
    """The page a list link of p points to (links hold page or metadata addresses)."""
    try:
        v = prog.mem.u64(p.meta + off)
    except TargetMemoryError:
        return 0
    if not v:
        return 0
    if lay.meta_ptr:
        try:
            return prog.mem.u64(v + lay.meta_chunk)
        except TargetMemoryError:
            return 0
    return v


def layout(prog: Program) -> _Layout:
    return _Layout(prog)


def _numpy():
    if os.environ.get("V8DBG_NO_NUMPY"):
        return None
    try:
        return numpylib.load()
    except ImportError:
        return None
