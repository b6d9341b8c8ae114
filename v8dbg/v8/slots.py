"""Context slots: what a closure variable's slot holds once its wrapper is taken off.

From V8 14 a mutable `let` number lives in a ContextCell in its context
slot (the cell keeps it as a tagged value, or raw as an int32 or float64,
by its state). Every reader of context slots goes through `unwrap` so that
a variable reads as its value, not as the cell. Which wrappers exist and
where their fields are comes only from the layout table.
"""

from __future__ import annotations

import struct

from ..errors import DecodeError, TargetMemoryError
from .tagged import Heap


def wrapper_types(h: Heap) -> set[int]:
    """Instance types of the slot wrappers this V8 has."""
    t = h.md.types.get("CONTEXT_CELL_TYPE")
    return {t} if t is not None and "ContextCellValue" in h.md.consts else set()


def unwrap(h: Heap, v: int) -> int | float:
    """The value a context slot word stands for: the word itself, the tagged value
    inside a ContextCell, or the raw number (a float) the cell keeps."""
    if not h.is_heap(v):
        return v
    try:
        if h.instance_type(v) not in wrapper_types(h):
            return v
        c = h.md.consts
        state = h.mem.u32(v - 1 + c["ContextCellState"])
        if state == c.get("ContextCellStateFloat64"):
            return struct.unpack("<d", h.mem.read(v - 1 + c["ContextCellRaw"], 8))[0]
        if state == c.get("ContextCellStateInt32"):
            raw = h.mem.u32(v - 1 + c["ContextCellRaw"])
            return float(raw - (1 << 32) if raw & (1 << 31) else raw)
        return h.mem.u64(v - 1 + c["ContextCellValue"])
    except (DecodeError, TargetMemoryError):
        return v


def cell_value_offset(h: Heap) -> int | None:
    """Where a ContextCell keeps a tagged value (for findjsrefs), if this V8 has cells."""
    return h.md.consts.get("ContextCellValue") if wrapper_types(h) else None
