"""The GC roots of a heap: the tagged pointers outside the heap that keep its
objects alive, in groups named as V8's heap snapshot names them.

V8 visits its roots by lists (the roots table, builtins, global and eternal
handles, handle scopes, the stacks, the microtask queue, ...), all in the
target's memory outside the heap's pages. The groups are V8's sub-roots of
`(GC roots)` for the line (layouts.gc_root_names: every one, empty ones
too, in the order its snapshot writes them), each holding what V8's list
of that name holds:

- the Isolate's RootsTable: its read-only part `(Read-only roots)`, its
  strong mutable part `(Strong roots)` (`(Strong root list)` from 12.4),
  at the offsets layouts.py measured per line, checked by the oddballs in
  it; its builtins tables `(Builtins)`;
- `(Eternal handles)`, `(Startup object cache)`, `(Shareable object
  cache)`: the lists the Isolate keeps in malloc'd memory, found by their
  shape from its words (`_isolate_lists`);
- `(Compilation cache)`, `(Extensions)`, `(Micro tasks)` and the weak
  `(Internalized strings)` and `(External strings)`: the lists behind the
  Isolate's other pointers (rootlists.py);
- `(Global handles)`: V8's blocks of global handles (node's persistent and
  BaseObject handles), followed from the Isolate as V8 links them
  (v8/globalhandles.py); strong nodes are roots, weak ones weak edges.
  Where that chain breaks (the notes say where), the blocks are found by
  their shape in all native memory instead: 256 nodes whose indices run
  0..255;
- `(Handle scope)`: the handles in use of the isolate's handle blocks, as
  V8's HandleScopeImplementer lists them (the rest of the current block is
  stale and no root);
- `(Stack roots)`: the thread state's exception, message and contexts,
  and the words of the V8 frames of the isolate's JS segments on its
  thread (from each exit frame's sp to the entry frame that began the
  segment: segments.js_spans). An optimized frame is taken as V8 visits
  it, through its safepoint table (`_frame_words`, `v8/safepoints.py`):
  TurboFan's outgoing arguments, the spill slots tagged at its call and its
  fixed part, never its dead spill slots; Maglev's outgoing arguments,
  tagged pushed registers, all its tagged slots, context and function.
  Every other frame is taken word by word: interpreted and baseline frames
  are all tagged in V8 too; builtin and stub frames and an optimized frame
  whose table cannot be read (the notes count them) conservatively. The
  C++ frames between segments, the entry frames' saved C++ registers and
  other threads' stacks are no roots, as in V8. JS that was running when
  the core was taken (no exit frame below it) is taken from the thread's
  sp up.

A list that cannot be placed is empty, and the graph's notes say so. No
other native memory is a root: a stale word in a malloc'd buffer keeps no
garbage alive. Where every list is placed and the global handles are
followed from the Isolate, no other native memory is read at all.

Where the Isolate or its roots table cannot be placed (a line whose roots
table was not measured, an isolate whose thread state is not found), the
old conservative rule stands for it, and the notes say so: every word of
the Isolate as the strong roots, every thread's stack from its sp up,
and v8dbg's own `(Native roots)`, last: every other word of native memory
that holds an object's address, followed only after every other group.
Memory that holds only stale addresses is left out of it: malloc's freed
chunks (each malloc heap walked: the next chunk's PREV_INUSE bit clear, or
the thread cache's key in the chunk), the spare handle block
(HandleScopeImplementer's spare_, whose offset is in layouts.py), the
Isolate's RootIndexMap table and every thread's stack; for the main
thread's isolate, the malloc arenas of the other threads too (V8's helper
threads' GC worklists and compile jobs, stale once done).

Every V8 memory chunk is heap and no root, the freed and pooled ones too
(their stale objects hold addresses of live ones).
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .arrays import unique
from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..inferior.arenas import MAX_CHUNKS, free_chunks, secondary_heaps
from ..interrupt import check_interrupted
from ..v8 import layouts
from ..v8 import pages as v8pages
from . import rootlists

if TYPE_CHECKING:
    from ..program import Program

STACK = "(Stack roots)"
HANDLES = "(Handle scope)"
STRONG = "(Strong roots)"
GLOBAL = "(Global handles)"
NATIVE = "(Native roots)"

CHUNK = 16 << 20  # bytes of native memory read at a time
MAX_ISOLATE = 16 << 20  # an Isolate object is some 70 KB
# Native memory looked at for roots, far above a real process's (a cap that
# is hit is said in the graph's notes).
MAX_NATIVE_BYTES = 64 << 30


@dataclass
class RootGroup:
    name: str
    values: Any  # uint64 array: the tagged pointers into the heap found in this group
    notes: list[str] = field(default_factory=list)
    weak: Any = None  # uint64 array: what the group holds only weakly
    late: bool = False  # followed only after every other group (found conservatively)
    # A weak table V8's GC clears before its snapshot draws it, strong (the
    # string table): its weak edges are written as strong ones, to live objects.
    cleared: bool = False


def _cut(ranges: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """ranges minus holes (both sorted lists of [start, end))."""
    out = []
    hs = sorted(holes)
    for s, e in ranges:
        cur = s
        k = bisect.bisect_left(hs, (s, 0))
        k = max(0, k - 1)
        while k < len(hs) and hs[k][0] < e:
            hs_s, hs_e = hs[k]
            if hs_e > cur:
                if hs_s > cur:
                    out.append((cur, min(hs_s, e)))
                cur = max(cur, hs_e)
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def _pointers(np, prog: Program, ranges: list[tuple[int, int]], lo: int, hi: int,
              budget: list[int]) -> tuple[Any, bool]:
    """The strong tagged words into [lo, hi] of the ranges; whether a cap cut it short."""
    src = v8pages.bulk(prog)
    parts = []
    for s, e in ranges:
        a = (s + 7) & ~7
        while a < e:
            check_interrupted()
            n = min(CHUNK, e - a) & ~7
            if n <= 0:
                break
            if budget[0] < n:
                return (np.concatenate(parts) if parts else np.zeros(0, np.uint64)), True
            budget[0] -= n
            try:
                data = src.read(a, n)
            except Exception:
                data = None
            if data is not None and len(data) == n:
                W = np.frombuffer(data, dtype="<u8")
                hit = W[((W & np.uint64(3)) == 1) & (W >= np.uint64(lo)) & (W <= np.uint64(hi))]
                if len(hit):
                    parts.append(hit.copy())
            a += n
    return (np.concatenate(parts) if parts else np.zeros(0, np.uint64)), False


def _chunks(prog: Program, lay, regs: list[tuple[int, int]], heaps) -> list[tuple[int, int]]:
    """[start, end) of every V8 memory chunk of a known heap, the freed and pooled
    ones too: those the census does not walk still hold stale objects, whose
    words are no roots."""
    src = v8pages.bulk(prog)
    known = set(heaps)
    out = []
    probes = 0
    for lo, hi in regs:
        a = (lo + lay.align - 1) // lay.align * lay.align
        while a + 64 <= hi and probes < v8pages.MAX_REGION_PROBES:
            probes += 1
            try:
                head = src.read(a, max(lay.flags, lay.meta_ptr, lay.heap, lay.area_end) + 8)
                m = head
                if lay.meta_ptr:
                    meta = struct.unpack_from("<Q", head, lay.meta_ptr)[0]
                    m = src.read(meta, max(lay.heap, lay.area_end) + 8) \
                        if meta >= 0x10000 and not meta & 7 else b""
                if m and struct.unpack_from("<Q", m, lay.heap)[0] in known:
                    end = struct.unpack_from("<Q", m, lay.area_end)[0]
                    if not a < end <= a + v8pages.PAGE_SIZE_LIMIT:
                        end = a + lay.align
                    out.append((a, max(end, a + lay.align)))
            except Exception:
                pass
            a += lay.align
    return out


def root_groups(np, prog: Program, heap: int, lo: int, hi: int) -> list[RootGroup]:
    """The root groups of the heap whose objects lie in [lo, hi] (np: NumPy):
    one per sub-root of V8's snapshot of this line, in its order (empty ones
    too), then, only where the Isolate's lists cannot be placed, v8dbg's own
    conservative `(Native roots)`."""
    regs = v8pages.regions(prog)
    lay = v8pages.layout(prog)
    heaps = v8pages.find_heaps(prog, lay)
    # Every V8 chunk, of every heap, live or not, is heap and no root.
    chunks = sorted([(p.address, max(p.end, p.address + lay.align)) for ps in heaps.values()
                     for p in ps] + _chunks(prog, lay, regs, heaps))
    names = layouts.gc_root_names(prog.md.v8_version)
    found: dict[str, list] = {}
    notes = []
    budget = [MAX_NATIVE_BYTES]
    top = _top(prog, heap)
    stacks, dead, js, stack_note = _stacks(prog, regs, top)
    if stack_note:
        notes.append(stack_note)
    js, frame_notes = _frame_words(prog, top, js)
    notes += frame_notes
    stack_vals, cut1 = _pointers(np, prog, _cut(sorted(js), chunks), lo, hi, budget)
    found[STACK] = [stack_vals]
    handles, stale = _handles(prog, heap)
    if handles is None:
        # None open (as while node waits in its event loop), or none found: the
        # blocks, if any, are read with the native roots below.
        handles = []
    handle_vals, cut3 = _pointers(np, prog, sorted(handles), lo, hi, budget)
    found[HANDLES] = [handle_vals]
    span = _isolate_span(prog, heap)
    tables = _isolate_tables(prog, span, top) if span is not None else None
    chain, why = _chain_handles(np, prog, span, lo, hi) if tables is not None else (None, None)
    cut5 = False
    if chain is not None:
        # The Isolate's lists and its global handles placed: no native memory
        # is scanned, nor walked for what the scan would skip.
        gh_strong, gh_weak, gh_blocks, chain_notes = chain
        notes += chain_notes
        cut2, vals, where = False, None, None
    else:
        if why is not None:
            notes.append(f"V8's global handles could not be followed from the Isolate ({why}): "
                         "their blocks were looked for in all native memory")
        freed, cut5 = _freed(prog, regs, chunks)
        skip = stacks + dead + handles + stale + _no_roots(prog, heap, span) + freed
        native = _cut(_cut(regs, chunks), sorted(skip))
        # One read of native memory: global handle blocks, and every word that
        # holds an object's address, kept with where it was.
        gh_strong, gh_weak, gh_blocks, cut2, vals, where = \
            _global_handles(np, prog, native, lo, hi, budget)
    if not gh_blocks:
        notes.append("no block of V8's global handles was found: objects only they hold "
                     "count as garbage")
    away = list(gh_blocks)
    weak = {GLOBAL: gh_weak}
    precise = False
    strong_name = "(Strong root list)" if "(Strong root list)" in names else STRONG
    cut4 = False
    if span is None:
        notes.append("the Isolate was not found: its roots table is missing")
    else:
        if tables is None:
            notes.append("the roots table was not found at this release's offsets: every "
                         f"word of the Isolate is taken as {strong_name}")
            got, cut4 = _pointers(np, prog, [span], lo, hi, budget)
            found[strong_name] = [got]
            away.append(span)
        precise = tables is not None
        tables = dict(tables or {})
        for name, rs in _isolate_lists(prog, span).items():
            tables.setdefault(name, []).extend(rs)
        more, weak_lists, more_notes = rootlists.isolate_lists(prog, span, heap, names)
        notes.extend(more_notes)
        for name, rs in more.items():
            tables.setdefault(name, []).extend(rs)
        for name, rs in tables.items():
            got, c = _pointers(np, prog, rs, lo, hi, budget)
            cut4 |= c
            found.setdefault(name, []).append(got)
            away.extend(rs)
        for name, rs in weak_lists.items():
            got, c = _pointers(np, prog, rs, lo, hi, budget)
            cut4 |= c
            weak[name] = got
            away.extend(rs)  # weak: no conservative root either
    found.setdefault(GLOBAL, []).append(gh_strong)
    groups = []
    seen: set[str] = set()
    seen_weak: set[str] = set()
    for n in names:
        # A name V8 gives two of its lists (10 and 11: both strong root lists)
        # holds its values in the first.
        parts = found.get(n, []) if n not in seen else []
        seen.add(n)
        # One value a slot, in the lists' order, as V8 draws one edge a slot.
        vals_n = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
        groups.append(RootGroup(n, vals_n, weak=weak.get(n) if n not in seen_weak else None,
                                cleared=n in rootlists.CLEARED))
        seen_weak.add(n)
    if not precise:
        # The Isolate's lists could not be placed: every other word of native
        # memory holding an object's address stands for them, as before.
        if _main_isolate(prog, heap):
            # Threads other than the main one malloc from their own arenas: for
            # the main isolate those are V8's helper threads, whose freed GC
            # worklists and compile jobs hold stale addresses of objects.
            away += secondary_heaps(regs, v8pages.bulk(prog).read)
        notes.append(f"the isolate's root lists were not all found: {NATIVE} holds every "
                     "other word of native memory that holds an object's address")
        groups.append(RootGroup(NATIVE, unique(np, vals[~_inside(np, where, away)]), late=True))
    if cut5:
        notes.append(f"a malloc heap of over {MAX_CHUNKS} chunks: its freed chunks were "
                     "scanned for roots too")
    if cut1 or cut2 or cut3 or cut4:
        notes.append(f"roots were looked for in the first {MAX_NATIVE_BYTES >> 30} GB "
                     "of native memory only")
    groups[0].notes = notes
    return groups


def _top(prog: Program, heap: int):
    """The ThreadLocalTop of the isolate of this heap (None: not found)."""
    from ..stack import segments
    try:
        tops = [t for t in segments.thread_tops(prog) if t.heap == heap]
    except Exception:
        return None
    return tops[0] if tops else None


def _stacks(prog: Program, regs: list[tuple[int, int]], top) -> tuple[
        list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]], str | None]:
    """Every thread's live stack [sp, end) and dead part below sp (neither is
    native memory), the spans of them that are stack roots, and a note when
    those could not be bounded as V8 bounds them.

    V8's stack roots are the frames of its JS segments on the isolate's
    thread (segments.js_spans), never the C++ frames between them nor other
    threads' stacks; `_frame_words` then narrows optimized frames to what
    their safepoint tables name. When the isolate's state is not found, every thread's
    stack from its sp up is taken, conservatively, as before."""
    from ..stack import segments
    stacks: list[tuple[int, int]] = []
    dead: list[tuple[int, int]] = []
    starts = [r[0] for r in regs]
    try:
        threads = list(prog.backend.threads())
    except Exception:
        threads = []
    js: list[tuple[int, int]] = []
    note = None
    owner = None
    for t in threads:
        r = t.regs
        if r is None or not r.rsp:
            continue
        sp = r.rsp & ~7
        i = bisect.bisect_right(starts, sp) - 1
        if i < 0 or sp >= regs[i][1]:
            continue
        stacks.append((sp, regs[i][1]))
        dead.append((regs[i][0], sp))
        if top is not None and top.js_entry_sp and sp <= top.js_entry_sp < regs[i][1]:
            owner = sp
    if not threads or not stacks:
        return stacks, dead, js, "no thread's stack could be read: stack roots are missing"
    if top is None:
        return stacks, dead, list(stacks), ("the isolate's thread state was not found: every "
                                            "thread's stack was taken as (Stack roots)")
    if top.js_entry_sp and owner is None:
        return stacks, dead, list(stacks), ("no thread's stack holds the isolate's entry "
                                            "frame: every thread's stack was taken as "
                                            "(Stack roots)")
    if owner is not None:
        try:
            js, _exact = segments.js_spans(prog, top, owner)
        except (TargetMemoryError, V8DbgError):
            js = []
        if not js:
            js = [s for s in stacks if s[0] == owner]
            note = ("the isolate's JS frames could not be bounded: its thread's whole "
                    "stack was taken as (Stack roots)")
    return stacks, dead, js, note


MAX_FRAMES = 8192  # frames of one JS segment walked for their code


def _frame_words(prog: Program, top, spans: list[tuple[int, int]]) -> tuple[
        list[tuple[int, int]], list[str]]:
    """The spans' words as V8 visits them: each optimized (TurboFan, Maglev)
    frame only through its safepoint table (safepoints.visited), every other
    frame word by word; and a note saying how many optimized frames stayed
    word by word, and why.

    The frames of a span are walked up the fp chain from its exit frame
    (a running segment, with none, stays word by word); a frame's code is
    the one holding the return address its callee saved."""
    from ..v8 import safepoints
    if top is None or not top.exits:
        return spans, []
    mem, codes = prog.mem, prog.codes
    out: list[tuple[int, int]] = []
    unread = 0
    why = ""
    capped = False
    for lo, hi in spans:
        exits = [e for e in top.exits if lo <= e < hi]
        if not exits:
            out.append((lo, hi))
            continue
        cur = lo  # words below cur are placed already
        fp = exits[0]
        for _ in range(MAX_FRAMES):
            try:
                up, pc = mem.u64(fp), mem.u64(fp + 8)
            except TargetMemoryError:
                break
            if not fp < up < hi or up & 7:
                break
            sp, fp = fp + 16, up
            if prog.builtin_at(pc) is not None or prog.module_for(pc) is not None:
                continue
            try:
                fn = mem.u64(fp - 16)
                info = codes.code_for_pc(pc, fn if fn & 3 == 1 else None)
            except (DecodeError, TargetMemoryError, V8DbgError):
                info = None
            if info is None or not codes.is_jit(info.kind) or info.kind == codes.baseline:
                continue
            is_maglev = info.kind == codes.baseline + 1
            try:
                flags = mem.u32(info.code - 1 + prog.md.off("Code", "flags"))
                table = safepoints.read(mem, prog.md, info.start + info.size, flags, is_maglev)
                entry = table.find(pc - info.start)
                if entry is None:
                    raise DecodeError(f"no safepoint at code offset {pc - info.start:#x}")
                words = safepoints.visited(table, entry, sp, fp)
            except (DecodeError, TargetMemoryError, V8DbgError, struct.error) as e:
                unread += 1
                why = f"{codes.tier(info.kind)}: {e}"
                continue
            out.append((cur, sp))
            out.extend(words)
            cur = fp + 16
        else:
            capped = True
        out.append((cur, hi))
    notes = []
    if unread:
        notes.append(f"{unread} optimized frame(s) on the stack were taken word by word: "
                     f"safepoint table not read ({why})")
    if capped:
        notes.append(f"a JS segment of over {MAX_FRAMES} frames: the frames past them "
                     "were taken word by word")
    return [r for r in out if r[0] < r[1]], notes


MAX_LIST = 1 << 20  # entries of one of the Isolate's root lists, far above real ones
ETERNAL_BLOCK = 256  # handles in a block of V8's EternalHandles (kSize)


def _builtins(prog: Program, span: tuple[int, int]) -> list[tuple[int, int]]:
    """[start, end) of the Isolate's builtins tables: the tier-0 table at its
    measured offset (its words all tagged), then the main table, which
    begins with the same builtins and is found by them (node's patches move
    it within a line), as long as the entry table before it."""
    tables = layouts.builtins_tables(prog.md.v8_version)
    if len(tables) != 2:
        return []
    (off0, n0), (_off1, n1) = tables  # n1: a bound on the count
    iso = span[0]
    n = (span[1] - iso) // 8
    try:
        words = struct.unpack(f"<{n}Q", prog.mem.read(iso, 8 * n))
    except (TargetMemoryError, struct.error):
        return []
    i0 = off0 // 8
    tier0 = words[i0:i0 + n0]
    if len(tier0) != n0 or any(w & 3 != 1 for w in tier0):
        return []
    out = [(iso + off0, iso + off0 + 8 * n0)]
    first = tier0[0]
    hits = [i for i in range(n0, n - n0 + 1) if words[i] == first and i != i0
            and words[i:i + n0] == tier0]
    if len(hits) != 1:
        return out
    # As many builtins as the entry table right before it holds (their
    # instruction starts, in the embedded code); a release of the line may
    # have a few more or less than measured.
    at = hits[0]
    count = 0
    while count < 2 * n1 and at - count - 1 >= 0 and \
            prog.builtin_at(words[at - count - 1]) is not None:
        count += 1
    if n0 <= count and all(w & 3 == 1 for w in words[at:at + count]):
        out.append((iso + 8 * at, iso + 8 * (at + count)))
    return out


def _isolate_lists(prog: Program, span: tuple[int, int]) -> dict[str, list]:
    """The root lists the Isolate holds in malloc'd memory, found by their
    shape among its words (one match each, else none), as [start, end)
    spans by V8's sub-root name:

    - `(Eternal handles)`: the Isolate points to its EternalHandles, whose
      handle count (32 bits) comes first and a vector of block pointers
      after it, as many blocks as the count needs at 256 handles a block;
      every handle of a block is tagged;
    - `(Startup object cache)` and `(Shareable object cache)`: two vectors
      of tagged values, one after the other in the Isolate, each ended by
      `undefined` (what the deserializer appends)."""
    mem, h = prog.mem, prog.heap
    iso = span[0]
    n = (span[1] - span[0]) // 8
    try:
        words = struct.unpack(f"<{n}Q", prog.mem.read(iso, 8 * n))
    except (TargetMemoryError, struct.error):
        return {}
    eternal = []
    for p in set(words):
        if p & 7 or not 0x10000 <= p < 1 << 47 or span[0] <= p < span[1]:
            continue
        try:
            size = struct.unpack("<i", mem.read(p, 4))[0]
            begin, end, cap = struct.unpack("<3Q", mem.read(p + 8, 24))
        except TargetMemoryError:
            continue
        blocks = (end - begin) // 8
        if not 0 < size <= MAX_LIST or begin & 7 or not begin < end <= cap \
                or blocks != (size + ETERNAL_BLOCK - 1) // ETERNAL_BLOCK:
            continue
        try:
            bs = struct.unpack(f"<{blocks}Q", mem.read(begin, 8 * blocks))
            got = []
            for k, b in enumerate(bs):
                used = min(ETERNAL_BLOCK, size - k * ETERNAL_BLOCK)
                if b & 7 or any(w & 3 != 1 for w in struct.unpack(f"<{used}Q",
                                                                   mem.read(b, 8 * used))):
                    raise DecodeError("not a block of eternal handles")
                got.append((b, b + 8 * used))
        except (TargetMemoryError, DecodeError):
            continue
        eternal.append(got)
    out: dict[str, list] = {}
    if len(eternal) == 1:
        out["(Eternal handles)"] = eternal[0]

    def cache(i: int) -> tuple[int, int] | None:
        begin, end, cap = words[i:i + 3]
        if begin & 7 or end & 7 or not 0x10000 <= begin < end <= cap < 1 << 47 \
                or (end - begin) // 8 > MAX_LIST:
            return None
        try:
            last = mem.u64(end - 8)
            if h.oddball_name(last) != "undefined":
                return None
            cnt = (end - begin) // 8
            if any(w & 3 != 1 for w in struct.unpack(f"<{cnt}Q", mem.read(begin, 8 * cnt))):
                return None
        except (TargetMemoryError, DecodeError):
            return None
        return (begin, end)

    pairs = []
    for i in range(n - 5):
        a = cache(i) if words[i] and not words[i] & 7 else None
        if a is not None:
            b = cache(i + 3)
            if b is not None:
                pairs.append((a, b))
    if len(pairs) == 1:
        out["(Startup object cache)"] = [pairs[0][0]]
        out["(Shareable object cache)"] = [pairs[0][1]]
    return out


def _isolate_tables(prog: Program, span: tuple[int, int], top) -> dict[str, list] | None:
    """The Isolate's own root lists, as [start, end) spans by V8's sub-root
    name: the roots table's read-only and strong parts, the builtins tables,
    and the ThreadLocalTop's exception and message (which V8 visits with
    the stack). None when the roots table is not where layouts.py has it
    (checked by its oddballs: undefined, the hole, null, true, false)."""
    md = prog.md
    rt = layouts.roots_table(md.v8_version)
    if rt is None:
        return None
    off, undef, ro, strong = rt
    iso = span[0]
    table = iso + off
    if table + 8 * (ro + strong) > span[1]:
        return None
    h = prog.heap
    try:
        want = ["undefined", "hole", "null", "true", "false"]
        if [h.oddball_name(prog.mem.u64(table + 8 * (undef + k))) for k in range(5)] != want:
            return None
    except (TargetMemoryError, DecodeError):
        return None
    names = layouts.gc_root_names(md.v8_version)
    strong_name = "(Strong root list)" if "(Strong root list)" in names else STRONG
    out: dict[str, list] = {"(Read-only roots)": [(table, table + 8 * ro)],
                            strong_name: [(table + 8 * ro, table + 8 * (ro + strong))]}
    builtins = _builtins(prog, span)
    if builtins:
        out["(Builtins)"] = builtins
    if top is not None:
        fields = [n for n in ("TopException", "TopPendingMessage", "TopScheduledException")
                  if n in md.consts]
        offs = [md.const(n) for n in fields] + list(layouts.top_contexts(md.v8_version))
        out[STACK] = [(top.top + o, top.top + o + 8) for o in offs]
    return out


GH_STRIDES = (24, 32, 40)  # sizes a global handle node has had (V8's NodeBase and Node)
GH_BLOCK = 256  # nodes in a block of global handles (kBlockSize)
GH_NORMAL = 1  # a node's state (flags & 7): a strong handle; 2, 3 are weak


def table_roots(prog: Program, heap: int) -> list[int] | None:
    """The values of the Isolate's roots table, read-only roots then strong
    mutable ones, in V8's root order; None where the table is not found."""
    span = _isolate_span(prog, heap)
    tables = _isolate_tables(prog, span, None) if span is not None else None
    if tables is None:
        return None
    strong = "(Strong root list)" if "(Strong root list)" in tables else STRONG
    (a, b), = tables["(Read-only roots)"]
    (c, d), = tables[strong]
    if b != c:
        return None
    try:
        data = prog.mem.read(a, d - a)
    except TargetMemoryError:
        return None
    return [int.from_bytes(data[k:k + 8], "little") for k in range(0, len(data), 8)]


