"""V8 knowledge read from the node binary itself.

The postmortem symbols (`v8dbg_*`, `nodedbg_*`) are int constants in the
binary's data; we read them from the file, not the process, so loading is
the same for cores and live targets. What they lack for a V8 version comes
from `layouts.py`, the one per-version table.
"""

from __future__ import annotations

import re
import struct
import sys
from dataclasses import dataclass, field

from ..errors import V8DbgError
from ..inferior.elf import ElfFile
from . import layouts
from . import typenames
from .embedded import BuiltinTable, find as find_builtins

_SYMBOL_PATTERN = (rb"(?:v8dbg|nodedbg)_[A-Za-z0-9_]+"
                   rb"|_ZN2v88internal7Version[0-9]+(?:major|minor|build|patch|embedder)_E"
                   rb"|v8_Default_embedded_blob_code_(?:data_|size_)?"
                   rb"|" + typenames.SYMBOL_PATTERN)
_BLOB = "v8_Default_embedded_blob_code_"
_CACHE_FORMAT = 7
_BLOB_CANDIDATES = 4  # stretches of code without unwind tables tried for the builtins


@dataclass
class Metadata:
    """Everything version-specific the decoders need, merged and checked."""

    v8_version: tuple[int, int, int, int]
    consts: dict[str, int]
    fields: dict[tuple[str, str], int]
    type_names: dict[int, str]
    types: dict[str, int]
    node: dict[str, int]
    build_id: str | None
    binary: str
    filled: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unsupported: str | None = None
    # A stripped binary's builtins, from V8's own tables (None: symbols name them,
    # or the tables were not found).
    builtins: BuiltinTable | None = None

    @property
    def version_text(self) -> str:
        return ".".join(str(x) for x in self.v8_version)

    def const(self, name: str, default: int | None = None) -> int:
        try:
            return self.consts[name]
        except KeyError:
            if default is not None:
                return default
            raise V8DbgError(f"V8 {self.version_text}: constant {name} is unknown "
                             "(neither in the binary's metadata nor in v8dbg's table)") from None

    def has(self, cls: str, name: str) -> bool:
        return (cls, name) in self.fields

    def off(self, cls: str, name: str) -> int:
        """Offset of a field from the object's (untagged) start."""
        try:
            return self.fields[(cls, name)]
        except KeyError:
            raise V8DbgError(f"V8 {self.version_text}: the offset of {cls}::{name} is unknown "
                             "(neither in the binary's metadata nor in v8dbg's table)") from None

    def type_of(self, name: str) -> int | None:
        """Instance type number for a name like 'JS_OBJECT_TYPE'."""
        return self.types.get(name)


def _parse(raw: dict[str, int]) -> tuple[dict[str, int], dict[tuple[str, str], int],
                                          dict[int, str], dict[str, int], dict[str, int]]:
    consts: dict[str, int] = {}
    fields: dict[tuple[str, str], int] = {}
    type_names: dict[int, str] = {}
    types: dict[str, int] = {}
    node: dict[str, int] = {}
    for name, value in raw.items():
        if name.startswith("nodedbg_"):
            node[name[len("nodedbg_"):]] = value
            continue
        if name.startswith(("EmbeddedBlob", "V8Embedder")):
            consts[name] = value
            continue
        if not name.startswith("v8dbg_"):
            continue
        body = name[len("v8dbg_"):]
        if body.startswith("class_"):
            rest = body[len("class_"):]
            cls, _, tail = rest.partition("__")
            fname, _, _ftype = tail.partition("__")
            if cls and fname:
                fields.setdefault((cls, fname), value)
        elif body.startswith("type_"):
            rest = body[len("type_"):]
            _cls, _, tname = rest.partition("__")
            if tname:
                types[tname] = value
                type_names.setdefault(value, tname)
        else:
            consts[body] = value
    return consts, fields, type_names, types, node


_cache: dict[tuple[str, int, int], Metadata] = {}


def load(binary: ElfFile) -> Metadata:
    """Read and merge the metadata of a node binary (cached per file)."""
    import os
    try:
        st = os.stat(binary.path)
        key = (binary.path, st.st_mtime_ns, st.st_size)
    except OSError:
        key = (binary.path, 0, 0)
    if key in _cache:
        return _cache[key]
    cached = _read_cache(binary)
    if cached is not None:
        raw, v, table, switch_names = cached
    else:
        raw, v, table, switch_names = _scan(binary)
        _write_cache(binary, raw, v, table, switch_names)
    if not any(n.startswith("v8dbg_") for n in raw):
        raise V8DbgError(f"{binary.path} carries no V8 postmortem metadata (v8dbg_* symbols); "
                         "use an official node release binary")
    consts, fields, type_names, types, node = _parse(raw)
    # V8's own names fill what the metadata leaves unnamed (its names win).
    for itype, tname in sorted(switch_names.items()):
        type_names.setdefault(itype, tname)
        types.setdefault(tname, itype)
    md = Metadata(v, consts, fields, type_names, types, node, binary.build_id, binary.path,
                  builtins=table)
    layouts.apply(md)
    _cache[key] = md
    return md


