"""The GC roots of a heap: the tagged pointers outside the heap that keep its
objects alive, in groups named as V8's heap snapshot names them.

V8 visits its roots by lists (the roots table, global and eternal handles,
handle scopes, the stacks, the microtask queue, ...). All of them live in
the target's memory outside the heap's pages: in the Isolate, in blocks
malloc'ed by GlobalHandles, EternalHandles and HandleScopeImplementer, in
node's own structures, and on the threads' stacks. Here they are found
conservatively, as a conservative collector finds them: every aligned word
of the target's readable memory, outside every V8 page, that holds the
tagged address of an object's start, is a root. Two groups are told apart:

- `(Stack roots)`: words of a thread's stack from its stack pointer up
  (below it the stack is dead and not looked at);
- `(Native roots)`: every other word outside the heap: V8's roots table,
  global, eternal and handle-scope handles, the microtask queue and node's
  persistent handles, not told apart from each other.

Conservative means over-counting, never missing: a stale word in freed
native memory that still holds an object's address keeps that object
"reachable" here. What V8 holds only weakly from outside the heap (weak
global handles, the string table) counts as a root too.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..interrupt import check_interrupted
from ..v8 import pages as v8pages

if TYPE_CHECKING:
    from ..program import Program

STACK = "(Stack roots)"
NATIVE = "(Native roots)"

CHUNK = 16 << 20  # bytes of native memory read at a time
# Native memory looked at for roots, far above a real process's (a cap that
# is hit is said in the graph's notes).
MAX_NATIVE_BYTES = 64 << 30


@dataclass
class RootGroup:
    name: str
    values: Any  # uint64 array: the tagged pointers into the heap found in this group
    notes: list[str] = field(default_factory=list)


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


def root_groups(prog: Program, heap: int, lo: int, hi: int) -> list[RootGroup]:
    """The root groups of the heap whose objects lie in [lo, hi]."""
    from .graph import numpy
    np = numpy()
    regs = v8pages.regions(prog)
    lay = v8pages.layout(prog)
    heaps = v8pages.find_heaps(prog, lay)
    # Every V8 chunk, of every heap, live or not, is heap and no root.
    chunks = sorted((p.address, max(p.end, p.address + lay.align)) for ps in heaps.values()
                    for p in ps)
    stacks: list[tuple[int, int]] = []
    dead: list[tuple[int, int]] = []
    starts = [r[0] for r in regs]
    try:
        threads = list(prog.backend.threads())
    except Exception:
        threads = []
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
    budget = [MAX_NATIVE_BYTES]
    stack_vals, cut1 = _pointers(np, prog, _cut(sorted(stacks), chunks), lo, hi, budget)
    native = _cut(_cut(regs, chunks), sorted(stacks + dead))
    native_vals, cut2 = _pointers(np, prog, native, lo, hi, budget)
    notes = []
    if not threads or not stacks:
        notes.append("no thread's stack could be read: stack roots are missing")
    if cut1 or cut2:
        notes.append(f"roots were looked for in the first {MAX_NATIVE_BYTES >> 30} GB "
                     "of native memory only")
    return [RootGroup(STACK, stack_vals), RootGroup(NATIVE, native_vals, notes)]
