"""Tagged values and heap objects: the primitives every decoder builds on.

Node's release builds do not compress pointers: a tagged word is 64 bits,
heap objects carry tag 1 in the low bits and Smis keep their value in the
upper 32 bits. Every read here goes through bounded memory access, and any
length taken from the target is capped by the caller's limit.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError

if TYPE_CHECKING:
    from ..program import Program

MAX_FIXED_ARRAY = 1 << 24


class Heap:
    """Typed access to V8 objects of one program."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.md = prog.md
        self.mem = prog.mem
        md = self.md
        # A Smi's value sits above its tag bit(s) and the shift (31 + 1 without
        # pointer compression).
        self.smi_shift = md.const("SmiShiftSize") + md.const("SmiTagMask").bit_length()
        self.tag_mask = md.const("HeapObjectTagMask")
        self.heap_tag = md.const("HeapObjectTag")
        self.o_map = md.off("HeapObject", "map")
        self.o_itype = md.off("Map", "instance_type")
        self.o_fa_len = md.off("FixedArrayBase", "length")
        self.o_fa_data = md.off("FixedArray", "data")
        self._type_cache: dict[int, int] = {}
        self._oddballs: dict[int, str] | None = None

    # -- tagged words ---------------------------------------------------

    def is_smi(self, v: int) -> bool:
        return v & 1 == 0

    def is_heap(self, v: int) -> bool:
        return v & self.tag_mask == self.heap_tag and v > 0x1000

    def is_weak(self, v: int) -> bool:
        return v & 3 == 3

    def smi(self, v: int) -> int:
        v >>= self.smi_shift
        if v & (1 << 31):
            v -= 1 << 32
        return v

    def strong(self, v: int) -> int:
        """Strip the weak-reference bit from a MaybeObject."""
        return v & ~2 if v & 3 == 3 else v

    def word(self, addr: int) -> int:
        return self.mem.u64(addr)

    def field(self, obj: int, cls: str, name: str) -> int:
        """A tagged (64-bit) field of a heap object."""
        return self.mem.u64(obj - 1 + self.md.off(cls, name))

    def field_at(self, obj: int, offset: int) -> int:
        return self.mem.u64(obj - 1 + offset)

    def smi_field(self, obj: int, cls: str, name: str) -> int:
        v = self.field(obj, cls, name)
        if not self.is_smi(v):
            raise DecodeError(f"{cls}::{name} of 0x{obj:x} is not a small integer")
        return self.smi(v)

    # -- maps and types -------------------------------------------------

    def map_of(self, obj: int) -> int:
        if not self.is_heap(obj):
            raise DecodeError(f"0x{obj:x} is not a heap object pointer")
        m = self.mem.u64(obj - 1 + self.o_map)
        if not self.is_heap(m):
            raise DecodeError(f"0x{obj:x} has no valid map (0x{m:x})")
        return m

    def map_type(self, map_addr: int) -> int:
        t = self._type_cache.get(map_addr)
        if t is None:
            t = self.mem.u16(map_addr - 1 + self.o_itype)
            if len(self._type_cache) > 200000:
                self._type_cache.clear()
            self._type_cache[map_addr] = t
        return t

    def instance_type(self, obj: int) -> int:
        return self.map_type(self.map_of(obj))

    def type_name(self, itype: int) -> str:
        return self.md.type_names.get(itype, f"instance type {itype}")

    def is_type(self, obj: int, *names: str) -> bool:
        try:
            t = self.instance_type(obj)
        except (DecodeError, TargetMemoryError):
            return False
        return any(self.md.types.get(n) == t for n in names)

    def has_type(self, itype: int, *names: str) -> bool:
        return any(self.md.types.get(n) == itype for n in names)

    def is_string_type(self, itype: int) -> bool:
        return itype < self.md.const("FirstNonstringType")

    def is_valid_object(self, obj: int) -> bool:
        """Cheap plausibility: tagged, readable, its map's map is a map."""
        try:
            m = self.map_of(obj)
            mm = self.mem.u64(m - 1 + self.o_map)
            return self.map_type(mm) == self.md.types.get("MAP_TYPE")
        except (DecodeError, TargetMemoryError):
            return False

    # -- arrays ---------------------------------------------------------

    def array_length(self, arr: int, cap: int = MAX_FIXED_ARRAY) -> int:
        v = self.mem.u64(arr - 1 + self.o_fa_len)
        if not self.is_smi(v):
            raise DecodeError(f"array 0x{arr:x} has no valid length")
        n = self.smi(v)
        if n < 0 or n > cap:
            raise DecodeError(f"array 0x{arr:x} has an implausible length {n}")
        return n

    def array_get(self, arr: int, i: int) -> int:
        return self.mem.u64(arr - 1 + self.o_fa_data + 8 * i)

    def array_items(self, arr: int, cap: int = MAX_FIXED_ARRAY) -> list[int]:
        n = self.array_length(arr, MAX_FIXED_ARRAY)
        n = min(n, cap)
        if n == 0:
            return []
        raw = self.mem.read(arr - 1 + self.o_fa_data, 8 * n)
        return list(struct.unpack(f"<{n}Q", raw))

    # -- oddballs -------------------------------------------------------

    def oddball_name(self, obj: int) -> str | None:
        """'undefined', 'null', 'true', 'false', 'hole', ... for an oddball."""
        try:
            t = self.instance_type(obj)
        except (DecodeError, TargetMemoryError):
            return None
        names = {self.md.types.get("ODDBALL_TYPE"): None,
                 self.md.types.get("HOLE_TYPE"): "hole",
                 self.md.types.get("UNDEFINED_TYPE"): "undefined",
                 self.md.types.get("NULL_TYPE"): "null",
                 self.md.types.get("BOOLEAN_TYPE"): None}
        if t not in names:
            return None
        if names[t] is not None:
            return names[t]
        kind = self.oddball_kind(obj)
        md = self.md
        table = {md.consts.get("OddballFalse"): "false", md.consts.get("OddballTrue"): "true",
                 md.consts.get("OddballNull"): "null", md.consts.get("OddballUndefined"): "undefined",
                 md.consts.get("OddballTheHole"): "hole",
                 md.consts.get("OddballUninitialized"): "uninitialized",
                 md.consts.get("OddballException"): "exception",
                 md.consts.get("OddballArgumentsMarker"): "arguments_marker"}
        table.pop(None, None)
        return table.get(kind, "oddball")

    def oddball_kind(self, obj: int) -> int:
        md = self.md
        if md.has("Oddball", "kind"):
            off = md.off("Oddball", "kind")
        else:
            off = md.off("Oddball", "kind_offset")
        v = self.mem.u64(obj - 1 + off)
        return self.smi(v) if self.is_smi(v) else v & 0xFFFFFFFF