def _read_cache(binary: ElfFile) -> tuple[dict[str, int], tuple[int, int, int, int],
                                          BuiltinTable | None, dict[int, str]] | None:
    # The version in the kind retires caches written before a format change.
    doc = binary.side_cache(f"meta{_CACHE_FORMAT}")
    if doc is None:
        return None
    try:
        raw = {str(k): int(v) for k, v in doc["raw"].items()}
        ver = tuple(int(x) for x in doc["version"])
        if len(ver) != 4:
            return None
        table = BuiltinTable.from_json(doc["builtins"]) if doc.get("builtins") else None
        names = {int(k): str(n) for k, n in doc["type_names"].items()}
        return raw, ver, table, names  # type: ignore[return-value]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_cache(binary: ElfFile, raw: dict[str, int], v: tuple[int, int, int, int],
                 table: BuiltinTable | None, names: dict[int, str]) -> None:
    binary.keep_side_cache(f"meta{_CACHE_FORMAT}", {
        "raw": raw, "version": list(v), "builtins": table.to_json() if table else None,
        "type_names": {str(k): n for k, n in names.items()}})


def _scan(binary: ElfFile) -> tuple[dict[str, int], tuple[int, int, int, int],
                                    BuiltinTable | None, dict[int, str]]:
    """Read every postmortem constant and the V8 version from the binary's data,
    V8's own instance type names, and a stripped binary's builtins from V8's
    own tables."""
    syms = binary.symbols_matching(_SYMBOL_PATTERN)
    raw: dict[str, int] = {}
    version = [0, 0, 0, 0]
    vnames = {"major": 0, "minor": 1, "build": 2, "patch": 3}
    # The embedded builtins' code: its start is a text label (named `..._data_`
    # in V8 10, the bare name later), its size a 32-bit constant.
    for name in (_BLOB + "data_", _BLOB):
        addr = syms.get(name)
        if addr is not None and binary.is_executable(addr):
            raw["EmbeddedBlobCodeStart"] = addr
            break
    size_at = syms.get(_BLOB + "size_")
    if size_at is not None and binary.read(size_at, 4):
        raw["EmbeddedBlobCodeSize"] = struct.unpack("<I", binary.read(size_at, 4) or b"\0" * 4)[0]
    for name, addr in syms.items():
        if name.startswith(_BLOB) or name in typenames.SYMBOLS:
            continue
        if name.endswith("embedder_E"):
            number = _embedder_number(binary, addr)
            if number is not None:
                raw["V8EmbedderNumber"] = number
            continue
        data = binary.read(addr, 4)
        if data is None or len(data) < 4:
            if not binary.in_bss(addr):
                continue
            data = b"\0\0\0\0"  # zero-initialized (.bss) constant
        value = struct.unpack("<i", data)[0]
        if name.startswith("_ZN2v88internal7Version"):
            for k, i in vnames.items():
                if name.endswith(k + "_E"):
                    version[i] = value
        else:
            raw[name] = value
    v = (version[0], version[1], version[2], version[3])
    table = None
    if "EmbeddedBlobCodeStart" not in raw and binary.section(".symtab") is None:
        # A stripped binary: the builtins are the code without unwind tables;
        # V8's tables name them and place them exactly.
        from ..inferior.cfi import uncovered
        # Usually the longest stretch; a few runners-up are tried (node 19.0's
        # longest is other code), each checked byte for byte by the search.
        spans = uncovered(binary, _BLOB_CANDIDATES)
        span = spans[0] if spans else None
        for cand in spans:
            table = find_builtins(binary, cand, layouts.facts(v),
                                  layouts.embedded_layout_sizes(v))
            if table is not None:
                break
        if table is not None:
            raw["EmbeddedBlobCodeStart"], raw["EmbeddedBlobCodeSize"] = (table.code_start,
                                                                         table.code_size)
        elif span is not None:
            raw["EmbeddedBlobCodeStart"], raw["EmbeddedBlobCodeSize"] = span[0], span[1] - span[0]
    return raw, v, table, typenames.read(binary, syms)


def _embedder_number(binary: ElfFile, addr: int) -> int | None:
    """N of V8's embedder string "-node.N" (Version::embedder_, a pointer to
    it): node bumps it with every patch it makes to V8 within a line."""
    ptr = binary.read(addr, 8)
    if ptr is None or len(ptr) < 8:
        return None
    text = binary.read(struct.unpack("<Q", ptr)[0], 32) or b""
    m = re.match(rb"-node\.([0-9]{1,6})\x00", text)
    return int(m.group(1)) if m else None


_warned: set[str] = set()


def warn_once(message: str, again: bool = False) -> None:
    """A warning printed once per process (every time with `again`), to stderr
    (front ends show stderr)."""
    if message in _warned and not again:
        return
    _warned.add(message)
    print(f"v8dbg: warning: {message}", file=sys.stderr)


def note_once(message: str) -> None:
    """An informational line, once per process, to stderr."""
    key = "note:" + message
    if key in _warned:
        return
    _warned.add(key)
    print(f"v8dbg: note: {message}", file=sys.stderr)
