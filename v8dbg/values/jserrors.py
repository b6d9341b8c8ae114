"""Error objects: message, stack (formatted or still raw), cause, properties.
"""

from __future__ import annotations

from ..errors import DecodeError, TargetMemoryError
from .base import Value, ValuesBase, _Walk

MAX_FRAMES = 200  # V8 captures Error.stackTraceLimit frames: 10 unless raised


class ErrorValues(ValuesBase):
    def _error(self, v: int, level: int, walk: _Walk) -> Value:
        out: Value = {"type": "error", "constructor": self.constructor_name(v),
                      "message": None, "stack": None}
        props = self.own_properties(v)
        for p in props:
            if p.accessor:
                continue
            if self.is_string(p.key) and self.s.text(p.key, 8) == "message" and \
                    self.is_string(p.value):
                out["message"] = self.s.text(p.value, max(walk.opts.strlen, 4096))
        for p in props:
            # The stack lives under the first private symbol in every supported line.
            if self.is_symbol(p.key) and self.symbol_is_private(p.key) and not p.accessor:
                if self.is_string(p.value):
                    out["stack"] = self.s.text(p.value, 65536)
                else:
                    frames = self._raw_frames(p.value)
                    if frames:
                        out["frames"] = [fr["function"] for fr in frames]
                        out["frame_positions"] = frames
                        if self._frames_cut(p.value):
                            out["frames_truncated"] = True
                break
        if level > walk.opts.depth:
            out["truncated"] = True
            return out
        out["properties"] = self._properties(v, level, walk)
        for p in props:
            if not p.accessor and not p.enumerable and self.is_string(p.key) and \
                    self.s.text(p.key, 8) == "cause":
                out["cause"] = self._child(p.value, level + 1, walk)
        return out

    def _raw_frames(self, arr: int) -> list[Value]:
        """The frames of a not-yet-formatted stack (V8's captured CallSiteInfo
        list), each with the script, line and column Error().stack would show."""
        h = self.h
        if not h.is_heap(arr) or not h.is_type(arr, "FIXED_ARRAY_TYPE"):
            return []
        slots = self.md.const("ErrorStackFrameSlots")
        items = self.fixed_items(arr, MAX_FRAMES * max(slots, 1))
        # (function, code object, code offset or source position, flags)
        raw: list[tuple[int, int, int, int]] = []
        # The flat list came within a line (node 26.10 has it, 26.5 not): the
        # first item tells which form this one is.
        if slots and not (items and h.is_heap(items[0])
                          and h.is_type(items[0], "CALL_SITE_INFO_TYPE")):
            c = self.md.const
            for i in range(0, len(items) - slots + 1, slots):
                raw.append((items[i + c("ErrorStackFrameFunction")],
                            items[i + c("ErrorStackFrameCode")],
                            items[i + c("ErrorStackFrameOffset")],
                            items[i + c("ErrorStackFrameFlags")]))
        else:
            for item in items[:MAX_FRAMES]:
                if h.is_heap(item) and h.is_type(item, "CALL_SITE_INFO_TYPE"):
                    raw.append((self.fld(item, "CallSiteInfo", "function"),
                                self.fld(item, "CallSiteInfo", "code_object"),
                                self.fld(item, "CallSiteInfo", "code_offset_or_source_position"),
                                self.fld(item, "CallSiteInfo", "flags")))
        frames: list[Value] = []
        for fn, code, offset, flags in raw:
            if h.is_heap(fn) and self.f.is_function(fn):
                frames.append(self._captured_frame(fn, code, offset, flags))
        return frames

    def _frames_cut(self, arr: int) -> bool:
        """More frames captured than MAX_FRAMES (a raised Error.stackTraceLimit)."""
        slots = max(self.md.const("ErrorStackFrameSlots"), 1)
        try:
            return self.fixed_length(arr) > MAX_FRAMES * slots
        except (DecodeError, TargetMemoryError):
            return False

    def _captured_frame(self, fn: int, code: int, offset: int, flags: int) -> Value:
        """One captured frame: the function's name, and where in its script."""
        out: Value = {"function": self.function_name(fn) or "<anonymous>",
                      "script": None, "line": None, "column": None}
        h, f = self.h, self.f
        try:
            sfi = f.shared(fn)
            script = f.script(sfi)
            if script is None:
                return out  # a builtin (Array.prototype.forEach, ...): no script
            out["script"] = f.script_name(script)
            if not h.is_smi(offset) or not h.is_smi(flags):
                return out
            pos: int | None = h.smi(offset)
            if not h.smi(flags) >> self.md.const("CallSiteInfoPositionComputedBit") & 1:
                # A bytecode offset into the function's bytecode: the code object
                # when it is that BytecodeArray (a wrapper of it on node 26.10).
                if h.is_heap(code) and h.is_type(code, "BYTECODE_ARRAY_TYPE"):
                    bc: int | None = code
                elif h.is_heap(code) and h.is_type(code, "BYTECODE_WRAPPER_TYPE"):
                    bc = f.bytecode_array(sfi)
                else:
                    bc = None  # machine code and a pc offset (wasm, baseline): not mapped
                pos = f.bytecode_position(bc, pos) if bc is not None else None
            if pos is not None and pos >= 0:
                lc = f.position_to_line_col(script, pos)
                out["line"], out["column"] = lc.line, lc.column
        except (DecodeError, TargetMemoryError):
            pass
        return out


def captured_frame_text(fr: Value) -> str:
    """A captured frame as Error().stack prints it: `name (script:line:column)`;
    a function with no script (a builtin) as jsstack names it, `(<builtin>)`."""
    if fr.get("script") is None:
        return f"{fr['function']} (<builtin>)"
    if fr.get("line") is None:
        return f"{fr['function']} ({fr['script']})"
    return f"{fr['function']} ({fr['script']}:{fr['line']}:{fr['column']})"


def captured_frames_text(v: Value) -> list[str]:
    """The `at ...` lines of an error's captured frames (names only when an
    older decode gave no positions), and a line for a cut."""
    if v.get("frame_positions"):
        out = ["at " + captured_frame_text(fr) for fr in v["frame_positions"]]
    else:
        out = ["at " + f for f in v.get("frames") or []]
    if v.get("frames_truncated"):
        out.append(f"... (only the first {MAX_FRAMES} frames are shown)")
    return out
