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

Maglev code has a table of its own shape: the header counts the frame's
tagged spill slots (the same at every call, right below the fixed part)
and, before 13.6, its untagged ones; an entry adds the number of registers
pushed below the slots for its call and which of them are tagged.
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
    tagged: bytes  # TurboFan: bit i set when the i-th slot up from the lowest is tagged
    extra: int = 0  # Maglev: registers pushed below the spill slots for this call
    registers: int = 0  # Maglev: which of those pushed registers are tagged (bit per index)


@dataclass
class SafepointTable:
    stack_slots: int  # words of the frame from the caller's sp down, fixed part included
    entries: list[SafepointEntry]  # in pc order
    maglev_tagged: int | None = None  # Maglev: its spill slots that are tagged (all calls)

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
    """The safepoint table at the metadata start of optimized code (code_flags:
    the Code's flags word, where older lines keep the frame's slot count)."""
    prefix = "MaglevSafepoint" if maglev else "Safepoint"
    header = md.const(prefix + "HeaderSize")
    length, config = struct.unpack("<iI", mem.read(metadata + md.const(prefix + "LengthOffset"), 8))
    if not 0 < length <= MAX_SAFEPOINTS:
        raise DecodeError(f"safepoint table with {length} entries")
    has_deopt = config & 1
    reg_size = (config >> 1) & 7
    pc_size = (config >> 4) & 7
    index_size = (config >> 7) & 7
    if not 1 <= pc_size <= 4 or index_size > 4 or reg_size > 4:
        raise DecodeError("safepoint table configuration is not understood")
    tagged_bytes = 0
    maglev_tagged = None
    if maglev:
        # Maglev: every call sees the same tagged and untagged spill slots,
        # counted in the header; entries add the registers pushed for the call.
        maglev_tagged = mem.u32(metadata + md.const("MaglevSafepointTaggedOffset"))
        if md.const("MaglevSafepointUntaggedOffset") >= 0:
            untagged = mem.u32(metadata + md.const("MaglevSafepointUntaggedOffset"))
            slots = ABOVE_FP + FIXED_FROM_FP + maglev_tagged + untagged
        else:
            slots = mem.u32(metadata + md.const("SafepointStackSlotsOffset"))
        if maglev_tagged > slots - ABOVE_FP - FIXED_FROM_FP:
            raise DecodeError(f"a Maglev frame of {slots} slots with {maglev_tagged} tagged")
    else:
        tagged_bytes = (config >> md.const("SafepointTaggedBytesShift")) & 0x3fffff
        if md.const("SafepointStackSlotsOffset") >= 0:
            slots = mem.u32(metadata + md.const("SafepointStackSlotsOffset"))
        else:
            slots = (code_flags >> md.const("CodeStackSlotsShift")) & 0xffffff
        if tagged_bytes * 8 > slots + 7:
            raise DecodeError(f"safepoint table of a {slots}-slot frame with "
                              f"{tagged_bytes}-byte bitmaps")
    entry = pc_size + (index_size + pc_size if has_deopt else 0) + reg_size + (1 if maglev else 0)
    raw = mem.read(metadata + header, length * (entry + tagged_bytes))
    bitmaps = length * entry
    out = []
    for i in range(length):
        p = i * entry
        pc = int.from_bytes(raw[p:p + pc_size], "little")
        p += pc_size
        deopt = tramp = -1
        if has_deopt:
            deopt = int.from_bytes(raw[p:p + index_size], "little") - 1
            p += index_size
            tramp = int.from_bytes(raw[p:p + pc_size], "little") - 1
            p += pc_size
        extra = 0
        if maglev:
            extra = raw[p]
            p += 1
        regs = int.from_bytes(raw[p:p + reg_size], "little")
        b = bitmaps + i * tagged_bytes
        out.append(SafepointEntry(pc, deopt, tramp, raw[b:b + tagged_bytes], extra, regs))
    return SafepointTable(slots, out, maglev_tagged)


def visited(table: SafepointTable, entry: SafepointEntry, sp: int,
            fp: int) -> list[tuple[int, int]]:
    """[start, end) of the words V8 visits in an optimized JS frame (sp: the
    caller's sp of the frame below it) stopped at this entry's call.

    TurboFan (CommonFrame::IterateCompiledFrame): the outgoing arguments
    below the spill slots, the spill slots the entry marks tagged, and the
    fixed part below fp (context, function, argument count). Maglev
    (MaglevFrame::Iterate): the outgoing arguments below the registers
    pushed for the call, the pushed registers the entry marks tagged, every
    tagged spill slot (Maglev keeps them apart, right below the fixed
    part), and the context and function (not the raw argument count)."""
    caller_sp = fp + 8 * ABOVE_FP
    lowest = caller_sp - 8 * table.stack_slots
    if not ABOVE_FP + FIXED_FROM_FP <= table.stack_slots <= MAX_STACK_SLOTS or \
            not sp <= lowest < fp:
        raise DecodeError(f"a frame of {table.stack_slots} slots does not fit between "
                          f"sp {sp:#x} and fp {fp:#x}")
    header = fp - 8 * FIXED_FROM_FP
    if table.maglev_tagged is not None:
        limit = lowest - 8 * entry.extra
        if limit < sp:
            raise DecodeError(f"{entry.extra} pushed registers below a Maglev frame's "
                              f"slots do not fit above sp {sp:#x}")
        out = [(sp, limit)] if sp < limit else []
        for i in range(32 if entry.extra else 0):
            if entry.registers >> i & 1:
                # By register code, down from the first pushed register.
                a = lowest - 8 - 8 * i
                if a < limit:
                    raise DecodeError(f"tagged register {i} outside the {entry.extra} pushed")
                out.append((a, a + 8))
        out.append((header - 8 * table.maglev_tagged, header))
        out.append((header + 8, fp))
        return out
    out = [(sp, lowest)] if sp < lowest else []
    for i, byte in enumerate(entry.tagged):
        for bit in range(8):
            if byte >> bit & 1:
                a = lowest + 8 * (8 * i + bit)
                if a >= header:
                    raise DecodeError("a tagged slot in the frame's fixed part")
                out.append((a, a + 8))
    out.append((header, fp))
    return out
