"""Where the code of a heap's objects was written: the `locations` of a
.heapsnapshot, by V8HeapExplorer's rule.

V8 gives a closure the place of its own function, a generator object (and
an async function's or async generator's) that of its function, and any
other JS object that of its constructor as JSReceiver::GetConstructor finds
it (the function the object's constructor name comes from). The place is
the script's id and the 0-based line and column of the function's start
(SharedFunctionInfo::StartPosition), counted on the script's source; a
function of no script (a builtin's, an API function's) has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError

if TYPE_CHECKING:
    from ..program import Program


@dataclass(frozen=True)
class Location:
    script_id: int
    line: int  # 0-based, as V8's snapshot writes it
    column: int  # 0-based


class Locations:
    """Locations of functions and objects, cached per SharedFunctionInfo and per map."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.h = prog.heap
        self.f = prog.functions
        self.sh = prog.shapes
        md = self.h.md
        self.o_shared = md.off("JSFunction", "shared")
        self.o_gen_fn = md.fields.get(("JSGeneratorObject", "function"))
        t = md.types
        self.generators = {t[k] for k in ("JS_GENERATOR_OBJECT_TYPE", "JS_ASYNC_FUNCTION_OBJECT_TYPE",
                                          "JS_ASYNC_GENERATOR_OBJECT_TYPE") if k in t}
        self._by_sfi: dict[int, Location | None] = {}
        self._by_map: dict[int, Location | None] = {}

    def per_object(self, m: int) -> bool:
        """Whether objects of map m each have their own location (generators:
        their function's); other objects share their map's constructor's."""
        try:
            return self.h.map_type(m) in self.generators
        except (DecodeError, TargetMemoryError):
            return False

    def of_sfi(self, sfi: int) -> Location | None:
        if sfi in self._by_sfi:
            return self._by_sfi[sfi]
        got = None
        try:
            script = self.f.script(sfi)
            pos = self.f.start_position(sfi, token=False) if script is not None else None
            if script is not None and pos is not None and pos >= 0:
                lc = self.f.position_to_line_col(script, pos)
                got = Location(self.h.smi_field(script, "Script", "id"), lc.line - 1, lc.column - 1)
        except (DecodeError, TargetMemoryError):
            got = None
        self._by_sfi[sfi] = got
        return got

    def of_function(self, fn: int) -> Location | None:
        try:
            return self.of_sfi(self.h.mem.u64(fn - 1 + self.o_shared))
        except TargetMemoryError:
            return None

    def of_object(self, obj: int, m: int) -> Location | None:
        """An object's (not a closure's) location: its generator function's, or
        its constructor's (per map: the map's constructor or its prototypes')."""
        try:
            if self.h.map_type(m) in self.generators and self.o_gen_fn is not None:
                fn = self.h.mem.u64(obj - 1 + self.o_gen_fn)
                return self.of_function(fn) if self.h.is_heap(fn) else None
            if m not in self._by_map:
                fn = self.sh.constructor_function(m, obj)
                self._by_map[m] = self.of_function(fn) if fn is not None else None
            return self._by_map[m]
        except (DecodeError, TargetMemoryError):
            return None
