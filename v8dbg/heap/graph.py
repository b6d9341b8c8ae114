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

from .. import numpylib
from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..interrupt import check_interrupted
from . import budget, census, roots
from .dominators import expand
from . import mapped
from .release import free_pages, free_pages_if_grown
from ..v8.dispatch import applies as dispatch_applies
from ..v8.pages import layout, read_only_pages
from .walk import (K_BIGINT, K_BYTES, K_FREE, K_SEQ1, K_SEQ2, NumpyPages, Walker, _code_owners,
                   page_objects)
from .arrays import spliced, unique

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
        np = numpylib.load()
    except ImportError as e:
        raise V8DbgError("the heap graph needs NumPy (pip install numpy, or "
                         f"python3-numpy for the debugger's Python): {e}") from None
    return np


def can_build() -> bool:
    """Whether the graph can be built in this Python (NumPy importable)."""
    try:
        numpy()
    except V8DbgError:
        return False
    return True


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
    # The heap's distinct map words, ascending (0 first: the synthetic nodes'),
    # and each node's number among them, as the walk of the pages found them.
    map_words: Any = None
    map_code: Any = None
    _reach: Any = None
    _parent: Any = None

    @property
    def nodes(self) -> int:
        return len(self.node_addr)

    def drop_pages(self) -> None:
        """Let the arrays' pages go from this process's memory (mapped.py):
        a pass over the graph is done with them."""
        mapped.drop(self.node_addr, self.node_size, self.first_edge, self.edge_to,
                     self.edge_type, self.edge_name)

    @property
    def edges(self) -> int:
        return len(self.edge_to)

    def read_only_nodes(self) -> list[tuple[int, int]]:
        """The nodes of the read-only space's objects, as ranges a .. b-1 (a
        page's each): ascending node indices follow addresses."""
        np = numpy()
        out = []
        for p in self.read_only:
            a, b = np.searchsorted(self.node_addr, [np.uint64(p.start), np.uint64(p.end)])
            out.append((max(int(a), self.first_object), int(b)))
        return out

    def in_read_only(self) -> Any:
        """Bool per node: an object of the read-only space."""
        out = numpy().zeros(self.nodes, dtype=bool)
        for a, b in self.read_only_nodes():
            out[a:b] = True
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


class _Kinds:
    """Per map word, learnt once for the whole heap: whether its objects'
    bodies are data, not tagged slots, and their weak kind (`_weak_kinds`)."""

    def __init__(self, np, prog: Program, w) -> None:
        self.np, self.prog, self.w = np, prog, w
        self.known: dict[int, tuple[bool, int]] = {}

    def of(self, distinct, inverse) -> tuple[Any, Any]:
        """(data?, weak kind) per object of a page, from its distinct maps."""
        np = self.np
        ms = distinct.tolist()
        new = [m for m in ms if m not in self.known]
        if new:
            wk = _weak_kinds(np, self.prog, np.array(new, dtype=np.uint64)).tolist()
            for m, k in zip(new, wk):
                self.known[m] = (self.w.info(m)[0] in _DATA_KINDS, k)
        got = [self.known[m] for m in ms]
        data = np.array([d for d, _ in got], dtype=bool)
        weak = np.array([k for _, k in got], dtype=np.uint8)
        return data[inverse], weak[inverse]


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