def _node_values(np, obj, meta, lo: int, hi: int) -> tuple[Any, Any]:
    """(strong, weak) objects in [lo, hi] of global handle nodes, given their
    object words and the words after them (state: byte 3, low 3 bits;
    NORMAL is a strong root, WEAK and PENDING weak; a free node holds no
    object, V8 zaps it)."""
    state = (meta >> np.uint64(24)) & np.uint64(7)
    ok = ((obj & np.uint64(3)) == 1) & (obj >= np.uint64(lo)) & (obj <= np.uint64(hi))
    return obj[ok & (state == GH_NORMAL)], obj[ok & ((state == 2) | (state == 3))]


def _chain_handles(np, prog: Program, span: tuple[int, int], lo: int,
                   hi: int) -> tuple[tuple[Any, Any, list[tuple[int, int]], list[str]] | None,
                                     str | None]:
    """(strong, weak, blocks, notes) of V8's global handles, the blocks
    followed from the Isolate (v8/globalhandles.py), no native memory
    scanned; or (None, why) when the chain cannot be followed. Each block's
    nodes must hold their indices 0..255, as V8 numbers them."""
    from ..v8 import globalhandles
    try:
        words = struct.unpack(f"<{(span[1] - span[0]) // 8}Q",
                              prog.mem.read(span[0], span[1] - span[0]))
    except (TargetMemoryError, struct.error):
        return None, "the Isolate's words cannot be read"
    # Read past the page cache: one look at each of the Isolate's pointers.
    src = v8pages.bulk(prog)
    chain = globalhandles.find(src, prog.md.v8_version, span[0], words)
    if chain.error is not None:
        return None, chain.error
    step = chain.node_size // 8
    k = np.arange(GH_BLOCK) * step
    strong, weak = [], []
    for b, e in chain.blocks:
        check_interrupted()
        try:
            data = src.read(b, e - b)
        except Exception:
            data = None
        if data is None or len(data) != e - b:
            return None, f"the global handle block at {b:#x} cannot be read"
        W = np.frombuffer(data, dtype="<u8")
        if not (((W[k + 1] >> np.uint64(16)) & np.uint64(0xFF)) ==
                np.arange(GH_BLOCK, dtype=np.uint64)).all():
            return None, f"the nodes of the global handle block at {b:#x} are not numbered 0..255"
        st, wk = _node_values(np, W[k], W[k + 1], lo, hi)
        strong.append(st)
        weak.append(wk)
    cat = (lambda parts: unique(np, np.concatenate(parts)) if parts else np.zeros(0, np.uint64))
    return (cat(strong), cat(weak), sorted(chain.blocks), chain.notes), None


