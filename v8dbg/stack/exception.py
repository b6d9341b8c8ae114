"""What was thrown: the exception an isolate is unwinding with, or is about to.

V8 keeps the exception it unwinds with in its ThreadLocalTop (with the
message object it made for it). A process that --abort-on-uncaught-exception
stopped never got that far: V8 aborts while it makes the message, before it
stores either. The message object is then the newest one in the isolate's
live handles (the aborting code holds it in a handle), and its argument is
the thrown value. The handle scope's state (next, limit, level) is found in
the Isolate by its shape, as node's patches move Isolate members between
releases; places of that shape are more than one on some lines, and only the
one that V8's own list of handle blocks (the HandleScopeImplementer's) ends
at is taken. Nothing confirmed, nothing shown: no value is invented.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..inferior.backend import Registers
from . import segments

if TYPE_CHECKING:
    from ..program import Program
    from .segments import ThreadTop

# Past the Heap, how far the Isolate's handle scope data (V8 10-11) and its
# pointer to the HandleScopeImplementer (every line) may lie: 4.4 KB at most
# on the pinned releases.
SEARCH_PAST_HEAP = 16 << 10
MAX_LEVEL = 1 << 20  # nested handle scopes a real thread could have open
MAX_BLOCKS = 1 << 20  # handle blocks an isolate could have in use
SCAN_BLOCKS = 256  # blocks searched back for the message (256K handles); none found, none shown


@dataclass
class Thrown:
    """The value a thread's isolate threw."""

    value: int  # the tagged word thrown
    message: int | None  # V8's JSMessageObject for it, when found
    origin: str  # "pending", "scheduled" (V8 state) or "message" (the handle scope)


def thrown(prog: Program, regs: Registers, notes: list[str] | None = None) -> Thrown | None:
    """The exception of the isolate running JS on this thread, or None when
    it holds none (or none can be told for sure). A search cut short by its
    cap is said in `notes`."""
    try:
        t = segments.top_for(prog, regs)
    except (TargetMemoryError, V8DbgError):
        return None
    if t is None:
        return None
    try:
        return _pending(prog, t) or _from_handles(prog, t, notes)
    except (TargetMemoryError, DecodeError, V8DbgError):
        return None


def _js_value(prog: Program, v: int) -> bool:
    """A value JS could have thrown: not the hole or V8's other markers."""
    h = prog.heap
    if h.is_smi(v):
        return v != 0  # Smi zero is the slot's state before any exception
    if not h.is_valid_object(v):
        return False
    odd = h.oddball_name(v)
    return odd is None or odd in ("true", "false", "null", "undefined")


def _message(prog: Program, v: int) -> bool:
    h = prog.heap
    return h.is_heap(v) and h.is_type(v, "JS_MESSAGE_OBJECT_TYPE")


def _pending(prog: Program, t: ThreadTop) -> Thrown | None:
    md, mem = prog.md, prog.mem
    for name, origin in (("TopException", "pending"), ("TopScheduledException", "scheduled")):
        if name not in md.consts:
            continue
        v = mem.u64(t.top + md.const(name))
        if not _js_value(prog, v):
            continue
        msg = mem.u64(t.top + md.const("TopPendingMessage")) if "TopPendingMessage" in md.consts else 0
        return Thrown(v, msg if _message(prog, msg) else None, origin)
    return None


def _words(prog: Program, start: int, end: int) -> tuple[int, ...]:
    data = prog.mem.read(start, end - start)
    return struct.unpack(f"<{len(data) // 8}Q", data[:len(data) & ~7])


def _handle_scopes(prog: Program, words: tuple[int, ...]) -> list[tuple[int, int]]:
    """Every (next, limit) in the Isolate's words shaped like its
    HandleScopeData: a handle block's next and end, then a small level and
    sealed level, the block readable."""
    slots = prog.md.const("HandleBlockSlots")
    found: list[tuple[int, int]] = []
    for i in range(len(words) - 2):
        nxt, limit, levels = words[i], words[i + 1], words[i + 2]
        if not nxt or nxt & 7 or limit & 7 or not 0 <= limit - nxt <= 8 * slots:
            continue
        level, sealed = levels & 0xFFFFFFFF, levels >> 32
        if not 0 < level < MAX_LEVEL or sealed > level:
            continue
        if nxt == limit - 8 * slots or not 0x10000 <= nxt < 1 << 47:
            continue  # an empty block holds nothing to find; or no user address
        try:
            prog.mem.read(limit - 8 * slots, 8 * slots)
        except TargetMemoryError:
            continue
        found.append((nxt, limit))
    return found


