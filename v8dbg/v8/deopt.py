"""Optimized frames as V8 itself reads them: safepoints, deoptimization data, translations.

V8's stack traces (OptimizedFrame::Summarize) do not use an optimized code's
source positions: the safepoint entry at the frame's return address names a
deoptimization point, whose translation lists the frame and every frame
inlined into it, outermost first, each with its SharedFunctionInfo and the
bytecode offset being executed. The bytecode's own position table then gives
the line and column. A return address that V8 rewrote to the code's lazy-deopt
exit (code marked for deoptimization while it had activations) is matched by
the safepoint entry's trampoline pc, as V8 does.

Layout facts per V8 line (deopt data entries, safepoint headers, translation
opcodes) come from `layouts.py`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import DecodeError, TargetMemoryError
from . import layouts, safepoints, vlq

MAX_TRANSLATION_BYTES = 16 << 20
MAX_FRAMES = 256  # frames in one translation (inlining depth)
MAX_INSTRUCTIONS = 1 << 16  # instructions read for one translation


@dataclass
class TranslatedFrame:
    """One JS frame of a translation: its function and where it is."""

    sfi: int
    bytecode_offset: int
    builtin: bool  # a JS builtin continuation (Array.prototype.map, ...), no bytecode
    bytecode: int | None = None  # the BytecodeArray, where the translation names it


@dataclass
class DeoptPoint:
    """What a frame's return address means, from the code's deoptimization data."""

    index: int  # deopt index
    lazy: bool  # the return address is the lazy-deopt exit V8 patched in
    frames: list[TranslatedFrame]  # innermost first


def _uvlq(data: bytes, pos: int) -> tuple[int, int]:
    return vlq.uvlq(data, pos, "translation")


def _svlq(data: bytes, pos: int) -> tuple[int, int]:
    return vlq.signed(data, pos, "translation")


# -- safepoint table -------------------------------------------------------

def safepoint_entries(mem, md, metadata: int, maglev: bool,
                      code_flags: int) -> list[tuple[int, int, int]]:
    """(pc, deopt index, trampoline pc) of each safepoint, in pc order; [] without
    deopt data. The table is decoded by `safepoints.read`."""
    table = safepoints.read(mem, md, metadata, code_flags, maglev)
    if all(e.deopt < 0 and e.trampoline < 0 for e in table.entries):
        return []
    return [(e.pc, e.deopt, e.trampoline) for e in table.entries]


def find_deopt_index(entries: list[tuple[int, int, int]], pc_offset: int) -> tuple[int, bool] | None:
    """(deopt index, whether pc_offset is a lazy-deopt trampoline) of a return address.

    As V8's SafepointTable::FindEntry, a trampoline pc first, then the entry
    at the pc. V8 takes the last entry at or before the pc because it merges
    runs of identical entries, but an entry with a deopt index is never
    merged: a pc between entries is no return address (the innermost frame of
    a running process) and has no deopt point.
    """
    for _pc, deopt, tramp in entries:
        if tramp >= 0 and tramp == pc_offset:
            return (deopt, True) if deopt >= 0 else None
    for pc, deopt, _tramp in entries:
        if pc == pc_offset:
            return (deopt, False) if deopt >= 0 else None
        if pc > pc_offset:
            break
    return None


# -- translations ----------------------------------------------------------

class _Reader:
    """Reads translation instructions (opcode, operands) from one position on."""

    def __init__(self, data: bytes, pos: int, fmt: dict) -> None:
        self.data = data
        self.pos = pos
        self.fmt = fmt
        self.counts = fmt["counts"]

    def raw_opcode(self) -> int:
        if self.fmt["encoding"] == 1:
            op, self.pos = _svlq(self.data, self.pos)
        else:
            if self.pos >= len(self.data):
                raise DecodeError("translation ends before its frames")
            op = self.data[self.pos]
            self.pos += 1
        return op

    def operands(self, op: int) -> list[int]:
        if not 0 <= op < len(self.counts):
            raise DecodeError(f"translation opcode {op} is not known")
        out = []
        for _ in range(self.counts[op]):
            v, self.pos = _svlq(self.data, self.pos)
            out.append(v)
        return out

    def skip(self) -> None:
        """Skip one plain instruction (as held by a basis translation)."""
        op = self.raw_opcode()
        for _ in range(self.counts[op] if 0 <= op < len(self.counts) else 0):
            _v, self.pos = _uvlq(self.data, self.pos)


def _instructions(data: bytes, start: int, fmt: dict):
    """Yield (opcode, operands) of the translation at `start`, BEGIN first.

    From V8 11 a translation may say "the next N instructions are those of
    the basis translation" (MATCH_PREVIOUS_TRANSLATION); the basis is found by
    the BEGIN's lookback distance and is read in step, one instruction for
    each instruction of this one.
    """
    rd = _Reader(data, start, fmt)
    op = rd.raw_opcode()
    if op not in fmt["begin"]:
        raise DecodeError(f"translation at {start} does not begin with BEGIN (opcode {op})")
    if fmt["lookback"]:
        lookback, rd.pos = _uvlq(data, rd.pos)
        frame_count, rd.pos = _svlq(data, rd.pos)
        js_count, rd.pos = _svlq(data, rd.pos)
    else:
        frame_count, rd.pos = _svlq(data, rd.pos)
        js_count, rd.pos = _svlq(data, rd.pos)
        _updates, rd.pos = _svlq(data, rd.pos)
        lookback = 0
    yield "begin", [frame_count, js_count]
    basis = None
    if lookback:
        if lookback > start:
            raise DecodeError("translation looks back before its array")
        basis = _Reader(data, start - lookback, fmt)
        basis.skip()  # its BEGIN (a basis translation holds no matches)
    n_ops = len(fmt["counts"])
    match = fmt["match"]
    pending = 0
    for _ in range(MAX_INSTRUCTIONS):
        if pending:
            pending -= 1
            op = basis.raw_opcode()
            yield op, basis.operands(op)
            continue
        op = rd.raw_opcode()
        if match is not None and (op >= n_ops or op == match):
            if basis is None:
                raise DecodeError("translation repeats a basis it does not have")
            if op == match:
                pending, rd.pos = _uvlq(data, rd.pos)
            else:
                pending = op - n_ops
            if not 0 < pending <= MAX_INSTRUCTIONS:
                raise DecodeError("translation repeats too much of its basis")
            continue
        if op in fmt["begin"]:
            return  # the next translation
        ops = rd.operands(op)
        if basis is not None:
            try:
                basis.skip()
            except DecodeError:
                basis = None  # the basis was shorter: nothing more to repeat
        yield op, ops
    raise DecodeError("translation too long")


def translated_frames(data: bytes, start: int, fmt: dict) -> list[tuple[int, int, bool, int]]:
    """(literal id, bytecode offset, builtin, bytecode literal id or -1) of each JS frame,
    outermost first."""
    frames: list[tuple[int, int, bool, int]] = []
    js_count = 0
    for op, ops in _instructions(data, start, fmt):
        if op == "begin":
            js_count = ops[1]
            if not 0 < js_count <= MAX_FRAMES:
                raise DecodeError(f"translation with {js_count} JS frames")
            continue
        if op in fmt["interpreted"] or op in fmt["builtin"]:
            builtin = op in fmt["builtin"]
            bc = ops[2] if fmt.get("bytecode_literal") and not builtin else -1
            frames.append((ops[1], ops[0], builtin, bc))
            if len(frames) == js_count:
                return frames
    raise DecodeError(f"translation holds {len(frames)} of its {js_count} JS frames")


# -- the whole lookup -----------------------------------------------------

class DeoptReader:
    """Decodes the deopt point of optimized code at a return address."""

    def __init__(self, heap, functions) -> None:
        self.h = heap
        self.f = functions
        self.md = heap.md
        self.fmt = layouts.translations(self.md)
        self._translations: dict[int, bytes] = {}
        self._safepoints: dict[int, list[tuple[int, int, int]]] = {}

    def point(self, code: int, start: int, size: int, pc: int, maglev: bool) -> DeoptPoint:
        try:
            return self._point(code, start, size, pc, maglev)
        except (struct.error, IndexError, ValueError) as e:
            raise DecodeError(f"deoptimization data not understood: {e}") from None

    def _point(self, code: int, start: int, size: int, pc: int, maglev: bool) -> DeoptPoint:
        h, md = self.h, self.md
        # The safepoint table starts the code's metadata, right after its instructions.
        entries = self._safepoints.get(start + size)
        if entries is None:
            flags = h.mem.u32(code - 1 + md.off("Code", "flags"))
            entries = safepoint_entries(h.mem, md, start + size, maglev, flags)
            if len(self._safepoints) > 256:
                self._safepoints.clear()
            self._safepoints[start + size] = entries
        found = find_deopt_index(entries, pc - start)
        if found is None:
            raise DecodeError("no deoptimization point at this pc")
        index, lazy = found
        deopt = h.field(code, "Code", "deoptimization_data")
        n = h.array_length(deopt, 1 << 24)
        first = md.const("DeoptimizationDataFirstEntryIndex")
        size_e = md.const("DeoptimizationDataEntrySize")
        slot = first + index * size_e + 1
        if slot >= n:
            raise DecodeError(f"deopt index {index} out of range")
        tindex = h.array_get(deopt, slot)
        if not h.is_smi(tindex):
            raise DecodeError("translation index is not a small integer")
        data = self._translation(h.array_get(deopt, md.const("DeoptimizationDataTranslationIndex")))
        raw = translated_frames(data, h.smi(tindex), self.fmt)
        frames = [TranslatedFrame(self._sfi(deopt, lit), off, builtin,
                                  self._bytecode(deopt, bc) if bc >= 0 else None)
                  for lit, off, builtin, bc in raw]
        frames.reverse()
        return DeoptPoint(index, lazy, frames)

    def _translation(self, arr: int) -> bytes:
        cached = self._translations.get(arr)
        if cached is not None:
            return cached
        h = self.h
        n = h.array_length(arr, MAX_TRANSLATION_BYTES)
        data = h.mem.read(arr - 1 + self.md.const("ByteArrayDataOffset"), n)
        if len(self._translations) > 64:
            self._translations.clear()
        self._translations[arr] = data
        return data

    def _bytecode(self, deopt: int, literal: int) -> int | None:
        """The BytecodeArray a frame's bytecode literal id names (V8 13.6+)."""
        h = self.h
        idx = self.md.consts.get("DeoptimizationDataProtectedLiteralArrayIndex")
        if idx is None:
            return None
        arr = h.array_get(deopt, idx)
        if not h.is_heap(arr) or not 0 <= literal < h.array_length(arr, 1 << 24):
            return None
        bc = h.strong(h.array_get(arr, literal))
        return bc if h.is_heap(bc) and h.is_type(bc, "BYTECODE_ARRAY_TYPE") else None

    def _sfi(self, deopt: int, literal: int) -> int:
        """The SharedFunctionInfo a frame's literal id names."""
        h, md = self.h, self.md
        names = ["DeoptimizationDataProtectedLiteralArrayIndex", "DeoptimizationDataLiteralArrayIndex"]
        for name in names:
            idx = md.consts.get(name)
            if idx is None:
                continue
            arr = h.array_get(deopt, idx)
            if not h.is_heap(arr) or not 0 <= literal < h.array_length(arr, 1 << 24):
                continue
            s = h.strong(h.array_get(arr, literal))
            try:
                if h.is_heap(s) and h.is_type(s, "SHARED_FUNCTION_INFO_WRAPPER_TYPE"):
                    s = h.field(s, "SharedFunctionInfoWrapper", "shared_info")
                if h.is_heap(s) and h.is_type(s, "SHARED_FUNCTION_INFO_TYPE"):
                    return s
            except (DecodeError, TargetMemoryError):
                continue
        raise DecodeError(f"literal {literal} of the deoptimization data is no function")
