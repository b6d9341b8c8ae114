"""The names of V8's roots, from the binary's own table of them.

V8's heap snapshot names a GC sub-root's edge to an object of the roots
table by that root's name (`undefined_value`, `empty_fixed_array`,
`zero_string`): `RootsTable::root_names_`, an array of C strings in the
binary, one per root in the table's order (read-only roots, then the
strong mutable ones, then the Smi roots). Read from the target's memory
(the array is filled when node starts), by its symbol.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import TargetMemoryError

if TYPE_CHECKING:
    from ..program import Program

SYMBOL = "_ZN2v88internal10RootsTable11root_names_E"
MAX_ROOTS = 1 << 13  # far above V8's (some 1,150 in node 26)
MAX_NAME = 128  # characters of one name (V8's longest are some 50)
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def root_names(prog: Program, count: int) -> list[str] | None:
    """The names of the first `count` roots, None where the binary has no such
    table, it is shorter, or what it points to is no name."""
    if prog.binary is None or not 0 < count <= MAX_ROOTS:
        return None
    span = prog.binary.symbol_span(SYMBOL)
    if span is None or span[1] < 8 * count:
        return None
    try:
        ptrs = prog.mem.read(span[0], 8 * count)
    except TargetMemoryError:
        return None
    out: list[str] = []
    for k in range(count):
        p = int.from_bytes(ptrs[8 * k:8 * k + 8], "little")
        try:
            raw = prog.mem.read(p, MAX_NAME + 1)
        except TargetMemoryError:
            # (A name near the end of a mapping: read what is there.)
            raw = b""
            for n in (64, 32, 16):
                try:
                    raw = prog.mem.read(p, n)
                    break
                except TargetMemoryError:
                    continue
        end = raw.find(b"\0")
        m = _NAME.fullmatch(raw[:end]) if end > 0 else None
        if m is None:
            return None
        out.append(m.group(0).decode("ascii"))
    return out
