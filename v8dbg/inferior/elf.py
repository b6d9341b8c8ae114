"""A small, fast ELF reader for executables and shared libraries.

The node binary is 90-150 MB with ~150k symbols; generic ELF libraries take
seconds to list them. We only need: section and segment tables, the build-id,
bytes at a virtual address, and the symbol table as flat sorted arrays.
"""

from __future__ import annotations

import array
import bisect
import mmap
import os
import re
import struct
import weakref
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import V8DbgError

PT_LOAD = 1
ET_EXEC = 2  # a non-PIE executable: it runs at its link addresses
PT_NOTE = 4
SHT_SYMTAB = 2
SHT_DYNSYM = 11
STT_FUNC = 2
STT_OBJECT = 1
NT_GNU_BUILD_ID = 3
EM_X86_64 = 62
PN_XNUM = 0xFFFF
SHN_XINDEX = 0xFFFF
# Far above real files: a core has a program header per mapping (V8 maps each
# heap page apart, so a 64 GB heap is some 250,000), a binary a few hundred
# thousand sections at most. A file beyond them is reported, never cut silently.
MAX_PROGRAM_HEADERS = 1 << 24
MAX_SECTIONS = 1 << 20
_MACHINES = {3: "x86 (i386)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "s390x",
             40: "ARM (32-bit)", 43: "SPARC v9", 62: "x86-64", 183: "aarch64 (ARM64)",
             243: "RISC-V", 258: "LoongArch"}


def architecture(head: bytes) -> str:
    """The machine an ELF header (its first 20 bytes) is for, in words."""
    bits = {1: "32-bit", 2: "64-bit"}.get(head[4], "unknown-class")
    order = {1: "little-endian", 2: "big-endian"}.get(head[5], "unknown-endian")
    machine = struct.unpack_from("<H" if head[5] != 2 else ">H", head, 18)[0]
    name = _MACHINES.get(machine, f"machine {machine}")
    return f"a {bits} {order} {name} ELF file (e_machine {machine})"


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


@dataclass(frozen=True)
class Segment:
    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int


def parse_notes(data: bytes) -> Iterable[tuple[bytes, int, bytes]]:
    """Yield (name, type, desc) for each note in a PT_NOTE/SHT_NOTE blob."""
    pos = 0
    end = len(data)
    while pos + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        pos += 12
        name = data[pos:pos + namesz].rstrip(b"\0")
        pos += (namesz + 3) & ~3
        if descsz > end - pos:
            return
        desc = data[pos:pos + descsz]
        pos += (descsz + 3) & ~3
        yield name, ntype, desc


def find_build_id(data: bytes) -> str | None:
    for name, ntype, desc in parse_notes(data):
        if name == b"GNU" and ntype == NT_GNU_BUILD_ID:
            return desc.hex()
    return None


def build_id_from_header(head: bytes) -> str | None:
    """Find the GNU build-id note through the program headers of an ELF header page."""
    if head[:4] != b"\x7fELF":
        return None
    phoff = struct.unpack_from("<Q", head, 32)[0]
    phnum = struct.unpack_from("<H", head, 56)[0]
    for i in range(min(phnum, 64)):
        o = phoff + i * 56
        if o + 56 > len(head):
            break
        p_type, _f, p_offset, _v, _p, p_filesz = struct.unpack_from("<IIQQQQ", head, o)
        if p_type == PT_NOTE and p_offset + p_filesz <= len(head):
            bid = find_build_id(head[p_offset:p_offset + p_filesz])
            if bid:
                return bid
    return None


