"""V8's embedded builtins found by their own tables, for a binary without .symtab.

A stripped node loses the `Builtins_*` labels, but V8 keeps two tables of its
own in .rodata that together name every builtin's code:

- the builtin metadata array: one fixed-size entry per builtin, in builtin
  index order, whose first word points to the builtin's name (node is a
  non-PIE executable, so the pointer is the name's link address);
- the embedded blob's data part: a few hash words, then one layout
  description per builtin (index order again) whose first two 32-bit words
  are the builtin's instruction offset and length in the code part.

Neither is labelled, so both are found by shape and checked hard: every name
an identifier, every layout inside the code and none overlapping, and the
int3 V8 puts after each builtin's last instruction exactly where the layout
says. Anything that does not hold gives no table (the caller keeps the
builtins unnamed) rather than wrong names. The record sizes are per-version
facts from `layouts.py`.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

from ..inferior.elf import ElfFile

_ANCHOR = b"InterpreterEntryTrampoline"  # a builtin every line has
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{0,127}\x00")
_MAX_BUILTINS = 8192  # V8 has about 2400; a bound on every walk
_MAX_KIND = 32  # builtin kinds are a small enum
_INT3 = 0xCC
_SEARCH_SLACK = 1 << 16  # how far past the unwind-table gap the code may start


@dataclass(frozen=True)
class BuiltinTable:
    """Every embedded builtin: its name, and [start, end) link addresses of its code."""

    names: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    code_start: int
    code_size: int

    def to_json(self) -> dict[str, object]:
        return {"names": list(self.names), "starts": list(self.starts),
                "ends": list(self.ends), "code": [self.code_start, self.code_size]}

    @staticmethod
    def from_json(doc: dict[str, Any]) -> "BuiltinTable":
        """The table as to_json wrote it (a cache file: anything malformed raises)."""
        names = tuple(str(x) for x in doc["names"])
        starts = tuple(int(x) for x in doc["starts"])
        ends = tuple(int(x) for x in doc["ends"])
        code = [int(x) for x in doc["code"]]
        if not len(names) == len(starts) == len(ends) or len(code) != 2:
            raise ValueError("inconsistent builtin table")
        return BuiltinTable(names, starts, ends, code[0], code[1])


def _rodata(binary: ElfFile) -> tuple[int, bytes] | None:
    sec = binary.section(".rodata")
    if sec is None or not sec.addr or not sec.size:
        return None
    return sec.addr, bytes(binary.section_bytes(sec))


def _ident_at(binary: ElfFile, addr: int) -> str | None:
    data = binary.read(addr, 129)
    if not data:
        return None
    m = _IDENT.match(data)
    return m.group()[:-1].decode("ascii") if m else None


def builtin_names(binary: ElfFile, entry_size: int) -> list[str] | None:
    """Builtin names in index order, from V8's builtin metadata array; kept
    beside the binary's symbol index, as finding them scans all of .rodata
    (some 0.17 s, a third of a `jsstack` from the command line)."""
    kind = f"builtins1-{entry_size}"
    doc = binary.side_cache(kind)
    if isinstance(doc, dict) and "names" in doc:
        names = doc["names"]
        # (None: the scan found no table in this binary; kept so as not to scan again.)
        if names is None or (isinstance(names, list)
                             and all(isinstance(n, str) for n in names) and _plausible(names)):
            return names
    names = _scan_builtin_names(binary, entry_size)
    binary.keep_side_cache(kind, {"names": names})
    return names


def _scan_builtin_names(binary: ElfFile, entry_size: int) -> list[str] | None:
    ro = _rodata(binary)
    if ro is None:
        return None
    base, data = ro
    # The name may be in .rodata more than once; the array points at one copy.
    copies = [m.start() + 1 for _, m in zip(range(16), re.finditer(
        re.escape(b"\x00" + _ANCHOR + b"\x00"), data))]
    if not copies:
        return None
    hits: list[int] = []
    for sec_name in (".rodata", ".data.rel.ro"):
        sec = binary.section(sec_name)
        if sec is None:
            continue
        blob = data if sec_name == ".rodata" else bytes(binary.section_bytes(sec))
        for c in copies:
            word = struct.pack("<Q", base + c)
            at = blob.find(word)
            while at >= 0 and len(hits) <= 4:
                if (sec.addr + at) % 8 == 0:
                    hits.append(sec.addr + at)
                at = blob.find(word, at + 1)
    if len(hits) != 1:
        return None  # no pointer, or several arrays that could be the one

    def entry(addr: int) -> str | None:
        raw = binary.read(addr, 16)
        if raw is None or len(raw) < 16:
            return None
        name_at, kind = struct.unpack("<QQ", raw)
        return _ident_at(binary, name_at) if kind < _MAX_KIND else None

    first = hits[0]
    for _ in range(_MAX_BUILTINS):
        if entry(first - entry_size) is None:
            break
        first -= entry_size
    names: list[str] = []
    for i in range(_MAX_BUILTINS):
        name = entry(first + i * entry_size)
        if name is None:
            break
        names.append(name)
    return names if _plausible(names) else None


def _plausible(names: list[str]) -> bool:
    """A whole table of builtin names: each an identifier, none twice, within
    the cap, the one every line has among them (what the scan requires, and
    a cached copy too)."""
    return (0 < len(names) < _MAX_BUILTINS and len(set(names)) == len(names)
            and _ANCHOR.decode() in names
            and all(_IDENT.fullmatch(n.encode() + b"\0") for n in names))


def _layouts(data: bytes, at: int, count: int, stride: int,
             limit: int, align: int) -> list[tuple[int, int]] | None:
    """The (offset, length) of `count` layout records at data[at:], if they are
    a builtin layout table: aligned, non-empty, inside the code, disjoint."""
    if at < 0 or at + count * stride > len(data):
        return None
    out = []
    for i in range(count):
        off, length = struct.unpack_from("<II", data, at + i * stride)
        if off % align or not 0 < length or off + length > limit:
            return None
        out.append((off, length))
    spans = sorted(out)
    for (o1, l1), (o2, _) in zip(spans, spans[1:]):
        if o1 + l1 >= o2:  # V8 leaves at least one byte (an int3) after each
            return None
    return out


def layout_table(binary: ElfFile, count: int, header: int, strides: tuple[int, ...],
                 limit: int, align: int) -> list[tuple[int, int]] | None:
    """Each builtin's (instruction offset, length) in the code part, by index.

    The table is searched from its first two records: builtin 0 opens the code
    (offset 0) and builtin 1 follows it at the next aligned offset. Exactly one
    place in .rodata must then hold a whole valid table.
    """
    ro = _rodata(binary)
    if ro is None or count < 2:
        return None
    base, data = ro
    aligned = b"[" + b"".join(re.escape(bytes([b])) for b in range(0, 256, align)) + b"]"
    for stride in strides:
        if stride < 8:
            continue
        pattern = (rb"\x00\x00\x00\x00(?=(?:[^\x00][\x00-\xff]|\x00[^\x00])\x00\x00"
                   + rb"[\x00-\xff]{%d}" % (stride - 8) + aligned + rb"[\x00-\xff]\x00\x00)")
        found: list[list[tuple[int, int]]] = []
        for m in re.finditer(pattern, data):
            at = m.start()
            if (base + at - header) % 8:
                continue  # the data part starts with 8-byte hashes
            off1 = struct.unpack_from("<I", data, at + stride)[0]
            len0 = struct.unpack_from("<I", data, at + 4)[0]
            if not len0 < off1 <= len0 + 4 * align:
                continue
            table = _layouts(data, at, count, stride, limit, align)
            if table is not None:
                found.append(table)
                if len(found) > 1:
                    return None
        if found:
            return found[0]
    return None


def code_start(binary: ElfFile, layouts: list[tuple[int, int]],
               span: tuple[int, int], align: int) -> int | None:
    """The link address of the code part: near the start of the code no unwind
    table covers, where every builtin's last byte is followed by int3."""
    lo, hi = span
    total = max(o + n for o, n in layouts)
    ordered = sorted(layouts)
    first = -(-lo // align) * align
    for start in range(first, min(lo + _SEARCH_SLACK, hi), align):
        if start + total > hi:
            break
        if all(binary.read(start + o + n, 1) == bytes([_INT3]) for o, n in ordered[:16]):
            if all(binary.read(start + o + n, 1) == bytes([_INT3]) for o, n in ordered):
                return start
    return None


def find(binary: ElfFile, span: tuple[int, int] | None, facts: dict[str, int],
         strides: tuple[int, ...]) -> BuiltinTable | None:
    """V8's builtins of a stripped binary, named and placed, or None."""
    if span is None:
        return None
    names = builtin_names(binary, facts["BuiltinMetadataSize"])
    if not names:
        return None
    align = facts["EmbeddedCodeAlignment"]
    limit = span[1] - span[0] + _SEARCH_SLACK
    layouts = layout_table(binary, len(names), facts["EmbeddedDataHeaderSize"], strides,
                           limit, align)
    if layouts is None:
        return None
    start = code_start(binary, layouts, span, align)
    if start is None:
        return None
    total = max(o + n for o, n in layouts)
    # V8 pads the code part past its last builtin's int3 to the code alignment.
    size = -(-(total + 1) // align) * align
    starts = tuple(start + o for o, _ in layouts)
    ends = tuple(start + o + n for o, n in layouts)
    return BuiltinTable(tuple(names), starts, ends, start, size)
