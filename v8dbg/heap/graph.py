"""The heap as a graph: every object of the census walk a node, every tagged
slot that holds an object an edge, and the GC roots above them.

One graph per heap, built once and shared by every command that asks why
an object is alive (findjsobjects' reachability, jsretainers, retained
sizes). It is held in NumPy arrays, a few bytes per node and edge, never a
Python object per node:

- `node_addr`  uint64[n]: the tagged address of node i, ascending. Nodes
  0 .. first_object-1 are synthetic, with address 0: node 0 is the root,
  nodes 1 .. first_object-1 the GC root groups (`root_names[i-1]`, named as
  V8's heap snapshot names them, e.g. `(Stack roots)`).
- `node_size`  uint32[n]: bytes of the object (0 for the synthetic nodes).
- `first_edge` int64[n+1]: CSR offsets; the edges of node i are
  first_edge[i] .. first_edge[i+1]-1.
- `edge_to`    uint32[m]: the node index an edge points to.
- `edge_type`  uint8[m]: V8's HeapGraphEdge::Type numbering: 0 context,
  1 element, 2 property, 3 internal, 4 hidden, 5 shortcut, 6 weak.
- `edge_name`  uint32[m]: for an edge of a synthetic node (the root to its
  groups, a group to the objects it holds) the element index; for an edge
  of a heap object, the byte offset of its slot in that object. Names are
  made from it only for the edges shown to users (`paths.label`).

Node 0's edges go to every root group, the groups' edges to the objects
they hold. Weak edges (type 6) are there but never make anything
reachable. A WeakMap's or WeakSet's table holds its keys and values by
weak edges; each key whose value is an object has an edge to it (type 3,
named `EPHEMERON`, no slot of the key), listed in `ephemerons` with its
table: the value is reached once its table and its key both are, as the
GC keeps it. Groups found conservatively (`late_groups`) are followed only
after the others, so that paths go through exactly known roots first.

How edges are found: every aligned word of an object's body (its map word
included, as V8's snapshot has a `map` edge) whose value is the tagged
address of an object's start, strong (tag 01) or weak (tag 11); the bodies
of objects holding raw data (strings' characters, byte arrays, BigInts) are
not looked at. Every slot is typed `internal` or `weak` by its tag, but for
the slots the GC treats as weak though tagged strong (a WeakRef's target, a
WeakCell's target and unregister token, a WeakMap's or WeakSet's keys
and values), which are `weak` too; the
finer kind of an edge (property, element, context variable) is said with
its name, when a path shows it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..interrupt import check_interrupted
from . import census, roots
from .dominators import expand
from ..v8.dispatch import applies as dispatch_applies
from ..v8.pages import layout, read_only_pages
from .walk import (K_BIGINT, K_BYTES, K_FREE, K_SEQ1, K_SEQ2, REUSE_BYTES, NumpyPages, Walker,
                   _code_owners)

if TYPE_CHECKING:
    from ..program import Program

E_CONTEXT, E_ELEMENT, E_PROPERTY, E_INTERNAL, E_HIDDEN, E_SHORTCUT, E_WEAK = range(7)

# The `edge_name` of an edge from a WeakMap's or WeakSet's key to its value
# (no slot of the key: the ephemeron's own edge, as V8's snapshot makes it).
EPHEMERON = 0xFFFFFFFF

# Kinds of objects whose body is data, not tagged slots.
_DATA_KINDS = (K_SEQ1, K_SEQ2, K_BYTES, K_BIGINT, K_FREE)

# Far above real heaps (the 4 GB test heap has some 40 million objects); a
# heap past it is refused with a message rather than exhausting memory.
MAX_NODES = 1 << 31


def numpy():
    """NumPy, which the graph needs (it keeps the heap in arrays)."""
    try:
        import numpy as np
    except ImportError as e:
        raise V8DbgError("the heap graph needs NumPy (pip install numpy, or "
                         f"python3-numpy for the debugger's Python): {e}") from None
    return np


@dataclass
class Graph:
    """One heap's graph in arrays (see the module's docstring)."""

    heap: int
    node_addr: Any
    node_size: Any
    first_edge: Any
    edge_to: Any
    edge_type: Any
    edge_name: Any
    root_names: list[str]
    first_object: int
    seconds: float = 0.0
    root_notes: list[str] = field(default_factory=list)  # root groups not read, and why
    late_groups: list[int] = field(default_factory=list)  # groups followed last (conservative)
    # Groups whose weak edges V8's file draws as strong ones: weak tables its
    # GC clears before writing (the string table), so they hold only live
    # objects there.
    cleared_groups: list[int] = field(default_factory=list)
    # (table, key, value) nodes of each ephemeron whose key and value are
    # objects, sorted by key: the key's edge to the value is in the graph.
    ephemerons: Any = None
    # The read-only space's pages, whose objects are nodes too (V8's
    # snapshot has them), though no census counts them.
    read_only: list = field(default_factory=list)
    _reach: Any = None
    _parent: Any = None

    @property
    def nodes(self) -> int:
        return len(self.node_addr)

    @property
    def edges(self) -> int:
        return len(self.edge_to)

    def in_read_only(self) -> Any:
        """Bool per node: an object of the read-only space."""
        np = numpy()
        out = np.zeros(self.nodes, dtype=bool)
        for p in self.read_only:
            a, b = np.searchsorted(self.node_addr, [np.uint64(p.start), np.uint64(p.end)])
            out[max(int(a), self.first_object):int(b)] = True
        return out

    def index(self, addr: int) -> int | None:
        """The node of the object at tagged address addr, None if none starts there."""
        np = numpy()
        i = int(np.searchsorted(self.node_addr, np.uint64(addr)))
        if self.first_object <= i < self.nodes and int(self.node_addr[i]) == addr:
            return i
        return None

    def indices(self, addrs) -> Any:
        """Node indices of many tagged addresses at once (-1 where none starts)."""
        np = numpy()
        a = np.asarray(addrs, dtype=np.uint64)
        i = np.searchsorted(self.node_addr, a)
        i = np.minimum(i, self.nodes - 1)
        ok = (self.node_addr[i] == a) & (i >= self.first_object)
        return np.where(ok, i, -1)


def _page_objects(np, prog: Program, p, nw) -> tuple[Any, Any, Any]:
    """(word index, size in words, map) of each object of one page, as the census walks it
    (in bulk where the census does: `NumpyPages`)."""
    if nw is not None and p.marks is None and p.end - p.start <= REUSE_BYTES:
        data = nw.read(p)
        if data is not None:
            steps: list = []
            chain: list = []
            nw.walk(p, data, False, steps, chain)
            parts = [np.array([((a - 1 - p.start) >> 3, sz, m) for a, m, sz in steps],
                              dtype=np.uint64).reshape(-1, 3)]
            for c, sz, m in chain:
                parts.append(np.stack([c.astype(np.uint64), sz.astype(np.uint64),
                                       m.astype(np.uint64)], axis=1))
            a = np.concatenate(parts)
            a = a[np.argsort(a[:, 0], kind="stable")]
            return a[:, 0].astype(np.int64), a[:, 1].astype(np.int64), a[:, 2]
    objs = census.object_starts(prog, p)
    if not objs:
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0, dtype=np.uint64)
    a = np.array(objs, dtype=np.uint64)
    starts = ((a[:, 0] - np.uint64(1 + p.start)) >> np.uint64(3)).astype(np.int64)
    return starts, a[:, 2].astype(np.int64), a[:, 1]


def _kinds(np, prog: Program, w, maps):
    """Per object (by its map, the page's distinct maps sorted once): whether
    its body is data, not tagged slots; and its weak kind (`_weak_kinds`)."""
    if not len(maps):
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.uint8)
    um, inv = np.unique(maps, return_inverse=True)
    data = np.array([w.info(int(m))[0] in _DATA_KINDS for m in um.tolist()], dtype=bool)
    return data[inv], _weak_kinds(np, prog, um)[inv]


# (_CODE_OBJECT: a Code object where V8 reaches it through its dispatch
# table, 13.6+; its slots are strong.)
_STRONG, _WEAK_REF, _WEAK_CELL, _EPHEMERONS, _CODE, _CODE_LINK, _CODE_OBJECT = range(7)


def _weak_kinds(np, prog: Program, maps):
    """Per map: whether some slots of its objects are weak though tagged
    strong -- a WeakRef, a WeakCell, a WeakMap's or WeakSet's table."""
    h = prog.heap
    t = h.md.types
    kinds = {t.get("JS_WEAK_REF_TYPE"): _WEAK_REF, t.get("WEAK_CELL_TYPE"): _WEAK_CELL,
             t.get("EPHEMERON_HASH_TABLE_TYPE"): _EPHEMERONS,
             t.get("INSTRUCTION_STREAM_TYPE", t.get("CODE_TYPE")): _CODE,
             t.get("CODE_DATA_CONTAINER_TYPE"): _CODE_LINK}
    if dispatch_applies(prog):
        kinds.setdefault(t.get("CODE_TYPE"), _CODE_OBJECT)
    kinds.pop(None, None)
    out = []
    for m in maps.tolist():
        try:
            out.append(kinds.get(h.map_type(int(m)), _STRONG))
        except (DecodeError, TargetMemoryError):
            out.append(_STRONG)
    return np.array(out, dtype=np.uint8)


def _weak_slots(np, md, kind, off):
    """Which slots (owner's weak kind, byte offset) the GC does not follow
    strongly: a WeakRef's target, a WeakCell's target and unregister token,
    an ephemeron table's keys and values (a value is kept while its key
    lives: the graph's edge from the key to it, see `_ephemeron_edges`), V8
    10's link from one optimized code to the next of its context's list (a
    CodeDataContainer's next_code_link)."""
    first = md.const("EphemeronEntriesOffset")
    link = md.fields.get(("CodeDataContainer", "next_code_link"), -1)
    return (((kind == _WEAK_REF) & (off == md.off("JSWeakRef", "target")))
            | ((kind == _CODE_LINK) & (off == link))
            | ((kind == _WEAK_CELL) & ((off == md.off("WeakCell", "target"))
                                       | (off == md.off("WeakCell", "unregister_token"))))
            | ((kind == _EPHEMERONS) & (off >= first)))


def _code_header(md) -> int:
    """Bytes of a machine code object's header: its instructions (and the
    objects they embed) follow."""
    return md.fields.get(("InstructionStream", "instruction_start")) \
        if "INSTRUCTION_STREAM_TYPE" in md.types else md.fields.get(("Code", "instruction_start"), 1 << 30)


def _weak_in_code(np, h, kind, off, val):
    """Which slots are objects a machine code body embeds that V8 holds weakly
    there (Code::IsWeakObjectInOptimizedCode, as its snapshot writes them):
    JS objects, contexts, property cells and maps. Other embedded objects
    (strings, shared function infos, ...) stay strong."""
    sel = np.flatnonzero((kind == _CODE) & (off >= _code_header(h.md)))
    out = np.zeros(len(kind), dtype=bool)
    if not len(sel):
        return out
    md = h.md
    t = md.types
    first_js = md.consts.get("FirstJSReceiverType", t.get("JS_PROXY_TYPE", 1 << 16))
    lo, hi = md.consts.get("FirstContextType", -1), md.consts.get("LastContextType", -2)
    other = {t.get("PROPERTY_CELL_TYPE"), t.get("MAP_TYPE")} - {None}
    by_map: dict[int, bool] = {}
    for j in sel.tolist():
        try:
            m = h.map_of(int(val[j]))
            w = by_map.get(m)
            if w is None:
                it = h.map_type(m)
                w = by_map[m] = it >= first_js or lo <= it <= hi or it in other
        except (DecodeError, TargetMemoryError):
            w = False
        out[j] = w
    return out


def _page_slots(np, w, p, starts, sizes, data_kind, lo: int, hi: int):
    """(object, byte offset, value, weak?) of each slot of one page's objects that
    holds a tagged pointer into [lo, hi]."""
    data = w.read_page(p)
    empty = np.zeros(0, dtype=np.int64)
    if data is None or not len(starts):
        return empty, empty, np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    W = np.frombuffer(data, dtype="<u8")
    tag = W & np.uint64(3)
    val = W & ~np.uint64(2)
    pos = np.flatnonzero(((tag == 1) | (tag == 3)) & (val >= np.uint64(lo)) &
                         (val <= np.uint64(hi)))
    owner = np.searchsorted(starts, pos, side="right") - 1
    ok = owner >= 0
    owner = np.where(ok, owner, 0)
    ok &= pos < starts[owner] + sizes[owner]
    # Objects whose body is data: only their map word is a slot.
    ok &= ~(data_kind[owner] & (pos != starts[owner]))
    pos, owner = pos[ok], owner[ok]
    return owner, (pos - starts[owner]) * 8, val[pos], tag[pos] == 3


def global_objects(prog: Program, g: "Graph") -> Any:
    """The graph's nodes of its heap's global objects, ascending (the census
    keeps their addresses: they are JS objects). The writer's shortcuts and
    the dominator tree's root edges go to these."""
    np = numpy()
    t = prog.heap.md.types.get("JS_GLOBAL_OBJECT_TYPE")
    addrs = [a for ms in census.of(prog, g.heap).maps.values()
             if t is not None and ms.instance_type == t and ms.addresses is not None
             for a in ms.addresses]
    i = g.indices(np.asarray(addrs, dtype=np.uint64))
    return np.sort(i[i >= 0])


def build(prog: Program, heap: int, progress=None) -> Graph:
    """The graph of one heap; cached on the program until it runs again.

    Two passes over the pages: their objects first (the nodes, in address
    order), then their slots, each page's resolved to node indices at once,
    so that no more than a few bytes per edge are ever held."""
    st = prog.heap_state
    got = st.graphs.get(heap)
    if got is not None:
        return got
    np = numpy()
    t0 = time.monotonic()
    c = census.of(prog, heap)
    w = st.walker
    if not isinstance(w, Walker):
        w = st.walker = Walker(prog, prog.heap)
    bulk = census._numpy() if not os.environ.get("V8DBG_GRAPH_NO_BULK") else None
    nw = NumpyPages(w, bulk) if bulk is not None else None
    read_only = read_only_pages(prog, layout(prog))
    pages = sorted(list(c.pages) + read_only, key=lambda p: p.start)
    code = _code_owners(w, pages)
    lo = min(p.start for p in pages)
    hi = max(p.end for p in pages)
    total = 2 * sum(p.end - p.start for p in pages)
    done = 0
    per_page = []  # (word index, size in words, data kind) of each page's objects
    # Code objects (tagged addresses), where V8 13.6+ reaches them through its
    # dispatch table rather than a function's slot.
    find_codes = dispatch_applies(prog)
    codes: list[int] = []
    count = 0
    for p in pages:
        check_interrupted()
        starts, sizes, maps = _page_objects(np, prog, p, nw if p.owner not in code else None)
        # Word indices and sizes in words fit 32 bits (a page is far smaller
        # than 16 GB): half the memory held between the passes.
        per_page.append((starts.astype(np.int32), sizes.astype(np.int32),
                         *_kinds(np, prog, w, maps)))
        if find_codes and len(maps):
            sel = per_page[-1][3] == _CODE_OBJECT
            if sel.any():
                codes.extend((starts[sel].astype(np.uint64) * np.uint64(8)
                              + np.uint64(p.start + 1)).tolist())
        count += len(starts)
        if count > MAX_NODES:
            raise V8DbgError(f"the heap holds more than {MAX_NODES} objects: too many "
                             "for its graph in this process's memory")
        done += p.end - p.start
        if progress is not None:
            progress.update(done, total)
    groups = roots.root_groups(np, prog, heap, lo, hi)
    names = [g.name for g in groups]
    first = 1 + len(names)
    node_addr = np.zeros(first + count, dtype=np.uint64)
    node_size = np.zeros(first + count, dtype=np.uint32)
    k = first
    for p, (starts, sizes, _dk, _wk) in zip(pages, per_page):
        node_addr[k:k + len(starts)] = starts.astype(np.uint64) * np.uint64(8) + \
            np.uint64(p.start + 1)
        node_size[k:k + len(starts)] = sizes.astype(np.uint32) * np.uint32(8)
        k += len(starts)
    n = len(node_addr)
    # Each node's degree, made the CSR offsets in place once all are known.
    first_edge = np.zeros(n + 1, dtype=np.int64)
    degree = first_edge[1:]

    def resolve(vals):
        i = np.minimum(np.searchsorted(node_addr, vals), n - 1)
        return i, (node_addr[i] == vals) & (i >= first)

    to_p, type_p, name_p = [], [], []
    # The root and its groups.
    degree[0] = len(names)
    to_p.append(np.arange(1, first, dtype=np.uint32))
    type_p.append(np.full(len(names), E_ELEMENT, dtype=np.uint8))
    name_p.append(np.arange(len(names), dtype=np.uint32))
    notes: list[str] = []
    late = [i for i, gr in enumerate(groups) if gr.late]
    cleared = [i for i, gr in enumerate(groups) if gr.cleared]
    for gi, g in enumerate(groups):
        groups[gi] = None  # type: ignore[call-overload]  # its values let go once resolved
        notes.extend(g.notes)
        to, ok = resolve(g.values)
        to = np.unique(to[ok])
        weak = np.zeros(0, dtype=np.int64)
        if g.weak is not None and len(g.weak):
            weak, wok = resolve(g.weak)
            weak = np.setdiff1d(np.unique(weak[wok]), to)
        degree[1 + gi] = len(to) + len(weak)
        to_p.append(np.concatenate([to, weak]).astype(np.uint32))
        type_p.append(np.concatenate([np.full(len(to), E_ELEMENT, dtype=np.uint8),
                                      np.full(len(weak), E_WEAK, dtype=np.uint8)]))
        name_p.append(np.arange(len(to) + len(weak), dtype=np.uint32))
    k = first
    eph: list = []  # (table, key, value) node triples, per page
    for pi, p in enumerate(pages):
        check_interrupted()
        starts, sizes, dk, wk = per_page[pi]
        per_page[pi] = None  # type: ignore[call-overload]
        owner, off, val, weak = _page_slots(np, w, p, starts, sizes, dk, lo, hi)
        if len(owner):
            weak = weak | _weak_slots(np, prog.heap.md, wk[owner], off) \
                | _weak_in_code(np, prog.heap, wk[owner], off, val)
        to, ok = resolve(val)
        if len(owner) and (wk == _EPHEMERONS).any():
            eph.append(_ephemerons(np, prog.heap.md, wk[owner], owner, off, to, ok, k))
        degree[k:k + len(starts)] = np.bincount(owner[ok], minlength=len(starts))
        to_p.append(to[ok].astype(np.uint32))
        type_p.append(np.where(weak[ok], E_WEAK, E_INTERNAL).astype(np.uint8))
        name_p.append(off[ok].astype(np.uint32))
        k += len(starts)
        done += p.end - p.start
        if progress is not None:
            progress.update(done, total)
    np.cumsum(degree, out=degree)
    del degree
    edge_to = _cat(np, to_p, np.uint32)
    edge_type = _cat(np, type_p, np.uint8)
    edge_name = _cat(np, name_p, np.uint32)
    pairs = np.concatenate(eph) if eph else np.zeros((0, 3), dtype=np.int64)
    if len(pairs) and read_only:
        # An empty or deleted entry's key is an oddball (undefined, the
        # hole), which no key can be: read-only, and no pair.
        ro = np.zeros(len(pairs), dtype=bool)
        addr = node_addr[pairs[:, 1]]
        for p in read_only:
            ro |= (addr >= np.uint64(p.start)) & (addr < np.uint64(p.end))
        pairs = pairs[~ro]
    pairs = pairs[np.argsort(pairs[:, 1], kind="stable")]
    if len(pairs):
        first_edge, edge_to, edge_type, edge_name = _ephemeron_edges(
            np, pairs, first_edge, edge_to, edge_type, edge_name)
    code = _function_code(np, prog, c, node_addr, first, codes, notes)
    if len(code):
        first_edge, edge_to, edge_type, edge_name = _insert_edges(
            np, code[:, 0], code[:, 1], code[:, 2], first_edge, edge_to, edge_type, edge_name)
    g = Graph(heap, node_addr, node_size, first_edge, edge_to, edge_type, edge_name, names,
              first, time.monotonic() - t0, notes, late, cleared, pairs, read_only)
    st.graphs[heap] = g
    return g


def _ephemerons(np, md, kind, owner, off, to, ok, base: int):
    """(table, key, value) nodes of the entries of one page's ephemeron tables
    whose key and value are both objects of the heap."""
    first = md.const("EphemeronEntriesOffset")
    e = (kind == _EPHEMERONS) & (off >= first) & ok
    entry = np.where(e, (off - first) // 16, -1)
    is_key = e & ((off - first) % 16 == 0)
    is_val = e & ((off - first) % 16 == 8)
    keys = {(int(o), int(n)): int(t) for o, n, t in
            zip(owner[is_key].tolist(), entry[is_key].tolist(), to[is_key].tolist())}
    out = [(base + o, keys[(o, n)], int(t)) for o, n, t in
           zip(owner[is_val].tolist(), entry[is_val].tolist(), to[is_val].tolist())
           if (o, n) in keys]
    return np.array(out, dtype=np.int64).reshape(-1, 3)


def _ephemeron_edges(np, pairs, first_edge, edge_to, edge_type, edge_name):
    """The graph with an edge from each ephemeron's key to its value, last of
    the key's edges: what keeps a WeakMap's value alive (while its key is),
    as the GC and V8's snapshot have it."""
    keys = pairs[:, 1]
    return _insert_edges(np, keys, pairs[:, 2], np.full(len(keys), EPHEMERON, np.uint32),
                         first_edge, edge_to, edge_type, edge_name)


def _function_code(np, prog: Program, c, node_addr, first: int, codes: list,
                   notes: list[str]):
    """(function node, its code's node, the handle's byte offset) of each
    JSFunction whose code V8 13.6+ keeps in the JS dispatch table (no slot of
    the function points at it: V8's snapshot has the `code` edge all the
    same); sorted by function, none before 13.6 or where the table is not
    found (said in `notes`: the code only functions hold then counts as
    unreachable). `codes`: the tagged addresses of the heap's Code objects."""
    from ..v8 import dispatch
    none = np.zeros((0, 3), dtype=np.int64)
    if not dispatch.applies(prog) or not codes:
        return none
    md = prog.md
    lo, hi = md.consts.get("FirstJSFunctionType"), md.consts.get("LastJSFunctionType")
    if lo is None or hi is None:
        return none
    fns = [a for ms in c.maps.values() if lo <= ms.instance_type <= hi
           and ms.addresses is not None for a in ms.addresses]
    table = dispatch.find(np, prog, fns, np.sort(np.asarray(codes, dtype=np.uint64)))
    if table is None and fns:
        notes.append("the JS dispatch table was not found: functions have no `code` edge, "
                     "and code only they hold counts as unreachable")
    if table is None or not fns:
        return none
    at = md.fields[("JSFunction", "dispatch_handle")]
    fa = np.sort(np.asarray(fns, dtype=np.uint64))
    handles = np.zeros(len(fa), dtype=np.uint64)
    for k, a in enumerate(fa.tolist()):
        try:
            handles[k] = prog.mem.u32(int(a) - 1 + at)
        except (DecodeError, TargetMemoryError):
            pass  # no handle read: no `code` edge
    to = table.codes(np, prog, handles)
    n = len(node_addr)
    i = np.minimum(np.searchsorted(node_addr, fa), n - 1)
    j = np.minimum(np.searchsorted(node_addr, to), n - 1)
    ok = (node_addr[i] == fa) & (node_addr[j] == to) & (i >= first) & (j >= first)
    return np.stack([i[ok], j[ok], np.full(int(ok.sum()), at)], axis=1).astype(np.int64)


def _insert_edges(np, src, to, names, first_edge, edge_to, edge_type, edge_name):
    """The graph with one more `internal` edge from each src (ascending) to
    its to, named names, last of src's edges. One array at a time is copied."""
    at = first_edge[src + 1]
    edge_to = np.insert(edge_to, at, to.astype(np.uint32))
    edge_type = np.insert(edge_type, at, np.uint8(E_INTERNAL))
    edge_name = np.insert(edge_name, at, names.astype(np.uint32))
    extra = np.bincount(src, minlength=len(first_edge) - 1)
    first_edge = first_edge.copy()
    first_edge[1:] += np.cumsum(extra)
    return first_edge, edge_to, edge_type, edge_name


def _cat(np, parts: list, dtype):
    """The parts in one array, each part let go once copied (peak: the result
    and one part more, not twice the whole)."""
    out = np.empty(sum(len(x) for x in parts), dtype=dtype)
    k = 0
    for i in range(len(parts)):
        x = parts[i]
        out[k:k + len(x)] = x
        k += len(x)
        parts[i] = None
    return out


# Edges a step of the search takes at once: its temporaries, some 30 bytes
# an edge, stay near 15 MB however wide a level of the heap is.
REACH_EDGES = 1 << 19


def reach(g: Graph) -> tuple[Any, Any]:
    """(reached, parent edge) per node: breadth first from the root, weak edges
    not followed; the parent edge of a node is the first edge that reached it
    on a shortest path (-1 for the root and what nothing reaches)."""
    if g._reach is not None:
        return g._reach, g._parent
    np = numpy()
    n = g.nodes
    seen = np.zeros(n, dtype=bool)
    # Edge indices in 32 bits where they fit (-1 for none): half the memory.
    parent = np.full(n, -1, dtype=np.int32 if g.edges < 2**31 else np.int64)
    seen[0] = True
    # Root groups found conservatively are followed last: they start the
    # search again from what the others did not reach.
    late = [1 + i for i in g.late_groups]
    seen[late] = True
    frontier = np.zeros(1, dtype=np.int64)
    fe, to, ty = g.first_edge, g.edge_to, g.edge_type
    # An ephemeron's value is reached once both its table and its key are:
    # its key's edge is followed only then, not in the breadth-first pass.
    pairs = g.ephemerons if g.ephemerons is not None and len(g.ephemerons) else None
    eph_pos = np.flatnonzero(g.edge_name == EPHEMERON) if pairs is not None else None
    # The loop ends once nothing is left to follow: no frontier, no ephemeron
    # whose table and key are both reached, no group left to start from.
    while True:
        check_interrupted()
        if not len(frontier) and pairs is not None:
            new = np.flatnonzero(seen[pairs[:, 0]] & seen[pairs[:, 1]] & ~seen[pairs[:, 2]])
            if len(new):
                v, first = np.unique(pairs[new, 2], return_index=True)
                parent[v] = eph_pos[new[first]]
                seen[v] = True
                frontier = v.astype(np.int64)
                continue
        if not len(frontier):
            if not late:
                break
            frontier = np.array([late.pop(0)], dtype=np.int64)
            parent[frontier] = fe[0] + frontier - 1  # the root's edge to that group
            continue
        # The frontier's edges in order, a bounded piece at a time: a node is
        # found by the first of them that reaches it.
        found = []
        for idx in expand(np, fe, frontier, REACH_EDGES):
            idx = idx[ty[idx] != E_WEAK]
            if eph_pos is not None:
                idx = idx[g.edge_name[idx] != EPHEMERON]
            t = to[idx]
            new = ~seen[t]
            idx, t = idx[new], t[new]
            u, first = np.unique(t, return_index=True)
            parent[u] = idx[first]
            seen[u] = True
            found.append(u)  # node indices as edges hold them: 32 bits
        frontier = np.concatenate(found) if found else frontier[:0]
        if len(found) > 1:
            frontier.sort()
    g._reach, g._parent = seen, parent
    return seen, parent


def source(g: Graph, edge: int) -> int:
    """The node an edge comes from."""
    np = numpy()
    return int(np.searchsorted(g.first_edge, edge, side="right")) - 1


@dataclass
class Reachable:
    """The census's objects that some root reaches, per map; None when the graph
    could not be built here (no NumPy): then every object counts."""

    addresses: dict[int, Any] | None
    unreachable: int | None  # census-counted objects no root reaches


def reachable(prog: Program, heap: int, progress=None) -> Reachable:
    """The census's addresses split by reachability (cached per heap)."""
    st = prog.heap_state
    got = st.reachable.get(heap)
    if got is not None:
        return got
    try:
        np = numpy()
    except V8DbgError:
        r = Reachable(None, None)
        st.reachable[heap] = r
        return r
    from array import array
    g = build(prog, heap, progress)
    seen, _ = reach(g)
    c = census.of(prog, heap)
    out: dict[int, Any] = {}
    lost = 0
    for m, ms in c.maps.items():
        if ms.addresses is None:
            continue
        a = np.frombuffer(ms.addresses, dtype=np.uint64) if isinstance(ms.addresses, array) \
            else np.asarray(ms.addresses, dtype=np.uint64)
        i = g.indices(a)
        keep = (i >= 0) & seen[np.maximum(i, 0)]
        if bool(keep.all()):
            out[m] = ms.addresses
            continue
        out[m] = array("Q", a[keep].astype("<u8").tobytes())
        lost += int(len(a) - int(keep.sum()))
    r = Reachable(out, lost)
    st.reachable[heap] = r
    return r
