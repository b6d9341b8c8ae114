"""The one interface through which the core sees a process.

A backend (core file, gdb, lldb) supplies raw memory, threads with their
registers, and the loaded modules. Everything else -- symbols, unwinding,
V8 knowledge -- lives in the core and is the same for every backend.
"""

from __future__ import annotations

import struct
import weakref
from dataclasses import dataclass, field
from typing import Callable, Protocol

from ..errors import TargetMemoryError
from .disasm import Disassembly

_PAGE_BITS = 12
PAGE = 1 << _PAGE_BITS

_U64, _I64 = struct.Struct("<Q").unpack_from, struct.Struct("<q").unpack_from
_U32, _I32 = struct.Struct("<I").unpack_from, struct.Struct("<i").unpack_from
_U16, _I16 = struct.Struct("<H").unpack_from, struct.Struct("<h").unpack_from
_U8 = struct.Struct("<B").unpack_from


@dataclass
class Registers:
    """The registers the unwinder needs (x86-64)."""

    rip: int
    rsp: int
    rbp: int
    others: dict[str, int] = field(default_factory=dict)


class ThreadInfo:
    """A thread; its registers may be fetched only when first needed."""

    def __init__(self, tid: int, name: str | None, regs: Registers | None = None,
                 loader: Callable[[], Registers | None] | None = None) -> None:
        self.tid = tid
        self.name = name
        self._regs = regs
        self._loader = loader

    @property
    def regs(self) -> Registers | None:
        if self._regs is None and self._loader is not None:
            loader, self._loader = self._loader, None
            try:
                self._regs = loader()
            except Exception:  # a debugger refusing to give registers
                self._regs = None
        return self._regs


@dataclass(frozen=True)
class Mapping:
    """A file mapped into the target: [start, end) shows the file from `offset`."""

    start: int
    end: int
    offset: int
    path: str


class Backend(Protocol):
    """What a front end must supply."""

    kind: str  # "core", "gdb", "lldb"
    live: bool

    def read(self, address: int, size: int) -> bytes:
        """Read exactly `size` bytes or raise TargetMemoryError."""
        ...

    def threads(self) -> list[ThreadInfo]: ...

    def selected_thread(self) -> int | None:
        """The tid of the thread the user selected (or the crashing one)."""
        ...

    def mappings(self) -> list[Mapping]:
        """File-backed mappings (as in /proc/PID/maps or a core's NT_FILE note)."""
        ...

    def executable(self) -> str | None: ...

    def pid(self) -> int | None: ...

    def generation(self) -> int:
        """Changes whenever a live target may have run since the last call."""
        ...

    def disassemble(self, address: int, data: bytes) -> Disassembly:
        """The instructions of `data` (read from `address`): the debugger's own
        disassembler in gdb and lldb, `disasm.disassemble` standalone."""
        ...


# Every Memory in use: `clear_caches` empties their page caches.
_MEMORIES: "weakref.WeakSet[Memory]" = weakref.WeakSet()


def clear_caches() -> None:
    """Empty the page cache of every Memory: between the phases of a long
    analysis, whose pages one phase read the next mostly does not (the heap
    commands' free_pages), rather than hold up to the cache's limit."""
    for m in list(_MEMORIES):
        m.clear()