def _global_handles(np, prog: Program, ranges: list[tuple[int, int]], lo: int, hi: int,
                    budget: list[int]) -> tuple[Any, Any, list[tuple[int, int]], bool, Any, Any]:
    """(strong, weak) values of V8's global handles, the blocks found,
    whether a cap cut the search short, and every word of the ranges that
    holds a tagged pointer into [lo, hi] (values, and their addresses).

    A block of global handles is 256 nodes, each its object first and, in
    the word after it, its index in the block (byte 2) and its state (byte 3,
    low 3 bits): the nodes' indices 0..255 in a row tell a block, whatever
    else the block holds. A free node holds no object (V8 zaps it).
    """
    src = v8pages.bulk(prog)
    strong, weak, blocks = [], [], []
    vals: list = []
    where: list = []
    for s, e in ranges:
        a = (s + 7) & ~7
        while a + 8 <= e:
            check_interrupted()
            n = min(CHUNK, e - a) & ~7
            if budget[0] < n:
                break
            budget[0] -= n
            try:
                data = src.read(a, n)
            except Exception:
                data = None
            if data is None or len(data) != n:
                a += n
                continue
            W = np.frombuffer(data, dtype="<u8")
            hit = np.flatnonzero(((W & np.uint64(3)) == 1) & (W >= np.uint64(lo)) &
                                 (W <= np.uint64(hi)))
            if len(hit):
                vals.append(W[hit])
                where.append(hit.astype(np.uint64) * np.uint64(8) + np.uint64(a))
            X = ((W >> np.uint64(16)) & np.uint64(0xFF)).astype(np.uint8)
            lastw = 0
            for S in GH_STRIDES:
                step = S // 8
                m = len(W) - 1 - (GH_BLOCK - 1) * step
                if m <= 0:
                    continue
                c = np.flatnonzero((X[1:1 + m] == 0) & (X[1 + step:1 + step + m] == 1) &
                                   (X[1 + 255 * step:1 + 255 * step + m] == 255))
                for j in c.tolist():
                    k = np.arange(GH_BLOCK) * step + j
                    if not (X[k + 1] == np.arange(GH_BLOCK, dtype=np.uint8)).all():
                        continue
                    st, wk = _node_values(np, W[k], W[k + 1], lo, hi)
                    strong.append(st)
                    weak.append(wk)
                    blocks.append((a + 8 * j, a + 8 * j + GH_BLOCK * S))
                    lastw = max(lastw, j + GH_BLOCK * step)
            # A block across the chunk's end is found in the next chunk.
            adv = n - GH_BLOCK * 40 if a + n < e else n
            a += max(8, adv & ~7)
    cat = (lambda parts: unique(np, np.concatenate(parts)) if parts else np.zeros(0, np.uint64))
    cat2 = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.uint64))
    v, w = cat2(vals), cat2(where)
    # Chunks overlap (a block across a chunk's end): each word once.
    w, first = np.unique(w, return_index=True)
    return cat(strong), cat(weak), sorted(set(blocks)), budget[0] <= 0, v[first], w


