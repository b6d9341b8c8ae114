"""V8's embedded builtins: which one holds a pc."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..program import Program


def builtin_at(prog: "Program", pc: int) -> str | None:
    """Name of the embedded V8 builtin holding pc (without 'Builtins_').

    A pc is a builtin when it lies in the embedded blob's code (in the
    binary, or in the copy node 22+ maps elsewhere); labels inside a
    builtin name the builtin they are in.
    """
    lm = prog.module_for(pc)
    if lm is None or lm.elf is not prog.binary:
        return None
    link = lm.link_address(pc)
    if link is None:
        return None
    start = prog.md.consts.get("EmbeddedBlobCodeStart")
    size = prog.md.consts.get("EmbeddedBlobCodeSize")
    if start is not None and size:
        if not start <= link < start + size:
            return None
        name = prog.binary.symbol_with_prefix_before(link, "Builtins_")
        return name[len("Builtins_"):] if name else "<builtin>"
    sym = prog.symbolize(pc)
    if sym is not None and sym.raw.startswith("Builtins_"):
        return sym.raw[len("Builtins_"):]
    return None
