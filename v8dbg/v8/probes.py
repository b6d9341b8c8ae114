"""Probe sites in one node binary: the addresses of the functions `trace`
puts uprobes on, from the line's entry in layouts.TRACE_SITES and the
binary's own symbol table."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import V8DbgError
from ..inferior.elf import ElfFile
from ..inferior.symbols import demangle
from . import layouts, metadata


@dataclass
class Sites:
    """Addresses (link-time, as bpftrace's `uprobe:BINARY:0xADDR` takes them)."""
    binary: str
    v8_version: str
    addrs: dict[str, int] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def addr(self, name: str) -> int:
        a = self.addrs.get(name)
        if a is None:
            raise V8DbgError(f"probe site {name} not found in {self.binary} (V8 {self.v8_version})")
        return a


def find(elf: ElfFile, names: list[str], optional: list[str] = ()) -> Sites:  # type: ignore[assignment]
    """The sites `names` (keys of the line's table) in this binary; one clear
    error for the first that the symbol table does not hold. `optional`
    sites are taken where the line has them."""
    md = metadata.load(elf)
    facts = layouts.trace_sites(md.v8_version)
    sites = Sites(elf.path, md.version_text, facts=facts)
    wanted: dict[str, str] = {}
    for n in [*names, *optional]:
        sym = facts.get(n)
        if isinstance(sym, tuple):
            for i, s in enumerate(sym):
                wanted[f"{n}.{i}"] = s
        elif isinstance(sym, str):
            wanted[n] = sym
    found = elf.symbols_matching(b"|".join(re.escape(s.encode()) for s in set(wanted.values())))
    for key, sym in wanted.items():
        if sym in found:
            sites.addrs[key] = found[sym]
    for n in names:
        if isinstance(facts.get(n), tuple):
            if not any(k.startswith(f"{n}.") for k in sites.addrs):
                raise V8DbgError(f"no probe site for {n} in {elf.path} (V8 {md.version_text})")
        elif n not in sites.addrs:
            what = demangle(facts[n]) if n in facts else n
            raise V8DbgError(f"probe site {what} not found in {elf.path} (V8 "
                             f"{md.version_text}): this release keeps it elsewhere, or the "
                             "binary is stripped")
    return sites


def class_of_vtable(elf: ElfFile, addr: int) -> str | None:
    """The C++ class whose vtable holds `addr` (a vtable pointer), or None."""
    sym = elf.symbolize(addr)
    if not sym:
        return None
    name = demangle(sym[0])
    return name[len("vtable for "):] if name.startswith("vtable for ") else None


def function_at(elf: ElfFile, addr: int) -> str | None:
    """The function that starts at (or holds) `addr`, demangled."""
    sym = elf.symbolize(addr)
    return demangle(sym[0]) if sym else None