def _inside(np, addrs, ranges: list[tuple[int, int]]):
    """Which of addrs lie in one of the [start, end) ranges."""
    if not ranges or not len(addrs):
        return np.zeros(len(addrs), dtype=bool)
    rs = sorted(ranges)
    starts = np.array([r[0] for r in rs], dtype=np.uint64)
    ends = np.array([r[1] for r in rs], dtype=np.uint64)
    i = np.searchsorted(starts, addrs, side="right") - 1
    ok = i >= 0
    i = np.maximum(i, 0)
    # Ranges may nest or overlap: the furthest end among those started before.
    reach = np.maximum.accumulate(ends)
    return ok & (addrs < reach[i])


def _isolate_span(prog: Program, heap: int) -> tuple[int, int] | None:
    """[start, end) of the Isolate object of this heap: from its address to the
    end of the malloc chunk that holds it (the chunk's size is the word before)."""
    from ..stack import segments
    try:
        tops = [t for t in segments.thread_tops(prog) if t.heap == heap]
        if not tops:
            return None
        iso = tops[0].isolate
        size = prog.mem.u64(iso - 8) & ~7
    except Exception:
        return None
    if not heap - iso < size <= MAX_ISOLATE:
        return None
    return (iso, iso - 8 + size)


def _freed(prog: Program, regs: list[tuple[int, int]],
           chunks: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], bool]:
    """The bodies of the chunks malloc has been given back (free() was called:
    whatever they held is stale), and whether a walk hit its cap. The main
    heap first (its thread cache gives the tcache key), then the rest."""
    src = v8pages.bulk(prog)
    out: list[tuple[int, int]] = []
    cut = False
    key = 0
    rest = _cut(regs, chunks)
    for s, e in sorted(rest, key=lambda r: r[0] >= 1 << 40):  # brk's heap is low
        check_interrupted()
        got, key, c = free_chunks(s, e, src.read, key)
        out += got
        cut |= c
    return out, cut


