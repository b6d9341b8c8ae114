"""The root lists V8 keeps behind the Isolate's pointers, read as V8 visits
them (Heap::IterateRoots), each as [start, end) spans of tagged slots by
V8's sub-root name:

- `(Compilation cache)`: the CompilationCache's tables (script, eval
  global, eval contextual, the RegExp generations), found as the
  malloc'd object the Isolate points to whose sub-caches point back to it;
- `(Extensions)`: the Bootstrapper's extensions cache (a FixedArray), the
  Isolate's pointer two words before the compilation cache's;
- `(Micro tasks)` (`(Strong roots)` before 11.8, where V8 visits them so):
  the pending microtasks of every MicrotaskQueue of the isolate, the ring
  buffer of each from its start, the queues a ring of next_/prev_
  pointers from the default one;
- `(Internalized strings)` and `(External strings)`, weak: the string
  table's elements and the external string table's vectors. V8's own
  snapshot draws these edges strong, but its GC, which runs first, keeps
  no string for them: here they retain nothing, and are written strong
  to the strings something else keeps (CLEARED).

Each is found by its shape, checked against the core, and left out (with
a note) when it is not found: the offsets are in layouts.py."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError
from ..v8 import layouts

if TYPE_CHECKING:
    from ..program import Program

# The weak lists V8's snapshot draws strong (its GC has cleared them first).
CLEARED = ("(Internalized strings)", "(External strings)")

MAX_QUEUES = 1 << 16  # microtask queues of one isolate (one per context at most)
MAX_QUEUE = 1 << 24  # microtasks pending in one queue
MAX_STRINGS = 1 << 28  # capacity of the string table


def _ptr(w: int) -> bool:
    return not w & 7 and 0x10000 <= w < 1 << 47


def _words(prog: Program, addr: int, n: int) -> tuple[int, ...] | None:
    try:
        return struct.unpack(f"<{n}Q", prog.mem.read(addr, 8 * n))
    except (TargetMemoryError, struct.error):
        return None


def isolate_lists(prog: Program, span: tuple[int, int], heap: int, names: list[str]) -> tuple[
        dict[str, list[tuple[int, int]]], dict[str, list[tuple[int, int]]], list[str]]:
    """(strong spans by sub-root name, weak spans by name, notes on lists
    not found) of the Isolate at span, whose Heap is at `heap`."""
    iso = span[0]
    words = _words(prog, iso, (span[1] - iso) // 8) or ()
    strong: dict[str, list[tuple[int, int]]] = {}
    weak: dict[str, list[tuple[int, int]]] = {}
    notes: list[str] = []
    cc = _compilation_cache(prog, iso, span, words)
    if cc is None:
        notes.append("the compilation cache was not found: (Compilation cache) is empty")
    else:
        at, tables = cc
        strong["(Compilation cache)"] = tables
        ext = _extensions(prog, iso, words, at)
        if ext is not None:
            strong["(Extensions)"] = [ext]
    try:
        queues = _microtasks(prog, iso, span, words)
    except _TooMany as e:
        queues = None
        notes.append(f"{e}: pending microtasks are no roots")
    else:
        if queues is None:
            notes.append("no microtask queue was found: pending microtasks are no roots")
    mt = "(Micro tasks)" if "(Micro tasks)" in names else "(Strong roots)"
    if queues is not None:
        strong.setdefault(mt, []).extend(queues)
    table = _string_table(prog, span, words)
    if table is None:
        notes.append("the string table was not found: (Internalized strings) is empty")
    else:
        weak["(Internalized strings)"] = [table]
    ext = _external_strings(prog, heap, words)
    if ext is None:
        notes.append("the external string table was not found: (External strings) is empty")
    else:
        weak["(External strings)"] = ext
    return strong, weak, notes


MAX_VECTOR = 1 << 24  # entries of the external string table


def _external_strings(prog: Program, heap: int, words: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """The external string table's vectors (young and old, or one from 14):
    the Heap's ExternalStringTable points back to the Heap first, then holds
    std::vectors (begin, end, capacity) of tagged external strings."""
    h = prog.heap
    found: list[tuple[int, int]] = []
    for i, w in enumerate(words):
        if w != heap:
            continue
        for j in range(i + 1, min(i + 7, len(words) - 2)):
            b, e, c = words[j:j + 3]
            if not _ptr(b) or e & 7 or not b < e <= c or (e - b) // 8 > MAX_VECTOR:
                continue
            got = _words(prog, b, (e - b) // 8)
            try:
                ok = got is not None and all(
                    "EXTERNAL" in h.type_name(h.instance_type(x)) and
                    h.is_string_type(h.instance_type(x)) for x in got if x & 3 == 1) \
                    and all(x & 3 == 1 for x in got)
            except (TargetMemoryError, DecodeError):
                ok = False
            if ok:
                found.append((b, e))
    return found or None


def _compilation_cache(prog: Program, iso: int, span: tuple[int, int],
                       words: tuple[int, ...]) -> tuple[int, list[tuple[int, int]]] | None:
    """(index of the Isolate's word pointing to it, its tables' slots) of the
    CompilationCache: the one object the Isolate points to that points back
    to the Isolate first and at each sub-cache's measured offset."""
    got = layouts.compilation_cache(prog.md.v8_version)
    if got is None:
        return None
    backs, tables = got
    n = max(tables) // 8 + 1
    hits = []
    for i, p in enumerate(words):
        if not _ptr(p) or span[0] <= p < span[1]:
            continue
        w = _words(prog, p, n)
        if w is None or w[0] != iso or any(w[b // 8] != iso for b in backs):
            continue
        if all(w[t // 8] & 3 == 1 for t in tables):
            hits.append((i, p))
    if len({p for _i, p in hits}) != 1:
        return None
    i, p = hits[0]
    return i, [(p + t, p + t + 8) for t in tables]


def _extensions(prog: Program, iso: int, words: tuple[int, ...], at: int) -> tuple[int, int] | None:
    """The Bootstrapper's extensions cache slot: the Isolate points to the
    Bootstrapper two words before the compilation cache; it points back to
    the Isolate first."""
    i = at - layouts.BOOTSTRAPPER_BEFORE_CACHE // 8
    if i < 0 or not _ptr(words[i]):
        return None
    p = words[i]
    w = _words(prog, p, layouts.EXTENSIONS_CACHE // 8 + 1)
    if w is None or w[0] != iso or w[-1] & 3 != 1:
        return None
    return (p + layouts.EXTENSIONS_CACHE, p + layouts.EXTENSIONS_CACHE + 8)


class _TooMany(Exception):
    """A cap on the microtask queues was hit (its message says which)."""


def _queue(prog: Program, q: int) -> tuple[int, int, int, int, int, int] | None:
    """(size, capacity, start, ring, next, prev) of the MicrotaskQueue at q,
    if it has a queue's shape."""
    m = layouts.MICROTASK_QUEUE
    w = _words(prog, q, m["prev"] // 8 + 1)
    if w is None or not _ptr(w[0]):  # its vtable
        return None
    size, cap, start, ring, nxt, prev = (w[m[k] // 8] for k in
                                         ("size", "capacity", "start", "ring", "next", "prev"))
    if not (_ptr(nxt) and _ptr(prev) and size <= cap < 1 << 40):
        return None
    if cap and not (_ptr(ring) and start < cap) or not cap and (ring or size or start):
        return None
    return size, cap, start, ring, nxt, prev


def _microtasks(prog: Program, iso: int, span: tuple[int, int],
                words: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """The slots of the pending microtasks of every queue of the isolate:
    the default queue is the one the Isolate points to whose ring of
    next_/prev_ pointers closes (next's prev is itself)."""
    m = layouts.MICROTASK_QUEUE
    found = set()
    for p in set(words):
        if not _ptr(p) or span[0] <= p < span[1]:
            continue
        got = _queue(prog, p)
        if got is None:
            continue
        nxt = got[4]
        try:
            if prog.mem.u64(nxt + m["prev"]) != p:
                continue
        except TargetMemoryError:
            continue
        found.add(p)
    if not found:
        return None
    # The Isolate points to the default queue only; the others are on its ring.
    out: list[tuple[int, int]] = []
    q, seen = min(found), set()
    while q not in seen:
        if len(seen) >= MAX_QUEUES:
            raise _TooMany(f"the isolate's ring of microtask queues has more than "
                           f"{MAX_QUEUES} queues, the most read")
        seen.add(q)
        got = _queue(prog, q)
        if got is None:
            return None
        size, cap, start, ring, nxt, _prev = got
        if size > MAX_QUEUE:
            raise _TooMany(f"the microtask queue at 0x{q:x} holds {size} microtasks, more "
                           f"than the {MAX_QUEUE} read at most")
        for k in range(size):
            slot = ring + 8 * ((start + k) % cap)
            out.append((slot, slot + 8))
        q = nxt
    if len(found - seen):
        return None  # two rings: not the isolate's one list
    return out


def _string_table(prog: Program, span: tuple[int, int],
                  words: tuple[int, ...]) -> tuple[int, int] | None:
    """The elements of the string table's Data: the StringTable the Isolate
    points to holds it; its capacity a power of two, as many tagged
    elements as its count says."""
    st = layouts.STRING_TABLE
    hits = set()
    for p in set(words):
        if not _ptr(p) or span[0] <= p < span[1]:
            continue
        try:
            d = prog.mem.u64(p + st["data"])
            if not _ptr(d):
                continue
            head = prog.mem.read(d + st["count"], 12)
        except TargetMemoryError:
            continue
        count, _deleted, cap = struct.unpack("<iii", head)
        if not 0 < count <= cap <= MAX_STRINGS or cap & (cap - 1):
            continue
        el = d + st["elements"]
        try:
            data = prog.mem.read(el, 8 * cap)
        except TargetMemoryError:
            continue
        if len(data) != 8 * cap:
            continue
        tagged = sum(1 for (w,) in struct.iter_unpack("<Q", data) if w & 3 == 1)
        if tagged == count:
            hits.add((el, el + 8 * cap))
    return hits.pop() if len(hits) == 1 else None
