"""The program object: a target's memory, modules, symbols and V8 metadata.

Everything a decoder needs hangs off one `Program`, so helpers take a single
argument and backends stay thin.
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import os
from dataclasses import dataclass, field

from . import metadata
from .cfi import CfiTable
from .corefile import _build_id_from_header
from .elf import ElfFile, open_elf
from .errors import TargetMemoryError, V8DbgError
from .target import Backend, Memory


@dataclass
class LoadedModule:
    """One mapping of an ELF file, with the file's unwind table on demand."""

    start: int
    end: int
    offset: int
    path: str
    elf: ElfFile | None
    _cfi: dict = field(default_factory=dict)

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
        return self.elf.offset_to_vaddr(self.offset + (pc - self.start))


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


class Program:
    """One target process (live or core) as v8dbg sees it."""

    def __init__(self, backend: Backend, binary: str | None = None) -> None:
        self.backend = backend
        self.mem = Memory(backend)
        exe = binary or backend.executable()
        if not exe:
            raise V8DbgError("no node binary: pass --binary NODE (or load it in the debugger)")
        if not os.path.isfile(exe):
            raise V8DbgError(f"node binary {exe} not found")
        self.binary = open_elf(exe)
        self.md = metadata.load(self.binary)
        self._modules: list[LoadedModule] | None = None
        self._starts: list[int] = []
        self._sym_cache: dict[int, Symbol | None] = {}
        self._builtin_cache: dict[int, str | None] = {}
        self.cache: dict[str, object] = {}
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
            elves: dict[str, ElfFile | None] = {}
            have_main = False
            for m in listed:
                if not m.path.startswith("/"):
                    continue
                if m.path == self.binary.path or os.path.realpath(m.path) == exe_real:
                    elf: ElfFile | None = self.binary
                    have_main = True
                elif m.path in elves:
                    elf = elves[m.path]
                else:
                    elf = None
                    if os.path.isfile(m.path):
                        try:
                            elf = open_elf(m.path)
                        except V8DbgError:
                            elf = None
                    elves[m.path] = elf
                mods.append(LoadedModule(m.start, m.end, m.offset, m.path, elf))
            if not have_main:
                # Non-PIE node with no mapping list: the image sits at its link address.
                for seg in self.binary.segments:
                    if seg.type == 1 and seg.filesz:
                        mods.append(LoadedModule(seg.vaddr, seg.vaddr + seg.filesz, seg.offset,
                                                 self.binary.path, self.binary))
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

    def builtin_at(self, pc: int) -> str | None:
        """Name of the embedded V8 builtin holding pc (without 'Builtins_').

        A pc is a builtin when it lies in the embedded blob's code (in the
        binary, or in the copy node 22+ maps elsewhere); labels inside a
        builtin name the builtin they are in. Kept per pc: the code does not move.
        """
        try:
            return self._builtin_cache[pc]
        except KeyError:
            pass
        name = self._builtin_at(pc)
        if len(self._builtin_cache) > 100000:
            self._builtin_cache.clear()
        self._builtin_cache[pc] = name
        return name

    def _builtin_at(self, pc: int) -> str | None:
        lm = self.module_for(pc)
        if lm is None or lm.elf is not self.binary:
            return None
        link = lm.link_address(pc)
        if link is None:
            return None
        start = self.md.consts.get("EmbeddedBlobCodeStart")
        size = self.md.consts.get("EmbeddedBlobCodeSize")
        if start is not None and size:
            if not start <= link < start + size:
                return None
            name = self.binary.symbol_with_prefix_before(link, "Builtins_")
            return name[len("Builtins_"):] if name else "<builtin>"
        sym = self.symbolize(pc)
        if sym is not None and sym.raw.startswith("Builtins_"):
            return sym.raw[len("Builtins_"):]
        return None

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

    def refresh(self) -> None:
        """Drop cached memory if a live target has run since we last looked."""
        gen = self.backend.generation()
        if gen != self.generation:
            self.generation = gen
            self.mem.clear()
            self.cache.clear()


_demangler = None
_demangle_cache: dict[str, str] = {}


def demangle(name: str) -> str:
    """C++ demangling through the C++ runtime, if this machine has one."""
    global _demangler
    if not name.startswith("_Z"):
        return name
    if name in _demangle_cache:
        return _demangle_cache[name]
    if _demangler is None:
        try:
            try:
                lib = ctypes.CDLL("libstdc++.so.6")
            except OSError:
                lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so")
            fn = lib.__cxa_demangle
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_int)]
            libc = ctypes.CDLL(None)
            free = libc.free
            free.argtypes = [ctypes.c_void_p]
            _demangler = (fn, free)
        except (OSError, AttributeError):
            _demangler = False
    out = name
    if _demangler:
        fn, free = _demangler
        status = ctypes.c_int(0)
        ptr = fn(name.encode(), None, None, ctypes.byref(status))
        if ptr and status.value == 0:
            out = ctypes.string_at(ptr).decode("utf-8", "replace")
            free(ptr)
    if len(_demangle_cache) > 50000:
        _demangle_cache.clear()
    _demangle_cache[name] = out
    return out
