"""Baseline (Sparkplug) code: which bytecode a pc belongs to.

Baseline code keeps no bytecode offset in its frame. Its Code object holds a
table of machine-code lengths (the prologue's, then one unsigned VLQ per
bytecode in bytecode order), so we walk that table and the BytecodeArray together. Bytecode
lengths come from V8's own `Bytecodes::kBytecodeSizes` table in the node
binary (sizes per operand scale), so no per-version bytecode list is needed.
"""

from __future__ import annotations

from typing import Iterator

from ..errors import DecodeError, TargetMemoryError
from ..inferior.elf import ElfFile
from .bytecodes import bytecode_bytes, iter_bytecodes
from .functions import read_uvlq

SIZES_SYMBOL = rb"_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"


def read_sizes(binary: ElfFile) -> list[bytes] | None:
    """V8's operand-size table, one row per operand scale, from the binary's
    symbol, or found by its shape where the binary is stripped."""
    found = binary.symbols_matching(SIZES_SYMBOL)
    addr = found.get(SIZES_SYMBOL.decode())
    if addr is None:
        return _search_sizes(binary) if binary.section(".symtab") is None else None
    span = binary.symbol_start(addr)
    size = span[1] if span else 0
    data = binary.read(addr, size) if size and size % 3 == 0 else None
    if not data:
        return None
    n = size // 3
    return [data[0:n], data[n:2 * n], data[2 * n:3 * n]]


_TABLES_FORMAT = 1


def tables(binary: ElfFile) -> tuple[list[bytes] | None, list[str] | None]:
    """V8's bytecode operand sizes and names, kept on disk per binary next to
    its symbol index: finding them scans the whole symbol and string tables
    (a quarter second), which every start of the CLI would otherwise pay."""
    kind = f"bytecodes{_TABLES_FORMAT}"
    doc = binary.side_cache(kind)
    if doc is not None:
        try:
            sizes = [bytes.fromhex(r) for r in doc["sizes"]] if doc["sizes"] else None
            names = [str(n) for n in doc["names"]] if doc["names"] else None
            return sizes, names
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    sizes = read_sizes(binary)
    from .bytecodes import read_names
    names = read_names(binary, len(sizes[0])) if sizes else None
    binary.keep_side_cache(kind, {"sizes": [r.hex() for r in sizes] if sizes else None,
                                  "names": names})
    return sizes, names


_PREFIXES = b"\x01\x01\x01\x01"  # Wide, ExtraWide and their DebugBreak forms: 1 byte at every scale
_BYTECODES = range(100, 512)  # how many bytecodes a V8 may have (198-212 in node 18-26)
_MAX_SIZE = 32


def _search_sizes(binary: ElfFile) -> list[bytes] | None:
    """kBytecodeSizes in a binary without .symtab, found by its shape in .rodata.

    Three rows of one byte per bytecode (operand scale 1, 2, 4), each opening
    with the four one-byte prefix bytecodes. A bytecode's scalable operands
    grow by one byte each from scale 1 to 2 and by three from 1 to 4, its
    fixed ones not at all, so for every bytecode size4 - size1 is exactly
    3 * (size2 - size1). Exactly one place in .rodata must fit, else None.
    """
    sec = binary.section(".rodata")
    if sec is None or not sec.size:
        return None
    data = bytes(binary.section_bytes(sec))
    hits: list[list[bytes]] = []
    start = data.find(_PREFIXES)
    while start != -1 and len(hits) < 2:
        if start and data[start - 1] == 1:
            # Inside a run of ones: the table's rows open such a run, and a
            # start shifted into it could fit the shape as well.
            start = data.find(_PREFIXES, start + 1)
            continue
        for n in _BYTECODES:
            if data[start + n:start + n + 4] != _PREFIXES or \
                    data[start + 2 * n:start + 2 * n + 4] != _PREFIXES:
                continue
            rows = [data[start:start + n], data[start + n:start + 2 * n],
                    data[start + 2 * n:start + 3 * n]]
            if any(b > a for a, b in zip(rows[0], rows[1])) and all(
                    1 <= a <= b <= c <= _MAX_SIZE and c - a == 3 * (b - a)
                    for a, b, c in zip(*rows)):
                hits.append(rows)
        start = data.find(_PREFIXES, start + 1)
    return hits[0] if len(hits) == 1 else None


def pc_ranges(codes, info, bytecode: int) -> Iterator[tuple[int, int, int]]:
    """(bytecode offset, start, end) of the machine code each bytecode became,
    as offsets into the baseline code, in bytecode order."""
    sizes = codes.prog.bytecode_sizes
    if sizes is None:
        return
    try:
        table = codes.f._table_bytes(info.code, "Code", "source_position_table")
        code = bytecode_bytes(codes.h, bytecode)
    except (DecodeError, TargetMemoryError):
        return
    if not table:
        return
    start, pos = read_uvlq(table, 0)  # code before the first bytecode
    for offset, _size, _op, _scale in iter_bytecodes(code, sizes):
        if pos >= len(table):
            return
        delta, pos = read_uvlq(table, pos)
        yield offset, start, start + delta
        start += delta


def bytecode_offset(codes, info, bytecode: int, pc: int) -> int | None:
    """Offset of the bytecode whose baseline machine code contains pc (a return address)."""
    target = pc - info.start
    for offset, _start, end in pc_ranges(codes, info, bytecode):
        if end >= target:
            return offset
    return None
