"""Functions grouped by their code (SharedFunctionInfo): name, where
defined, how many closures exist, and one of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError
from . import census

if TYPE_CHECKING:
    from ..program import Program


def _hex(v: int | None) -> str | None:
    return None if v is None else f"0x{v:x}"



def closure_of(prog: Program, heap: int, sfi: int) -> int | None:
    """The lowest-addressed live closure of a SharedFunctionInfo (jsfunctions' "closure")."""
    for r in functions(prog, heap):
        if r["shared"] == _hex(sfi):
            return int(r["closure"], 16)
    return None


def functions(prog: Program, heap: int) -> list[dict]:
    cached = prog.heap_state.functions.get(heap)
    if cached is not None:
        return cached
    c = census.of(prog, heap)
    sh = prog.shapes
    h = sh.h
    f = sh.f
    o_shared = h.md.off("JSFunction", "shared")
    by_sfi: dict[int, int] = {}
    first: dict[int, int] = {}
    for st in c.maps.values():
        if st.addresses is None or not sh.is_function_type(st.instance_type):
            continue
        for a in st.addresses:
            try:
                sfi = h.mem.u64(a - 1 + o_shared)
            except TargetMemoryError:
                continue
            by_sfi[sfi] = by_sfi.get(sfi, 0) + 1
            if sfi not in first or a < first[sfi]:
                first[sfi] = a
    rows = []
    for sfi, n in by_sfi.items():
        try:
            name = f.debug_name(sfi)
        except (DecodeError, TargetMemoryError):
            continue
        script = line = col = None
        try:
            sc = f.script(sfi)
            if sc is not None:
                script = f.script_name(sc)
                pos = f.start_position(sfi)
                if pos is not None:
                    lc = f.position_to_line_col(sc, pos)
                    line, col = lc.line, lc.column
        except (DecodeError, TargetMemoryError):
            pass
        rows.append({"name": name, "script": script, "line": line, "column": col,
                     "closures": n, "shared": _hex(sfi), "closure": _hex(first[sfi])})
    rows.sort(key=lambda r: (-r["closures"], r["name"] or "", r["shared"]))
    prog.heap_state.functions[heap] = rows
    return rows
