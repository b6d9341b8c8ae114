"""Isolates: which V8 heaps the target holds, and which thread runs each.

Every `worker_threads` worker runs its own isolate with its own Heap. The
census finds pages by their headers, and each page names its Heap, so the
heaps come for free; what a user knows, though, is a thread. A thread that
runs an isolate holds pointers into that isolate's pages on its stack (the
frames' functions, contexts, receivers and handles), so each thread is
matched to the heap that most of its stack words point into.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import V8DbgError
from ..v8 import pages

if TYPE_CHECKING:
    from ..program import Program

STACK_SCAN_BYTES = 2 << 20  # of each thread's stack, from its stack pointer up
MIN_STACK_HITS = 4  # stack words that must point into a heap to tie a thread to it


@dataclass
class Isolate:
    """One V8 isolate of the target, known by its Heap."""

    index: int
    heap: int
    pages: int
    bytes: int
    threads: list[tuple[int, str | None]] = field(default_factory=list)

    def describe(self) -> str:
        who = ", ".join(f"thread {tid}" + (f" \"{name}\"" if name else "")
                        for tid, name in self.threads) or "no thread found running it"
        return f"isolate {self.index} ({who}; heap 0x{self.heap:x}, {self.pages} pages)"

    def to_json(self) -> dict:
        return {"index": self.index, "heap": f"0x{self.heap:x}", "pages": self.pages,
                "bytes": self.bytes,
                "threads": [{"tid": tid, "name": name} for tid, name in self.threads]}


def isolates(prog: Program) -> list[Isolate]:
    """The target's isolates: the main thread's first, then by their threads' ids."""
    if prog.heap_state.isolates is not None:
        return prog.heap_state.isolates
    lay = pages.layout(prog)
    heaps = pages.find_heaps(prog, lay)
    page_heap = {p.address: h for h, ps in heaps.items() for p in ps}
    runs: dict[int, list[tuple[int, str | None]]] = {h: [] for h in heaps}
    pid = prog.backend.pid()
    for t in _threads(prog):
        h = _thread_heap(prog, t, page_heap, lay.align)
        if h is not None:
            runs[h].append((t.tid, t.name))

    def order(h: int) -> tuple:
        tids = [tid for tid, _ in runs[h]]
        return (0 if pid in tids else 1, min(tids) if tids else 1 << 62, -len(heaps[h]), h)

    out = [Isolate(0, h, len(heaps[h]), sum(p.end - p.start for p in heaps[h]), runs[h])
           for h in sorted(heaps, key=order)]
    for i, iso in enumerate(out):
        iso.index = i
    prog.heap_state.isolates = out
    return out


def _threads(prog: Program) -> list:
    try:
        return list(prog.backend.threads())
    except Exception:
        return []


def _thread_heap(prog: Program, t, page_heap: dict[int, int], align: int) -> int | None:
    """The heap most of this thread's stack words point into, if any."""
    regs = t.regs
    if regs is None or not regs.rsp:
        return None
    sp = regs.rsp & ~7
    data = _stack_bytes(prog, sp)
    if not data:
        return None
    hits: dict[int, int] = {}
    mask = ~(align - 1)
    n = len(data) // 8
    np = pages._numpy()
    if np is not None:
        words = np.frombuffer(data, dtype="<u8", count=n) & np.uint64(mask & (1 << 64) - 1)
        starts = np.array(sorted(page_heap), dtype=np.uint64)
        found = words[np.isin(words, starts)]
        uniq, counts = np.unique(found, return_counts=True)
        for pa, c in zip(uniq.tolist(), counts.tolist()):
            h = page_heap[pa]
            hits[h] = hits.get(h, 0) + c
    else:
        for w in struct.unpack(f"<{n}Q", data[:n * 8]):
            h = page_heap.get(w & mask)
            if h is not None:
                hits[h] = hits.get(h, 0) + 1
    if not hits:
        return None
    best = max(hits, key=lambda h: hits[h])
    return best if hits[best] >= MIN_STACK_HITS else None


def _stack_bytes(prog: Program, sp: int) -> bytes:
    """The thread's stack from sp up to the end of its mapping (capped)."""
    regs = pages.regions(prog)
    i = bisect.bisect_right([r[0] for r in regs], sp) - 1
    if i < 0 or sp >= regs[i][1]:
        return b""
    end = min(regs[i][1], sp + STACK_SCAN_BYTES)
    try:
        return bytes(pages.bulk(prog).read(sp, end - sp))
    except Exception:
        return b""


def choose(prog: Program, isolate: str | None = None, thread: int | None = None,
           address: int | None = None) -> Isolate:
    """The isolate a heap command works on.

    In order: the one named by --isolate (an index or a Heap address), the
    one run by --thread, the one whose pages hold `address`, the one the
    selected thread runs, the main thread's.
    """
    isos = isolates(prog)
    if not isos:
        raise V8DbgError("found no V8 isolate in the target")
    if isolate is not None:
        return _by_name(isos, isolate)
    if thread is not None:
        for iso in isos:
            if any(tid == thread for tid, _ in iso.threads):
                return iso
        known = [t.tid for t in _threads(prog)]
        if thread not in known:
            raise V8DbgError(f"no thread {thread} in the target (threads: "
                             f"{', '.join(str(t) for t in known[:16])})")
        raise V8DbgError(f"thread {thread} runs no V8 isolate that could be found; "
                         "jsisolates lists the isolates and their threads")
    if address is not None:
        lay = pages.layout(prog)
        heaps = pages.find_heaps(prog, lay)
        page = address - address % lay.align
        for iso in isos:
            if any(p.address == page for p in heaps[iso.heap]):
                return iso
    sel = None
    try:
        sel = prog.backend.selected_thread()
    except Exception:
        pass
    if sel is not None:
        for iso in isos:
            if any(tid == sel for tid, _ in iso.threads):
                return iso
    return isos[0]


def _by_name(isos: list[Isolate], text: str) -> Isolate:
    t = text.strip().lower()
    try:
        v = int(t, 16) if t.startswith("0x") else int(t)
    except ValueError:
        raise V8DbgError(f"--isolate takes an isolate number or a Heap address, not '{text}'") \
            from None
    for iso in isos:
        if iso.index == v or iso.heap == v:
            return iso
    raise V8DbgError(f"no isolate {text}: there are {len(isos)} "
                     f"({', '.join(str(i.index) for i in isos)}); jsisolates lists them")
