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
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ..errors import DecodeError, TargetMemoryError
from ..interrupt import check_interrupted
from ..v8.layouts import heap_snapshot_meta
from . import census
from . import graph as gmod
from .edges import Extra, StringTable, buffer_data, extra_edges, type_edges
from .locations import Location, Locations

if TYPE_CHECKING:
    from ..program import Program

MAX_NAME = 1024  # characters of a string node's name, as V8 cuts them
CHUNK = 1 << 16  # nodes per chunk written

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


@dataclass
class Written:
    """What was written."""

    nodes: int
    edges: int
    strings: int
    unreachable: int  # objects no root reaches (left out unless asked for)
    bytes: int
    notes: list[str] = field(default_factory=list)


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
            return T["symbol"], S.add("symbol"), ""
        if base == "BIGINT":
            return T["bigint"], S.add("bigint"), ""
        if "CONTEXT" in base and "INFO" not in base:
            return T["object"], S.add("system / Context"), ""
        if base == "SHARED_FUNCTION_INFO":
            return T["code"], None, "shared"
        if base in _CODE_TYPES:
            return T["code"], S.add(system_name(tn)), ""
        if base in _ARRAY_TYPES:
            return T["array"], S.add(""), ""
        if base in _SHAPE_TYPES:
            kind = T.get("object shape", T["hidden"])
            return kind, S.add("system / Map" if base == "MAP" else system_name(tn)), ""
        return T["hidden"], S.add(system_name(tn)), ""

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

    def of_object(self, rule: str, addr: int, m: int) -> int:
        """The name of an object its map does not name."""
        try:
            if rule == "string":
                return self.s.add(self.v.s.text(addr, MAX_NAME)[:MAX_NAME])
            if rule == "object":
                return self.s.add(self.sh.name_of(addr, m))
            if rule == "closure":  # the function's own name, never an inferred one
                return self.s.add(self.v.f.name(self.v.f.shared(addr)))
            if rule == "shared":
                return self.s.add(self.v.f.debug_name(addr))
            if rule == "regexp":
                src = self.h.field(addr, "JSRegExp", "source")
                return self.s.add(self.v.s.text(src, MAX_NAME))
        except (DecodeError, TargetMemoryError, KeyError):
            pass
        return self.s.add("")


def _name_sequential(np, prog: Program, g: gmod.Graph, nodes, maps, pages, namer: _Namer,
                     nname) -> None:
    """Name sequential strings (most of a heap's strings) by their characters,
    read from their pages in bulk rather than one string at a time."""
    st = prog.values.s
    w = prog.heap_state.walker
    addr = g.node_addr[nodes]
    for p in pages:
        lo = int(np.searchsorted(addr, np.uint64(p.start)))
        hi = int(np.searchsorted(addr, np.uint64(p.end)))
        if hi <= lo:
            continue
        check_interrupted()
        data = w.read_page(p)
        sel = nodes[lo:hi]
        if data is None:
            nname[sel] = [namer.of_object("string", int(g.node_addr[i]), int(maps[i]))
                          for i in sel.tolist()]
            continue
        buf = np.frombuffer(data, dtype=np.uint8)
        offs = (addr[lo:hi] - np.uint64(1 + p.start)).astype(np.int64)
        lens = buf[(offs + st.o_len)[:, None] + np.arange(4)].copy().view("<i4").ravel()
        sizes = g.node_size[sel].astype(np.int64)
        raw = bytes(buf)
        out = []
        for i, o, n, size, m in zip(sel.tolist(), offs.tolist(), lens.tolist(), sizes.tolist(),
                                    maps[sel].tolist()):
            one = namer.sequential(int(m))
            first = o + (st.o_chars1 if one else st.o_chars2)
            nb = min(max(n, 0), MAX_NAME) * (1 if one else 2)
            if n < 0 or first + nb > o + size:
                out.append(namer.of_object("string", i and int(g.node_addr[i]), int(m)))
                continue
            chunk = raw[first:first + nb]
            text = chunk.decode("latin-1") if one else chunk.decode("utf-16-le", "surrogatepass")
            out.append(namer.s.add(text))
        nname[sel] = out