class Memory:
    """Cached, bounded reads on top of a backend.

    Reads go to the backend in whole pages, so decoders may read word by
    word without a debugger round trip per word.
    """

    MAX_READ = 64 << 20

    def __init__(self, backend: Backend, cache_pages: int = 8192) -> None:
        self.backend = backend
        self._pages: dict[int, bytes | None] = {}
        self._limit = cache_pages
        self.stats_reads = 0
        _MEMORIES.add(self)

    def clear(self) -> None:
        self._pages.clear()

    def _page(self, pno: int) -> bytes | None:
        try:
            return self._pages[pno]
        except KeyError:
            pass
        if len(self._pages) >= self._limit:
            self._pages.clear()
        self.stats_reads += 1
        try:
            data = self.backend.read(pno * PAGE, PAGE)
        except TargetMemoryError:
            data = None
        except Exception:  # a debugger API raising its own error type
            data = None
        self._pages[pno] = data
        return data

    def read(self, address: int, size: int) -> bytes:
        if size < 0 or size > self.MAX_READ or address < 0 or address + size > 1 << 64:
            raise TargetMemoryError(address, max(size, 0), "out of range")
        if size == 0:
            return b""
        first = address // PAGE
        last = (address + size - 1) // PAGE
        if first == last:
            p = self._page(first)
            if p is None:
                raise TargetMemoryError(address, size)
            off = address - first * PAGE
            return p[off:off + size]
        if last - first > 64:
            # Large block: straight to the backend, no page cache.
            try:
                data = self.backend.read(address, size)
            except Exception:
                raise TargetMemoryError(address, size) from None
            if len(data) != size:
                raise TargetMemoryError(address, size)
            return data
        parts = []
        for pno in range(first, last + 1):
            p = self._page(pno)
            if p is None:
                raise TargetMemoryError(address, size)
            parts.append(p)
        blob = b"".join(parts)
        off = address - first * PAGE
        return blob[off:off + size]

    def readable(self, address: int, size: int = 8) -> bool:
        try:
            self.read(address, size)
            return True
        except TargetMemoryError:
            return False

    def _word(self, address: int, size: int, unpack) -> int:
        """A fixed-size value read and unpacked in place from its cached page
        (the decoders' most frequent read: no slice, no join), else through
        `read` (across pages, or out of range: its error)."""
        off = address & (PAGE - 1)
        if off <= PAGE - size and 0 <= address < 1 << 64:
            pno = address >> _PAGE_BITS
            try:
                p = self._pages[pno]
            except KeyError:
                p = self._page(pno)
            if p is None:
                raise TargetMemoryError(address, size)
            return unpack(p, off)[0]
        return unpack(self.read(address, size))[0]

    def u64(self, address: int) -> int:
        return self._word(address, 8, _U64)

    def i64(self, address: int) -> int:
        return self._word(address, 8, _I64)

    def u32(self, address: int) -> int:
        return self._word(address, 4, _U32)

    def i32(self, address: int) -> int:
        return self._word(address, 4, _I32)

    def u16(self, address: int) -> int:
        return self._word(address, 2, _U16)

    def i16(self, address: int) -> int:
        return self._word(address, 2, _I16)

    def u8(self, address: int) -> int:
        return self._word(address, 1, _U8)

    def f64(self, address: int) -> float:
        return struct.unpack("<d", self.read(address, 8))[0]


def thread_name(pid: int, tid: int) -> str | None:
    """A live thread's name as the kernel keeps it (/proc/PID/task/TID/comm)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def proc_map_lines(pid: int) -> list[tuple[int, int, str, int, str]]:
    """(start, end, permissions, file offset, path) of each line of /proc/PID/maps."""
    out: list[tuple[int, int, str, int, str]] = []
    try:
        with open(f"/proc/{pid}/maps") as fh:
            lines = fh.readlines()
    except OSError:
        return out
    for line in lines[:200000]:
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        try:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            off = int(parts[2], 16)
        except ValueError:
            continue
        out.append((lo, hi, parts[1], off, parts[5].rstrip("\n") if len(parts) == 6 else ""))
    return out


def proc_maps(pid: int) -> list[Mapping]:
    """File mappings of a live process on this machine."""
    return [Mapping(lo, hi, off, path) for lo, hi, _perms, off, path in proc_map_lines(pid)
            if path.startswith("/")]


def parse_gdb_mappings(text: str) -> list[Mapping]:
    """File mappings from gdb's `info proc mappings` output."""
    out: list[Mapping] = []
    for line in text.splitlines()[:100000]:
        parts = line.split()
        if len(parts) < 5 or not parts[0].startswith("0x"):
            continue
        path = parts[-1]
        if not path.startswith("/"):
            continue
        try:
            lo, hi = int(parts[0], 16), int(parts[1], 16)
            # gdb 13 prints: start end size offset [perms] objfile
            off = int(parts[3], 16)
        except ValueError:
            continue
        out.append(Mapping(lo, hi, off, path))
    return out


def proc_regions(pid: int) -> list[tuple[int, int]]:
    """Readable mappings of a live process on this machine."""
    return [(lo, hi) for lo, hi, perms, _off, path in proc_map_lines(pid)
            if perms.startswith("r") and path.strip() not in ("[vvar]", "[vsyscall]")]
