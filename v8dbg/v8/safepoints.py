"""Safepoint tables of optimized code: which words of its frame V8's GC visits.

TurboFan code carries a safepoint table at the start of its metadata (right
after its instructions). Each entry is keyed by a call's return address and
says which of the frame's spill slots hold tagged values at that call, and
(with deoptimization data) which deopt point and lazy-deopt trampoline
belong to it. V8 visits an optimized frame through it
(CommonFrame::IterateCompiledFrame): the outgoing arguments below the spill
slots, the spill slots the entry marks, and the fixed part (context,
function, argument count); never the other spill slots, whose stale words
may still hold objects that are dead.

The header and entry encoding (V8 10 on): a 32-bit entry count and a
configuration word (has deopt data, and the byte sizes of the register
bits, of a pc and of a deopt index, then the bytes of each entry's slot
bitmap), led from V8 13.6 by the frame's slot count, which older lines keep
in the Code object's flags. Entries are pc, deopt index + 1, trampoline pc
+ 1, register bits; the bitmaps follow all entries, bit i of one being
the i-th slot up from the frame's lowest spill slot. Per line facts come
from `layouts.py`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import DecodeError

MAX_SAFEPOINTS = 1 << 16
MAX_STACK_SLOTS = 1 << 20  # V8 bounds a frame by its stack size, under 1 MB
FIXED_FROM_FP = 3  # words below fp V8 visits as tagged: context, function, argument count
ABOVE_FP = 2  # saved fp and return address, counted in the code's stack slots


@dataclass
class SafepointEntry:
    """One call site of optimized code: its return pc and the tagged slots there."""

    pc: int  # offset from the code's first instruction
    deopt: int  # deopt index, -1 for none
    trampoline: int  # lazy-deopt trampoline offset, -1 for none
    tagged: bytes  # bitmap: bit i set when the i-th slot up from the lowest is tagged


@dataclass
class SafepointTable:
    stack_slots: int  # words of the frame from the caller's sp down, fixed part included
    entries: list[SafepointEntry]  # in pc order

    def find(self, pc_offset: int) -> SafepointEntry | None:
        """The entry of a return address, as V8's SafepointTable::TryFindEntry
        finds it: a lazy-deopt trampoline first, then the last entry at or
        before the pc (V8 merges runs of identical entries into the first)."""
        for e in self.entries:
            if e.trampoline >= 0 and e.trampoline == pc_offset:
                return e
        found = None
        for e in self.entries:
            if e.pc > pc_offset:
                break
            found = e
        return found


def read(mem, md, metadata: int, code_flags: int, maglev: bool = False) -> SafepointTable:
    """The safepoint table at the metadata start of optimized code."""
    prefix = "MaglevSafepoint" if maglev else "Safepoint"
    header = md.const(prefix + "HeaderSize")
    length, config = struct.unpack("<iI", mem.read(metadata + md.const(prefix + "LengthOffset"), 8))
    if not 0 < length <= MAX_SAFEPOINTS:
        raise DecodeError(f"safepoint table with {length} entries")
    has_deopt = config & 1
    reg_size = (config >> 1) & 7
    pc_size = (config >> 4) & 7
    index_size = (config >> 7) & 7
    tagged_bytes = (config >> md.const("SafepointTaggedBytesShift")) & 0x3fffff
    if not 1 <= pc_size <= 4 or index_size > 4 or reg_size > 4:
        raise DecodeError("safepoint table configuration is not understood")
    if maglev:
        # Maglev's entries say which pushed registers are tagged, not slots;
        # its frames are not read through the table.
        slots, tagged_bytes = 0, 0
    elif md.const("SafepointStackSlotsOffset") >= 0:
        slots = mem.u32(metadata + md.const("SafepointStackSlotsOffset"))
    else:
        slots = (code_flags >> md.const("CodeStackSlotsShift")) & 0xffffff
    if tagged_bytes * 8 > max(slots, 0) + 7:
        raise DecodeError(f"safepoint table of a {slots}-slot frame with {tagged_bytes}-byte bitmaps")
    entry = pc_size + (index_size + pc_size if has_deopt else 0) + reg_size + (1 if maglev else 0)
    raw = mem.read(metadata + header, length * (entry + tagged_bytes))
    bitmaps = length * entry
    out = []
    for i in range(length):
        p = i * entry
        pc = int.from_bytes(raw[p:p + pc_size], "little")
        deopt = tramp = -1
        if has_deopt:
            p += pc_size
            deopt = int.from_bytes(raw[p:p + index_size], "little") - 1
            p += index_size
            tramp = int.from_bytes(raw[p:p + pc_size], "little") - 1
        b = bitmaps + i * tagged_bytes
        out.append(SafepointEntry(pc, deopt, tramp, raw[b:b + tagged_bytes]))
    return SafepointTable(slots, out)


def visited(table: SafepointTable, entry: SafepointEntry, sp: int,
            fp: int) -> list[tuple[int, int]]:
    """[start, end) of the words V8 visits in a TurboFan JS frame (sp: the
    caller's sp of the frame below it) stopped at this entry's call: its
    outgoing arguments, the tagged spill slots, and the fixed part below fp."""
    caller_sp = fp + 8 * ABOVE_FP
    lowest = caller_sp - 8 * table.stack_slots
    if not ABOVE_FP + FIXED_FROM_FP <= table.stack_slots <= MAX_STACK_SLOTS or \
            not sp <= lowest < fp:
        raise DecodeError(f"a frame of {table.stack_slots} slots does not fit between "
                          f"sp {sp:#x} and fp {fp:#x}")
    out = [(sp, lowest)] if sp < lowest else []
    header = fp - 8 * FIXED_FROM_FP
    for i, byte in enumerate(entry.tagged):
        for bit in range(8):
            if byte >> bit & 1:
                a = lowest + 8 * (8 * i + bit)
                if a >= header:
                    raise DecodeError("a tagged slot in the frame's fixed part")
                out.append((a, a + 8))
    out.append((header, fp))
    return out
