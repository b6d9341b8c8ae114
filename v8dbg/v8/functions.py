"""Functions, their code and their scripts: names, source positions, lines.

A JS frame holds a JSFunction; everything shown for it -- name, file, line,
column -- comes from its SharedFunctionInfo, the BytecodeArray's or Code's
source position table, and the Script's source text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..errors import DecodeError, TargetMemoryError
from . import vlq
from .strings import Strings
from .tagged import Heap

MAX_TABLE_BYTES = 4 << 20
MAX_SOURCE = 64 << 20
UNCOMPILED_TYPES = ("UNCOMPILED_DATA_WITH_PREPARSE_DATA_TYPE",
                    "UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_TYPE",
                    "UNCOMPILED_DATA_WITH_PREPARSE_DATA_AND_JOB_TYPE",
                    "UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_WITH_JOB_TYPE")
_TERMINATOR = re.compile("\r\n|\n|\r|\u2028|\u2029")


@dataclass
class ScriptInfo:
    address: int
    name: str | None
    source_length: int


@dataclass
class Position:
    line: int  # 1-based
    column: int  # 1-based


def read_uvlq(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned variable-length integer of a position table."""
    return vlq.uvlq(data, pos, "position table")


def read_vlq(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed integer, as V8's position tables store them."""
    return vlq.zigzag(data, pos, "position table")


def iter_position_table(data: bytes, start: int = 0, encoding: int = 1):
    """Yield (code_offset, source_position, is_statement) entries.

    `start` is the code offset before the first entry (-1 where V8 records
    a function-entry position); `encoding` 2 is V8 14.6's packing of the
    statement flag into the low bits of the code delta.
    """
    pos = 0
    code = start
    src = 0
    n = len(data)
    while pos < n:
        delta, pos = read_vlq(data, pos)
        if encoding == 2:
            if delta >= 0:
                x, stmt = delta, False
            else:
                x, stmt = -delta - 1, True
            delta = x >> 1
        elif delta >= 0:
            stmt = True
        else:
            stmt = False
            delta = -delta - 1
        code += delta
        d2, pos = read_vlq(data, pos)
        src += d2
        yield code, src, stmt


class Functions:
    def __init__(self, heap: Heap, strings: Strings) -> None:
        self.h = heap
        self.s = strings
        self.md = heap.md
        self._line_cache: dict[int, list[int]] = {}

    # -- JSFunction / SharedFunctionInfo -------------------------------

    def shared(self, fn: int) -> int:
        sfi = self.h.field(fn, "JSFunction", "shared")
        if not self.h.is_type(sfi, "SHARED_FUNCTION_INFO_TYPE"):
            raise DecodeError(f"0x{fn:x} is not a JavaScript function")
        return sfi

    def is_function(self, obj: int) -> bool:
        try:
            t = self.h.instance_type(obj)
        except (DecodeError, TargetMemoryError):
            return False
        lo = self.md.consts.get("FirstJSFunctionType")
        hi = self.md.consts.get("LastJSFunctionType")
        if lo is not None and hi is not None:
            return lo <= t <= hi
        return self.h.has_type(t, "JS_FUNCTION_TYPE", "JS_CLASS_CONSTRUCTOR_TYPE",
                               "JS_PROMISE_CONSTRUCTOR_TYPE", "JS_ARRAY_CONSTRUCTOR_TYPE")

    def _scope_info(self, sfi: int) -> int | None:
        v = self.h.field(sfi, "SharedFunctionInfo", "name_or_scope_info")
        if self.h.is_heap(v) and self.h.is_type(v, "SCOPE_INFO_TYPE"):
            return v
        return None

    def name(self, sfi: int) -> str:
        """The function's own name (V8's Name()), '' when anonymous."""
        h = self.h
        v = h.field(sfi, "SharedFunctionInfo", "name_or_scope_info")
        if h.is_heap(v) and self.s.is_string(v):
            return self.s.text(v, 512)
        if h.is_heap(v) and h.is_type(v, "SCOPE_INFO_TYPE"):
            from .scopes import ScopeInfo
            n = ScopeInfo(h, self.s, v).function_name()
            if n:
                return n
        return ""

    def inferred_name(self, sfi: int) -> str:
        h = self.h
        v = h.field(sfi, "SharedFunctionInfo", "name_or_scope_info")
        if h.is_heap(v) and h.is_type(v, "SCOPE_INFO_TYPE"):
            from .scopes import ScopeInfo
            return ScopeInfo(h, self.s, v).inferred_name() or ""
        data = self._uncompiled(sfi)
        if data is not None:
            n = h.field(data, "UncompiledData", "inferred_name")
            if self.s.is_string(n):
                return self.s.text(n, 512)
        return ""

    def _uncompiled(self, sfi: int) -> int | None:
        """The UncompiledData of a function V8 has not compiled yet, else None."""
        data = self.function_data(sfi)
        if self.h.is_heap(data) and self.h.is_type(data, *UNCOMPILED_TYPES):
            return data
        return None

    def _uncompiled_i32(self, sfi: int, field: str) -> int | None:
        data = self._uncompiled(sfi)
        if data is None or not self.md.has("UncompiledData", field):
            return None
        return self.h.mem.i32(data - 1 + self.md.off("UncompiledData", field))

    def debug_name(self, sfi: int) -> str:
        """What V8 prints for the function: its name, else its inferred name."""
        n = self.name(sfi)
        if n:
            return n
        return self.inferred_name(sfi)

    def function_data(self, sfi: int) -> int:
        """What the function runs or wraps: its bytecode, uncompiled data or
        code, else its builtin id (a Smi) or API template.

        Where V8 keeps two slots -- trusted data (bytecode, code, uncompiled
        data) and untrusted data (builtin id, FunctionTemplateInfo, asm.js
        data) -- only one is in use: the trusted one when it holds an object.
        """
        data = self.h.field(sfi, "SharedFunctionInfo", "function_data")
        if not self.h.is_heap(data) and self.md.has("SharedFunctionInfo", "untrusted_function_data"):
            return self.h.field(sfi, "SharedFunctionInfo", "untrusted_function_data")
        return data

    def script(self, sfi: int) -> int | None:
        h = self.h
        key = "script" if self.md.has("SharedFunctionInfo", "script") else (
            "raw_script" if self.md.has("SharedFunctionInfo", "raw_script") else "script_or_debug_info")
        v = h.field(sfi, "SharedFunctionInfo", key)
        if h.is_heap(v) and h.is_type(v, "DEBUG_INFO_TYPE") and self.md.has("DebugInfo", "script"):
            v = h.field(v, "DebugInfo", "script")
        if h.is_heap(v) and h.is_type(v, "SCRIPT_TYPE"):
            return v
        return None

    def bytecode_array(self, sfi: int) -> int | None:
        """The function's BytecodeArray, through whatever wraps it in this version."""
        return self.bytecode_in(self.function_data(sfi))

    def bytecode_in(self, data: int) -> int | None:
        """The BytecodeArray that data is or wraps (interpreter data, baseline code)."""
        h = self.h
        for _ in range(4):
            if not h.is_heap(data):
                return None
            t = h.instance_type(data)
            if h.has_type(t, "BYTECODE_ARRAY_TYPE"):
                return data
            if h.has_type(t, "INTERPRETER_DATA_TYPE"):
                data = h.field(data, "InterpreterData", "bytecode_array")
            elif h.has_type(t, "CODE_TYPE", "CODE_DATA_CONTAINER_TYPE") and \
                    self.md.has("Code", "bytecode_or_interpreter_data"):
                data = h.field(data, "Code", "bytecode_or_interpreter_data")
            elif h.has_type(t, "CODE_TYPE") and self.md.has("Code", "deoptimization_data"):
                # Baseline code keeps its bytecode where optimized code keeps deopt data.
                data = h.field(data, "Code", "deoptimization_data")
            elif h.has_type(t, "BASELINE_DATA_TYPE") and self.md.has("BaselineData", "data"):
                data = h.field(data, "BaselineData", "data")
            else:
                return None
        return None

    def start_position(self, sfi: int, token: bool = True) -> int | None:
        """Script offset where the function's source starts: its token (as
        stack traces show it), or without `token` where V8's own
        SharedFunctionInfo::StartPosition puts it (a class constructor's or a
        method's parameter list, as heap snapshots' locations do)."""
        h = self.h
        si = self._scope_info(sfi)
        if si is not None:
            from .scopes import ScopeInfo
            pos = ScopeInfo(h, self.s, si).position_info()
            if pos is not None:
                start = pos[0]
                tok = h.mem.i16(sfi - 1 + self.md.off("SharedFunctionInfo", "raw_function_token_offset"))
                if token and tok not in (-1, 0xFFFF) and tok >= 0:
                    return start - tok
                return start
        start = self._uncompiled_i32(sfi, "start_position")
        if start is not None:
            tok = h.mem.u16(sfi - 1 + self.md.off("SharedFunctionInfo", "raw_function_token_offset"))
            return start - tok if token and tok != 0xFFFF and tok <= start else start
        return None

    def end_position(self, sfi: int) -> int | None:
        h = self.h
        si = self._scope_info(sfi)
        if si is not None:
            from .scopes import ScopeInfo
            pos = ScopeInfo(h, self.s, si).position_info()
            if pos is not None:
                return pos[1]
        return self._uncompiled_i32(sfi, "end_position")

    def parameter_count(self, sfi: int) -> int:
        """Formal parameters, not counting the receiver."""
        n = self.h.mem.u16(sfi - 1 + self.md.off("SharedFunctionInfo",
                                                 "internal_formal_parameter_count"))
        if self.md.const("ParameterCountIncludesReceiver"):
            n -= 1
        return max(n, 0)

    # -- positions ------------------------------------------------------

    def bytecode_position(self, bytecode: int, offset: int) -> int | None:
        """Script offset V8 reports for a bytecode offset."""
        table = self._table_bytes(bytecode, "BytecodeArray", "source_position_table")
        best = None
        for code, src, _stmt in self.positions(table):
            if code > offset:
                break
            best = src
        if best is None:
            return None
        return self.script_offset(best)

    def positions(self, table: bytes):
        return iter_position_table(table, self.md.const("PositionTableStart"),
                                   self.md.const("PositionTableEncoding"))

    def script_offset(self, raw: int) -> int:
        """The script offset held in a position-table value.

        Newer V8 stores whole SourcePosition words (offset + 1 above an
        'external' bit, inlining id above that); older V8 plain offsets.
        """
        if self.md.const("PositionTableRaw"):
            return ((raw >> 1) & 0x3FFFFFFF) - 1
        return raw

    def inlining_id(self, raw: int) -> int:
        """Inlining id of a SourcePosition word: -1 for the outermost function."""
        return ((raw >> 31) & 0xFFFF) - 1

    def _table_bytes(self, obj: int, cls: str, fld: str) -> bytes:
        h = self.h
        t = h.field(obj, cls, fld)
        for _ in range(3):
            if not h.is_heap(t):
                raise DecodeError(f"{cls} 0x{obj:x} has no position table")
            tt = h.instance_type(t)
            if h.has_type(tt, "BYTE_ARRAY_TYPE", "TRUSTED_BYTE_ARRAY_TYPE"):
                n = h.array_length(t, MAX_TABLE_BYTES)
                return h.mem.read(t - 1 + self.md.const("ByteArrayDataOffset"), n)
            if h.has_type(tt, "SOURCE_POSITION_TABLE_WITH_FRAME_CACHE_TYPE") and \
                    self.md.has("SourcePositionTableWithFrameCache", "source_position_table"):
                t = h.field(t, "SourcePositionTableWithFrameCache", "source_position_table")
                continue
            break
        return b""  # undefined / exception marker: no table collected yet

    # -- scripts --------------------------------------------------------

    def script_name(self, script: int) -> str | None:
        v = self.h.field(script, "Script", "name")
        if self.h.is_heap(v) and self.s.is_string(v):
            return self.s.text(v, 4096)
        return None

    def script_source(self, script: int, limit: int) -> str | None:
        v = self.h.field(script, "Script", "source")
        if self.h.is_heap(v) and self.s.is_string(v):
            return self.s.text(v, limit)
        return None

    def line_starts(self, script: int) -> list[int]:
        """Offsets where each line starts, by V8's line terminators."""
        cached = self._line_cache.get(script)
        if cached is not None:
            return cached
        src = self.script_source(script, MAX_SOURCE) or ""
        starts = [0]
        for m in _TERMINATOR.finditer(src):
            starts.append(m.end())
        if len(self._line_cache) > 256:
            self._line_cache.clear()
        self._line_cache[script] = starts
        return starts

    def position_to_line_col(self, script: int, position: int) -> Position:
        starts = self.line_starts(script)
        i = bisect.bisect_right(starts, position) - 1
        i = max(i, 0)
        return Position(i + 1, position - starts[i] + 1)
