"""A JS function's current code with its source positions (mdb_v8's ::v8function).

For baseline, Maglev and TurboFan code: the instruction bytes, and where
each stretch of them comes from in the source -- the optimized code's own
source position table (with the function each position was inlined from),
or for baseline code its pc -> bytecode map and the bytecode's positions.
For an interpreted function: its bytecode, split into instructions by V8's
own size table and named from V8's own name table where the binary's is
found. Disassembly is the front end's business; this only decodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..v8 import baseline
from ..v8.bytecodes import bytecode_bytes, iter_bytecodes
from ..v8.codes import CodeInfo

if TYPE_CHECKING:
    from ..program import Program
    from .frames import Frame

MAX_MARKS = 200000  # position entries of one function's code


@dataclass
class SourceMark:
    """From `offset` (into the code) on, the code is for this source position."""

    offset: int
    function: str
    script: str | None
    line: int | None
    column: int | None
    inlined: bool = False


@dataclass
class Bytecode:
    offset: int
    data: bytes
    name: str | None  # None where V8's name table was not found


@dataclass
class FunctionCode:
    function: str
    script: str | None
    line: int | None  # where the function is defined
    column: int | None
    tier: str  # interpreted, baseline, maglev, turbofan; "bytecode" where the tier is not known
    address: int  # the Code object, or the BytecodeArray
    start: int  # first instruction (or bytecode)
    data: bytes
    marks: list[SourceMark]
    pc: int | None = None  # the frame's pc (a machine address, or a bytecode offset)
    bytecodes: list[Bytecode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    is_bytecode: bool = False


class CodeReader:
    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.h = prog.heap
        self.f = prog.functions
        self.codes = prog.codes

    # -- what to show ------------------------------------------------------

    def of_frame(self, frames: list[Frame], index: int) -> FunctionCode:
        fr = frames[index]
        if fr.kind != "js":
            raise V8DbgError(f"jscode: frame {index} is not a JavaScript frame")
        if fr.tier == "builtin" or fr.sfi is None:
            raise V8DbgError(f"jscode: frame {index} is a V8 builtin ({fr.function}), "
                             "not JavaScript code")
        if fr.inlined:
            # The code is the function it was inlined into: the outermost frame
            # of the same machine frame, listed after it.
            outer = next((g for g in frames[index + 1:]
                          if g.fp == fr.fp and g.pc == fr.pc and not g.inlined), None)
            if outer is None:
                raise V8DbgError(f"jscode: the function frame {index} was inlined into "
                                 "was not found")
            fr = outer
        if fr.tier == "interpreted":
            bc = self.f.bytecode_array(fr.sfi)
            if bc is None:
                raise V8DbgError(f"jscode: frame {index} has no bytecode")
            return self.bytecode(fr.sfi, bc, fr.bytecode_offset)
        info = self.codes.code_for_pc(fr.pc, fr.function_address)
        if info is None:
            raise V8DbgError(f"jscode: the code object of frame {index} was not found")
        return self.machine(fr.sfi, info, fr.pc)

    def of_function(self, fn: int) -> FunctionCode:
        if not self.f.is_function(fn):
            raise V8DbgError(f"jscode: 0x{fn:x} is not a JavaScript function")
        sfi = self.f.shared(fn)
        info = self.codes.function_code(fn)
        if info is not None and self.codes.is_jit(info.kind):
            return self.machine(sfi, info, None)
        bc = self.f.bytecode_array(sfi)
        if bc is None:
            raise V8DbgError(f"jscode: 0x{fn:x} ({self.f.debug_name(sfi) or 'anonymous'}) "
                             "has not been compiled yet (no bytecode)")
        fc = self.bytecode(sfi, bc, None)
        if not self.prog.md.has("JSFunction", "code"):
            fc.tier = "bytecode"
            fc.notes.append("this V8 keeps a function's current code in its dispatch table, "
                            "which v8dbg does not read: this is the function's bytecode, "
                            "whatever tier runs it; `jscode --frame N` shows the code a "
                            "frame runs")
        return fc

    # -- decoding --------------------------------------------------------------

    def _header(self, sfi: int, tier: str, address: int, start: int,
                data: bytes, pc: int | None) -> FunctionCode:
        name = self.f.debug_name(sfi)
        script = self.f.script(sfi)
        sname = self.f.script_name(script) if script is not None else None
        line = col = None
        pos = self.f.start_position(sfi)
        if script is not None and pos is not None:
            p = self.f.position_to_line_col(script, pos)
            line, col = p.line, p.column
        return FunctionCode(name, sname, line, col, tier, address, start, data, [], pc)

    def _mark(self, offset: int, sfi: int, script_offset: int | None,
              inlined: bool) -> SourceMark:
        script = self.f.script(sfi)
        sname = self.f.script_name(script) if script is not None else None
        line = col = None
        if script is not None and script_offset is not None and script_offset >= 0:
            p = self.f.position_to_line_col(script, script_offset)
            line, col = p.line, p.column
        return SourceMark(offset, self.f.debug_name(sfi), sname, line, col, inlined)

    def machine(self, sfi: int, info: CodeInfo, pc: int | None) -> FunctionCode:
        if not 0 < info.size <= 1 << 24:
            raise V8DbgError(f"jscode: code object 0x{info.code:x} has a size of {info.size}")
        data = self.prog.mem.read(info.start, info.size)
        fc = self._header(sfi, self.codes.tier(info.kind), info.code, info.start, data, pc)
        try:
            if info.kind == self.codes.baseline:
                fc.marks = self._baseline_marks(sfi, info)
            else:
                fc.marks = self._optimized_marks(sfi, info)
        except (DecodeError, TargetMemoryError) as e:
            fc.notes.append(f"source positions unreadable: {e}")
        if not fc.marks and not fc.notes:
            fc.notes.append("the code records no source positions")
        return fc

    def _optimized_marks(self, sfi: int, info: CodeInfo) -> list[SourceMark]:
        """One mark per code offset where the position changes; where several
        entries share an offset, the last (the one its instructions belong to)."""
        table = self.f._table_bytes(info.code, "Code", "source_position_table")
        raws: list[tuple[int, int]] = []
        for n, (code_off, raw, _stmt) in enumerate(self.f.positions(table)):
            if n >= MAX_MARKS:
                raise DecodeError(f"over {MAX_MARKS} source positions")
            if raws and raws[-1][0] == code_off:
                raws[-1] = (code_off, raw)
            else:
                raws.append((code_off, raw))
        inlined: dict[int, int] = {}
        out: list[SourceMark] = []
        for code_off, raw in raws:
            iid = self.f.inlining_id(raw)
            if iid < 0:
                m = self._mark(code_off, sfi, self.f.script_offset(raw), False)
            else:
                if iid not in inlined:
                    inlined[iid] = self.codes.inlined_function(info, iid)
                m = self._mark(code_off, inlined[iid], self.f.script_offset(raw), True)
            if out and (out[-1].function, out[-1].script, out[-1].line, out[-1].column,
                        out[-1].inlined) == (m.function, m.script, m.line, m.column, m.inlined):
                continue
            out.append(m)
        return out

    def _baseline_marks(self, sfi: int, info: CodeInfo) -> list[SourceMark]:
        bc = self.f.bytecode_array(sfi)
        if bc is None:
            raise DecodeError("baseline code without bytecode")
        if self.prog.bytecode_sizes is None:
            raise DecodeError("V8's bytecode size table was not found in the binary")
        out: list[SourceMark] = []
        last = None
        for offset, start, _end in baseline.pc_ranges(self.codes, info, bc):
            pos = self.f.bytecode_position(bc, offset)
            if pos == last:
                continue
            last = pos
            out.append(self._mark(start, sfi, pos, False))
        return out

    def bytecode(self, sfi: int, bc: int, offset: int | None) -> FunctionCode:
        data = bytecode_bytes(self.h, bc)
        start = bc - 1 + self.prog.md.off("BytecodeArray", "data")
        fc = self._header(sfi, "interpreted", bc, start, data, offset)
        fc.is_bytecode = True
        sizes = self.prog.bytecode_sizes
        names = self.prog.bytecode_names
        if sizes is None:
            fc.notes.append("V8's bytecode size table was not found in the binary: "
                            "the bytecode is shown as raw bytes")
            fc.bytecodes = [Bytecode(0, data, None)]
        else:
            prefix = {0: "", 1: ".Wide", 2: ".ExtraWide"}
            end = 0
            for off, size, op, scale in iter_bytecodes(data, sizes):
                name = names[op] + prefix[scale] if names and op < len(names) else None
                fc.bytecodes.append(Bytecode(off, data[off:off + size], name))
                end = off + size
            if end < len(data):
                fc.notes.append(f"bytecode from offset {end} not decoded (a byte V8's size "
                                "table does not know)")
                fc.bytecodes.append(Bytecode(end, data[end:], None))
            if names is None:
                fc.notes.append("V8's bytecode name table was not found in this binary: "
                                "bytecodes are shown as offsets and bytes")
        try:
            table = self.f._table_bytes(bc, "BytecodeArray", "source_position_table")
            last = None
            for n, (code_off, raw, _stmt) in enumerate(self.f.positions(table)):
                if n >= MAX_MARKS:
                    fc.notes.append(f"only the first {MAX_MARKS} source positions shown")
                    break
                pos = self.f.script_offset(raw)
                if pos == last:
                    continue
                last = pos
                if fc.marks and fc.marks[-1].offset == code_off:
                    fc.marks.pop()
                fc.marks.append(self._mark(code_off, sfi, pos, False))
        except (DecodeError, TargetMemoryError) as e:
            fc.notes.append(f"source positions unreadable: {e}")
        return fc
