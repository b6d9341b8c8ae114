"""JIT code on the heap: baseline (Sparkplug), Maglev and TurboFan code.

The Code object for a pc is found by walking back from the pc to the
InstructionStream (or, before V8 11, Code) header that holds it. Where such
code is executing comes from its pc -> bytecode table (baseline), its
deoptimization data at the return address (`deopt.py`, as V8's own stack
traces read it), or, as a fallback, its source position table and inlining
positions. Frames are built from these in `v8dbg.stack.jit`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import DecodeError, TargetMemoryError
from .deopt import DeoptPoint, DeoptReader
from .functions import iter_position_table

SCAN_LIMIT = 1 << 20  # bytes searched back from a pc for its code header
# V8 aligns a code object's first instruction, not its header: V8 11's
# InstructionStream header is 16 bytes before a 64-byte aligned start, so
# the search steps back a word at a time.
SCAN_STEP = 8


@dataclass
class CodeInfo:
    code: int  # the Code object
    start: int  # first instruction
    size: int
    kind: int


class Codes:
    def __init__(self, prog, heap, functions) -> None:
        self.prog = prog
        self.h = heap
        self.f = functions
        md = heap.md
        self.md = md
        self.t_istream = md.types.get("INSTRUCTION_STREAM_TYPE")
        self.t_code = md.types.get("CODE_TYPE")
        self.baseline = md.const("CodeKindBaseline")
        self._deopt = None
        self._cache: dict[int, CodeInfo | None] = {}
        # Where several source positions start at one code offset, Error().stack
        # takes the last (the one the instructions there belong to) and V8's CPU
        # profiler the first; the profiler sets this for the pc a thread was
        # interrupted at, to file its samples on the lines V8's profiler does.
        self.first_position_wins = False

    # -- finding code --------------------------------------------------

    def code_for_pc(self, pc: int, fn: int | None = None,
                    limit: int = SCAN_LIMIT) -> CodeInfo | None:
        """The code holding pc (fn's current code first, where given), its
        header looked for at most `limit` bytes back."""
        if pc in self._cache:
            return self._cache[pc]
        info = None
        if fn is not None:
            info = self._from_function(fn, pc)
        if info is None:
            info = self._scan_back(pc, limit)
        if info is None and limit < SCAN_LIMIT:
            return None  # a shorter search: not the last word on this pc
        if len(self._cache) > 10000:
            self._cache.clear()
        self._cache[pc] = info
        return info

    def _info(self, code: int) -> CodeInfo:
        h, md = self.h, self.md
        if md.const("CodeInstructionsInline"):
            start = code - 1 + md.off("Code", "instruction_start")
        else:
            start = h.mem.u64(code - 1 + md.off("Code", "instruction_start"))
        size = h.mem.i32(code - 1 + md.off("Code", "instruction_size"))
        flags = h.mem.u32(code - 1 + md.off("Code", "flags"))
        kind = (flags >> md.const("CodeKindFieldShift")) & md.const("CodeKindFieldMask")
        return CodeInfo(code, start, size, kind)

    def function_code(self, fn: int) -> CodeInfo | None:
        """The Code a JSFunction runs now (None where this V8 keeps it elsewhere)."""
        if not self.md.has("JSFunction", "code"):
            return None
        try:
            code = self.h.field(fn, "JSFunction", "code")
            if not self.h.is_type(code, "CODE_TYPE"):
                return None
            return self._info(code)
        except (DecodeError, TargetMemoryError):
            return None

    def _from_function(self, fn: int, pc: int) -> CodeInfo | None:
        info = self.function_code(fn)
        return info if info is not None and info.start <= pc < info.start + info.size else None

    def runs_function(self, info: CodeInfo, sfi: int, pc: int) -> bool:
        """Is this code a compilation of the function sfi (as the frame that
        returns to pc)? Baseline code by its bytecode, optimized code by the
        outermost function of its deoptimization point at pc (True where
        that cannot be read: nothing says otherwise)."""
        try:
            if info.kind == self.baseline:
                mine = self.f.bytecode_in(info.code)
                return mine is not None and mine == self.f.bytecode_array(sfi)
            point = self.deopt_point(info, pc)
        except (DecodeError, TargetMemoryError):
            return True
        return not point.frames or point.frames[-1].sfi == sfi

    def is_jit(self, kind: int) -> bool:
        """Baseline, Maglev or TurboFan code (not a builtin such as the interpreter's entry)."""
        return self.baseline <= kind <= self.baseline + 2

    def _scan_back(self, pc: int, limit: int = SCAN_LIMIT) -> CodeInfo | None:
        """Walk back from pc, word by word, to the header of the object holding it
        (code the frame's function no longer runs: replaced since, or OSR code)."""
        h = self.h
        mem = self.prog.mem
        addr = pc & ~(SCAN_STEP - 1)
        lowest = max(pc - min(limit, SCAN_LIMIT), 0)
        while addr >= lowest:
            try:
                word = mem.u64(addr)
            except TargetMemoryError:
                return None
            if h.is_heap(word):
                try:
                    t = h.map_type(word)
                except (DecodeError, TargetMemoryError):
                    t = None
                if t is not None and t in (self.t_istream, self.t_code):
                    try:
                        code = addr + 1
                        if t == self.t_istream:
                            code = mem.u64(addr + 8)  # the InstructionStream's Code
                        if h.is_type(code, "CODE_TYPE"):
                            info = self._info(code)
                            if info.start <= pc < info.start + max(info.size, 0):
                                return info
                    except (DecodeError, TargetMemoryError):
                        pass
            addr -= SCAN_STEP
        return None

    def tier(self, kind: int) -> str:
        if kind == self.baseline:
            return "baseline"
        if kind == self.baseline + 1:
            return "maglev"
        if kind == self.baseline + 2:
            return "turbofan"
        return "optimized"

    # -- positions -------------------------------------------------------

    def baseline_offset(self, info: CodeInfo, bytecode_array: int, pc: int) -> int | None:
        """The bytecode offset a baseline frame executes at return address pc."""
        from . import baseline
        return baseline.bytecode_offset(self, info, bytecode_array, pc)

    def deopt_point(self, info: CodeInfo, pc: int) -> DeoptPoint:
        """The optimized code's translation at pc: each JS frame it stands for."""
        if self._deopt is None:
            self._deopt = DeoptReader(self.h, self.f)
        return self._deopt.point(info.code, info.start, info.size, pc,
                                 info.kind == self.baseline + 1)

    def inlining_chain(self, info: CodeInfo, pc: int,
                       sfi: int) -> tuple[list[tuple[int, int]], str | None]:
        """From the code's own source positions: (SharedFunctionInfo, script offset)
        for the function at pc and each function it was inlined into, innermost
        first, and a note when part of that could not be read."""
        h, md = self.h, self.md
        table = self.f._table_bytes(info.code, "Code", "source_position_table")
        pc_off = pc - info.start - 1
        raw = None
        last_off = None
        for code_off, src, _stmt in iter_position_table(table, 0,
                                                        md.const("PositionTableEncoding")):
            if code_off > pc_off:
                break
            if code_off != last_off or not self.first_position_wins:
                raw = src
            last_off = code_off
        if raw is None:
            return [], "no source position for this pc"
        chain: list[tuple[int, int]] = []
        deopt = h.field(info.code, "Code", "deoptimization_data")
        note = None
        for _ in range(64):
            iid = self.f.inlining_id(raw)
            off = self.f.script_offset(raw)
            if iid < 0:
                chain.append((sfi, off))
                break
            try:
                inl_sfi, parent_raw = self._inlined(deopt, iid)
            except (DecodeError, TargetMemoryError) as e:
                note = f"inlining data unreadable: {e}"
                chain.append((sfi, off))
                break
            chain.append((inl_sfi, off))
            raw = parent_raw
        return chain, note

    def inlined_function(self, info: CodeInfo, iid: int) -> int:
        """The SharedFunctionInfo of inlining id `iid` of optimized code."""
        return self._inlined(self.h.field(info.code, "Code", "deoptimization_data"), iid)[0]

    def _inlined(self, deopt: int, iid: int) -> tuple[int, int]:
        """(SharedFunctionInfo, parent SourcePosition word) of inlining id `iid`."""
        h, md = self.h, self.md
        positions = h.array_get(deopt, md.const("DeoptimizationDataInliningPositionsIndex"))
        n = h.array_length(positions, 1 << 24)
        entry = 16
        if (iid + 1) * entry > n:
            raise DecodeError(f"inlining id {iid} out of range")
        raw = h.mem.read(positions - 1 + md.const("ByteArrayDataOffset") + iid * entry, entry)
        parent_raw, fid = struct.unpack_from("<qi", raw, 0)
        literals = h.array_get(deopt, md.const("DeoptimizationDataLiteralArrayIndex"))
        s = h.strong(h.array_get(literals, fid))
        if h.is_type(s, "SHARED_FUNCTION_INFO_WRAPPER_TYPE"):
            s = h.field(s, "SharedFunctionInfoWrapper", "shared_info")
        if not h.is_type(s, "SHARED_FUNCTION_INFO_TYPE"):
            raise DecodeError("inlined function is not a SharedFunctionInfo")
        return s, parent_raw