_LUT: list = []  # the 4 ASCII digits of 0 .. 9999, made once


def _decimal(np, a) -> bytes:
    """Non-negative integers (below 10**12) as `1,22,333` in ASCII, formatted in
    bulk, four digits at a time from a table (the nodes and edges are most of
    a snapshot's bytes)."""
    a = np.asarray(a, dtype=np.int64).ravel()
    if not len(a):
        return b""
    if not _LUT:
        n = np.arange(10000)
        _LUT.append(np.stack([48 + n // 1000, 48 + n // 100 % 10, 48 + n // 10 % 10,
                              48 + n % 10], axis=1).astype(np.uint8))
    lut = _LUT[0]
    pows = 10 ** np.arange(1, 13, dtype=np.int64)
    digits = 1 + np.searchsorted(pows, a, side="right")
    width = int(digits.max())
    lo = a % 10000
    hi = a // 10000
    parts = [lut[lo]]
    if width > 4:
        parts.insert(0, lut[hi % 10000])
    if width > 8:
        parts.insert(0, lut[hi // 10000])
    cols = 4 * len(parts)
    mat = np.empty((len(a), cols + 1), dtype=np.uint8)
    mat[:, :cols] = np.concatenate(parts, axis=1)
    mat[:, cols] = ord(",")
    keep = np.arange(cols + 1)[None, :] >= (cols - digits)[:, None]
    return mat[keep].tobytes()[:-1]


def _node_maps(np, prog: Program, g: gmod.Graph, pages) -> Any:
    """The map word of every node (0 for synthetic ones), read page by page."""
    out = np.zeros(g.nodes, dtype=np.uint64)
    w = prog.heap_state.walker
    addr = g.node_addr
    for p in pages:
        lo = int(np.searchsorted(addr, np.uint64(p.start)))
        hi = int(np.searchsorted(addr, np.uint64(p.end)))
        if hi <= lo:
            continue
        data = w.read_page(p)
        if data is None:
            continue
        W = np.frombuffer(data, dtype="<u8")
        out[lo:hi] = W[((addr[lo:hi] - np.uint64(1 + p.start)) >> np.uint64(3)).astype(np.int64)]
    out[:g.first_object] = 0
    return out


def _with_buffers(np, xe: Extra, src, to, name: int) -> Extra:
    """The extra edges and the buffers' `backing_store` edges, sorted by source."""
    s = np.concatenate([xe.src, src])
    order = np.argsort(s, kind="stable")
    kinds = np.concatenate([xe.kinds, np.full(len(src), gmod.E_INTERNAL, dtype=np.uint8)])
    names = np.concatenate([xe.names, np.full(len(src), name, dtype=np.uint32)])
    return Extra(s[order], kinds[order], names[order], np.concatenate([xe.to, to])[order],
                 xe.globals, xe.notes)


def write(prog: Program, heap: int, out: IO[bytes], include_unreachable: bool = False,
          progress=None) -> Written:
    """Write the heap's snapshot to `out` (a binary stream)."""
    np = gmod.numpy()
    c = census.of(prog, heap)
    g = gmod.build(prog, heap)
    seen, _ = gmod.reach(g)
    keep = np.ones(g.nodes, dtype=bool) if include_unreachable else seen.copy()
    unreachable = int(g.nodes - seen.sum())
    meta, extra = heap_snapshot_meta(prog.md.v8_version)
    fields = meta["node_fields"]
    types = meta["node_types"][0]
    strings = StringTable()
    strings.add("<dummy>")
    namer = _Namer(prog, types, strings)
    maps = _node_maps(np, prog, g, c.pages)
    # Output order: root, (GC roots), groups, objects; graph node i > 0 is row i + 1.
    kept = np.flatnonzero(keep)
    rows = len(kept) + 1  # + (GC roots)
    row_of = np.full(g.nodes, -1, dtype=np.int64)
    row_of[kept] = np.arange(len(kept)) + (kept > 0)
    ntype = np.zeros(g.nodes, dtype=np.uint8)
    nname = np.zeros(g.nodes, dtype=np.uint32)
    synth = types.index("synthetic")
    ntype[:g.first_object] = synth
    nname[0] = strings.add("")
    gc_roots = strings.add("(GC roots)")
    for i, n in enumerate(g.root_names):
        nname[1 + i] = strings.add(n)
    objs = kept[kept >= g.first_object]
    om = maps[objs]
    is_js = np.zeros(g.nodes, dtype=bool)
    seq_parts: list[Any] = []  # sequential strings, named in bulk from their pages
    order = np.argsort(om, kind="stable")
    um, starts = np.unique(om[order], return_index=True)
    bounds = np.append(starts, len(order))
    locs = Locations(prog)
    loc_parts: list[tuple[Any, Location]] = []  # (nodes, their location)
    t_object, t_closure = types.index("object"), types.index("closure")
    for k, m in enumerate(um.tolist()):
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
        if rule == "object" and not namer.sh.shape(int(m), int(g.node_addr[sel[0]])).dictionary:
            nname[sel] = namer.of_object(rule, int(g.node_addr[sel[0]]), int(m))
            continue
        if rule == "string" and namer.sequential(int(m)) is not None:
            seq_parts.append(sel)
            continue
        check_interrupted()
        nname[sel] = [namer.of_object(rule, int(g.node_addr[i]), int(m)) for i in sel.tolist()]
    if seq_parts:
        _name_sequential(np, prog, g, np.sort(np.concatenate(seq_parts)), maps, c.pages,
                         namer, nname)
    # Edges of kept nodes to kept nodes, typed in chunks (their counts first).
    fe = g.first_edge
    counts = np.zeros(g.nodes, dtype=np.int64)
    edge_chunks: list[tuple[int, int]] = []  # node ranges
    for a in range(0, g.nodes, CHUNK):
        b = min(a + CHUNK, g.nodes)
        ok = keep[g.edge_to[fe[a]:fe[b]]]
        src = np.repeat(np.arange(a, b), np.diff(fe[a:b + 1]))
        counts[a:b] = np.bincount(src[ok] - a, minlength=b - a)
        edge_chunks.append((a, b))
    xe = extra_edges(prog, g, keep, maps, is_js, strings)
    # ArrayBuffers' backing stores: native nodes after the objects, their
    # graph index g.nodes + k.
    bd = buffer_data(prog, g, keep, maps)
    native = len(bd.stores)
    row_of = np.concatenate([row_of, rows + np.arange(native, dtype=np.int64)])
    if len(bd.src):
        xe = _with_buffers(np, xe, bd.src, g.nodes + bd.data, strings.add("backing_store"))
    counts += np.bincount(xe.src, minlength=g.nodes)
    total_edges = 1 + len(xe.globals) + len(g.root_names) + int(counts[kept[kept > 0]].sum())
    # Header.
    k = len(fields)
    head = {"meta": meta, "node_count": rows + native, "edge_count": total_edges,
            "trace_function_count": 0, **extra}
    written = 0

    def emit_raw(b: bytes) -> None:
        nonlocal written
        out.write(b)
        written += len(b)

    def emit(s: str) -> None:
        emit_raw(s.encode())

    emit('{"snapshot":' + json.dumps(head, separators=(",", ":")) + ",\n\"nodes\":[")
    first_obj = 5 + 2 * len(g.root_names)
    ids = np.zeros(g.nodes, dtype=np.int64)
    ids[0] = 1
    ids[1:g.first_object] = 5 + 2 * np.arange(len(g.root_names))
    ids[g.first_object:] = first_obj + 2 * np.arange(g.nodes - g.first_object)
    trace = "trace_node_id" in fields
    # The root: one edge, to (GC roots); (GC roots): one edge per group.
    cols = [synth, nname[0], 1, 0, 1 + len(xe.globals)] + ([0] if trace else []) + [0]
    cols2 = [synth, gc_roots, 3, 0, len(g.root_names)] + ([0] if trace else []) + [0]
    emit(",".join(map(str, cols + cols2)))
    ncount = counts.copy()
    ncount[0] = 0
    for a in range(1, g.nodes, CHUNK):
        check_interrupted()
        sel = kept[(kept >= a) & (kept < a + CHUNK)]
        if not len(sel):
            continue
        cols_a = [ntype[sel], nname[sel], ids[sel], g.node_size[sel].astype(np.int64),
                  ncount[sel]]
        if trace:
            cols_a.append(np.zeros(len(sel), dtype=np.int64))
        cols_a.append(np.zeros(len(sel), dtype=np.int64))
        emit_raw(b"," + _decimal(np, np.stack([x.astype(np.int64) for x in cols_a], axis=1)))
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
        emit_raw(b"," + _decimal(np, np.stack([x.astype(np.int64) for x in cols_n], axis=1)))
    emit("],\n\"edges\":[")
    E_EL = 1
    first = [E_EL, 1, 1 * k]
    # The root's shortcuts to the global objects, as V8 makes them.
    for n, i in enumerate(xe.globals):
        first += [gmod.E_SHORTCUT, strings.add(str(n + 2)), int(row_of[i]) * k]
    # (GC roots) -> each group.
    for i in range(len(g.root_names)):
        first += [E_EL, i + 1, (2 + i) * k]
    emit(",".join(map(str, first)))
    for a, b in edge_chunks:
        check_interrupted()
        lo, hi = int(fe[max(a, 1)]), int(fe[b])
        if b <= 1:
            continue
        src = np.repeat(np.arange(max(a, 1), b), np.diff(fe[max(a, 1):b + 1]))
        ok = keep[src] & keep[g.edge_to[lo:hi]]
        typed = type_edges(prog, g, src, lo, hi, maps, is_js, strings)
        to_rows = row_of[g.edge_to[lo:hi].astype(np.int64)] * k
        block = np.stack([typed.kinds.astype(np.int64), typed.names.astype(np.int64),
                          to_rows], axis=1)[ok]
        xa, xb = np.searchsorted(xe.src, [max(a, 1), b])
        if xb > xa:
            # V8's edges that are no slot, merged in by source.
            more = np.stack([xe.kinds[xa:xb].astype(np.int64),
                             xe.names[xa:xb].astype(np.int64),
                             row_of[xe.to[xa:xb]] * k], axis=1)
            order = np.argsort(np.concatenate([src[ok], xe.src[xa:xb]]), kind="stable")
            block = np.concatenate([block, more])[order]
        if len(block):
            emit_raw(b"," + _decimal(np, block))
        if progress is not None:
            progress.update(g.nodes + b, 2 * g.nodes)
    emit("],\n\"trace_function_infos\":[],\n\"trace_tree\":[],\n\"samples\":[],"
         "\n\"locations\":[")
    if loc_parts:
        rows_l = np.concatenate([row_of[n] * k for n, _ in loc_parts])
        vals = np.repeat(np.array([(at.script_id, at.line, at.column) for _, at in loc_parts],
                                  dtype=np.int64), [len(n) for n, _ in loc_parts], axis=0)
        o = np.argsort(rows_l, kind="stable")
        emit_raw(_decimal(np, np.concatenate([rows_l[o, None], vals[o]], axis=1)))
    emit("],\n\"strings\":[")
    items = strings.items
    for a in range(0, len(items), CHUNK):
        check_interrupted()
        part = json.dumps(items[a:a + CHUNK], separators=(",\n", ":"))[1:-1]
        emit(("" if a == 0 else ",\n") + part)
    emit("]}\n")
    notes = list(g.root_notes) + xe.notes
    if c.damaged_pages:
        shown = ", ".join(f"0x{p:x}" for p in c.damaged_pages[:8])
        more = f" and {len(c.damaged_pages) - 8} more" if len(c.damaged_pages) > 8 else ""
        notes.append(f"{len(c.damaged_pages)} damaged heap pages could not be walked to the "
                     f"end ({c.skipped_bytes} bytes skipped): {shown}{more}; their unread "
                     "objects are not in the snapshot")
    return Written(rows + native, total_edges, len(items), 0 if include_unreachable else unreachable,
                   written, notes)