def _page_slots(np, data, starts, sizes, data_kind, lo: int, hi: int, w0: int, w1: int):
    """(object, byte offset, value, weak?) of each slot in words w0 .. w1-1
    of one page (data: the page's bytes; starts, sizes: its objects, in
    words) that holds a tagged pointer into [lo, hi], but for the objects'
    map words: every object has one, resolved per distinct map (`build`)."""
    empty = np.zeros(0, dtype=np.int64)
    if data is None or not len(starts) or w1 <= w0:
        return empty, empty, np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=bool)
    W = np.frombuffer(data, dtype="<u8")[w0:w1]
    # Tagged pointers (tag 01 strong, 11 weak) have their lowest bit set:
    # told from the words' low bytes alone, the rest of each word looked at
    # only for them.
    low = W.view(np.uint8)[::8] & 1
    a, b = np.searchsorted(starts, [w0, w1])
    low[starts[a:b] - w0] = 0
    pos = np.flatnonzero(low.view(bool))
    word = W[pos]
    pos += w0
    val = word & ~np.uint64(2)
    inside = (val >= np.uint64(lo)) & (val <= np.uint64(hi))
    pos, word, val = pos[inside], word[inside], val[inside]
    owner = np.searchsorted(starts, pos, side="right") - 1
    ok = owner >= 0
    owner = np.where(ok, owner, 0)
    at = starts[owner]
    ok &= pos < at + sizes[owner].astype(np.int64)  # (a damaged size may be near 2**31)
    # Objects whose body is data: only their map word is a slot.
    ok &= ~data_kind[owner]
    owner = owner[ok]
    return owner, (pos[ok] - at[ok]) * 8, val[ok], (word[ok] & np.uint64(2)) != 0


# Words of a page whose slots are found and resolved at once: the
# temporaries of a piece, some 60 bytes a word, stay near 8 MB however
# large an object (a large object space page holds one of any size).
WINDOW = 1 << 17


def _windows(np, starts, sizes, words: int):
    """(first object, end object, first word, end word, last?) of each piece
    of a page's words that `build` reads at once: whole objects of about
    WINDOW words together, an object larger than that in pieces of its own
    (`last`: the piece its object ends in). No piece goes past the page's
    `words` (a damaged size may say anything)."""
    if not len(starts):
        return []
    ends = np.minimum(starts.astype(np.int64) + sizes, max(int(words), int(starts[-1]) + 1))
    cut = np.unique(np.searchsorted(starts, np.arange(0, int(ends.max()), WINDOW)))
    out = []
    bounds = cut.tolist() + [len(starts)]
    for j0, j1 in zip(bounds, bounds[1:]):
        if j1 <= j0:
            continue
        w0, w1 = int(starts[j0]), int(ends[j0:j1].max())
        if j1 - j0 == 1 and w1 - w0 > WINDOW:
            out.extend((j0, j1, x, min(x + WINDOW, w1), x + WINDOW >= w1)
                       for x in range(w0, w1, WINDOW))
        else:
            out.append((j0, j1, w0, w1, True))
    return out


