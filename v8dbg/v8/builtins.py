"""V8's embedded builtins: which one holds a pc."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..program import Program
    from .embedded import BuiltinTable

UNNAMED = "<builtin>"  # a builtin whose name neither symbols nor V8's tables give


def name_in_table(table: "BuiltinTable", link: int) -> str | None:
    """The builtin of V8's own table whose code (or the padding after it) holds
    a link address: the one starting last at or before it."""
    order = _order(table)
    i = bisect.bisect_right(order[0], link) - 1
    if i < 0 or link >= table.code_start + table.code_size:
        return None
    return table.names[order[1][i]]


# Per table (by id, the table kept beside its order: an id is reused once
# its object is gone, and another binary's table may get it).
_orders: dict[int, tuple["BuiltinTable", list[int], list[int]]] = {}


def _order(table: "BuiltinTable") -> tuple[list[int], list[int]]:
    """The table's starts sorted by address, with the builtin index of each
    (V8 may lay builtins out in another order than their indices)."""
    key = id(table)
    got = _orders.get(key)
    if got is None or got[0] is not table:
        idx = sorted(range(len(table.starts)), key=table.starts.__getitem__)
        got = (table, [table.starts[i] for i in idx], idx)
        if len(_orders) > 16:
            _orders.clear()
        _orders[key] = got
    return got[1], got[2]


def builtin_at(prog: "Program", pc: int) -> str | None:
    """Name of the embedded V8 builtin holding pc (without 'Builtins_').

    A pc is a builtin when it lies in the embedded blob's code (in the
    binary, or in the copy node 22+ maps elsewhere); labels inside a
    builtin name the builtin they are in. A stripped binary's builtins are
    named from V8's own tables (see embedded.py).
    """
    lm = prog.module_for(pc)
    if lm is None or lm.elf is not prog.binary:
        return None
    link = lm.link_address(pc)
    if link is None:
        return None
    start = prog.md.consts.get("EmbeddedBlobCodeStart")
    size = prog.md.consts.get("EmbeddedBlobCodeSize")
    if start is not None and size:
        if not start <= link < start + size:
            return None
        name = prog.binary.symbol_with_prefix_before(link, "Builtins_")
        if name:
            return name[len("Builtins_"):]
        table = prog.md.builtins
        return (name_in_table(table, link) if table is not None else None) or UNNAMED
    sym = prog.symbolize(pc)
    if sym is not None and sym.raw.startswith("Builtins_"):
        return sym.raw[len("Builtins_"):]
    return None
