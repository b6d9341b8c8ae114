"""A process image as the debugger sees it: memory, threads, the ELF files
mapped into it and their symbols.

`Target` is what native unwinding and symbolization need; `v8dbg.program.Program`
builds on it with V8's metadata and the decoders.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from ..errors import TargetMemoryError, V8DbgError
from . import solibs
from .backend import Backend, Memory
from .cfi import CfiTable
from .corefile import _build_id_from_header
from .elf import ElfFile, open_elf
from .symbols import demangle


@dataclass
class LoadedModule:
    """One mapping of an ELF file, with the file's unwind table on demand."""

    start: int
    end: int
    offset: int
    path: str
    elf: ElfFile | None
    _cfi: dict = field(default_factory=dict)
    found: solibs.Found | None = None  # how the file was found, or why it was not
    # The file's offsets as the process mapped them, to link addresses (see
    # ElfFile.loader_links); empty: the file here is laid out as that one.
    links: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def cfi(self) -> CfiTable | None:
        if self.elf is None:
            return None
        if "t" not in self._cfi:
            self._cfi["t"] = _cfi_for(self.elf)
        return self._cfi["t"]

    def link_address(self, pc: int) -> int | None:
        """The address in the ELF file's own numbering for a runtime pc."""
        if self.elf is None:
            return None
        foff = self.offset + (pc - self.start)
        for lo, hi, link in self.links:
            if lo <= foff < hi:
                return link + (foff - lo)
        return self.elf.offset_to_vaddr(foff)


_cfi_tables: dict[int, CfiTable] = {}


def _cfi_for(elf: ElfFile) -> CfiTable:
    t = _cfi_tables.get(id(elf))
    if t is None or t.elf is not elf:
        t = CfiTable(elf)
        _cfi_tables[id(elf)] = t
    return t


@dataclass
class Symbol:
    name: str  # demangled where possible
    offset: int
    raw: str  # as in the symbol table
    module: str



class Target:
    """One process image (live or core): its memory, threads, modules and symbols."""

    def __init__(self, backend: Backend, binary: str | None = None) -> None:
        self.backend = backend
        self.mem = Memory(backend)
        exe = binary or backend.executable()
        if not exe:
            raise V8DbgError("no node binary: pass --binary NODE (or load it in the debugger)")
        if not os.path.isfile(exe):
            raise V8DbgError(f"node binary {exe} not found")
        self.binary = open_elf(exe)
        self._modules: list[LoadedModule] | None = None
        self._starts: list[int] = []
        self._sym_cache: dict[int, Symbol | None] = {}
        self._builtin_cache: dict[int, str | None] = {}
        # pc -> whether it is the signal-return trampoline (unwinding through handlers).
        self.sigreturn_pcs: dict[int, bool] = {}
        self.generation = backend.generation()
        self.warnings: list[str] = []

    # -- modules and symbols --------------------------------------------

    def modules(self) -> list[LoadedModule]:
        if self._modules is None:
            mods: list[LoadedModule] = []
            try:
                listed = self.backend.mappings()
            except Exception:
                listed = []
            exe_real = os.path.realpath(self.binary.path)
            elves: dict[str, solibs.Found] = {}
            have_main = False
            main_path = self.backend.executable()
            for m in listed:
                if not m.path.startswith("/"):
                    continue
                found = None
                if m.path in (self.binary.path, main_path) or os.path.realpath(m.path) == exe_real:
                    elf: ElfFile | None = self.binary
                    have_main = True
                else:
                    if m.path not in elves:
                        elves[m.path] = solibs.locate_mapped(self.backend, self.mem, listed, m.path)
                    found = elves[m.path]
                    elf = found.elf
                    if elf is not None and elf.build_id and elf.build_id == self.binary.build_id:
                        elf, found, have_main = self.binary, None, True
                mods.append(LoadedModule(m.start, m.end, m.offset, m.path, elf, found=found))
            if not have_main:
                # Non-PIE node with no mapping list: the image sits at its link address.
                for seg in self.binary.segments:
                    if seg.type == 1 and seg.filesz:
                        mods.append(LoadedModule(seg.vaddr, seg.vaddr + seg.filesz, seg.offset,
                                                 self.binary.path, self.binary))
            by_path: dict[str, list[LoadedModule]] = {}
            for lm in mods:
                by_path.setdefault(lm.path, []).append(lm)
            for same in by_path.values():
                if same[0].elf is not None:
                    links = same[0].elf.loader_links([(x.start, x.end, x.offset) for x in same])
                    for lm in same:
                        lm.links = links
            mods.sort(key=lambda lm: lm.start)
            self._modules = mods
            self._starts = [lm.start for lm in mods]
        return self._modules

    def module_for(self, pc: int) -> LoadedModule | None:
        mods = self.modules()
        i = bisect.bisect_right(self._starts, pc) - 1
        if i >= 0 and mods[i].start <= pc < mods[i].end:
            return mods[i]
        return None

    def main_module(self) -> LoadedModule | None:
        for lm in self.modules():
            if lm.elf is self.binary and lm.offset == 0:
                return lm
        return None

    def symbolize(self, pc: int) -> Symbol | None:
        if pc in self._sym_cache:
            return self._sym_cache[pc]
        out = None
        lm = self.module_for(pc)
        if lm is not None and lm.elf is not None:
            link = lm.link_address(pc)
            found = lm.elf.symbolize(link) if link is not None else None
            if found is not None:
                raw, off = found
                out = Symbol(demangle(raw), off, raw, os.path.basename(lm.path))
        if len(self._sym_cache) > 100000:
            self._sym_cache.clear()
        self._sym_cache[pc] = out
        return out

    # -- checks ---------------------------------------------------------

    def check_binary(self) -> None:
        """Refuse a core/process that was not running this node binary."""
        main = self.main_module()
        want = self.binary.build_id
        if main is None or not want:
            return
        try:
            head = self.mem.read(main.start, 4096)
        except TargetMemoryError:
            return
        got = _build_id_from_header(head)
        if got and got != want:
            raise V8DbgError(
                f"the target was not running {self.binary.path}: its build-id is {got}, "
                f"the binary's is {want}; pass the node binary that produced the core")

    def refresh(self) -> bool:
        """Drop cached memory if a live target has run since we last looked;
        True when it had."""
        gen = self.backend.generation()
        if gen == self.generation:
            return False
        self.generation = gen
        self.mem.clear()
        return True
