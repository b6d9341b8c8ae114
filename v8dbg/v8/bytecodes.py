"""Bytecode names and instruction boundaries, from V8's own tables in the binary.

V8's postmortem metadata does not list the bytecodes. The binary holds
`Bytecodes::ToString`'s table: one pointer per bytecode, in bytecode order,
to its name in .rodata. It has no symbol, so it is found by its shape: the
first four bytecodes have been the operand-scaling prefixes Wide, ExtraWide,
DebugBreakWide and DebugBreakExtraWide in every V8 node has shipped, and
the table has exactly as many entries as `Bytecodes::kBytecodeSizes` rows
(`baseline.read_sizes`), each a distinct identifier. Exactly one place in
the binary must fit, else the names are not known and listings show only
offsets and bytes.
"""

from __future__ import annotations

import re
import struct
from typing import Iterator

from ..errors import DecodeError
from ..inferior.elf import ElfFile

PREFIXES = (b"Wide", b"ExtraWide", b"DebugBreakWide", b"DebugBreakExtraWide")
PREFIX_SCALE = {0: 1, 1: 2}  # Wide -> double operands, ExtraWide -> quadruple
_NAME = re.compile(rb"[A-Z][A-Za-z0-9]{0,63}\x00")
MAX_BYTECODES = 1 << 22


def read_names(binary: ElfFile, count: int) -> list[str] | None:
    """The name of each of `count` bytecodes, or None where the table is not found."""
    sec = binary.section(".rodata")
    if sec is None or not sec.size or count < len(PREFIXES):
        return None
    data = bytes(binary.section_bytes(sec))
    target = PREFIXES[3] + b"\x00"
    hits: list[list[str]] = []
    for m in re.finditer(re.escape(b"\x00" + target), data):
        # The name may be shared with a longer string's tail; the pointer is to it.
        ptr = struct.pack("<Q", sec.addr + m.start() + 1)
        at = data.find(ptr)
        while at != -1 and len(hits) < 2:
            names = _table_at(binary, sec.addr, data, at - 3 * 8, count)
            if names is not None:
                hits.append(names)
            at = data.find(ptr, at + 1)
    return hits[0] if len(hits) == 1 else None


def _table_at(binary: ElfFile, base: int, data: bytes, start: int,
              count: int) -> list[str] | None:
    if start < 0 or start + count * 8 > len(data):
        return None
    names = []
    for i in range(count):
        (ptr,) = struct.unpack_from("<Q", data, start + i * 8)
        off = ptr - base
        if not 0 <= off < len(data):
            return None
        m = _NAME.match(data, off)
        if not m:
            return None
        names.append(m.group()[:-1].decode())
    if tuple(n.encode() for n in names[:4]) != PREFIXES or len(set(names)) != count:
        return None
    return names


def iter_bytecodes(code: bytes, sizes: list[bytes]) -> Iterator[tuple[int, int, int, int]]:
    """(offset, length, bytecode, operand scale index) of each bytecode in `code`;
    a scaling prefix and the bytecode it scales are one. Stops at the end, or
    at a byte the sizes table does not know."""
    n_ops = len(sizes[0])
    offset = 0
    length = len(code)
    while offset < length:
        op = code[offset]
        scale = 0
        step = 0
        if op in PREFIX_SCALE and offset + 1 < length:
            scale = PREFIX_SCALE[op]
            step = 1
            op = code[offset + 1]
        if op >= n_ops or sizes[scale][op] == 0:
            return
        size = step + sizes[scale][op]
        yield offset, size, op, scale
        offset += size


def bytecode_bytes(h, bytecode: int) -> bytes:
    """The bytes of a BytecodeArray."""
    length = h.smi(h.field(bytecode, "BytecodeArray", "length"))
    if not 0 < length <= MAX_BYTECODES:
        raise DecodeError(f"BytecodeArray 0x{bytecode:x} has a length of {length}")
    return h.mem.read(bytecode - 1 + h.md.off("BytecodeArray", "data"), length)
