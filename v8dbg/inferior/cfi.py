"""Native unwinding from `.eh_frame` call-frame information (x86-64).

Only what compiled C/C++ code uses: a CFA of register+offset, and saved
rbp / return address at CFA-relative slots. The FDE for a pc is found by
binary search in `.eh_frame_hdr`, so nothing is parsed up front.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .elf import ElfFile

RSP = 7
RBP = 6
RA = 16

DW_EH_PE_omit = 0xFF


@dataclass(frozen=True)
class Rule:
    """How to find the caller's registers at one pc."""

    cfa_reg: int  # RSP or RBP; -1 when the CFA is an expression we do not model
    cfa_off: int
    rbp_off: int | None  # saved rbp at CFA + rbp_off
    ra_off: int  # return address at CFA + ra_off


class _Reader:
    __slots__ = ("data", "pos", "base")

    def __init__(self, data: memoryview, pos: int, base: int) -> None:
        self.data = data
        self.pos = pos
        self.base = base  # virtual address of data[0]

    def u8(self) -> int:
        v = self.data[self.pos]
        self.pos += 1
        return v

    def fmt(self, f: str) -> int:
        v = struct.unpack_from(f, self.data, self.pos)[0]
        self.pos += struct.calcsize(f)
        return v

    def uleb(self) -> int:
        result = shift = 0
        for _ in range(10):
            b = self.u8()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result
        raise ValueError("bad uleb128")

    def sleb(self) -> int:
        result = shift = 0
        for _ in range(10):
            b = self.u8()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                if b & 0x40:
                    result -= 1 << shift
                return result
        raise ValueError("bad sleb128")

    def encoded(self, enc: int, datarel: int = 0) -> int:
        if enc == DW_EH_PE_omit:
            return 0
        here = self.base + self.pos
        low = enc & 0x0F
        if low == 0x00:
            v = self.fmt("<Q")
        elif low == 0x01:
            v = self.uleb()
        elif low == 0x02:
            v = self.fmt("<H")
        elif low == 0x03:
            v = self.fmt("<I")
        elif low == 0x04:
            v = self.fmt("<Q")
        elif low == 0x09:
            v = self.sleb()
        elif low == 0x0A:
            v = self.fmt("<h")
        elif low == 0x0B:
            v = self.fmt("<i")
        elif low == 0x0C:
            v = self.fmt("<q")
        else:
            raise ValueError(f"pointer encoding {enc:#x}")
        app = enc & 0x70
        if app == 0x10:
            v += here
        elif app == 0x30:
            v += datarel
        return v & 0xFFFFFFFFFFFFFFFF


