"""A core file read directly: the backend for the standalone CLI.

Memory comes from the core's PT_LOAD segments; pages the kernel left out
(file-backed text and read-only data) come from the mapped files named in
the NT_FILE note, when those files are on this machine and match.
"""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass

from ..errors import TargetMemoryError, V8DbgError
from .backend import Mapping, Registers, ThreadInfo
from .disasm import Disassembly, disassemble
from .elf import PT_LOAD, PT_NOTE, ElfFile, parse_notes
from .elf import build_id_from_header as _build_id_from_header
from .solibs import SearchPath, locate

NT_PRSTATUS = 1
NT_PRPSINFO = 3
NT_FILE = 0x46494C45
ET_CORE = 4

_REG_NAMES = ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax "
              "rip cs eflags rsp ss fs_base gs_base ds es fs gs").split()


# File signatures of compressed cores (systemd-coredump writes .zst by default).
_COMPRESSED = [
    (b"\x1f\x8b", "gzip", "gunzip -k {path}"),
    (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d {path}"),
    (b"\xfd7zXZ\x00", "xz", "unxz -k {path}"),
    (b"BZh", "bzip2", "bunzip2 -k {path}"),
    (b"\x04\x22\x4d\x18", "lz4", "lz4 -d {path}"),
]


@dataclass(frozen=True)
class FileMapping:
    start: int
    end: int
    offset: int  # bytes into the file
    path: str


class CoreBackend:
    """Memory, threads and modules of an ELF core dump."""

    kind = "core"
    live = False

    def __init__(self, core_path: str, binary_path: str | None = None,
                 search: SearchPath | None = None) -> None:
        self.search = search or SearchPath()
        self.elf = ElfFile(core_path)
        if self.elf.e_type != ET_CORE:
            raise V8DbgError(f"{core_path} is not a core file (ELF type {self.elf.e_type})")
        self.path = core_path
        try:
            self._fd: int | None = os.open(core_path, os.O_RDONLY)
        except OSError:
            self._fd = None
        self.binary_path = os.path.abspath(binary_path) if binary_path else None
        self._threads: list[ThreadInfo] = []
        self._pid: int | None = None
        self.process_name: str | None = None
        self.psargs: str | None = None
        self.mappings_raw: list[FileMapping] = []
        self._segs: list[tuple[int, int, int, int]] = []  # (vaddr, memsz, offset, filesz)
        self._loads: dict[str, list[tuple[int, int, int]]] = {}
        size = self.elf.size
        # Headers past the end of a cut file are lost too (elf.segments keeps those that fit).
        self.truncated = len(self.elf.segments) < self.elf.phnum and not self.elf.phnum_capped
        # How long the core should be, by its program headers (for the truncation warning).
        self.expected_size = max([s.offset + s.filesz for s in self.elf.segments] + [size])
        if self.elf.e_shoff:
            # The section headers (a PN_XNUM core's count) come last.
            shend = self.elf.e_shoff + 64 * max(1, self.elf.e_shnum)
            self.expected_size = max(self.expected_size, shend)
            self.truncated |= shend > size
        for seg in self.elf.segments:
            if seg.type == PT_LOAD:
                filesz = seg.filesz
                if seg.offset + filesz > size:
                    self.truncated = True
                    filesz = max(0, size - seg.offset)
                self._segs.append((seg.vaddr, seg.memsz, seg.offset, filesz))
            elif seg.type == PT_NOTE:
                end = min(seg.offset + seg.filesz, size)
                if seg.offset + seg.filesz > size:
                    self.truncated = True
                self._parse_notes(self.elf._map[seg.offset:end])
        self._segs.sort()
        # Program headers past the end are lost with their segments: the size
        # the core should have is then only known to be at least expected_size.
        self.headers_lost = len(self.elf.segments) < self.elf.phnum
        # Caps of this reader that the core reached, in words (front ends warn).
        self.limits: list[str] = []
        if self.elf.phnum_capped:
            self.limits.append(f"{core_path} has {self.elf.phnum} program headers: only the "
                               f"first {len(self.elf.segments)} are read")
        self._starts = [s[0] for s in self._segs]
        self._files: dict[str, ElfFile | None] = {}
        self._file_sorted: list[FileMapping] = []
        self._file_starts: list[int] | None = None
        if binary_path:
            self._files[self._main_path() or self.binary_path] = ElfFile(binary_path)

    def close(self) -> None:
        """Let go of the core file (its descriptor and mapping): a process
        that reads thousands of cores one after another keeps none open."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.elf.close()

    # -- notes -----------------------------------------------------------

    def _parse_notes(self, blob: bytes) -> None:
        for name, ntype, desc in parse_notes(blob):
            if name == b"CORE" and ntype == NT_PRSTATUS and len(desc) >= 112 + 27 * 8:
                pid = struct.unpack_from("<i", desc, 32)[0]
                regs = dict(zip(_REG_NAMES, struct.unpack_from("<27Q", desc, 112)))
                self._threads.append(ThreadInfo(
                    pid, None, Registers(regs["rip"], regs["rsp"], regs["rbp"], regs)))
            elif name == b"CORE" and ntype == NT_PRPSINFO and len(desc) >= 136:
                self._pid = struct.unpack_from("<i", desc, 24)[0]
                self.process_name = desc[40:56].split(b"\0")[0].decode("utf-8", "replace")
                self.psargs = desc[56:136].split(b"\0")[0].decode("utf-8", "replace")
            elif name == b"CORE" and ntype == NT_FILE and len(desc) >= 16:
                count, page = struct.unpack_from("<QQ", desc, 0)
                count = min(count, (len(desc) - 16) // 24)
                names = desc[16 + count * 24:].split(b"\0")
                for i in range(count):
                    s, e, off = struct.unpack_from("<QQQ", desc, 16 + i * 24)
                    path = names[i].decode("utf-8", "replace") if i < len(names) else ""
                    self.mappings_raw.append(FileMapping(s, e, off * page, path))
        if self._threads and self.process_name:
            self._threads[0].name = self.process_name

    # -- Backend interface ----------------------------------------------

    def pid(self) -> int | None:
        return self._pid or (self._threads[0].tid if self._threads else None)

    def threads(self) -> list[ThreadInfo]:
        return list(self._threads)

    def selected_thread(self) -> int | None:
        # The kernel writes the thread that took the fatal signal first.
        return self._threads[0].tid if self._threads else None

    def generation(self) -> int:
        return 0

    def disassemble(self, address: int, data: bytes) -> Disassembly:
        return disassemble(address, data)

    def _main_path(self) -> str | None:
        for m in self.mappings_raw:
            if m.offset == 0 and m.start <= 0x400000 < m.end:
                return m.path
        # A PIE executable: the first mapping listed is the executable.
        return self.mappings_raw[0].path if self.mappings_raw else None

    def executable(self) -> str | None:
        return self._binary() or self._main_path()

    def main_build_id(self) -> str | None:
        """The build-id of the program the core ran, from the header page it dumped."""
        main = self._main_path()
        return self.mapped_build_id(main) if main else None

    def _binary(self) -> str | None:
        return self.binary_path or self.binary_from_core()

    def search_path(self) -> SearchPath:
        return self.search

    def binary_from_core(self) -> str | None:
        """With no --binary: the node file for the core's executable (checked by
        build-id, found along the search path), or None when there is none."""
        main = self._main_path()
        if self.binary_path or not main:
            return None
        return self._file_path(main)

    def regions(self) -> list[tuple[int, int]]:
        """[start, end) of the memory the core holds (its PT_LOAD contents)."""
        return [(v, v + f) for v, _m, _o, f in self._segs if f]

    def file_regions(self) -> list[tuple[int, int]]:
        """(offset in the core file, size) of the memory the core holds."""
        return [(o, f) for _v, _m, o, f in self._segs if f]

    def mappings(self) -> list[Mapping]:
        main = self._main_path()
        exe = self._binary()
        out = []
        for m in self.mappings_raw:
            path = exe if (exe and m.path == main) else m.path
            out.append(Mapping(m.start, m.end, m.offset, path))
        return out

    def _file(self, path: str) -> ElfFile | None:
        if path in self._files:
            return self._files[path]
        elf = None
        if path.startswith("/"):
            # Only trust a file whose build-id matches what was mapped.
            elf = locate(path, self.mapped_build_id(path), self.search).elf
        self._files[path] = elf
        return elf

    def _file_path(self, path: str) -> str | None:
        elf = self._file(path)
        return elf.path if elf is not None else None

    def mapped_build_id(self, path: str) -> str | None:
        """The build-id in the ELF header page the kernel dumped for `path`."""
        for m in self.mappings_raw:
            if m.path == path and m.offset == 0:
                try:
                    head = self._read_core(m.start, 4096)
                except TargetMemoryError:
                    return None
                return _build_id_from_header(head)
        return None

    def _read_core(self, address: int, size: int) -> bytes:
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            raise TargetMemoryError(address, size)
        vaddr, memsz, offset, filesz = self._segs[i]
        if address + size > vaddr + memsz:
            raise TargetMemoryError(address, size)
        rel = address - vaddr
        if rel + size <= filesz:
            # pread, not the mmap: touching a multi-GB core through the mapping
            # makes every faulted-in page count against our resident size.
            if self._fd is not None:
                try:
                    data = os.pread(self._fd, size, offset + rel)
                    if len(data) == size:
                        return data
                except OSError:
                    pass
            return self.elf._map[offset + rel:offset + rel + size]
        raise TargetMemoryError(address, size, "not in the core")

    def read_into(self, address: int, buf: memoryview) -> bool:
        """Fill buf with the bytes at address when the core holds them all in
        one segment (a heap page), without a new buffer per read; else False."""
        size = len(buf)
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0 or self._fd is None:
            return False
        vaddr, _memsz, offset, filesz = self._segs[i]
        rel = address - vaddr
        if rel + size > filesz:
            return False
        try:
            return os.preadv(self._fd, [buf], offset + rel) == size
        except OSError:
            return False

    def read(self, address: int, size: int) -> bytes:
        try:
            return self._read_core(address, size)
        except TargetMemoryError:
            pass
        # Not dumped: a file-backed page, read from the file itself.
        m = self._file_mapping(address)
        if m is not None:
            if address + size <= m.end:
                elf = self._file(m.path)
                if elf is not None:
                    foff = m.offset + (address - m.start)
                    link = self._link_of(m.path, elf, foff)
                    if link is not None:
                        data = elf.read(link, size)
                        if data is not None and len(data) == size:
                            return data
                    if foff + size <= elf.size:
                        return elf._map[foff:foff + size]
        # A read spanning two core segments (adjacent mappings).
        return self._read_spanning(address, size)

    def _file_mapping(self, address: int) -> FileMapping | None:
        """The NT_FILE mapping holding address (bisected: a core may list thousands)."""
        if self._file_starts is None:
            self._file_sorted = sorted(self.mappings_raw, key=lambda m: m.start)
            self._file_starts = [m.start for m in self._file_sorted]
        i = bisect.bisect_right(self._file_starts, address) - 1
        if i >= 0 and address < self._file_sorted[i].end:
            return self._file_sorted[i]
        return None

    def _link_of(self, path: str, elf: ElfFile, foff: int) -> int | None:
        """The link address of byte `foff` of the file the process mapped (the
        file found here may be laid out otherwise: see ElfFile.loader_links)."""
        loads = self._loads.get(path)
        if loads is None:
            loads = elf.loader_links([(m.start, m.end, m.offset) for m in self.mappings_raw
                                      if m.path == path])
            self._loads[path] = loads
        for lo, hi, link in loads:
            if lo <= foff < hi:
                return link + (foff - lo)
        return None

    def _read_spanning(self, address: int, size: int) -> bytes:
        if size <= 1:
            raise TargetMemoryError(address, size)
        parts = []
        pos = address
        end = address + size
        # Each step ends a segment of at least a page, so this bounds the loop.
        guard = size // 4096 + 2
        while pos < end:
            guard -= 1
            if guard < 0:
                raise TargetMemoryError(address, size)
            i = bisect.bisect_right(self._starts, pos) - 1
            if i < 0:
                raise TargetMemoryError(address, size)
            vaddr, memsz, _o, _f = self._segs[i]
            seg_end = vaddr + memsz
            if pos >= seg_end:
                raise TargetMemoryError(address, size)
            n = min(end, seg_end) - pos
            if n == size:
                raise TargetMemoryError(address, size)
            parts.append(self.read(pos, n))
            pos += n
        return b"".join(parts)


_core_names: dict[str, str | None] = {}


def core_process_name(core_path: str) -> str | None:
    """The process name a core records (PRPSINFO): the main thread's name."""
    if core_path not in _core_names:
        try:
            _core_names[core_path] = CoreBackend(core_path).process_name
        except V8DbgError:
            _core_names[core_path] = None
    return _core_names[core_path]