def check_architecture(path: str) -> None:
    """Refuse, in one line, a file that is not an x86-64 ELF file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return
    if head[4] != 2 or head[5] != 1 or struct.unpack_from("<H", head, 18)[0] != EM_X86_64:
        raise V8DbgError(f"{path} is {architecture(head)}: v8dbg reads only x86-64 "
                         "(little-endian, 64-bit) binaries and cores")

# Every file mapped now, for `release_pages`.
_MAPPED: "weakref.WeakSet[ElfFile]" = weakref.WeakSet()


def release_pages() -> None:
    """Let the pages read so far of every file mapped here (node's binary,
    its libraries, a core's headers: all read-only) go from this process's
    memory: a phase of the heap's analysis is done with the binary's symbols
    and sections, some 10 MB of node's. They stay in the kernel's page
    cache; a later read maps them back."""
    for f in list(_MAPPED):
        try:
            f._map.madvise(mmap.MADV_DONTNEED)
        except (ValueError, OSError, AttributeError):
            pass  # (closed, or no madvise here)


class ElfFile:
    """A mapped ELF64 little-endian file (executable or shared object)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise V8DbgError(f"cannot open {path}: {e.strerror}") from None
        try:
            size = os.fstat(fd).st_size
            if size < 64:
                raise V8DbgError(f"{path} is not an ELF file (too small)")
            self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            _MAPPED.add(self)
        finally:
            os.close(fd)
        m = self._map
        if m[:4] != b"\x7fELF":
            raise V8DbgError(f"{path} is not an ELF file")
        if m[4] != 2 or m[5] != 1 or struct.unpack_from("<H", m, 18)[0] != EM_X86_64:
            raise V8DbgError(f"{path} is {architecture(bytes(m[:20]))}: v8dbg reads only "
                             "x86-64 (little-endian, 64-bit) binaries and cores")
        (self.e_type, self.e_machine) = struct.unpack_from("<HH", m, 16)
        (self.e_phoff, self.e_shoff) = struct.unpack_from("<QQ", m, 32)
        (self.e_phentsize, self.e_phnum, self.e_shentsize, self.e_shnum,
         self.e_shstrndx) = struct.unpack_from("<HHHHH", m, 54)
        self.phnum = self.e_phnum
        self.phnum_capped = False
        if self.e_phnum == PN_XNUM:
            # More program headers than 16 bits count: section 0's sh_info holds the number.
            zero = self._section0()
            self.phnum = zero[2] if zero else self._phnum_before_data()
        self.segments = self._read_segments()
        self.sections = self._read_sections()
        self._by_name = {s.name: s for s in self.sections}
        self._symbols: tuple[list[int], list[int], list[int]] | None = None
        self._build_id: str | None | bool = False

    @property
    def size(self) -> int:
        return len(self._map)

    def close(self) -> None:
        """Unmap the file now, not when the last reference goes (a view of
        it still held elsewhere keeps it mapped until then)."""
        try:
            self._map.close()
        except BufferError:
            pass

    def _read_segments(self) -> list[Segment]:
        m = self._map
        # A cut file (a truncated core) keeps the headers that fit.
        fit = max(0, (len(m) - self.e_phoff) // 56) if self.e_phoff < len(m) else 0
        n = min(self.phnum, fit, MAX_PROGRAM_HEADERS)
        self.phnum_capped = self.phnum > MAX_PROGRAM_HEADERS and fit > MAX_PROGRAM_HEADERS
        table = m[self.e_phoff:self.e_phoff + n * 56]
        return [Segment(p_type, p_offset, p_vaddr, p_filesz, p_memsz, p_flags)
                for p_type, p_flags, p_offset, p_vaddr, _pa, p_filesz, p_memsz, _al
                in struct.iter_unpack("<IIQQQQQQ", table)]

    def _phnum_before_data(self) -> int:
        """The program header count of a PN_XNUM file whose section header 0 is
        missing (a core cut short: the kernel writes that header last): the
        table runs up to the data of its first entry."""
        if self.e_phoff + 56 > len(self._map):
            return 0
        first = struct.unpack_from("<Q", self._map, self.e_phoff + 8)[0]
        return max(0, (first - self.e_phoff) // 56) if first > self.e_phoff else 0

    def _section0(self) -> tuple[int, int, int] | None:
        """(sh_size, sh_link, sh_info) of section header 0, where a file with
        too many sections or program headers for the ELF header's 16-bit
        fields keeps the real counts (PN_XNUM, SHN_XINDEX)."""
        if not self.e_shoff or self.e_shoff + 64 > len(self._map):
            return None
        (_name, _type, _flags, _addr, _off, size, link, info, _align,
         _ent) = struct.unpack_from("<IIQQQQIIQQ", self._map, self.e_shoff)
        return size, link, info

    def _read_sections(self) -> list[Section]:
        m = self._map
        shnum = self.e_shnum
        if shnum == 0 and self.e_shoff:
            zero = self._section0()
            shnum = zero[0] if zero else 0
        if not self.e_shoff or self.e_shoff + shnum * 64 > len(m):
            return []
        raw = []
        for i in range(min(shnum, MAX_SECTIONS)):
            (name, stype, _flags, addr, offset, size, link, _info, _align,
             entsize) = struct.unpack_from("<IIQQQQIIQQ", m, self.e_shoff + i * 64)
            raw.append((name, stype, addr, offset, size, link, entsize))
        strndx = self.e_shstrndx
        if strndx == SHN_XINDEX and raw:
            strndx = raw[0][5]
        if strndx >= len(raw):
            return []
        stroff = raw[strndx][3]
        out = []
        for name, stype, addr, offset, size, link, entsize in raw:
            end = m.find(b"\0", stroff + name)
            sname = m[stroff + name:end].decode("ascii", "replace")
            out.append(Section(sname, stype, addr, offset, size, link, entsize))
        return out

    def section(self, name: str) -> Section | None:
        return self._by_name.get(name)

    def section_bytes(self, sec: Section) -> memoryview:
        return memoryview(self._map)[sec.offset:sec.offset + sec.size]

    @property
    def build_id(self) -> str | None:
        if self._build_id is False:
            bid = None
            for seg in self.segments:
                if seg.type == PT_NOTE:
                    bid = find_build_id(self._map[seg.offset:seg.offset + seg.filesz])
                    if bid:
                        break
            self._build_id = bid
        return self._build_id  # type: ignore[return-value]

    def vaddr_to_offset(self, vaddr: int) -> int | None:
        for seg in self.segments:
            if seg.type == PT_LOAD and seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                return seg.offset + (vaddr - seg.vaddr)
        return None

    def offset_to_vaddr(self, off: int) -> int | None:
        for seg in self.segments:
            if seg.type == PT_LOAD and seg.offset <= off < seg.offset + seg.filesz:
                return seg.vaddr + (off - seg.offset)
        return None

    def loader_links(self, maps: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """(file offset, end offset, link address at that offset) for those of a
        process's mappings of this file (start, end, file offset) that the
        loader made, i.e. that lie on the file's PT_LOAD segments.

        They tie the offsets of the file the process mapped to link addresses,
        which a file of the same build-id laid out otherwise (node stripped
        there and not here: strip moves segments in the file, never in
        memory) shares; offsets of other mappings of the file (node 22+'s
        copy of its builtins) translate through them.
        """
        loads = [seg for seg in self.segments if seg.type == PT_LOAD]
        if not loads:
            return []
        bias = 0
        if self.e_type != ET_EXEC:
            firsts = [start for start, _end, off in maps if off == 0]
            if not firsts:
                return []
            bias = firsts[0] - (min(seg.vaddr for seg in loads) & ~0xfff)
        out = []
        for start, end, off in maps:
            lo, hi = start - bias, end - bias
            if any(seg.vaddr < hi and lo < seg.vaddr + seg.memsz for seg in loads):
                out.append((off, off + (end - start), lo))
        return out

    def is_executable(self, vaddr: int) -> bool:
        return any(seg.type == PT_LOAD and seg.flags & 1 and
                   seg.vaddr <= vaddr < seg.vaddr + seg.memsz for seg in self.segments)

    def symbol_with_prefix_before(self, vaddr: int, prefix: str, limit: int = 64) -> str | None:
        """The nearest symbol at or before vaddr whose name starts with prefix."""
        addrs, _sizes, names = self._load_symbols()
        i = bisect.bisect_right(addrs, vaddr) - 1
        for j in range(i, max(i - limit, -1), -1):
            name = self._cstr(names[j])
            if name.startswith(prefix):
                return name
        return None

    def in_bss(self, vaddr: int) -> bool:
        """True for an address in a segment's zero-filled tail."""
        return any(seg.type == PT_LOAD and seg.vaddr + seg.filesz <= vaddr < seg.vaddr + seg.memsz
                   for seg in self.segments)

    def read(self, vaddr: int, size: int) -> bytes | None:
        """Bytes at a link-time virtual address, from the file image."""
        off = self.vaddr_to_offset(vaddr)
        if off is None:
            return None
        for seg in self.segments:
            if seg.type == PT_LOAD and seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                avail = seg.vaddr + seg.filesz - vaddr
                return bytes(self._map[off:off + min(size, avail)])
        return None

    def file_range(self, vaddr: int) -> tuple[int, int] | None:
        """(start, end) of the file-backed PT_LOAD image holding vaddr."""
        for seg in self.segments:
            if seg.type == PT_LOAD and seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                return seg.vaddr, seg.vaddr + seg.filesz
        return None

    # -- symbols ---------------------------------------------------------

    def _load_symbols(self) -> tuple[list[int], list[int], list[int]]:
        """Sorted (addresses, sizes, name offsets) of defined FUNC/OBJECT symbols.

        Sorting ~150k symbols of a node binary takes a quarter second, so the
        result is kept on disk per build-id (or per path, size and mtime).
        """
        if self._symbols is not None:
            return self._symbols
        cached = self._symbols_from_cache()
        if cached is not None:
            self._symbols = cached
            return cached
        self._symbols = self._scan_symbols()
        self._symbols_to_cache(self._symbols)
        return self._symbols

    def _cache_file(self) -> str | None:
        base = os.environ.get("V8DBG_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "v8dbg")
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        key = self.build_id or f"{abs(hash(self.path))}"
        return os.path.join(base, f"syms-{key}-{st.st_size}-{st.st_mtime_ns}.bin")

    def _symbols_from_cache(self) -> tuple[list[int], list[int], list[int]] | None:
        path = self._cache_file()
        if not path:
            return None
        try:
            with open(path, "rb") as fh:
                blob = fh.read()
        except OSError:
            return None
        if len(blob) < 8:
            return None
        n = struct.unpack_from("<Q", blob, 0)[0]
        if len(blob) != 8 + n * 24:
            return None
        arr = array.array("q")
        arr.frombytes(blob[8:])
        return arr[0:n], arr[n:2 * n], arr[2 * n:3 * n]  # type: ignore[return-value]

    def _symbols_to_cache(self, syms: tuple[list[int], list[int], list[int]]) -> None:
        path = self._cache_file()
        if not path:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            arr = array.array("q", list(syms[0]) + list(syms[1]) + list(syms[2]))
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(struct.pack("<Q", len(syms[0])))
                fh.write(arr.tobytes())
            os.replace(tmp, path)
        except (OSError, OverflowError):
            pass

    def _scan_symbols(self) -> tuple[list[int], list[int], list[int]]:
        entries: list[tuple[int, int, int]] = []
        self._strtabs: dict[int, int] = {}
        for sec in self.sections:
            if sec.type not in (SHT_SYMTAB, SHT_DYNSYM) or sec.link >= len(self.sections):
                continue
            strsec = self.sections[sec.link]
            data = self.section_bytes(sec)
            base = strsec.offset
            for name, info, _other, shndx, value, size in struct.iter_unpack(
                    "<IBBHQQ", data[:len(data) - len(data) % 24]):
                if shndx == 0 or value == 0 or (info & 0xF) not in (STT_FUNC, STT_OBJECT, 0):
                    continue
                entries.append((value, size, base + name))
        entries.sort()
        # Drop exact duplicates (symtab + dynsym list many symbols twice).
        addrs: list[int] = []
        sizes: list[int] = []
        names: list[int] = []
        last = -1
        for value, size, noff in entries:
            if value == last:
                if size > sizes[-1]:
                    sizes[-1] = size
                    names[-1] = noff
                continue
            addrs.append(value)
            sizes.append(size)
            names.append(noff)
            last = value
        return addrs, sizes, names

    def _cstr(self, off: int) -> str:
        end = self._map.find(b"\0", off, off + 4096)
        if end < 0:
            end = off + 4096
        return self._map[off:end].decode("utf-8", "replace")

    def symbolize(self, vaddr: int) -> tuple[str, int] | None:
        """(symbol name, offset) for a link-time address, or None."""
        addrs, sizes, names = self._load_symbols()
        i = bisect.bisect_right(addrs, vaddr) - 1
        if i < 0:
            return None
        off = vaddr - addrs[i]
        if sizes[i] and off >= sizes[i]:
            # Past the end of a sized symbol: only accept for unsized
            # assembly labels (embedded builtins have size 0 in some builds).
            return None
        if not sizes[i] and off > 1 << 20:
            return None
        return self._cstr(names[i]), off

    def symbol_start(self, vaddr: int) -> tuple[int, int] | None:
        """(start, size) of the symbol covering vaddr."""
        addrs, sizes, _ = self._load_symbols()
        i = bisect.bisect_right(addrs, vaddr) - 1
        if i < 0:
            return None
        return addrs[i], sizes[i]

    def symbols_matching(self, pattern: bytes, tails: bool = False) -> dict[str, int]:
        """Map name -> address for symbols whose name matches a regex (bytes).

        Scans string tables once instead of decoding every symbol name.
        tails: also names the linker stored as the end of a longer one (a
        name that ends another shares its bytes: `_GLOBAL__sub_I_NAME`).
        """
        wanted: dict[int, str] = {}
        rx = re.compile((rb"(" if tails else rb"(?<=\x00)(") + pattern + rb")(?=\x00)")
        for sec in self.sections:
            if sec.type not in (SHT_SYMTAB, SHT_DYNSYM) or sec.link >= len(self.sections):
                continue
            strsec = self.sections[sec.link]
            blob = self._map[strsec.offset - 1 if strsec.offset else 0:strsec.offset + strsec.size]
            shift = strsec.offset - 1 if strsec.offset else 0
            for m in rx.finditer(blob):
                wanted[shift + m.start(1)] = m.group(1).decode("ascii", "replace")
        if not wanted:
            return {}
        out: dict[str, int] = {}
        for sec in self.sections:
            if sec.type not in (SHT_SYMTAB, SHT_DYNSYM) or sec.link >= len(self.sections):
                continue
            base = self.sections[sec.link].offset
            data = self.section_bytes(sec)
            for name, _info, _other, shndx, value, _size in struct.iter_unpack(
                    "<IBBHQQ", data[:len(data) - len(data) % 24]):
                n = wanted.get(base + name)
                if n is not None and shndx != 0:
                    out[n] = value
        return out


    def side_cache(self, kind: str) -> Any:
        """The JSON document kept for this binary beside its symbol index under
        `kind` (a name with its format's version: `meta7`), None where there
        is none or it cannot be read: what is found by scanning the whole
        binary is kept there once."""
        import json
        base = self._cache_file()
        if not base:
            return None
        try:
            with open(base[:-len(".bin")].replace("syms-", f"{kind}-") + ".json") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def keep_side_cache(self, kind: str, doc: Any) -> None:
        """Keep `doc` (JSON) as this binary's `kind` document (see side_cache);
        a cache that cannot be written is no error."""
        import json
        base = self._cache_file()
        if not base:
            return
        path = base[:-len(".bin")].replace("syms-", f"{kind}-") + ".json"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                json.dump(doc, fh)
            os.replace(tmp, path)
        except (OSError, TypeError, ValueError):
            pass

    def symbol_span(self, name: str) -> tuple[int, int] | None:
        """(address, size) of the symbol named exactly `name`, None where the
        binary has none; kept beside its symbol index (finding it scans the
        whole string table, some 0.1-0.6 s)."""
        doc = self.side_cache("named1")
        doc = doc if isinstance(doc, dict) else {}
        got = doc.get(name, False)
        if got is None:
            return None
        if isinstance(got, list) and len(got) == 2 and all(isinstance(x, int) for x in got):
            return got[0], got[1]
        addr = self.symbols_matching(re.escape(name.encode()), tails=True).get(name)
        span = None
        if addr is not None:
            at = self.symbol_start(addr)
            span = (addr, at[1] if at and at[0] == addr else 0)
        doc[name] = list(span) if span else None
        self.keep_side_cache("named1", doc)
        return span


_open_cache: dict[tuple[str, int, int], ElfFile] = {}


def open_elf(path: str) -> ElfFile:
    """An ElfFile shared by everything that opens the same unchanged file."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise V8DbgError(f"cannot open {path}: {e.strerror}") from None
    key = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    elf = _open_cache.get(key)
    if elf is None:
        if len(_open_cache) > 64:
            _open_cache.clear()
        elf = ElfFile(path)
        _open_cache[key] = elf
    return elf
