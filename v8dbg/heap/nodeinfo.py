"""node's own view of itself, read from its `process` object on the heap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError

if TYPE_CHECKING:
    from ..program import Program


def _hex(v: int | None) -> str | None:
    return None if v is None else f"0x{v:x}"

from .groups import instances


def node_info(prog: Program, heap: int) -> dict:
    sh = prog.shapes
    v = sh.v
    h = sh.h
    proc = None
    for a in instances(prog, heap, "process"):
        if v.own_data_property(a, "execPath") is not None:
            proc = a
            break
    info: dict = {"node_version": None, "v8_version": prog.md.version_text, "pid": None,
                  "argv": None, "exec_argv": None, "exec_path": None}
    if proc is None:
        raise V8DbgError(f"node's process object was not found on the heap (V8 "
                         f"{prog.md.version_text}, pid {prog.backend.pid()}, from the binary "
                         "and the core)")

    def text(val: int | None) -> str | None:
        if val is None or not h.is_heap(val) or not v.is_string(val):
            return None
        return v.s.text(val, 1 << 16)

    def strings(val: int | None) -> list[str] | None:
        if val is None or not h.is_heap(val):
            return None
        try:
            n = h.smi(h.field(val, "JSArray", "length"))
            items = h.array_items(h.field(val, "JSObject", "elements"), min(max(n, 0), 4096))
        except (DecodeError, TargetMemoryError):
            return None
        return [text(x) or "" for x in items[:n]]

    info["node_version"] = text(v.own_data_property(proc, "version"))
    versions = v.own_data_property(proc, "versions")
    if versions is not None and h.is_heap(versions):
        v8 = text(v.own_data_property(versions, "v8"))
        if v8:
            info["v8_version"] = v8
    pid = v.own_data_property(proc, "pid")
    if pid is not None and h.is_smi(pid):
        info["pid"] = h.smi(pid)
    elif pid is not None and h.is_heap(pid):
        try:
            info["pid"] = int(h.mem.f64(pid - 1 + h.md.off("HeapNumber", "value")))
        except TargetMemoryError:
            pass
    if info["pid"] is None:
        info["pid"] = prog.backend.pid()
    info["argv"] = strings(v.own_data_property(proc, "argv"))
    info["exec_argv"] = strings(v.own_data_property(proc, "execArgv"))
    info["exec_path"] = text(v.own_data_property(proc, "execPath"))
    return info