def _ephemeron_words(np, md, data, p, starts, sizes, tables):
    """(table, key, value) of each entry of one page's ephemeron tables whose
    key and value are both tagged pointers (tagged addresses, strong form;
    tables' own): read while the page's bytes are at hand, told objects or
    not once every node is known."""
    W = np.frombuffer(data, dtype="<u8")
    first = md.const("EphemeronEntriesOffset") >> 3
    out = []
    for j in tables.tolist():
        s, n = int(starts[j]), int(sizes[j])
        e = W[s + first:s + n]
        e = e[:len(e) // 2 * 2].reshape(-1, 2)
        t = e & np.uint64(3)
        keep = ((t[:, 0] == 1) | (t[:, 0] == 3)) & ((t[:, 1] == 1) | (t[:, 1] == 3))
        e = e[keep] & ~np.uint64(2)
        out.append(np.concatenate([np.full((len(e), 1), s * 8 + p.start + 1, dtype=np.uint64), e],
                                  axis=1))
    return np.concatenate(out) if out else np.zeros((0, 3), dtype=np.uint64)


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


def build(prog: Program, heap: int, progress=None, where: str | None = None) -> Graph:
    """The graph of one heap; cached on the program until it runs again.
    Its arrays are in temporary files' pages (mapped.py) in `where`, else
    the system's temporary directory.

    Its objects come from the census's own walk of the pages when the
    census is not taken yet (one walk for both), else from a walk of their
    own; a second pass over the pages' bytes then finds their slots, each
    page's resolved to node indices at once and written straight into the
    edge arrays, so that no more than a few bytes per edge are ever held."""
    st = prog.heap_state
    got = st.graphs.get(heap)
    if got is not None:
        return got
    if heap in st.refused:
        raise GraphTooBig(st.refused[heap])
    np = numpy()
    t0 = time.monotonic()
    md = prog.heap.md
    # page start -> (word index, size in words, data?, weak kind, the page's
    # distinct maps, each object's map among them)
    per_page: dict[int, tuple] = {}
    eph_words: dict[int, Any] = {}  # page start -> `_ephemeron_words`
    # Code objects (tagged addresses), where V8 13.6+ reaches them through its
    # dispatch table rather than a function's slot.
    find_codes = dispatch_applies(prog)
    codes: list[int] = []
    state: dict[str, Any] = {"count": 0, "kinds": None}

    def objects(p, po) -> None:
        """One page's objects, as a walk found them: kept in 32 bits (a page
        is far smaller than 16 GB) until the slots are read."""
        walker = st.walker if w is None else w
        kinds = state["kinds"]
        if kinds is None:
            kinds = state["kinds"] = _Kinds(np, prog, walker)
        dk, wk = kinds.of(po.distinct, po.inverse)
        starts = po.starts
        per_page[p.start] = (starts.astype(np.int32), po.sizes.astype(np.int32), dk, wk,
                             po.distinct, po.inverse.astype(np.int32))
        if find_codes and len(starts):
            sel = wk == _CODE_OBJECT
            if sel.any():
                codes.extend((starts[sel].astype(np.uint64) * np.uint64(8)
                              + np.uint64(p.start + 1)).tolist())
        tables = np.flatnonzero(wk == _EPHEMERONS)
        if len(tables):
            data = po.data if po.data is not None else walker.read_page(p)
            if data is not None:
                eph_words[p.start] = _ephemeron_words(np, md, data, p, starts, po.sizes, tables)
        state["count"] += len(starts)
        if state["count"] > MAX_NODES:
            raise V8DbgError(f"the heap holds more than {MAX_NODES} objects: too many "
                             "for its graph in this process's memory")

    no_bulk = bool(os.environ.get("V8DBG_GRAPH_NO_BULK"))
    w = None
    done = 0
    if heap not in st.census and not no_bulk:
        # One walk for the census and the nodes: the census's own.
        c = census.of(prog, heap, _Halved(progress), objects, where)
        done = sum(p.end - p.start for p in c.pages)
    c = census.of(prog, heap)
    w = st.walker
    if not isinstance(w, Walker):
        w = st.walker = Walker(prog, prog.heap)
    if state["kinds"] is not None:
        state["kinds"].w = w
    bulk = census._numpy() if not no_bulk else None
    nw = NumpyPages(w, bulk) if bulk is not None else None
    read_only = read_only_pages(prog, layout(prog))
    pages = sorted(list(c.pages) + read_only, key=lambda p: p.start)
    code = _code_owners(w, pages)
    lo = min(p.start for p in pages)
    hi = max(p.end for p in pages)
    total = 2 * sum(p.end - p.start for p in pages)
    for p in pages:
        if p.start in per_page:
            continue
        check_interrupted()
        objects(p, page_objects(np, w, nw, p, code))
        done += p.end - p.start
        if progress is not None:
            progress.update(done, total)
    done = total // 2
    count = state["count"]
    groups = roots.root_groups(np, prog, heap, lo, hi)
    names = [g.name for g in groups]
    first = 1 + len(names)
    free_pages(trim=False)  # (the walk's and the groups' temporaries: the node arrays reuse them)
    node_addr = mapped.file_array(np, first + count, np.uint64, where)
    node_size = mapped.file_array(np, first + count, np.uint32, where)
    map_words = unique(np, np.concatenate([np.zeros(1, np.uint64)] +
                                          [v[4].astype(np.uint64, copy=False)
                                           for v in per_page.values()]))
    map_code = mapped.file_array(np, first + count, np.uint16 if len(map_words) <= 1 << 16
                                 else np.uint32, where)
    k = first
    bound = 0  # slots the pages can hold at most: an edge each
    for p in pages:
        starts, sizes, dk, _wk, distinct, which = per_page[p.start]
        node_addr[k:k + len(starts)] = starts.astype(np.uint64) * np.uint64(8) + \
            np.uint64(p.start + 1)
        node_size[k:k + len(starts)] = sizes.astype(np.uint32) * np.uint32(8)
        map_code[k:k + len(starts)] = np.searchsorted(map_words, distinct)[which]
        bound += int(sizes[~dk].sum(dtype=np.int64)) + int(dk.sum())
        k += len(starts)
    mapped.drop(node_size, map_code)  # (written: in the file's pages)
    n = len(node_addr)
    # Each node's degree, made the CSR offsets in place once all are known.
    first_edge = mapped.file_array(np, n + 1, np.int64, where)
    degree = first_edge[1:]

    def resolve(vals):
        i = np.minimum(np.searchsorted(node_addr, vals), n - 1)
        return i, (node_addr[i] == vals) & (i >= first)

    notes: list[str] = []
    late = [i for i, gr in enumerate(groups) if gr.late]
    cleared = [i for i, gr in enumerate(groups) if gr.cleared]
    # The root's and its groups' edges, resolved before the others: then the
    # edge arrays, made once, as long as every slot at most.
    root_to = [np.arange(1, first, dtype=np.uint32)]
    root_type = [np.full(len(names), E_ELEMENT, dtype=np.uint8)]
    degree[0] = len(names)
    for gi, g in enumerate(groups):
        groups[gi] = None  # type: ignore[call-overload]  # its values let go once resolved
        notes.extend(g.notes)
        to, ok = resolve(g.values)
        to = to[ok]  # one edge a slot, in the group's order, as V8's sub-roots
        weak = np.zeros(0, dtype=np.int64)
        if g.weak is not None and len(g.weak):
            weak, wok = resolve(g.weak)
            weak = weak[wok]
            weak = weak[~np.isin(weak, to)]  # (in the list's order, as V8's)
        degree[1 + gi] = len(to) + len(weak)
        root_to.append(np.concatenate([to, weak]).astype(np.uint32))
        root_type.append(np.concatenate([np.full(len(to), E_ELEMENT, dtype=np.uint8),
                                         np.full(len(weak), E_WEAK, dtype=np.uint8)]))
    pairs = _ephemeron_pairs(np, [eph_words[a] for a in sorted(eph_words)], resolve, read_only)
    eph_words.clear()
    code_edges = _function_code(np, prog, c, node_addr, first, codes, notes)
    del codes[:]
    # Edges no slot holds: each ephemeron's key to its value, each function
    # to its code; last of their node's edges, in that order.
    xsrc = np.concatenate([pairs[:, 1], code_edges[:, 0]])
    order = np.argsort(xsrc, kind="stable")
    xsrc = xsrc[order]
    xto = np.concatenate([pairs[:, 2], code_edges[:, 1]])[order].astype(np.uint32)
    xname = np.concatenate([np.full(len(pairs), EPHEMERON, dtype=np.int64),
                            code_edges[:, 2]])[order].astype(np.uint32)
    bound += sum(len(x) for x in root_to) + len(xsrc)
    # Will the edges and the passes over them fit? Said now, not by the kernel.
    too_big = budget.check_graph(count, bound)
    if too_big is not None:
        st.refused[heap] = too_big
        raise GraphTooBig(too_big)
    edge_to = mapped.file_array(np, bound, np.uint32, where)
    edge_type = mapped.file_array(np, bound, np.uint8, where)
    edge_name = mapped.file_array(np, bound, np.uint32, where)
    at = 0
    for x, y in zip(root_to, root_type):
        edge_to[at:at + len(x)] = x
        edge_type[at:at + len(x)] = y
        edge_name[at:at + len(x)] = np.arange(len(x), dtype=np.uint32)
        at += len(x)
    del root_to, root_type
    free_pages(trim=False)  # (the edges' of the roots and of no slot: the pages' slots reuse them)
    k = first
    for p in pages:
        check_interrupted()
        starts, sizes, dk, wk, maps, which = per_page.pop(p.start)
        data = nw.read(p) if nw is not None else w.read_page(p)
        # Each object's map word, its first slot, resolved per distinct map.
        mto, mok = resolve(maps)
        mto, mok = mto[which].astype(np.uint32), mok[which]
        for j0, j1, w0, w1, ends_here in _windows(np, starts, sizes, (p.end - p.start) >> 3):
            at = _window_edges(np, md, prog.heap, data, starts, sizes, dk, wk, lo, hi, resolve,
                               k, j0, j1, w0, w1, ends_here, mto, mok, xsrc, xto, xname,
                               degree, edge_to, edge_type, edge_name, at)
            mapped.drop(edge_to, edge_type, edge_name, first_edge)  # (written: in the file's pages)
            free_pages_if_grown(arrays=False)  # (the piece's temporaries; node_addr kept)
        k += len(starts)
        done += p.end - p.start
        if progress is not None:
            progress.update(done, total)
    # The arrays cut to the edges found (what was never written never took
    # memory nor disk).
    edge_to, edge_type, edge_name = edge_to[:at], edge_type[:at], edge_name[:at]
    np.cumsum(degree, out=degree)
    del degree
    mapped.drop(map_code)
    g = Graph(heap, node_addr, node_size, first_edge, edge_to, edge_type, edge_name, names,
              first, time.monotonic() - t0, notes, late, cleared, pairs, read_only,
              map_words, map_code)
    st.graphs[heap] = g
    del per_page, pages
    g.drop_pages()
    free_pages()  # (the pages' slots, read and resolved: given back, not kept for reuse)
    return g


def _window_edges(np, md, h, data, starts, sizes, dk, wk, lo, hi, resolve, k, j0, j1, w0, w1,
                  ends_here, mto, mok, xsrc, xto, xname, degree, edge_to, edge_type, edge_name,
                  at):
    """Write the edges of one piece of a page (`_windows`) at edge `at` of the
    edge arrays, in the order of their objects, each object's map first and
    its edges no slot holds last (an object in pieces: in its first and its
    last); count them in `degree`. The next free edge is returned."""
    owner, off, val, weak = _page_slots(np, data, starts, sizes, dk, lo, hi, w0, w1)
    if len(owner):
        weak = weak | _weak_slots(np, md, wk[owner], off) \
            | _weak_in_code(np, h, wk[owner], off, val)
    to, ok = resolve(val)
    owner, to, off = owner[ok], to[ok].astype(np.uint32), off[ok].astype(np.uint32)
    kind = np.where(weak[ok], E_WEAK, E_INTERNAL).astype(np.uint8)
    # The map edges of the objects that start here.
    first = j0 if int(starts[j0]) >= w0 else j0 + 1
    objs = first + np.flatnonzero(mok[first:j1])
    into = np.searchsorted(owner, objs)
    owner, to, kind, off = spliced(np, [owner, to, kind, off], into,
                                   [objs, mto[objs], np.uint8(E_INTERNAL), np.uint32(0)])
    # The edges no slot holds of the objects that end here.
    last = j1 if ends_here else j1 - 1
    a, b = np.searchsorted(xsrc, [k + j0, k + last])
    if b > a:
        src = xsrc[a:b] - k
        into = np.searchsorted(owner, src, side="right")
        owner, to, kind, off = spliced(np, [owner, to, kind, off], into,
                                       [src, xto[a:b], np.uint8(E_INTERNAL), xname[a:b]])
    degree[k + j0:k + j1] += np.bincount(owner - j0, minlength=j1 - j0).astype(degree.dtype)
    edge_to[at:at + len(to)] = to
    edge_type[at:at + len(to)] = kind
    edge_name[at:at + len(to)] = off
    return at + len(to)


class _Halved:
    """The census's progress as the first half of the graph's."""

    def __init__(self, progress) -> None:
        self.progress = progress

    def update(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.update(done, 2 * total)


def _ephemeron_pairs(np, words: list, resolve, read_only):
    """(table, key, value) nodes of each ephemeron whose key and value are
    objects of the heap (no read-only key: an empty or deleted entry's key
    is an oddball, which no key can be), sorted by key."""
    w = np.concatenate(words) if words else np.zeros((0, 3), dtype=np.uint64)
    t, tok = resolve(w[:, 0])
    key, kok = resolve(w[:, 1])
    val, vok = resolve(w[:, 2])
    ok = tok & kok & vok
    for p in read_only:
        ok &= ~((w[:, 1] >= np.uint64(p.start)) & (w[:, 1] < np.uint64(p.end)))
    pairs = np.stack([t[ok], key[ok], val[ok]], axis=1).astype(np.int64).reshape(-1, 3)
    return pairs[np.argsort(pairs[:, 1], kind="stable")]


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


def let_go_edges(prog: Program, g: Graph) -> None:
    """Free a graph's edge arrays (most of its memory) once a command has read
    all it needs of them: the graph leaves the cache, and a later command
    that needs it builds it again. Its nodes stay usable."""
    st = prog.heap_state
    if st.graphs.get(g.heap) is g:
        del st.graphs[g.heap]
    g.edge_to = g.edge_type = g.edge_name = None
    g.ephemerons = None
    g._parent = None
    if hasattr(g, "_dominators"):
        del g._dominators


# Edges a step of the search takes at once: its temporaries, some 30 bytes
# an edge, stay near 15 MB however wide a level of the heap is.
REACH_EDGES = 1 << 19


def reached(g: Graph) -> Any:
    """Bool per node: some root reaches it (`reach` without the parent edges,
    which only paths need: a word per node less)."""
    return reach(g, parents=False)[0]


def reach(g: Graph, parents: bool = True) -> tuple[Any, Any]:
    """(reached, parent edge) per node: breadth first from the root, weak edges
    not followed; the parent edge of a node is the first edge that reached it
    on a shortest path (-1 for the root and what nothing reaches). Without
    `parents`, the second is None."""
    if g._reach is not None and (g._parent is not None or not parents):
        return g._reach, g._parent
    np = numpy()
    n = g.nodes
    seen = np.zeros(n, dtype=bool)
    # Edge indices in 32 bits where they fit (-1 for none): half the memory.
    parent = np.full(n, -1, dtype=np.int32 if g.edges < 2**31 else np.int64) \
        if parents else None
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
                if parent is not None:
                    parent[v] = eph_pos[new[first]]
                seen[v] = True
                frontier = v.astype(np.int64)
                continue
        if not len(frontier):
            if not late:
                break
            frontier = np.array([late.pop(0)], dtype=np.int64)
            if parent is not None:
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
            if parent is None:
                u = unique(np, t[new])
            else:
                idx, t = idx[new], t[new]
                u, first = np.unique(t, return_index=True)
                parent[u] = idx[first]
            seen[u] = True
            found.append(u)  # node indices as edges hold them: 32 bits
            g.drop_pages()  # (the piece's edges read)
        frontier = np.concatenate(found) if found else frontier[:0]
        if len(found) > 1:
            frontier.sort()
    g._reach, g._parent = seen, parent
    free_pages(trim=False)  # (the search's temporaries: the next pass's reuse them)
    return seen, parent


def source(g: Graph, edge: int) -> int:
    """The node an edge comes from."""
    np = numpy()
    return int(np.searchsorted(g.first_edge, edge, side="right")) - 1


@dataclass
class Reachable:
    """The census's objects that some root reaches, per map; None when the graph
    could not be built here (no NumPy, or too big for the memory left, as
    `why` says): then every object counts."""

    addresses: dict[int, Any] | None
    unreachable: int | None  # census-counted objects no root reaches
    why: str = "the heap graph needs NumPy"  # (where addresses is None)


class GraphTooBig(V8DbgError):
    """The heap's graph would not fit in the memory this process may take."""


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
    try:
        g = build(prog, heap, progress)
    except GraphTooBig as e:
        r = Reachable(None, None, str(e))
        st.reachable[heap] = r
        return r
    seen = reached(g)
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