class CfiTable:
    """Unwind rules of one ELF file, looked up lazily per pc (link-time addresses)."""

    def __init__(self, elf: ElfFile) -> None:
        self.elf = elf
        self._hdr = elf.section(".eh_frame_hdr")
        self._eh = elf.section(".eh_frame")
        self._pairs: memoryview | list[int] = []
        self._count = 0
        self._cie_cache: dict[int, tuple[int, int, int, int, bytes]] = {}
        self._rule_cache: dict[int, Rule | None] = {}
        if self._hdr is not None and self._eh is not None:
            self._load_index()

    def _load_index(self) -> None:
        assert self._hdr is not None
        data = self.elf.section_bytes(self._hdr)
        r = _Reader(data, 0, self._hdr.addr)
        version = r.u8()
        eh_enc, count_enc, table_enc = r.u8(), r.u8(), r.u8()
        if version != 1 or table_enc != 0x3B:
            return
        r.encoded(eh_enc)
        count = r.encoded(count_enc)
        count = min(count, (len(data) - r.pos) // 8)
        # A zero-copy view of (initial pc, FDE) pairs, relative to the header.
        self._pairs = data[r.pos:r.pos + count * 8].cast("i")
        self._count = count

    def has(self, pc: int) -> bool:
        return self.find_fde(pc) is not None

    def _search(self, pc: int) -> int:
        """Index of the last table entry whose initial pc is <= pc, or -1."""
        assert self._hdr is not None
        rel = pc - self._hdr.addr
        pairs = self._pairs
        lo, hi = 0, self._count
        while lo < hi:
            mid = (lo + hi) // 2
            if pairs[2 * mid] <= rel:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    def find_fde(self, pc: int) -> tuple[int, int, int] | None:
        """(fde address, pc_begin, pc_end) covering pc."""
        if not self._count:
            return None
        i = self._search(pc)
        if i < 0:
            return None
        assert self._hdr is not None
        fde = self._hdr.addr + self._pairs[2 * i + 1]
        try:
            parsed = self._parse_fde(fde)
        except (ValueError, struct.error, IndexError):
            return None
        if parsed is None:
            return None
        begin, end = parsed[0], parsed[1]
        if begin <= pc < end:
            return fde, begin, end
        return None

    def _eh_view(self, vaddr: int) -> tuple[memoryview, int]:
        assert self._eh is not None
        data = self.elf.section_bytes(self._eh)
        return data, vaddr - self._eh.addr

    def _parse_cie(self, addr: int) -> tuple[int, int, int, int, bytes]:
        if addr in self._cie_cache:
            return self._cie_cache[addr]
        data, pos = self._eh_view(addr)
        assert self._eh is not None
        r = _Reader(data, pos, self._eh.addr)
        length = r.fmt("<I")
        if length == 0xFFFFFFFF:
            raise ValueError("64-bit CFI")
        end = r.pos + length
        r.fmt("<I")  # CIE id
        r.u8()  # version
        aug = b""
        while True:
            c = r.u8()
            if c == 0:
                break
            aug += bytes([c])
        code_align = r.uleb()
        data_align = r.sleb()
        r.uleb()  # return address register
        fde_enc = 0
        if aug.startswith(b"z"):
            auglen = r.uleb()
            aug_end = r.pos + auglen
            for ch in aug[1:]:
                if ch == ord("R"):
                    fde_enc = r.u8()
                elif ch == ord("P"):
                    r.encoded(r.u8())
                elif ch == ord("L"):
                    r.u8()
            r.pos = aug_end
        insns = bytes(data[r.pos:end])
        out = (code_align, data_align, fde_enc, 0, insns)
        self._cie_cache[addr] = out
        return out

    def _parse_fde(self, addr: int) -> tuple[int, int, int, bytes, tuple] | None:
        data, pos = self._eh_view(addr)
        assert self._eh is not None
        r = _Reader(data, pos, self._eh.addr)
        length = r.fmt("<I")
        if length == 0 or length == 0xFFFFFFFF:
            return None
        end = r.pos + length
        cie_ptr_pos = self._eh.addr + r.pos
        cie_off = r.fmt("<I")
        cie = self._parse_cie(cie_ptr_pos - cie_off)
        code_align, data_align, fde_enc, _, cie_insns = cie
        begin = r.encoded(fde_enc)
        size = r.encoded(fde_enc & 0x0F)
        if cie_insns is not None:
            pass
        # augmentation data (always present with 'z')
        auglen = r.uleb()
        r.pos += auglen
        insns = bytes(data[r.pos:end])
        return begin, begin + size, code_align, insns, (data_align, cie_insns)

    def rule_at(self, pc: int) -> Rule | None:
        """The unwind rule in effect at a link-time pc, or None without CFI.

        Kept per pc: a profiler unwinds the same return addresses many times.
        """
        try:
            return self._rule_cache[pc]
        except KeyError:
            pass
        rule = self._rule_at(pc)
        if len(self._rule_cache) > 100000:
            self._rule_cache.clear()
        self._rule_cache[pc] = rule
        return rule

    def _rule_at(self, pc: int) -> Rule | None:
        found = self.find_fde(pc)
        if found is None:
            return None
        fde, begin, _end = found
        parsed = self._parse_fde(fde)
        if parsed is None:
            return None
        _b, _e, code_align, insns, (data_align, cie_insns) = parsed
        try:
            return _run(cie_insns, insns, begin, pc, code_align, data_align)
        except (ValueError, IndexError, struct.error):
            return None


def _run(cie_insns: bytes, fde_insns: bytes, begin: int, target: int,
         code_align: int, data_align: int) -> Rule | None:
    """Execute CFA instructions up to `target`; return the resulting rule."""
    state = {"cfa_reg": RSP, "cfa_off": 8, "rbp": None, "ra": -8}
    initial: dict | None = None
    stack: list[dict] = []

    def saved(reg: int, off: int | None) -> None:
        """Record where a register we track is saved (None: not saved)."""
        if reg == RBP:
            state["rbp"] = off
        elif reg == RA and off is not None:
            state["ra"] = off

    def restore(reg: int) -> None:
        if initial is not None and reg in (RBP, RA):
            key = "rbp" if reg == RBP else "ra"
            state[key] = initial[key]

    def execute(code: bytes, loc: int, limit: int) -> int:
        r = _Reader(memoryview(code), 0, 0)
        n = len(code)
        steps = 0
        while r.pos < n:
            steps += 1
            if steps > 100000:
                raise ValueError("CFI program too long")
            op = r.u8()
            high = op & 0xC0
            low = op & 0x3F
            if high == 0x40:  # advance_loc
                loc += low * code_align
                if loc > limit:
                    return loc
            elif high == 0x80:  # offset
                saved(low, r.uleb() * data_align)
            elif high == 0xC0:  # restore
                restore(low)
            elif op == 0x00:  # nop
                pass
            elif op == 0x01:  # set_loc
                loc = r.fmt("<Q")
                if loc > limit:
                    return loc
            elif op in (0x02, 0x03, 0x04):  # advance_loc1/2/4
                delta = r.u8() if op == 0x02 else r.fmt("<H" if op == 0x03 else "<I")
                loc += delta * code_align
                if loc > limit:
                    return loc
            elif op == 0x05:  # offset_extended
                reg = r.uleb()
                saved(reg, r.uleb() * data_align)
            elif op == 0x06:  # restore_extended
                restore(r.uleb())
            elif op in (0x07, 0x08):  # undefined, same_value
                saved(r.uleb(), None)
            elif op == 0x09:  # register
                r.uleb()
                r.uleb()
            elif op == 0x0A:  # remember_state
                stack.append(dict(state))
            elif op == 0x0B:  # restore_state
                if stack:
                    state.update(stack.pop())
            elif op == 0x0C:  # def_cfa
                state["cfa_reg"] = r.uleb()
                state["cfa_off"] = r.uleb()
            elif op == 0x0D:  # def_cfa_register
                state["cfa_reg"] = r.uleb()
            elif op == 0x0E:  # def_cfa_offset
                state["cfa_off"] = r.uleb()
            elif op == 0x0F:  # def_cfa_expression
                ln = r.uleb()
                r.pos += ln
                state["cfa_reg"] = -1
            elif op == 0x10:  # expression
                r.uleb()
                ln = r.uleb()
                r.pos += ln
            elif op == 0x11:  # offset_extended_sf
                reg = r.uleb()
                saved(reg, r.sleb() * data_align)
            elif op == 0x12:  # def_cfa_sf
                state["cfa_reg"] = r.uleb()
                state["cfa_off"] = r.sleb() * data_align
            elif op == 0x13:  # def_cfa_offset_sf
                state["cfa_off"] = r.sleb() * data_align
            elif op in (0x14, 0x15):  # val_offset(_sf)
                r.uleb()
                if op == 0x14:
                    r.uleb()
                else:
                    r.sleb()
            elif op == 0x16:  # val_expression
                r.uleb()
                ln = r.uleb()
                r.pos += ln
            elif op == 0x2E:  # GNU_args_size
                r.uleb()
            elif op == 0x2F:  # GNU_negative_offset_extended
                reg = r.uleb()
                saved(reg, -r.uleb() * data_align)
            else:
                raise ValueError(f"CFA opcode {op:#x}")
        return loc

    execute(cie_insns, begin, 1 << 64)
    initial = dict(state)  # what DW_CFA_restore returns to
    execute(fde_insns, begin, target)
    if state["cfa_reg"] not in (RSP, RBP):
        return Rule(-1, 0, None, -8)
    return Rule(state["cfa_reg"], state["cfa_off"], state["rbp"], state["ra"])


def uncovered(elf: ElfFile, count: int) -> list[tuple[int, int]]:
    """[start, end) of the `count` longest stretches of code no FDE covers,
    longest first.

    V8's embedded builtins carry no unwind tables, and they are usually the
    longest such stretch of node's .text (not always: in node 19.0 other code
    is): where the symbols naming them are stripped, this finds them.
    """
    t = CfiTable(elf)
    if not t._count or t._hdr is None:
        return []
    base = t._hdr.addr
    pairs = t._pairs
    gaps = sorted(((pairs[2 * i + 2] - pairs[2 * i], i) for i in range(t._count - 1)),
                  reverse=True)[:max(count, 0)]
    out = []
    for _, i in gaps:
        try:
            parsed = t._parse_fde(base + pairs[2 * i + 1])
        except (ValueError, struct.error, IndexError):
            parsed = None
        start = parsed[1] if parsed is not None else base + pairs[2 * i]
        out.append((start, base + pairs[2 * i + 2]))
    return out
