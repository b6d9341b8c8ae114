"""Baseline (Sparkplug) code: which bytecode a pc belongs to.

Baseline code keeps no bytecode offset in its frame. Its Code object holds a
table of machine-code lengths (the prologue's, then one unsigned VLQ per
bytecode in bytecode order), so we walk that table and the BytecodeArray together. Bytecode
lengths come from V8's own `Bytecodes::kBytecodeSizes` table in the node
binary (sizes per operand scale), so no per-version bytecode list is needed.
"""

from __future__ import annotations

from ..errors import DecodeError, TargetMemoryError
from ..target.elf import ElfFile
from .functions import read_uvlq

SIZES_SYMBOL = rb"_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"
PREFIX_SCALE = {0: 1, 1: 2}  # Wide -> double operands, ExtraWide -> quadruple
MAX_BYTECODE = 1 << 22


def read_sizes(binary: ElfFile) -> list[bytes] | None:
    """V8's operand-size table, one row per operand scale, from the binary's symbol."""
    found = binary.symbols_matching(SIZES_SYMBOL)
    addr = found.get(SIZES_SYMBOL.decode())
    if addr is None:
        return None
    span = binary.symbol_start(addr)
    size = span[1] if span else 0
    data = binary.read(addr, size) if size and size % 3 == 0 else None
    if not data:
        return None
    n = size // 3
    return [data[0:n], data[n:2 * n], data[2 * n:3 * n]]


def bytecode_offset(codes, info, bytecode: int, pc: int) -> int | None:
    """Offset of the bytecode whose baseline machine code contains pc (a return address)."""
    prog = codes.prog
    h = codes.h
    sizes = prog.bytecode_sizes
    if sizes is None:
        return None
    try:
        table = codes.f._table_bytes(info.code, "Code", "source_position_table")
        length = h.smi(h.field(bytecode, "BytecodeArray", "length"))
        if not 0 < length <= MAX_BYTECODE:
            return None
        code = h.mem.read(bytecode - 1 + h.md.off("BytecodeArray", "data"), length)
    except (DecodeError, TargetMemoryError):
        return None
    target = pc - info.start
    n_ops = len(sizes[0])
    pos = 0
    prologue, pos = read_uvlq(table, pos)  # code before the first bytecode
    first, pos = read_uvlq(table, pos)
    pc_end = prologue + first
    offset = 0
    while pc_end < target:
        # Advance one bytecode (a prefix and its bytecode count as one).
        op = code[offset]
        scale = 0
        step = 0
        if op in PREFIX_SCALE and offset + 1 < length:
            scale = PREFIX_SCALE[op]
            step = 1
            op = code[offset + 1]
        if op >= n_ops or sizes[scale][op] == 0:
            return None
        offset += step + sizes[scale][op]
        if offset >= length or pos >= len(table):
            return None
        delta, pos = read_uvlq(table, pos)
        pc_end += delta
    return offset