def core_mappings(core_path: str) -> list[Mapping]:
    """The file mappings a core records (for debugger backends reading cores)."""
    try:
        return CoreBackend(core_path).mappings()
    except V8DbgError:
        return []


def core_regions(path: str) -> list[tuple[int, int]]:
    """The memory a core file holds: its PT_LOAD segments with file contents."""
    try:
        elf = ElfFile(path)
    except (V8DbgError, OSError):
        return []
    out = []
    for seg in elf.segments:
        if seg.type == PT_LOAD and seg.filesz:
            out.append((seg.vaddr, seg.vaddr + min(seg.filesz, seg.memsz)))
    return out


def binary_named_by(core_path: str, search: SearchPath | None = None) -> str | None:
    """The node file a core names as its program, checked by build-id and found
    along the search path; None when no such file is here."""
    try:
        return CoreBackend(core_path, search=search).binary_from_core()
    except V8DbgError:
        return None


def readable_regions(core_path: str | None, pid: int | None) -> list[tuple[int, int]]:
    """Readable memory: a core's segments, or a live process's /proc/PID/maps."""
    from .backend import proc_regions
    if core_path:
        return core_regions(core_path)
    return proc_regions(pid) if pid else []


def core_file_problem(path: str) -> str | None:
    """Why `path` cannot be read as a core, in one line; None if it may be one."""
    if not os.path.exists(path):
        return f"core file {path} not found"
    if os.path.isdir(path):
        return f"{path} is a directory, not a core file"
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as e:
        return f"cannot read {path}: {e.strerror}"
    for magic, kind, tool in _COMPRESSED:
        if head.startswith(magic):
            more = (" (for systemd-coredump, `coredumpctl dump PID -o core` writes it "
                    "uncompressed)" if kind == "zstd" else "")
            return (f"{path} is {kind}-compressed: decompress it first, "
                    f"e.g. `{tool.format(path=path)}`{more}")
    return None
