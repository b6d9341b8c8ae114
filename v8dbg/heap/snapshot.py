"""A V8 `.heapsnapshot` of a heap, from its graph: the file Chrome DevTools'
Memory tab and memlab load.

The format is the one the same node line's V8 writes (meta from
v8/layouts.py): sections in V8's order, strings last. Node 0 is the
synthetic root, node 1 `(GC roots)`, then the root groups (`(Stack roots)`,
...), then the heap objects in address order. Nodes are typed and named as
V8HeapExplorer does: JS objects by V8's constructor name (the census's
names, shapes.py), functions `closure` by their name, strings by their value
(the first 1024 characters), maps `system / Map`, other internals `system /
TypeName` with V8's node type for them. Self sizes are the objects' sizes.
Ids are odd, as V8's: the root 1, `(GC roots)` 3, the groups 5, 7, ..., the
objects after them in address order, so the same core gives the same ids.
Edges are typed and named by edges.py. After the objects come V8's `native`
nodes `system / JSArrayBufferData`, one per ArrayBuffer backing store (its
byte length its self size), ids after the objects'.

Only what some root reaches is written (V8 collects garbage first);
`include_unreachable` keeps the rest, unconnected, which DevTools hangs off
the root itself. The nodes and edges are streamed in chunks: the file is
never held whole in memory.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import deque
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ..errors import DecodeError, TargetMemoryError
from ..interrupt import check_interrupted
from ..v8 import rootnames
from ..v8.layouts import heap_snapshot_meta, script_context_table_is_array
from . import census, mapped, roots
from .arrays import spliced
from . import graph as gmod
from .edges import (Extra, MapCodes, NodeMaps, StringTable, Typed, buffer_data,
                    extra_edges, type_edges)
from .locations import Location, Locations
from .release import free_pages, free_pages_if_grown
from .selfsize import sizes_of
from .strtable import Bulk, gather

if TYPE_CHECKING:
    from ..program import Program

MAX_NAME = 1024  # characters of a string node's name, as V8 cuts them
CHUNK = 1 << 16  # nodes per chunk written
EDGE_CHUNK = 1 << 19  # edges per chunk of nodes typed and written (but a node's all)
ROWS = 1 << 17  # rows formatted at a time
# One-byte strings named by one call of StringTable.add_bulk (which adds
# the empty ones and those of digits first of each call's: the strings'
# order in the file follows from it).
NAMES_PIECE = 1 << 17

# V8's types of internal objects it files as code (GetSystemEntryType), by
# instance type name without `_TYPE`.
_CODE_TYPES = ("ALLOCATION_SITE", "ARRAY_BOILERPLATE_DESCRIPTION", "BYTECODE_ARRAY",
               "BYTECODE_WRAPPER", "CLOSURE_FEEDBACK_CELL_ARRAY", "CODE", "CODE_WRAPPER",
               "FEEDBACK_CELL", "FEEDBACK_METADATA", "FEEDBACK_VECTOR", "INSTRUCTION_STREAM",
               "INTERPRETER_DATA", "LOAD_HANDLER", "OBJECT_BOILERPLATE_DESCRIPTION",
               "PREPARSE_DATA", "REG_EXP_BOILERPLATE_DESCRIPTION", "SCOPE_INFO",
               "STORE_HANDLER", "TEMPLATE_OBJECT_DESCRIPTION", "TURBOFAN_BITSET_TYPE",
               "TURBOFAN_HEAP_CONSTANT_TYPE", "TURBOFAN_OTHER_NUMBER_CONSTANT_TYPE",
               "TURBOFAN_RANGE_TYPE", "TURBOFAN_UNION_TYPE", "UNCOMPILED_DATA_WITH_PREPARSE_DATA",
               "UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA", "SHARED_FUNCTION_INFO",
               "TRUSTED_BYTE_ARRAY")
_ARRAY_TYPES = ("FIXED_ARRAY", "FIXED_DOUBLE_ARRAY", "BYTE_ARRAY")
_SHAPE_TYPES = ("MAP", "DESCRIPTOR_ARRAY", "TRANSITION_ARRAY", "PROTOTYPE_INFO", "ENUM_CACHE")
# Oddballs' own types (V8 13.6+ gives some their own); named as they print
# where the version says (SnapshotOddballNames).
_ODDBALL_TYPES = ("ODDBALL", "UNDEFINED", "NULL", "BOOLEAN")


@dataclass
class Written:
    """What was written."""

    nodes: int
    edges: int
    strings: int
    unreachable: int  # objects no root reaches (left out unless asked for)
    bytes: int
    notes: list[str] = field(default_factory=list)


def _is_fixed_array_kind(base: str) -> bool:
    """Whether V8 counts an instance type among its FixedArrays (the hash
    tables and dictionaries built on one), which its snapshot files as arrays."""
    return (("HASH_TABLE" in base or "DICTIONARY" in base or base.startswith("ORDERED_HASH"))
            and not base.startswith(("SMALL_ORDERED", "SWISS")))


def system_name(type_name: str) -> str:
    """`system / Name` of an instance type (`ACCESSOR_PAIR_TYPE` -> AccessorPair)."""
    base = type_name[:-5] if type_name.endswith("_TYPE") else type_name
    return "system / " + "".join(w.capitalize() for w in base.split("_"))


class _Namer:
    """V8's node type (index into the meta's types) and name, per map and object."""

    def __init__(self, prog: Program, types: list[str], strings: StringTable) -> None:
        self.prog = prog
        self.sh = prog.shapes
        self.h = prog.heap
        self.v = prog.values
        self.t = {n: i for i, n in enumerate(types)}
        self.s = strings
        self.md = self.h.md
        self.js_first = self.md.consts.get("FirstJSReceiverType",
                                           self.md.types.get("JS_PROXY_TYPE", 1 << 16))
        self.per_map: dict[int, tuple[int, int | None, str]] = {}
        self.seq: dict[int, bool | None] = {}
        # (sfi, own name?) -> name; (sfi, None): its own name is unreadable
        self.sfi_names: dict[tuple[int, bool | None], str] = {}

    def of_map(self, m: int) -> tuple[int, int | None, str]:
        """(node type, name index or None when named per object, per-object rule)."""
        got = self.per_map.get(m)
        if got is None:
            got = self.per_map[m] = self._map(m)
        return got

    def _map(self, m: int) -> tuple[int, int | None, str]:
        T, S = self.t, self.s
        try:
            it = self.h.map_type(m)
        except (DecodeError, TargetMemoryError):
            return T["hidden"], S.add("system / Unknown"), ""
        tn = self.h.type_name(it)
        base = tn[:-5] if tn.endswith("_TYPE") else tn
        if self.h.is_string_type(it):
            if "CONS" in base:
                return T["concatenated string"], S.add("(concatenated string)"), ""
            if "SLICED" in base:
                return T["sliced string"], S.add("(sliced string)"), ""
            return T["string"], None, "string"
        if it >= self.js_first:
            if self.sh.is_proxy_type(it):
                return T["hidden"], S.add("system / JSProxy"), ""
            if self.sh.is_closure_type(it):
                if self.sh.is_function_type(it):
                    return T["closure"], None, "closure"
                return T["closure"], S.add("native_bind"), ""
            if base == "JS_REG_EXP":
                return T["regexp"], None, "regexp"
            return T["object"], None, "object"
        if base == "HEAP_NUMBER":
            return T["number"], S.add("heap number"), ""
        if base == "SYMBOL":
            return T["symbol"], None, "symbol"
        if base in _ODDBALL_TYPES and self.md.consts.get("SnapshotOddballNames"):
            return T["hidden"], None, "oddball"
        if base == "BIGINT":
            return T["bigint"], S.add("bigint"), ""
        if base == "NATIVE_CONTEXT":
            return T["hidden"], S.add("system / NativeContext"), ""
        if base == "SCRIPT_CONTEXT_TABLE" and script_context_table_is_array(
                tuple(self.md.v8_version)):
            return T["array"], S.add(""), ""
        if "CONTEXT" in base and "INFO" not in base and base != "SCRIPT_CONTEXT_TABLE":
            return T["object"], S.add("system / Context"), ""
        if base == "SHARED_FUNCTION_INFO":
            return T["code"], None, "shared"
        if base in _CODE_TYPES:
            return T["code"], S.add(system_name(tn)), ""
        if base in _ARRAY_TYPES or _is_fixed_array_kind(base):
            return T["array"], S.add(""), ""
        if base == "MAP":
            return T.get("object shape", T["hidden"]), None, "map"
        if base in _SHAPE_TYPES:
            return T.get("object shape", T["hidden"]), S.add(system_name(tn)), ""
        return T["hidden"], S.add(system_name(tn)), ""

    def typed(self, rule: str, addrs, read_only) -> tuple[list[int], list[int]]:
        """(node type, name) of each object of a map whose objects V8 types
        one by one: a map (a read-only one `hidden`: V8's own, no object's
        shape; a string map named for its strings), a symbol (a private one
        `hidden / private symbol`), an oddball (named as it prints)."""
        T, S, h = self.t, self.s, self.h
        kinds: list[int] = []
        names: list[int] = []
        shape = T.get("object shape", T["hidden"])
        for a, ro in zip(addrs, read_only):
            kind, name = T["hidden"], "system / Map"
            try:
                if rule == "map":
                    kind = T["hidden"] if ro else shape
                    it = h.map_type(a)
                    if h.is_string_type(it):
                        name = "system / Map (" + system_name(h.type_name(it))[9:] + ")"
                elif rule == "symbol":
                    kind, name = T["symbol"], "symbol"
                    if h.mem.u32(a - 1 + self.md.off("Symbol", "flags")) & \
                            self.md.consts.get("SymbolPrivateMask", 1):
                        kind, name = T["hidden"], "private symbol"
                else:
                    name = "system / Oddball"
                    name = self.v.s.text(h.mem.u64(a - 1 + self.md.off("Oddball", "to_string")),
                                         MAX_NAME)
            except (DecodeError, TargetMemoryError, KeyError):
                pass
            kinds.append(kind)
            names.append(S.add(name))
        return kinds, names

    def sequential(self, m: int) -> bool | None:
        """For a sequential string's map: whether its characters are one byte
        each; None for any other map."""
        got = self.seq.get(m)
        if got is None and m not in self.seq:
            st = self.v.s
            try:
                it = self.h.map_type(m)
                got = None
                if self.h.is_string_type(it) and it & st.rep_mask == st.seq:
                    got = it & st.enc_mask == st.one_byte_tag
            except (DecodeError, TargetMemoryError):
                got = None
            self.seq[m] = got
        return got

    def _debug_name(self, sfi: int) -> str:
        """A SharedFunctionInfo's name (its inferred one where it has no own
        name), read once for it and all its closures."""
        return self._sfi_name(sfi, False)

    def _own_name(self, sfi: int) -> str:
        """A SharedFunctionInfo's own name (never an inferred one, as V8 names
        closures), read once for all its closures."""
        return self._sfi_name(sfi, True)

    def _sfi_name(self, sfi: int, own: bool) -> str:
        got = self.sfi_names.get((sfi, own))
        if got is None:
            try:
                if own:
                    got = self.v.f.name(sfi)
                else:
                    # (The debug name is the own name, else the inferred one:
                    # the own name read once for both; unreadable, no name.)
                    got = self._sfi_name(sfi, True)
                    if not got and (sfi, None) not in self.sfi_names:
                        got = self.v.f.inferred_name(sfi)
            except (DecodeError, TargetMemoryError):
                got = ""  # unreadable: V8's name of an anonymous function
                if own:
                    self.sfi_names[(sfi, None)] = got  # (marks it unreadable)
            self.sfi_names[(sfi, own)] = got
        return got

    def of_object(self, rule: str, addr: int, m: int) -> int:
        """The name of an object its map does not name."""
        try:
            if rule == "string":
                return self.s.add(self.v.s.text(addr, MAX_NAME)[:MAX_NAME])
            if rule == "object":
                return self.s.add(self.sh.name_of(addr, m))
            if rule == "closure":  # the function's own name, never an inferred one
                try:
                    sfi = self.v.f.shared(addr)
                except (DecodeError, TargetMemoryError):
                    return self.s.add("")
                return self.s.add(self._own_name(sfi))
            if rule == "shared":
                return self.s.add(self._debug_name(addr))
            if rule == "regexp":
                src = self.h.field(addr, "JSRegExp", "source")
                return self.s.add(self.v.s.text(src, MAX_NAME))
        except (DecodeError, TargetMemoryError, KeyError):
            pass
        return self.s.add("")


_CODECS = ("latin-1", "utf-16-le")  # a sequential string's, by its encoding


def _name_sequential(np, prog: Program, g: gmod.Graph, seq, maps, pages, namer: _Namer,
                     nname) -> None:
    """Name sequential strings (most of a heap's strings) by their characters,
    read from their pages in bulk rather than one string at a time: where each
    string's characters are and how many is worked out in arrays. One-byte
    strings are named by their characters themselves, gathered from every
    page and added to the table at once (StringTable.add_bulk: no Python
    string each); two-byte ones are decoded a page at a time (_texts).
    seq: per node, 1 for a one-byte sequential string, 2 for a two-byte one
    (nodes in address order without a sort)."""
    st = prog.values.s
    w = prog.heap_state.walker
    # (Node indices in 32 bits, as the graph's edges hold them; each page's
    # strings' addresses read from the graph's as the page comes.)
    nodes = np.flatnonzero(seq).astype(np.uint32)
    one_all = seq[nodes] == 1
    add_all = namer.s.add_all
    # The one-byte strings' nodes and characters, page after page, added to
    # the table some NAMES_PIECE strings at a time.
    bulk_nodes: list = []
    bulk_chars: list = []
    bulk_lens: list = []

    def flush() -> None:
        if not bulk_nodes:
            return
        chars = np.concatenate(bulk_chars)
        lens = np.concatenate(bulk_lens)
        ends = np.cumsum(lens)
        nname[np.concatenate(bulk_nodes)] = namer.s.add_bulk(chars, ends - lens, ends)
        bulk_nodes.clear()
        bulk_chars.clear()
        bulk_lens.clear()

    pending = 0
    # Each page's strings: where they start and end among `nodes`, for all
    # pages at once.
    spans = np.array([(p.start, p.end) for p in pages], dtype=np.uint64).reshape(-1)
    at = np.searchsorted(nodes, np.searchsorted(g.node_addr, spans)).tolist()
    del spans
    for k, p in enumerate(pages):
        lo, hi = at[2 * k], at[2 * k + 1]
        if hi <= lo:
            continue
        check_interrupted()
        data = w.read_page(p)
        sel = nodes[lo:hi]
        addr = g.node_addr[sel]
        if data is None:
            nname[sel] = [namer.of_object("string", int(g.node_addr[i]), int(maps[i]))
                          for i in sel.tolist()]
            continue
        buf = np.frombuffer(data, dtype=np.uint8)
        offs = (addr - np.uint64(1 + p.start)).astype(np.int64)
        lens = buf[(offs + st.o_len)[:, None] + np.arange(4)].copy().view("<i4").ravel()
        lens = lens.astype(np.int64)
        one = one_all[lo:hi]
        first = offs + np.where(one, st.o_chars1, st.o_chars2)
        nb = np.minimum(np.maximum(lens, 0), MAX_NAME) * np.where(one, 1, 2)
        bad = (lens < 0) | (first + nb > offs + g.node_size[sel].astype(np.int64))
        ends = first + nb
        fast = one & ~bad
        if fast.any():
            f, ln = first[fast], nb[fast]
            bulk_nodes.append(sel[fast])
            bulk_lens.append(ln)
            bulk_chars.append(gather(np, buf, f, ln))
            pending += len(ln)
            if pending >= NAMES_PIECE:
                flush()
                pending = 0
                g.drop_pages()  # (the nodes' addresses and sizes read so far)
                free_pages_if_grown()
        if fast.all():
            continue
        # Two-byte strings, and strings that are not all on the page (each
        # read on its own), in order.
        raw = data if isinstance(data, bytes) else bytes(buf)
        rest = np.flatnonzero(~fast)
        if not bad.any():
            nname[sel[rest]] = add_all(_texts(np, raw, first[rest], ends[rest], one[rest]))
            continue
        codecs = np.where(one, 0, 1).tolist()
        fl, el, bl = first.tolist(), ends.tolist(), bad.tolist()
        nname[sel[rest]] = [
            namer.of_object("string", int(addr[j]), int(maps[sel[j]])) if bl[j]
            else add_all([raw[fl[j]:el[j]].decode(_CODECS[codecs[j]], "surrogatepass")])[0]
            for j in rest.tolist()]
    flush()


def _texts(np, raw: bytes, first, ends, one) -> list[str]:
    """The strings at raw[first:ends], one byte a character where `one` says,
    else two: the one-byte ones sliced from the page decoded once as Latin-1
    (the same characters), with no step of Python per string."""
    if one.all():
        page = raw.decode("latin-1")
        return list(map(page.__getitem__, map(slice, first.tolist(), ends.tolist())))
    two = [raw[f:e].decode("utf-16-le", "surrogatepass")
           for f, e in zip(first[~one].tolist(), ends[~one].tolist())]
    if not one.any():
        return two
    page = raw.decode("latin-1")
    out = np.empty(len(one), dtype=object)
    out[~one] = two
    out[one] = list(map(page.__getitem__, map(slice, first[one].tolist(), ends[one].tolist())))
    return out.tolist()


_LUT: list = []  # 4-digit groups as little-endian words, made once (see _digits)


def _digits(np, c, w: int):
    """The column's numbers as w ASCII digits each, right-aligned, the bytes
    left of a number's first digit 0 (not "0"): an (n, w) byte matrix made
    four digits at a time from a table, whose zero bytes are then dropped
    from the whole output at once rather than masked column by column."""
    if not _LUT:
        n = np.arange(10000)
        full = np.stack([48 + n // 1000, 48 + n // 100 % 10, 48 + n // 10 % 10, 48 + n % 10],
                        axis=1).astype(np.uint8)
        top = full.copy()  # a number's first group: no leading zeros ("0" stays)
        top[(n[:, None] < np.array([1000, 100, 10, 1])[None, :]) & (np.arange(4) < 3)] = 0
        # 0 .. 9999: a group with digits above it; + 10000: the first; 20000: none.
        _LUT.append(np.concatenate([full.view("<u4").ravel(), top.view("<u4").ravel(),
                                    np.zeros(1, dtype="<u4")]))
    lut = _LUT[0]
    g = (w + 3) // 4
    words = np.empty((len(c), g), dtype="<u4")
    q = c  # the number's digits down to group j
    for j in range(g - 1, -1, -1):
        # The group's table index: its four digits, + 10000 where it is the
        # number's first group (nothing above it), + 10000 more where the
        # number has no digit this far left (but the last group: "0").
        if j:
            qn = q // 10000
            idx = q - qn * 10000
            np.add(idx, 10000, out=idx, where=qn == 0)
        else:  # (the leftmost group: the number's first, w digits in all)
            qn, idx = None, q + 10000
        if j < g - 1:
            np.add(idx, 10000, out=idx, where=q == 0)
        words[:, j] = lut[idx]
        q = qn
    return words.view(np.uint8)[:, 4 * g - w:]


def _narrow(np, c, w: int):
    """Non-negative integers of at most w digits in the narrowest type the
    digits are worked out in: 32 bits unsigned below ten digits (a 64-bit
    division is several times slower), else 64."""
    return c.astype(np.uint32 if w < 10 else np.int64, copy=False)


def _decimal(np, cols) -> bytes:
    """Rows of non-negative integers (parallel columns) as `1,22,333,...` in
    ASCII, row after row, formatted in bulk (the nodes and edges are most of a
    snapshot's bytes). Each column is as wide as its largest number, so that
    the bytes made and then dropped (left of the first digit) are few."""
    return b",".join(_decimal_parts(np, cols))


def _decimal_parts(np, cols):
    """`_decimal` of ROWS rows at a time (one node may have a million edges):
    bounded matrices, and pieces the writer streams without joining them."""
    for a in range(0, len(cols[0]), ROWS):
        yield _decimal_rows(np, [c[a:a + ROWS] for c in cols])


def _decimal_rows(np, cols) -> memoryview:
    n = len(cols[0])
    cols = [np.asarray(c) for c in cols]
    widths = [len(str(int(c.max()))) for c in cols]
    mat = np.empty((n, sum(widths) + len(widths)), dtype=np.uint8)
    pos = 0
    for c, w in zip(cols, widths):
        if w == 1:  # one digit each (a type, a zero column): no table
            np.add(c, ord("0"), out=mat[:, pos], casting="unsafe")
        else:
            mat[:, pos:pos + w] = _digits(np, _narrow(np, c, w), w)
        mat[:, pos + w] = ord(",")
        pos += w + 1
    flat = mat.ravel()
    return memoryview(flat[flat != 0][:-1])


def _merged_rows(np, kinds, names, to, k: int, xpos, xkinds, xnames, xrows):
    """The edges (kind, name, row * k) formatted as `_decimal_parts`, with
    the extra edges xkinds/xnames/xrows inserted, each before the edge
    numbered xpos (ascending; len(kinds) for after the last): a piece of
    ROWS edges at a time, so that a node of a million edges needs no
    merged copy of its arrays."""
    n, m = len(kinds), len(xpos)
    p = xi = 0
    while p < n or xi < m:
        q = min(p + ROWS, n)
        xj = m if q == n else int(np.searchsorted(xpos, q, side="left"))
        kk, nn, tt = kinds[p:q], names[p:q], to[p:q].astype(np.int64) * k
        if xj > xi:
            kk, nn, tt = spliced(np, [kk, nn, tt], xpos[xi:xj] - p,
                                 [xkinds[xi:xj], xnames[xi:xj],
                                  xrows[xi:xj].astype(np.int64) * k])
        yield from _decimal_parts(np, [kk, nn, tt])
        p, xi = q, xj


def _quoted(np, nums) -> memoryview | bytes:
    """Non-negative integers as the JSON strings `"1",\n"22",\n...` (a run of
    the string table's numbers), formatted in bulk as `_decimal` does."""
    n = len(nums)
    if not n:
        return b""
    c = np.asarray(nums)
    w = len(str(int(c.max())))
    c = _narrow(np, c, w)
    mat = np.zeros((n, w + 4), dtype=np.uint8)
    mat[:, w + 1:] = np.frombuffer(b'",\n', dtype=np.uint8)
    mat[:, 1:w + 1] = _digits(np, c, w)
    # The opening quote just left of the first digit.
    first = np.argmax(mat[:, 1:w + 1] != 0, axis=1)
    mat[np.arange(n), first] = ord('"')
    flat = mat.ravel()
    return memoryview(flat[flat != 0][:-2])


# Read-only objects V8's snapshot draws no slot edge to (IsEssentialObject):
# oddballs and holes, the empty arrays, and the maps of these types.
_NONESSENTIAL_MAPS = ("FIXED_ARRAY_TYPE", "CELL_TYPE", "PROPERTY_CELL_TYPE",
                      "SHARED_FUNCTION_INFO_TYPE", "FREE_SPACE_TYPE", "FILLER_TYPE")
_EMPTY_ARRAYS = ("FIXED_ARRAY_TYPE", "BYTE_ARRAY_TYPE", "WEAK_FIXED_ARRAY_TYPE")


def _nonessential(np, prog: Program, g: gmod.Graph, maps) -> tuple[Any, Any]:
    """(Bool per node: a read-only object V8 draws no slot edge to; bool per
    node: a hole, which is no element either)."""
    h = prog.heap
    ro = np.flatnonzero(g.in_read_only())
    out = np.zeros(g.nodes, dtype=bool)
    hole = np.zeros(g.nodes, dtype=bool)
    if not len(ro):
        return out, hole
    header = h.md.off("DescriptorArray", "header_size")
    um, inv = np.unique(maps[ro], return_inverse=True)
    names = []
    for m in um.tolist():
        try:
            names.append(h.type_name(h.map_type(int(m))))
        except (DecodeError, TargetMemoryError):
            names.append("")
    for i, t in zip(ro.tolist(), [names[k] for k in inv.tolist()]):
        size = int(g.node_size[i])
        addr = int(g.node_addr[i])
        if t in ("ODDBALL_TYPE", "HOLE_TYPE"):
            out[i] = True
            try:
                hole[i] = t == "HOLE_TYPE" or h.oddball_name(addr) == "hole"
            except (DecodeError, TargetMemoryError):
                pass
        elif t in _EMPTY_ARRAYS:
            out[i] = size <= 16
        elif t in ("DESCRIPTOR_ARRAY_TYPE", "STRONG_DESCRIPTOR_ARRAY_TYPE"):
            out[i] = size <= header
        elif t == "MAP_TYPE":
            try:
                out[i] = h.type_name(h.map_type(addr)) in _NONESSENTIAL_MAPS
            except (DecodeError, TargetMemoryError):
                pass
    return out, hole


def _left_out(np, g: gmod.Graph, src, lo: int, hi: int, kinds, nonessential) -> Any:
    """Which of edges lo .. hi-1 (typed: their `kinds`) V8 leaves out
    (positions from lo; None if none): its slot edges (internal, hidden,
    weak) to the read-only objects that are no object of the program's, as
    IsEssentialObject has it; an object's property and a context's variable
    that hold one are edges."""
    cand = nonessential[g.edge_to[lo:hi]] & (src >= g.first_object)
    if not cand.any():
        return None
    cand &= (kinds == gmod.E_INTERNAL) | (kinds == gmod.E_HIDDEN) | (kinds == gmod.E_WEAK)
    return np.flatnonzero(cand)


class _Ephemerons:
    """V8's two edges of each WeakMap and WeakSet entry whose key and value are
    written: from the key and from the table to the value, `internal`, named
    `N / part of key (KEY @id) -> value (VALUE @id) pair in WeakMap (table
    @id)` (N the edge's number among its source's, from 1). DevTools knows
    the table's by that name and lets only the key's retain; the graph's
    slots of the table stay `weak`."""

    def __init__(self, np, g: gmod.Graph, keep, nname, ids, strings: StringTable) -> None:
        self.np, self.g = np, g
        pairs = g.ephemerons if g.ephemerons is not None else np.zeros((0, 3), np.int64)
        self.pos = np.flatnonzero(g.edge_name == gmod.EPHEMERON) if len(pairs) else \
            np.zeros(0, np.int64)
        pid = ids(pairs) if len(pairs) else pairs  # nodes > 0: objects
        self.text = [f" / part of key ({strings.items[int(nname[k])]} @{ik}) -> value "
                     f"({strings.items[int(nname[v])]} @{iv}) pair in WeakMap "
                     f"(table @{it})"
                     for (t, k, v), (it, ik, iv) in zip(pairs.tolist(), pid.tolist())]
        ok = keep[pairs[:, 0]] & keep[pairs[:, 1]] & keep[pairs[:, 2]] if len(pairs) else \
            np.zeros(0, bool)
        self.sel = np.flatnonzero(ok)
        self.table, self.value = pairs[self.sel, 0], pairs[self.sel, 2]

    def table_names(self, strings: StringTable):
        """The names of the table-to-value edges (`self.table`), added to `strings`."""
        np, g = self.np, self.g
        # The table's edges are its slots', then these, in entry order.
        order = np.argsort(self.table, kind="stable")
        t = self.table[order]
        rank = np.arange(len(t)) - np.searchsorted(t, t)
        n = np.empty(len(t), np.int64)
        n[order] = g.first_edge[t + 1] - g.first_edge[t] + rank + 1
        return np.array([strings.add(f"{k}{self.text[i]}")
                         for k, i in zip(n.tolist(), self.sel.tolist())], dtype=np.uint32)

    def name_key_edges(self, lo: int, hi: int, typed, strings: StringTable) -> None:
        """Kind and name of the key-to-value edges among graph edges lo .. hi-1."""
        np, g = self.np, self.g
        a, b = np.searchsorted(self.pos, [lo, hi])
        for j in range(int(a), int(b)):
            e = int(self.pos[j])
            s = int(np.searchsorted(g.first_edge, e, side="right")) - 1
            typed.kinds[e - lo] = gmod.E_INTERNAL
            typed.names[e - lo] = strings.add(f"{e - int(g.first_edge[s]) + 1}{self.text[j]}")


def _node_ranges(np, fe, first: int, last: int) -> list[tuple[int, int]]:
    """Nodes first .. last-1 in ranges of CHUNK nodes and EDGE_CHUNK edges at
    most (a node with more edges alone in its range): what a range's edges
    need while typed and written stays bounded (the GC roots' few nodes may
    hold millions of edges, the string table's)."""
    out = []
    a = first
    while a < last:
        b = int(np.searchsorted(fe, int(fe[a]) + EDGE_CHUNK, side="right")) - 1
        b = max(a + 1, min(b, a + CHUNK, last))
        out.append((a, b))
        a = b
    return out


# Edges of one range of nodes typed and written at once, at most: a node
# with more edges (an array of a million elements) is taken in pieces of
# this many, cut where _typed would cut them (TYPE_PIECE divides it). The
# GC roots' groups are not cut (their edges are numbered per range).
EDGE_PIECE = 1 << 18


def _edge_pieces(np, fe, ranges, first_object: int, whole=None) -> list[tuple[int, int, int, int]]:
    """(first node, end node, first edge, end edge) of each piece of the
    ranges' edges that the writer types and writes at once: a range whole,
    or one of more than EDGE_PIECE edges in pieces of that many. A range
    holding one of the edges `whole` (sorted positions: the ephemerons'
    key-to-value edges, whose names are added after the range's others) is
    not cut."""
    out = []
    for a, b in ranges:
        lo, hi = int(fe[a]), int(fe[b])
        if hi - lo <= EDGE_PIECE or a < first_object or (
                whole is not None and len(whole)
                and int(np.searchsorted(whole, hi)) > int(np.searchsorted(whole, lo))):
            out.append((a, b, lo, hi))
            continue
        out.extend((a, b, x, min(x + EDGE_PIECE, hi)) for x in range(lo, hi, EDGE_PIECE))
    return out


class _Rows:
    """Each kept node's row in the file: graph node i > 0 is row i + 1 less
    the nodes left out before it (node 0 is row 0, `(GC roots)` row 1), a
    native node g.nodes + k row `native` + k. Worked out from the nodes left
    out (few: the garbage), not held as a row per node."""

    def __init__(self, np, keep, dtype) -> None:
        self.np, self.dtype = np, dtype
        self.n = len(keep)
        self.out = np.flatnonzero(~keep)
        self.native = 0

    def __getitem__(self, nodes) -> Any:
        np = self.np
        i = np.asarray(nodes, dtype=np.int64)
        r = i - np.searchsorted(self.out, i) + (i > 0)
        if bool((i >= self.n).any()):
            r = np.where(i >= self.n, self.native + i - self.n, r)
        return r.astype(self.dtype)


def _inserted(np, xe: Extra, src, kinds, names, to) -> Extra:
    """xe with more edges, each after xe's edges of its source, in their order
    (where a stable sort of both by source puts them): inserted into the
    sorted arrays, not sorted again with them; xe's columns replaced one at
    a time (no more than one old column held beside its new one)."""
    order = np.argsort(src, kind="stable")
    src = np.asarray(src)[order].astype(xe.src.dtype)
    at = np.searchsorted(xe.src, src, side="right")
    for col, new in (("kinds", np.asarray(kinds)[order]), ("names", np.asarray(names)[order]),
                     ("to", np.asarray(to)[order].astype(xe.to.dtype)), ("src", src)):
        old = getattr(xe, col)
        setattr(xe, col, None)
        setattr(xe, col, spliced(np, [old], at, [new])[0])
        del old
    return xe


def _root_names(np, prog: Program, g: gmod.Graph, strings: StringTable) -> tuple[Any, Any]:
    """(nodes, name) of the roots table's objects, ascending by node: the name
    of the first root that holds each (V8's GetStrongGcSubrootName, by which
    its snapshot names a GC sub-root's edge to it), its index in `strings`.
    Empty where the table or its names cannot be read."""
    none = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint32)
    vals = roots.table_roots(prog, g.heap)
    names = rootnames.root_names(prog, len(vals)) if vals else None
    if not names:
        return none
    first: dict[int, str] = {}
    for v, n in zip(vals, names):
        first.setdefault(v, n)
    idx = g.indices(np.fromiter(first, dtype=np.uint64, count=len(first)))
    ok = np.flatnonzero(idx >= g.first_object)
    if not len(ok):
        return none
    nodes = idx[ok].astype(np.int64)
    ids = np.array(strings.add_all([list(first.values())[k] for k in ok.tolist()]),
                   dtype=np.uint32)
    order = np.argsort(nodes, kind="stable")
    return nodes[order], ids[order]


# Edges typed at a time at most: a node with more (a big array's or hash
# table's slots) is typed a piece at a time, its working arrays bounded.
TYPE_PIECE = 1 << 18


def _typed(np, prog: Program, g: gmod.Graph, src, lo: int, hi: int, maps, is_js,
           strings: StringTable, codes: MapCodes) -> Typed:
    """type_edges of edges lo .. hi-1, TYPE_PIECE edges at a time."""
    if hi - lo <= TYPE_PIECE:
        return type_edges(prog, g, src, lo, hi, maps, is_js, strings, codes=codes)
    kinds = np.empty(hi - lo, dtype=np.uint8)
    names = np.empty(hi - lo, dtype=np.uint32)
    for p in range(lo, hi, TYPE_PIECE):
        q = min(p + TYPE_PIECE, hi)
        t = type_edges(prog, g, src[p - lo:q - lo], p, q, maps, is_js, strings, codes=codes)
        kinds[p - lo:q - lo] = t.kinds
        names[p - lo:q - lo] = t.names
        del t
    return Typed(kinds, names, strings.items)


class _Spilled:
    """Arrays put aside in an unnamed temporary file and taken back in the
    order they were put: the typed edges (and V8's extra ones), made before
    the nodes are written and needed only after them, and the nodes' types
    and names while the edges are typed, are not held in memory meanwhile
    (the kernel's page cache holds them, not this process). Held in memory
    where no temporary file can be made, or from where it can be written no
    more (a full disk). Written unbuffered: an array is whole in the file
    once put, or held (a buffer's write left pending would fail again when
    the file is read, and lose the arrays before it); each read back at its
    own offset."""

    def __init__(self, where: str | None = None) -> None:
        self.f: Any = None
        # Beside the file being written (where the user has room for it; a
        # /tmp in memory would hold it in memory), else the system's place.
        for d in ([where] if where else []) + [None]:
            try:
                self.f = tempfile.TemporaryFile(prefix=".v8dbg-edges-", dir=d, buffering=0)
                break
            except OSError:
                continue
        # (dtype, count, offset) per array in the file, or the array itself.
        self.held: deque = deque()
        self._end = 0  # bytes in the file
        self._full = self.f is None  # (nothing more written to the file)

    def put(self, *arrays) -> None:
        for a in arrays:
            if not self._full:
                try:
                    _write_all(self.f.fileno(), memoryview(a).cast("B"))
                    self.held.append((a.dtype, len(a), self._end))
                    self._end += a.nbytes
                    continue
                except OSError:
                    # (A full disk: this array and the next held in memory;
                    # those in the file before it are read back.)
                    self._full = True
            self.held.append(a)

    def take(self, np) -> Any:
        x = self.held.popleft()
        if not isinstance(x, tuple):
            return x
        dtype, n, off = x
        a = np.empty(n, dtype=dtype)
        buf = memoryview(a).cast("B")
        got = 0
        while got < len(buf):
            k = os.preadv(self.f.fileno(), [buf[got:]], off + got)
            if k <= 0:
                raise OSError("the temporary file of typed edges was cut short")
            got += k
        return a

    def close(self) -> None:
        if self.f is not None:
            self.f.close()


def _write_all(fd: int, buf: memoryview) -> None:
    """Write buf at the file's position, however many writes it takes."""
    while len(buf):
        n = os.write(fd, buf)
        if n <= 0:
            raise OSError("a temporary file took no more bytes")
        buf = buf[n:]


def write(prog: Program, heap: int, out: IO[bytes], include_unreachable: bool = False,
          progress=None, spill_dir: str | None = None) -> Written:
    """Write the heap's snapshot to `out` (a binary stream). What is put aside
    meanwhile goes to unnamed temporary files in `spill_dir` where given."""
    np = gmod.numpy()
    c = census.of(prog, heap)
    g = gmod.build(prog, heap)
    seen = gmod.reached(g)
    keep = np.ones(g.nodes, dtype=bool) if include_unreachable else seen.copy()
    # (Read-only objects nothing reaches are left out too, but are no garbage.)
    unreachable = int((~seen & ~g.in_read_only()).sum())
    del seen
    meta, extra = heap_snapshot_meta(prog.md.v8_version)
    fields = meta["node_fields"]
    types = meta["node_types"][0]
    strings = StringTable()
    strings.add("<dummy>")
    namer = _Namer(prog, types, strings)
    pages = list(c.pages) + list(g.read_only)
    # Each node's map, kept as the distinct maps (sorted once, for every pass
    # that asks) and each node's number among them.
    codes = MapCodes(g.map_words, g.map_code)
    maps = NodeMaps(codes)
    in_ro = g.in_read_only()
    # Output order: root, (GC roots), groups, objects; graph node i > 0 is row i + 1.
    # Node indices and rows in 32 bits where they fit (always, below MAX_NODES
    # objects and as many buffers): half the memory of the per-node arrays.
    ix = np.int32 if 2 * g.nodes < 2**31 else np.int64
    kept = np.flatnonzero(keep).astype(ix)
    rows = len(kept) + 1  # + (GC roots)
    row_of = _Rows(np, keep, ix)
    ntype = np.zeros(g.nodes, dtype=np.uint8)
    nname = np.zeros(g.nodes, dtype=np.uint32)
    synth = types.index("synthetic")
    ntype[:g.first_object] = synth
    nname[0] = strings.add("")
    gc_roots = strings.add("(GC roots)")
    for i, n in enumerate(g.root_names):
        nname[1 + i] = strings.add(n)
    objs = kept[kept >= g.first_object]
    del kept
    is_js = np.zeros(g.nodes, dtype=bool)
    # Sequential strings, named in bulk from their pages: 1 one-byte, 2 two-byte.
    seq = np.zeros(g.nodes, dtype=np.uint8)
    # The objects grouped by map: each map's number among the few distinct ones
    # sorted (a radix sort of small integers), not the 64-bit maps themselves.
    um = codes.maps
    code = codes.code[objs]
    order = np.argsort(code, kind="stable").astype(ix)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(code, minlength=len(um)))))
    del code
    locs = Locations(prog)
    loc_parts: list[tuple[Any, Location]] = []  # (nodes, their location)
    t_object, t_closure = types.index("object"), types.index("closure")
    for k, m in enumerate(um.tolist()):
        if bounds[k] == bounds[k + 1]:
            continue  # (no kept object has it)
        sel = objs[order[bounds[k]:bounds[k + 1]]]
        kind, name, rule = namer.of_map(int(m))
        ntype[sel] = kind
        if kind in (t_object, t_closure, types.index("regexp")):
            is_js[sel] = True
        if kind == t_closure or (kind == t_object and locs.per_object(int(m))):
            # Each its own function's location (closures, generators).
            for j, i in enumerate(sel.tolist()):
                a = int(g.node_addr[i])
                at = locs.of_function(a) if kind == t_closure else locs.of_object(a, int(m))
                if at is not None:
                    loc_parts.append((sel[j:j + 1], at))
        elif kind == t_object:
            at = locs.of_object(int(g.node_addr[sel[0]]), int(m))
            if at is not None:
                loc_parts.append((sel, at))
        if name is not None:
            nname[sel] = name
            continue
        if rule in ("map", "symbol", "oddball"):
            ntype[sel], nname[sel] = namer.typed(rule, g.node_addr[sel].tolist(),
                                                 in_ro[sel].tolist())
            continue
        if rule == "object":
            # (One name for a fast map's objects; a dictionary map's each its own.)
            name, dictionary = namer.sh.map_name(int(m), int(g.node_addr[sel[0]]))
            if not dictionary:
                nname[sel] = strings.add(name)
                continue
        if rule == "string" and namer.sequential(int(m)) is not None:
            seq[sel] = 1 if namer.sequential(int(m)) else 2
            continue
        check_interrupted()
        nname[sel] = [namer.of_object(rule, int(g.node_addr[i]), int(m)) for i in sel.tolist()]
    del objs, order, in_ro
    free_pages()  # (the naming's temporaries)
    if seq.any():
        _name_sequential(np, prog, g, seq, maps, pages, namer, nname)
    del seq
    free_pages(trim=False)  # (the bulk naming's temporaries: the edges' arrays reuse them)
    # Edges of kept nodes to kept nodes, typed in chunks, once: their counts
    # are written before them. Their names go to a table of their own first,
    # whose strings are added to the file's as each chunk is written, in the
    # order typing them there would add them.
    fe = g.first_edge
    # Pieces of edges (`_edge_pieces`), each with edge_strings' size after it.
    edge_chunks: list[tuple[int, int, int, int, int]] = []
    nonessential, hole = _nonessential(np, prog, g, maps)
    first_obj = 5 + 2 * len(g.root_names)

    def ids(sel):
        """V8-style odd ids of graph nodes > 0: the groups 5, 7, ..., the objects after."""
        sel = sel.astype(np.int64)
        return np.where(sel < g.first_object, 3 + 2 * sel,
                        first_obj + 2 * (sel - g.first_object))

    eph = _Ephemerons(np, g, keep, nname, ids, strings)
    # The nodes' types and names wait in a temporary file until the nodes are
    # written: not held while the edges are made and typed.
    node_cols = _Spilled(spill_dir)
    node_cols.put(ntype, nname)
    del ntype, nname
    # V8's edges that are no slot, before the slots' (whose typed chunks are
    # then not held while these are made); the file's strings are added in
    # the same order (the slots' names go to a table of their own).
    xe = extra_edges(prog, g, keep, maps, is_js, strings, skip=hole)
    # Their nodes in 32 bits where the graph's fit (`ix`), as the rows are.
    # (A view where they are 32 bits already: no copy.)
    same = xe.src.dtype.itemsize == np.dtype(ix).itemsize
    xe = Extra(xe.src.view(ix) if same else xe.src.astype(ix), xe.kinds, xe.names,
               xe.to.view(ix) if same else xe.to.astype(ix), xe.globals, xe.notes)
    free_pages(trim=False)  # (the extra edges' parts and sort, done with: reused next)
    xe = _inserted(np, xe, eph.table, np.full(len(eph.table), gmod.E_INTERNAL, np.uint8),
                   eph.table_names(strings), eph.value)
    # ArrayBuffers' backing stores: native nodes after the objects, their
    # graph index g.nodes + k.
    bd = buffer_data(prog, g, keep, maps, codes.maps)
    native = len(bd.stores)
    row_of.native = rows  # (the first native node's row)
    if len(bd.src):
        xe = _inserted(np, xe, bd.src, np.full(len(bd.src), gmod.E_INTERNAL, np.uint8),
                       np.full(len(bd.src), strings.add("backing_store"), np.uint32),
                       g.nodes + bd.data)
    free_pages(trim=False)  # (the backing stores' temporaries: reused next)
    # V8's edges that are no slot: counted now, then put aside a chunk of
    # nodes at a time (as the slots' typed edges are) until written.
    # (Each node's count of edges in a temporary file's pages, resident only
    # while a range of them is counted or written: mapped.py.)
    counts = mapped.file_array(np, g.nodes, np.int32, spill_dir)
    counts[0] = np.count_nonzero(xe.src == 0)
    extra_chunks = _Spilled(spill_dir)
    pieces = _edge_pieces(np, fe, _node_ranges(np, fe, 1, g.nodes), g.first_object, eph.pos)
    for a, b, lo, hi in pieces:
        # A node's extra edges go with the piece its own edges end in.
        xa, xb = (int(x) for x in np.searchsorted(xe.src, [a, b]))
        if lo > int(fe[a]) or hi < int(fe[b]):
            end = fe[xe.src[xa:xb].astype(np.int64) + 1]
            xa, xb = xa + int(np.searchsorted(end, lo, side="left" if lo == int(fe[a]) else "right")), \
                xa + int(np.searchsorted(end, hi, side="right"))
        if xb > xa:
            counts[a:b] += np.bincount(xe.src[xa:xb] - a, minlength=b - a).astype(np.int32)
        extra_chunks.put(xe.src[xa:xb], xe.kinds[xa:xb], xe.names[xa:xb], xe.to[xa:xb])
        mapped.drop(counts, fe)  # (counted, read: in the files' pages)
    globals_, notes = xe.globals, list(g.root_notes) + xe.notes
    del xe
    free_pages()
    edge_strings = StringTable()
    root_nodes, root_ids = _root_names(np, prog, g, edge_strings)
    if not len(root_nodes):
        notes.append("the names of V8's roots were not read (no RootsTable::root_names_ "
                     "symbol in the binary, or no roots table found): the GC sub-roots' "
                     "edges to its objects are numbered, not named as V8's")
    # Per chunk, put aside until the nodes are written: the kept edges' kinds,
    # names and the rows they lead to, which of its edges are kept (bits);
    # edge_strings' size after it is in edge_chunks.
    typed_chunks = _Spilled(spill_dir)
    typed = src = ok = drop = None
    for a, b, lo, hi in pieces:
        check_interrupted()
        src = np.repeat(np.arange(a, b), np.diff(np.clip(fe[a:b + 1], lo, hi)))
        ok = keep[src] & keep[g.edge_to[lo:hi]]
        typed = _typed(np, prog, g, src, lo, hi, maps, is_js, edge_strings, codes)
        drop = _left_out(np, g, src, lo, hi, typed.kinds, nonessential)
        if drop is not None:
            ok[drop] = False
        if a < g.first_object:
            # A sub-root's edges are numbered among those written (V8 draws
            # no edge to a string its GC cleared from a weak table).
            sub = np.flatnonzero(ok & (src < g.first_object))
            firsts = np.searchsorted(src[sub], src[sub], side="left")
            typed.names[sub] = edge_strings.add_numbers(np.arange(len(sub)) - firsts + 1)
            # Edges to the roots table's objects by the root's name, as V8's.
            if len(root_nodes):
                to = g.edge_to[lo:hi][sub].astype(np.int64)
                at = np.minimum(np.searchsorted(root_nodes, to), len(root_nodes) - 1)
                hit = root_nodes[at] == to
                typed.names[sub[hit]] = root_ids[at[hit]]
        eph.name_key_edges(lo, hi, typed, edge_strings)
        counts[a:b] += np.bincount(src[ok] - a, minlength=b - a).astype(np.int32)
        typed_chunks.put(typed.kinds[ok], typed.names[ok], row_of[g.edge_to[lo:hi][ok]],
                         np.packbits(ok))
        edge_chunks.append((a, b, lo, hi, len(edge_strings.items)))
        g.drop_pages()  # (the piece's edges typed)
        mapped.drop(counts)
        free_pages_if_grown()
    # What only the typing and V8's extra edges needed, let go before the nodes:
    # the graph's edges too, all typed and put aside now (the graph is built
    # again by a later command that needs it), and the edge names' lookups.
    del typed, src, ok, drop
    gmod.let_go_edges(prog, g)
    edge_strings.drop_lookups()
    self_sizes = sizes_of(prog, g, maps, codes.maps)  # (worked out a piece of rows at a time)
    del maps, codes, nonessential, hole
    ntype, nname = node_cols.take(np), node_cols.take(np)
    node_cols.close()
    free_pages()
    # Node 0's edges are written apart (to (GC roots) and the globals).
    total_edges = 1 + len(globals_) + len(g.root_names) + \
        int(counts.sum(where=keep, dtype=np.int64)) - int(counts[0])
    # Header.
    k = len(fields)
    head = {"meta": meta, "node_count": rows + native, "edge_count": total_edges,
            "trace_function_count": 0, **extra}
    written = 0

    def emit_raw(b: bytes | memoryview) -> None:
        nonlocal written
        out.write(b)
        written += len(b)

    def emit(s: str) -> None:
        emit_raw(s.encode())

    emit('{"snapshot":' + json.dumps(head, separators=(",", ":")) + ",\n\"nodes\":[")
    trace = "trace_node_id" in fields
    # The root: one edge, to (GC roots); (GC roots): one edge per group.
    cols = [synth, nname[0], 1, 0, 1 + len(globals_)] + ([0] if trace else []) + [0]
    cols2 = [synth, gc_roots, 3, 0, len(g.root_names)] + ([0] if trace else []) + [0]
    emit(",".join(map(str, cols + cols2)))
    for a in range(1, g.nodes, CHUNK):
        check_interrupted()
        sel = a + np.flatnonzero(keep[a:a + CHUNK])
        if not len(sel):
            continue
        cols_a = [ntype[sel], nname[sel], ids(sel), self_sizes[sel], counts[sel]]
        if trace:
            cols_a.append(np.zeros(len(sel), dtype=np.int64))
        cols_a.append(np.zeros(len(sel), dtype=np.int64))
        emit_raw(b"," + _decimal(np, cols_a))
        if progress is not None:
            progress.update(a, 2 * g.nodes)
    if native:
        nid = first_obj + 2 * (g.nodes - g.first_object) + 2 * np.arange(native)
        data_name = strings.add("system / JSArrayBufferData")
        cols_n = [np.full(native, types.index("native")), np.full(native, data_name), nid,
                  np.asarray(bd.sizes, dtype=np.int64), np.zeros(native, dtype=np.int64)]
        if trace:
            cols_n.append(np.zeros(native, dtype=np.int64))
        cols_n.append(np.zeros(native, dtype=np.int64))
        emit_raw(b"," + _decimal(np, cols_n))
    # What only the nodes needed, let go before the edges.
    del ntype, nname, self_sizes, counts, is_js, eph, keep
    free_pages(trim=False)  # (the edges' chunks reuse them)
    emit("],\n\"edges\":[")
    E_EL = 1
    first = [E_EL, 1, 1 * k]
    # The root's shortcuts to the global objects, as V8 makes them.
    for n, i in enumerate(globals_):
        first += [gmod.E_SHORTCUT, strings.add(str(n + 2)), int(row_of[i]) * k]
    # (GC roots) -> each group.
    for i in range(len(g.root_names)):
        first += [E_EL, i + 1, (2 + i) * k]
    emit(",".join(map(str, first)))
    remap = np.zeros(len(edge_strings.items), dtype=np.uint32)  # edge_strings -> strings
    done = 0
    for a, b, lo, hi, upto in edge_chunks:
        check_interrupted()
        kinds, names, to, bits = (typed_chunks.take(np) for _ in range(4))
        remap[done:upto] = strings.add_from(edge_strings, done, upto)
        done = upto
        named = (kinds != gmod.E_ELEMENT) & (kinds != gmod.E_HIDDEN)  # (else a number)
        names[named] = remap[names[named]]
        del named
        xsrc, xkinds, xnames, xto = (extra_chunks.take(np) for _ in range(4))
        # V8's edges that are no slot, merged in by source: each after the
        # kept edges of its source and of the nodes before it.
        xpos = np.zeros(0, dtype=np.int64)
        if len(xsrc):
            ok = np.unpackbits(bits, count=hi - lo).view(bool)
            kept_to = np.zeros(hi - lo + 1, dtype=np.int32)
            np.cumsum(ok, dtype=np.int32, out=kept_to[1:])
            del ok
            xpos = kept_to[fe[xsrc.astype(np.int64) + 1] - lo].astype(np.int64)
            del kept_to
        for piece in _merged_rows(np, kinds, names, to, k, xpos, xkinds, xnames,
                                  row_of[xto] if len(xto) else xto):
            emit_raw(b",")
            emit_raw(piece)
        del kinds, names, to, bits, xsrc, xkinds, xnames, xto, xpos
        g.drop_pages()
        free_pages_if_grown()
        if progress is not None:
            progress.update(g.nodes + b, 2 * g.nodes)
    typed_chunks.close()
    extra_chunks.close()
    # What the strings need no more is freed before they are written.
    del edge_strings, remap
    strings.drop_lookups()
    g.drop_pages()
    free_pages(trim=False)  # (the strings' pieces reuse them)
    emit("],\n\"trace_function_infos\":[],\n\"trace_tree\":[],\n\"samples\":[],"
         "\n\"locations\":[")
    if loc_parts:
        # By node (the rows' order): each located node's part, whose location
        # is looked up a piece of ROWS at a time as the rows are written (no
        # location per node held, nor the section in memory).
        nodes_l = np.concatenate([n for n, _ in loc_parts])
        part = np.repeat(np.arange(len(loc_parts), dtype=np.int32),
                         [len(n) for n, _ in loc_parts])
        table = np.array([(at.script_id, at.line, at.column) for _, at in loc_parts],
                         dtype=np.int64)
        del loc_parts
        o = np.argsort(nodes_l, kind="stable")
        sep_l = b""
        for a in range(0, len(o), ROWS):
            check_interrupted()
            oo = o[a:a + ROWS]
            at_l = table[part[oo]]
            for piece in _decimal_parts(np, [row_of[nodes_l[oo]].astype(np.int64) * k,
                                             at_l[:, 0], at_l[:, 1], at_l[:, 2]]):
                emit_raw(sep_l)
                emit_raw(piece)
                sep_l = b","
        del nodes_l, part, table, o
    else:
        del loc_parts
    del row_of
    emit("],\n\"strings\":[")
    items = strings.items
    sep = ""
    for part in items.parts:
        for a in range(0, len(part), CHUNK):
            check_interrupted()
            if isinstance(part, list):
                emit(sep + json.dumps(part[a:a + CHUNK], separators=(",\n", ":"))[1:-1])
            elif isinstance(part, Bulk):
                got = part.json(np, a, min(a + CHUNK, len(part)))
                if got is not None:
                    emit_raw(sep.encode() + got)
                else:
                    emit(sep + json.dumps(part.texts(a, min(a + CHUNK, len(part))),
                                          separators=(",\n", ":"))[1:-1])
            else:
                emit_raw(sep.encode() + _quoted(np, part[a:a + CHUNK]))
            sep = ",\n"
            free_pages_if_grown()
    emit("]}\n")
    if c.damaged_pages:
        shown = ", ".join(f"0x{p:x}" for p in c.damaged_pages[:8])
        more = f" and {len(c.damaged_pages) - 8} more" if len(c.damaged_pages) > 8 else ""
        notes.append(f"{len(c.damaged_pages)} damaged heap pages could not be walked to the "
                     f"end ({c.skipped_bytes} bytes skipped): {shown}{more}; their unread "
                     "objects are not in the snapshot")
    return Written(rows + native, total_edges, len(items), 0 if include_unreachable else unreachable,
                   written, notes)
