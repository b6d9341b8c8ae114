"""Frames of JIT code: baseline, Maglev and TurboFan.

A baseline frame sits at the bytecode offset its pc maps to. An optimized
frame is expanded into one frame per function inlined into it, innermost
first, from the code's deoptimization data at the return address -- the
function and bytecode offset of each, as V8's own stack traces read them --
and the bytecode's source positions then give line and column. Only when
that data cannot be read do the code's own source positions place the
frames, with a note saying so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..inferior.unwind import MachineFrame
from ..v8.codes import CodeInfo
from ..v8.deopt import DeoptPoint

if TYPE_CHECKING:
    from .frames import Frame, StackDecoder


class JitFrames:
    """Builds the frames of one machine frame running JIT code."""

    def __init__(self, dec: StackDecoder) -> None:
        self.dec = dec
        self.codes = dec.prog.codes
        self.f = dec.f

    def frames(self, mf: MachineFrame, fr: Frame, fn: int, sfi: int,
               script: int | None) -> list[Frame]:
        info = self.codes.code_for_pc(mf.pc, fn)
        if info is None:
            fr.tier = "optimized"
            fr.note = "code object not found"
            return [fr]
        fr.tier = self.codes.tier(info.kind)
        if info.kind == self.codes.baseline:
            self._baseline(mf, fr, info, script)
            return [fr]
        return self._optimized(mf, fr, info, sfi, script)

    def _baseline(self, mf: MachineFrame, fr: Frame, info: CodeInfo, script: int | None) -> None:
        bc = self.dec.prog.mem.u64(mf.fp + self.dec.off_bc_array)
        offset = self.codes.baseline_offset(info, bc, mf.pc)
        if offset is None:
            fr.note = "bytecode offset of baseline code not found"
            return
        fr.bytecode_offset = offset
        self.dec._place(fr, script, self.f.bytecode_position(bc, offset))

    def _optimized(self, mf: MachineFrame, fr: Frame, info: CodeInfo, sfi: int,
                   script: int | None) -> list[Frame]:
        try:
            return self._translated(fr, self.codes.deopt_point(info, mf.pc), script)
        except (DecodeError, TargetMemoryError, V8DbgError) as e:
            why = str(e)
        out = self._from_source_positions(mf, fr, info, sfi, script)
        out[-1].note = out[-1].note or \
            f"position from the optimized code's source positions ({why})"
        return out

    def _inlined_frame(self, fr: Frame, sfi: int) -> Frame:
        """A frame for a function inlined into fr: its own function and script,
        and no receiver or arguments (optimized code does not keep them)."""
        g = replace(fr, args=[], receiver=None, optimized_out=True, inlined=True, sfi=sfi,
                    function=self.f.debug_name(sfi), function_address=None)
        sc = self.f.script(sfi)
        g.script = self.f.script_name(sc) if sc is not None else None
        g.script_address = sc
        return g

    def _translated(self, fr: Frame, point: DeoptPoint, script: int | None) -> list[Frame]:
        """One frame per translated JS frame, innermost first; the outermost is `fr`."""
        if not point.frames or point.frames[-1].sfi != fr.sfi or point.frames[-1].builtin:
            raise DecodeError("the translation's outermost function is not the frame's")
        out = []
        for i, t in enumerate(point.frames):
            outer = i == len(point.frames) - 1
            g = fr if outer else self._inlined_frame(fr, t.sfi)
            g.lazy_deopt = point.lazy
            if t.builtin:
                # A JS builtin (Array.prototype.map, ...) inlined as a continuation.
                g.tier = "builtin"
                g.script = g.script_address = None
                g.line = g.column = g.position = None
                out.append(g)
                continue
            bc = t.bytecode if t.bytecode is not None else self.f.bytecode_array(t.sfi)
            if bc is None:
                raise DecodeError("an optimized function without bytecode")
            g.bytecode_offset = t.bytecode_offset
            self.dec._place(g, script if outer else g.script_address,
                            self.f.bytecode_position(bc, t.bytecode_offset))
            out.append(g)
        return out

    def _from_source_positions(self, mf: MachineFrame, fr: Frame, info: CodeInfo, sfi: int,
                               script: int | None) -> list[Frame]:
        chain, note = self.codes.inlining_chain(info, mf.pc, sfi)
        if not chain:
            fr.note = note
            return [fr]
        if not self._within(sfi, chain[-1][1]):
            # A pc sampled as a call enters the callee, before its frame is built.
            fr.note = "the code at this pc is another function's"
            return [fr]
        if note:
            fr.note = note
        out = []
        for i, (s, off) in enumerate(chain):
            outer = i == len(chain) - 1
            g = fr if outer else self._inlined_frame(fr, s)
            self.dec._place(g, script if outer else g.script_address, off)
            out.append(g)
        return out

    def _within(self, sfi: int, offset: int) -> bool:
        """The script offset lies in the function's own source (True when unknown)."""
        try:
            lo, hi = self.f.start_position(sfi), self.f.end_position(sfi)
        except (DecodeError, TargetMemoryError, V8DbgError):
            return True
        return lo is None or hi is None or lo <= offset <= hi
