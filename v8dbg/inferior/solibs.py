"""Which file on this machine holds a library (or the executable) the target mapped.

A core read on another machine names files by their paths on the machine
that wrote it; those may be missing here or hold another build. A file is
taken only when its build-id is the one the target had mapped (read from the
ELF header page the core holds). Candidates, in order: the file the debugger
itself loaded for that mapping, the path under --sysroot, the file's name in
each --solib-path directory, any file with that build-id in those
directories, and the path itself (gdb's names and order).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import TargetMemoryError, V8DbgError
from .backend import Mapping
from .elf import ElfFile, build_id_from_header, open_elf

MAX_SCAN_FILES = 20000  # files looked at when matching by build-id, per search path
MAX_SCAN_DEPTH = 8


@dataclass(frozen=True)
class SearchPath:
    """Where to look for the target's files (gdb's `sysroot` and `solib-search-path`)."""

    sysroot: str | None = None
    dirs: tuple[str, ...] = ()

    @staticmethod
    def parse(sysroot: str | None, solib_path: str | None) -> "SearchPath":
        root = sysroot if sysroot and sysroot not in ("target:", "/", "") else None
        if root and root.startswith("target:"):
            root = root[len("target:"):] or None
        dirs = tuple(d for d in (solib_path or "").split(":") if d)
        return SearchPath(root, dirs)

    @property
    def empty(self) -> bool:
        return not self.sysroot and not self.dirs


@dataclass
class Found:
    """The outcome for one path the target names."""

    path: str  # as the target names it
    want: str | None  # build-id the target had mapped, when the core holds it
    file: str | None = None  # the file used
    elf: ElfFile | None = None
    problem: str | None = None  # why there is no file, in words


_by_build_id: dict[tuple[str, ...], dict[str, str]] = {}


def _scan(search: SearchPath) -> dict[str, str]:
    """build-id -> file for the ELF files under the search directories (bounded)."""
    roots = tuple(r for r in ((search.sysroot,) if search.sysroot else ()) + search.dirs if r)
    if roots in _by_build_id:
        return _by_build_id[roots]
    out: dict[str, str] = {}
    seen = 0
    for root in roots:
        base_depth = root.rstrip("/").count("/")
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            if dirpath.count("/") - base_depth >= MAX_SCAN_DEPTH:
                dirnames[:] = []
            for name in filenames:
                seen += 1
                if seen > MAX_SCAN_FILES:
                    break
                full = os.path.join(dirpath, name)
                if ".so" not in name and not os.access(full, os.X_OK):
                    continue
                try:
                    if not os.path.isfile(full) or os.path.getsize(full) < 64:
                        continue
                    with open(full, "rb") as fh:
                        if fh.read(4) != b"\x7fELF":
                            continue
                    bid = open_elf(full).build_id
                except (OSError, V8DbgError):
                    continue
                if bid:
                    out.setdefault(bid, full)
            if seen > MAX_SCAN_FILES:
                break
    _by_build_id[roots] = out
    return out


def candidates(path: str, search: SearchPath, loaded: str | None = None) -> list[str]:
    out: list[str] = []
    if loaded:
        out.append(loaded)
    if search.sysroot:
        out.append(os.path.join(search.sysroot, path.lstrip("/")))
    base = os.path.basename(path)
    for d in search.dirs:
        out.append(os.path.join(d, base))
    out.append(path)
    return out


def locate(path: str, want: str | None, search: SearchPath = SearchPath(),
           loaded: str | None = None) -> Found:
    """The file for `path` whose build-id is `want` (any file when the core
    does not say)."""
    found = Found(path, want)
    differs: list[tuple[str, str | None]] = []
    tried: set[str] = set()
    for cand in candidates(path, search, loaded):
        real = os.path.realpath(cand)
        if real in tried or not os.path.isfile(cand):
            continue
        tried.add(real)
        try:
            elf = open_elf(cand)
        except V8DbgError:
            continue
        if want is None or elf.build_id == want or elf.build_id is None:
            found.file, found.elf = cand, elf
            return found
        differs.append((cand, elf.build_id))
    if want and not search.empty:
        hit = _scan(search).get(want)
        if hit:
            try:
                found.file, found.elf = hit, open_elf(hit)
                return found
            except V8DbgError:
                pass
    if differs:
        cand, got = differs[0]
        found.problem = f"differs on this machine: {cand} has build-id {got}"
    else:
        found.problem = "is missing on this machine"
    return found


def locate_mapped(backend, mem, listed: list[Mapping], path: str) -> Found:
    """The file for a library the target mapped: the one the debugger loaded,
    or one found by build-id along the search path (v8dbg/py)."""
    want = None
    start = None
    for m in listed:
        if m.path == path and m.offset == 0:
            start = m.start
            try:
                want = build_id_from_header(mem.read(m.start, 4096))
            except TargetMemoryError:
                want = None
            break
    loaded = None
    fn = getattr(backend, "loaded_file", None)
    if fn is not None and start is not None:
        try:
            loaded = fn(path, start, want)
        except Exception:  # a debugger API refusing
            loaded = None
    search = getattr(backend, "search_path", None)
    try:
        sp = search() if callable(search) else SearchPath()
    except Exception:
        sp = SearchPath()
    return locate(path, want, sp, loaded)
