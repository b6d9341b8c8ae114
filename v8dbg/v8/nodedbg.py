"""node's postmortem symbols (`nodedbg_*`) as the running node computed them.

node fills these offsets in when it starts (they live in .bss, zero in the
file), so unlike V8's `v8dbg_*` constants they are read from the target's
memory, at the symbol's address in the loaded image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import TargetMemoryError, V8DbgError

if TYPE_CHECKING:
    from ..program import Program

_PREFIX = "nodedbg_"


def _bias(prog: Program) -> int:
    """How far the loader moved the binary (0 for node's non-PIE executable)."""
    if prog.binary.e_type == 2:  # ET_EXEC
        return 0
    segs = [sg.vaddr for sg in prog.binary.segments if sg.type == 1]
    main = prog.main_module()
    if not segs or main is None:
        return 0
    return main.start - (min(segs) & ~0xfff)


def values(prog: Program) -> dict[str, int]:
    """Name (without `nodedbg_`) -> value of every nodedbg_* symbol, from the target."""
    syms = prog.binary.symbols_matching(rb"nodedbg_[A-Za-z0-9_]+")
    if not syms:
        raise V8DbgError("the node binary carries no nodedbg_* symbols (a stripped or "
                         "non-node binary): node's Environment cannot be found")
    bias = _bias(prog)
    out: dict[str, int] = {}
    for name, addr in syms.items():
        short = name[len(_PREFIX):]
        try:
            out[short] = (prog.mem.u32(addr + bias) if short.startswith("const_")
                          else prog.mem.u64(addr + bias))
        except TargetMemoryError:
            continue
    return out


def need(vals: dict[str, int], key: str) -> int:
    """One nodedbg value; a clear error when the binary or the target lacks it."""
    try:
        return vals[key]
    except KeyError:
        raise V8DbgError(f"the node binary has no nodedbg_{key} symbol (or its value "
                         "is not in the target's memory)") from None