def _blocks(prog: Program, t: ThreadTop, words: tuple[int, ...],
            block: int) -> tuple[int, list[int]] | None:
    """The HandleScopeImplementer the Isolate points to and its handle blocks
    in use, oldest first: it starts with a pointer back to the Isolate, then
    its vector of blocks (data, capacity, size), whose last is `block`."""
    for p in words:
        if p & 7 or not 0x10000 <= p < 1 << 47:
            continue
        try:
            back, data, cap, size = struct.unpack("<4Q", prog.mem.read(p, 32))
            if back != t.isolate or not 0 < size <= cap < MAX_BLOCKS or data & 7:
                continue
            if prog.mem.u64(data + 8 * (size - 1)) != block:
                continue
            return p, list(struct.unpack(f"<{size}Q", prog.mem.read(data, 8 * size)))
        except TargetMemoryError:
            continue
    return None


def handle_scope(prog: Program, t: ThreadTop) -> tuple[int, int, list[int]] | None:
    """The isolate's handle scope state: (next, limit) of its current handle
    block and the blocks in use, oldest first (the current one last); None
    when nothing of that shape is confirmed by V8's own list of blocks."""
    got = _implementer(prog, t)
    return None if got is None else got[1:]


def spare_block(prog: Program, t: ThreadTop) -> int | None:
    """The handle block V8 keeps for reuse (HandleScopeImplementer's spare_),
    or None: a block no scope uses, whose stale handles are no roots."""
    got = _implementer(prog, t)
    if got is None:
        return None
    try:
        spare = prog.mem.u64(got[0] + prog.md.const("HandleScopeImplementerSpare"))
    except TargetMemoryError:
        return None
    if not spare or spare & 7 or spare in got[3]:
        return None
    # A block is an array of kHandleBlockSize words from malloc: the chunk's
    # size word before it says so, or this is no block.
    try:
        size = prog.mem.u64(spare - 8) & ~7
    except TargetMemoryError:
        return None
    return spare if 8 * prog.md.const("HandleBlockSlots") <= size <= 8 * prog.md.const(
        "HandleBlockSlots") + 32 else None


def _implementer(prog: Program, t: ThreadTop) -> tuple[int, int, int, list[int]] | None:
    """(HandleScopeImplementer, next, limit, blocks in use) of the isolate."""
    try:
        words = _words(prog, t.isolate, t.heap + SEARCH_PAST_HEAP)
    except TargetMemoryError:
        return None
    slots = prog.md.const("HandleBlockSlots")
    past_heap = words[(t.heap - t.isolate) // 8:]
    for nxt, limit in _handle_scopes(prog, words):
        found = _blocks(prog, t, past_heap, limit - 8 * slots)
        if found is not None:
            return (found[0], nxt, limit, found[1])
    return None


def _from_handles(prog: Program, t: ThreadTop, notes: list[str] | None = None) -> Thrown | None:
    """The newest message object in the live handles, searched from the newest
    back (the current block, then up to SCAN_BLOCKS before it), with its argument."""
    chosen = handle_scope(prog, t)
    if chosen is None:
        return None  # nothing of that shape that V8's list of blocks confirms
    slots = prog.md.const("HandleBlockSlots")
    nxt, limit, blocks = chosen
    base = limit - 8 * slots
    # This block, then the full ones before it, newest first: the aborting code
    # may hold thousands of handles made after the message (a deep stack's
    # frames as V8 prints them: five blocks' worth at 250 frames).
    spans = [(base, nxt)] + [(b, b + 8 * slots)
                             for b in reversed(blocks[-1 - SCAN_BLOCKS:-1])]
    off = prog.md.off("JSMessageObject", "argument")
    for lo, hi in spans:
        for w in reversed(_words(prog, lo, hi)):
            if _message(prog, w):
                v = prog.mem.u64(w - 1 + off)
                return Thrown(v, w, "message") if _js_value(prog, v) else None
    if len(blocks) - 1 > SCAN_BLOCKS and notes is not None:
        notes.append(f"no uncaught exception's message in the newest {SCAN_BLOCKS + 1} of "
                     f"{len(blocks)} handle blocks; older blocks were not searched")
    return None