def _no_roots(prog: Program, heap: int, span: tuple[int, int] | None) -> list[tuple[int, int]]:
    """Native memory V8 keeps object addresses in that it never visits as
    roots, so left out of the native scan: the spare handle block
    (HandleScopeImplementer's spare_, stale handles of closed scopes) and
    the Isolate's RootIndexMap table (a lookup cache from a root's address
    to its index: its young keys are stale after the next scavenge)."""
    from ..stack import exception, segments
    out = []
    try:
        tops = [t for t in segments.thread_tops(prog) if t.heap == heap]
    except Exception:
        tops = []
    if tops:
        spare = exception.spare_block(prog, tops[0])
        if spare is not None:
            out.append((spare, spare + 8 * prog.md.const("HandleBlockSlots")))
    if span is not None:
        out.extend(_address_maps(prog, span))
    return out


MAX_MAP_CAPACITY = 1 << 20  # entries of a V8 HashMap keyed by object address


def _address_maps(prog: Program, span: tuple[int, int]) -> list[tuple[int, int]]:
    """The tables of the V8 HashMaps keyed by object address that the Isolate
    points to (its RootIndexMap): a HashMap is its table, capacity (a power
    of two) and occupancy; an entry 24 bytes, the key, the value (32 bits),
    the key's hash (its low 32 bits, as V8's PointerToIndexHashMap hashes),
    then whether it is in use. Every entry in use must be so, and as many as
    the occupancy says, for a table to count."""
    src = v8pages.bulk(prog)
    out = []
    try:
        words = struct.unpack(f"<{(span[1] - span[0]) // 8}Q", src.read(span[0], span[1] - span[0]))
    except Exception:
        return []
    for p in set(words):
        if p & 7 or not 0x10000 <= p < 1 << 47 or span[0] <= p < span[1]:
            continue
        try:
            table, cap_occ, _z = struct.unpack("<3Q", src.read(p, 24))
        except Exception:
            continue
        cap, occ = cap_occ & 0xFFFFFFFF, cap_occ >> 32
        if table & 7 or not 8 <= cap <= MAX_MAP_CAPACITY or cap & (cap - 1) or not 0 < occ <= cap:
            continue
        try:
            data = src.read(table, 24 * cap)
        except Exception:
            continue
        if data is None or len(data) != 24 * cap:
            continue
        used = 0
        for i in range(cap):
            key, vh, flag = struct.unpack_from("<3Q", data, 24 * i)
            if flag & 0xFF == 0:
                continue
            if flag & 0xFF != 1 or key & 3 != 1 or vh >> 32 != key & 0xFFFFFFFF:
                used = -1
                break
            used += 1
        if used == occ:
            out.append((table, table + 24 * cap))
    return out


def _main_isolate(prog: Program, heap: int) -> bool:
    """Whether the process's main thread runs the isolate of this heap."""
    from .isolates import isolates
    pid = prog.backend.pid()
    for iso in isolates(prog):
        if iso.heap == heap:
            return any(tid == pid for tid, _n in iso.threads)
    return False


def _handles(prog: Program, heap: int) -> tuple[list[tuple[int, int]] | None, list[tuple[int, int]]]:
    """The handle slots in use of the isolate of this heap, as [start, end) spans,
    and the stale rest of its current block (None, [] when not found)."""
    from ..stack import exception, segments
    try:
        tops = [t for t in segments.thread_tops(prog) if t.heap == heap]
    except Exception:
        return None, []
    if not tops:
        return None, []
    try:
        got = exception.handle_scope(prog, tops[0])
    except Exception:
        got = None
    if got is None:
        return None, []
    nxt, limit, blocks = got
    size = 8 * prog.md.const("HandleBlockSlots")
    used = [(b, b + size) for b in blocks[:-1]] + [(limit - size, nxt)]
    return used, [(nxt, limit)]
