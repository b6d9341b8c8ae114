"""Edges as V8's heap snapshot generator types and names them.

The heap graph (graph.py) keeps every tagged slot of an object as an edge,
named by its byte offset. V8HeapExplorer names some of those slots (a
property, an element, a context variable, an internal field) and files the
rest, which its indexed visitor meets after the named ones, as `hidden`
edges numbered in visiting order, and every weak slot as a `weak` edge
numbered likewise. This module gives the graph's edges those kinds and
names, in bulk, for whatever writes or shows them (jsheapsnapshot's file;
findjsrefs and jsretainers through `named_edges`, a few objects' edges):

- the map word: `internal` edge `map`, as V8 names it for every object;
- an in-object property of a JS object, by its map's descriptors:
  `property` edge named by the property's key;
- a Context's variables (function, script and module contexts), by its
  ScopeInfo: `context` edges named by the variable; its first two slots
  `internal` edges `scope_info` and `previous`;
- a FixedArray's or hash table's slot: `internal`, named by its index, as
  V8's ExtractFixedArrayReferences names them (a Map's table's entries);
- an internal object's field V8 names (a Map's, a SharedFunctionInfo's,
  a Script's, a cell's ...): `internal`, by V8's name of it, per line;
  another object's field: `internal`, named by the metadata's name of the
  field in its class (a Map's `table`, a sliced string's `parent`, a bound
  function's `bound_function`), in V8's spelling where it differs;
- every other strong slot: `hidden`, its index among the object's edges;
- a weak slot: `weak`, likewise, named as a string; a WeakRef's and a
  WeakCell's by their field (`target`, `unregister_token`), an ephemeron
  table's keys by their element index.

Property names come from the map's descriptors (read once per map), so the
typing costs one pass over the edges in NumPy and a dictionary per map.

V8 also makes edges that are no slot of their source (`extra_edges`): from
a JS object straight to the values of its elements (`element`, by index,
besides its edge to the backing store), to its properties' values that are
not in the object (`property`, by key: in its property array, in its map's
descriptors, in its dictionary; an accessor pair's getter and setter as
`get KEY`/`set KEY`), to its prototype (`__proto__`), from a global object
to its properties' values (through their property cells), and the root's
`shortcut`s to the global objects. Without them DevTools' dominators see
the backing store, not the array, as what holds the values.

Internal objects' fields are named by V8's table of them per line
(layouts.snapshot_fields: a Map's `descriptors`, `back_pointer`, a
SharedFunctionInfo's `script`, a DescriptorArray's descriptors by index...)
and a native context's slots by V8's names of them
(layouts.native_context_slot_names); a Code object's by its kind
(layouts.code_snapshot_fields); a function's prototype slot by what it
holds (`initial_map`, or the `prototype` property itself). What V8 names
besides (a native context's slots no measured core held) stays `hidden`
here: the edge exists, only its name is V8's index rather than its field
name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .arrays import unique
from .release import free_pages
from ..errors import DecodeError, TargetMemoryError
from . import graph as gmod
from .strtable import Items, StringTable

if TYPE_CHECKING:
    from ..program import Program

MAX_PROPERTY_MAPS = 200000  # maps whose descriptors are read for property names


@dataclass
class Typed:
    """Kinds and names of a set of the graph's edges (parallel arrays).

    `names` holds a string's index in `strings` for context, property,
    internal, shortcut and weak edges (a weak edge's number as a string), and
    the number itself for element and hidden edges, as a .heapsnapshot's
    `name_or_index` does."""

    kinds: Any  # uint8, V8's HeapGraphEdge::Type
    names: Any  # uint32
    strings: Items


def in_object_names(prog: Program, m: int) -> dict[int, str]:
    """Byte offset -> property key of the in-object fields a JS map's descriptors
    describe ({} when the map has none or they cannot be read)."""
    v = prog.values
    try:
        return {off: _key_text(prog, key) for off, key in v.in_object_fields(m).items()}
    except (DecodeError, TargetMemoryError):
        return {}


@dataclass
class MapCodes:
    """The distinct maps of the graph's nodes (ascending) and each node's
    number among them, made once for a whole graph: its pieces' edges are
    then grouped by their source's map with a sort of small integers rather
    than of 64-bit words."""

    maps: Any  # uint64, ascending
    code: Any  # per node: uint16 (or uint32 past 65536 maps)

    @classmethod
    def of(cls, node_map) -> MapCodes:
        np = gmod.numpy()
        um = unique(np, node_map)
        code = np.searchsorted(um, node_map)
        return cls(um, code.astype(np.uint16 if len(um) <= 1 << 16 else np.uint32))


class NodeMaps:
    """Each node's map, held as its MapCodes (two bytes a node where there are
    fewer than 65536 maps, not eight): indexed as the array of maps is."""

    def __init__(self, codes: MapCodes) -> None:
        self.codes = codes

    def __getitem__(self, k) -> Any:
        return self.codes.maps[self.codes.code[k]]

    def __len__(self) -> int:
        return len(self.codes.code)

    def __array__(self, dtype=None, copy=None) -> Any:
        a = self.codes.maps[self.codes.code]
        return a if dtype is None else a.astype(dtype)


def maps_where(np, node_map, nodes, pred) -> Any:
    """Bool per node of `nodes`: pred(map) holds for its map, asked once per
    distinct map (by the nodes' codes, two bytes each, where node_map is a
    NodeMaps: no map word per node made)."""
    if isinstance(node_map, NodeMaps):
        c = node_map.codes
        code = c.code[nodes]
        table = np.zeros(len(c.maps), dtype=bool)
        for k in unique(np, code).tolist():
            table[k] = bool(pred(int(c.maps[k])))
        return table[code]
    m = node_map[nodes]
    yes = [x for x in unique(np, m).tolist() if pred(int(x))]
    return np.isin(m, np.array(yes, dtype=np.uint64))


def has_map(np, node_map, maps) -> Any:
    """Bool per node: its map is one of `maps` (np.isin on the nodes' maps,
    on their codes where node_map is a NodeMaps)."""
    maps = np.asarray(maps, dtype=np.uint64)
    if not isinstance(node_map, NodeMaps):
        return np.isin(node_map, maps)
    c = node_map.codes
    at = np.minimum(np.searchsorted(c.maps, maps), max(len(c.maps) - 1, 0))
    known = at[c.maps[at] == maps] if len(c.maps) else at[:0]
    return np.isin(c.code, known.astype(c.code.dtype))


def _by_map(np, sel, src, node_map, codes: MapCodes | None):
    """(map, the edges of `sel` whose source has it, ascending) per distinct
    map of their sources, maps ascending."""
    if not len(sel):
        return
    if codes is None:
        um, inv = _source_maps(np, src[sel], node_map)
    else:
        um, inv = codes.maps, codes.code[src[sel]]
    order = np.argsort(inv, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(inv, minlength=len(um)))))
    for k in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        yield int(um[k]), sel[order[bounds[k]:bounds[k + 1]]]


def type_edges(prog: Program, g: gmod.Graph, src, lo: int, hi: int, node_map,
               is_js, strings: StringTable, slots_only=None,
               codes: MapCodes | None = None) -> Typed:
    """Kinds and names of edges lo .. hi-1 of the graph, whose sources are `src`.

    slots_only: a bool per edge; if given, all that is wanted is which of
    those edges are slot edges (hidden, internal or weak) and which are a
    property's or a context variable's: nothing else is named or told apart.

    node_map: the map of each node (0 for synthetic ones); is_js: per node,
    whether it is a JS object (whose in-object properties get their names);
    codes: node_map's MapCodes, where many pieces of one graph are typed."""
    np = gmod.numpy()
    to = g.edge_to[lo:hi]
    off = g.edge_name[lo:hi]
    gtype = g.edge_type[lo:hi]
    if g.cleared_groups:
        # As V8's file: a cleared weak table's edges (to live objects) strong.
        gtype = np.where(np.isin(src, [1 + i for i in g.cleared_groups]) &
                         (gtype == gmod.E_WEAK), gmod.E_ELEMENT, gtype).astype(np.uint8)
    idx = np.arange(lo, hi, dtype=np.int64) - g.first_edge[src]
    kinds = np.where(gtype == gmod.E_WEAK, gmod.E_WEAK, gmod.E_HIDDEN).astype(np.uint8)
    names = idx.astype(np.uint32)
    synthetic = src < g.first_object
    kinds[synthetic] = gtype[synthetic]
    heap = ~synthetic
    is_map = heap & (off == 0) & (gtype != gmod.E_WEAK)
    kinds[is_map] = gmod.E_INTERNAL
    names[is_map] = strings.add("map")
    # A weak edge's name is a string in V8's files, also when it is a number.
    weak = np.flatnonzero((gtype == gmod.E_WEAK) & heap)
    if len(weak) and slots_only is None:
        names[weak] = strings.add_numbers(names[weak])
        _weak_names(prog, weak, src, off, node_map, names, strings)
    roots = np.flatnonzero(synthetic)
    if len(roots) and slots_only is None:
        # A GC sub-root's edges as V8's SetGcSubrootReference makes them:
        # strong ones internal, each named by its place among the sub-root's
        # edges, from 1 (V8 names those to an object of its roots table by
        # the root's name instead: v8dbg has no such names).
        kinds[roots] = np.where(gtype[roots] == gmod.E_WEAK, gmod.E_WEAK, gmod.E_INTERNAL)
        names[roots] = strings.add_numbers(names[roots] + 1)
    _context_names(prog, g, src, lo, off, gtype, heap & ~is_map, node_map, kinds, names,
                   strings, codes)
    if slots_only is None:  # (hidden -> internal)
        _field_names(prog, heap & ~is_map & (gtype != gmod.E_WEAK) & is_js[src], src, off,
                     to, node_map, kinds, names, strings, codes)
    # In-object properties of JS objects, by each map's descriptors.
    cand = heap & ~is_map & (gtype != gmod.E_WEAK) & is_js[src]
    if slots_only is not None:
        cand &= slots_only
    cand = np.flatnonzero(cand)
    for m, sel in _by_map(np, cand, src, node_map, codes):
        named = _names(prog, m)
        if named:
            _name_slots(sel, off, named, gmod.E_PROPERTY, kinds, names, strings)
    if slots_only is None:  # (hidden -> internal)
        _internal_names(prog, g, src, off, to, node_map, kinds, names, strings, codes)
    return Typed(kinds, names, strings.items)


_cache: dict[tuple[int, int], dict[int, str]] = {}
_slot_rules: dict[tuple[int, int], tuple[bool, dict[int, str]]] = {}

# The hash tables and arrays V8's snapshot generator takes for FixedArrays:
# each strong slot an `internal` edge named by its index.
_INDEXED = ("FIXED_ARRAY_TYPE", "HASH_TABLE_TYPE", "GLOBAL_DICTIONARY_TYPE",
            "NAME_DICTIONARY_TYPE", "NAME_TO_INDEX_HASH_TABLE_TYPE", "NUMBER_DICTIONARY_TYPE",
            "ORDERED_HASH_MAP_TYPE", "ORDERED_HASH_SET_TYPE", "ORDERED_NAME_DICTIONARY_TYPE",
            "REGISTERED_SYMBOL_TABLE_TYPE", "SIMPLE_NUMBER_DICTIONARY_TYPE")
# Classes whose fields an instance type's own class inherits, and the
# metadata's field names V8's snapshot spells otherwise.
_PARENTS = {"JS_MAP_TYPE": ("JSCollection",), "JS_SET_TYPE": ("JSCollection",),
            "JS_WEAK_MAP_TYPE": ("JSWeakCollection",), "JS_WEAK_SET_TYPE": ("JSWeakCollection",)}
_JS_PARENTS = ("JSObject", "JSReceiver")
_V8_NAMES = {"raw_properties_or_hash": "properties", "raw_feedback_cell": "feedback_cell",
             "bound_target_function": "bound_function", "bound_arguments": "bindings"}
# The map word; where embedder fields start; a function's prototype slot,
# which V8 names by what it holds (_name_prototype_slot).
_NOT_FIELDS = ("map", "internal_fields", "prototype_or_initial_map")


def _slot_rule(prog: Program, m: int) -> tuple[bool, dict[int, str]]:
    """How V8 names the strong slots of objects of map m that nothing else
    named: (by index, {}) for its FixedArrays and hash tables, else (False,
    byte offset -> field name): for the internal objects whose fields V8's
    snapshot names (layouts.snapshot_fields) those alone, for the others
    the metadata's fields of the object's class."""
    key = (id(prog), m)
    got = _slot_rules.get(key)
    if got is not None:
        return got
    from ..v8.typenames import class_of
    h = prog.heap
    t = _map_type(h, m)
    name = h.type_name(t) if t >= 0 else ""
    fields: dict[int, str] = {}
    v8_named = _v8_fields(prog)
    if name in _INDEXED:
        got = (True, fields)
    elif name and _ALIASES.get(class_of(name), class_of(name)) in v8_named:
        fields = dict(v8_named[_ALIASES.get(class_of(name), class_of(name))])
        got = (False, fields)
    else:
        js = t >= h.md.types.get("JS_PROXY_TYPE", 1 << 16)
        classes = ((class_of(name),) + _PARENTS.get(name, ())
                   + (_JS_PARENTS if js else ())) if name else ()
        per_class = _class_fields(prog)
        for c in classes:
            for o, f in per_class.get(c, ()):
                fields.setdefault(o, _V8_NAMES.get(f, f))
        got = (False, fields)
    if len(_slot_rules) > MAX_PROPERTY_MAPS:
        _slot_rules.clear()
    _slot_rules[key] = got
    return got


_class_field_tables: dict[int, dict[str, list[tuple[int, str]]]] = {}


def _class_fields(prog: Program) -> dict[str, list[tuple[int, str]]]:
    """Class -> (byte offset, field name) of the metadata's tagged fields, in
    the metadata's order: grouped once, not searched for each map."""
    got = _class_field_tables.get(id(prog))
    if got is None:
        got = {}
        for (k, f), o in prog.heap.md.fields.items():
            if isinstance(o, int) and o % 8 == 0 and f not in _NOT_FIELDS:
                got.setdefault(k, []).append((o, f))
        _class_field_tables.clear()
        _class_field_tables[id(prog)] = got
    return got


_v8_field_tables: dict[int, dict[str, dict[int, str]]] = {}
_ALIASES = {"StrongDescriptorArray": "DescriptorArray"}
_desc_starts: dict[tuple[int, int], int] = {}


def _descriptors_start(prog: Program, m: int) -> int:
    """The byte offset of the first descriptor in a DescriptorArray of map m
    (0 for other maps): V8 names its descriptors' slots by their index from
    there (ExtractDescriptorArrayReferences)."""
    key = (id(prog), m)
    got = _desc_starts.get(key)
    if got is None:
        from ..v8.typenames import class_of
        h = prog.heap
        t = _map_type(h, m)
        cls = class_of(h.type_name(t)) if t >= 0 else ""
        at = h.md.fields.get(("DescriptorArray", "header_size"))
        got = at if _ALIASES.get(cls, cls) == "DescriptorArray" and isinstance(at, int) else 0
        if len(_desc_starts) > MAX_PROPERTY_MAPS:
            _desc_starts.clear()
        _desc_starts[key] = got
    return got


def _v8_fields(prog: Program) -> dict[str, dict[int, str]]:
    """Class -> byte offset -> V8's name, of the internal objects' fields V8's
    snapshot names (layouts.snapshot_fields), offsets from the metadata or,
    where it lacks them, from the table's own."""
    got = _v8_field_tables.get(id(prog))
    if got is None:
        from ..v8 import layouts
        md = prog.heap.md
        version = tuple(md.v8_version)
        extra = layouts.snapshot_field_offsets(version)
        got = {}
        for cls, pairs in layouts.snapshot_fields(version).items():
            named: dict[int, str] = {}
            for f, label in pairs:
                at = md.fields.get((cls, f), extra.get((cls, f)))
                if isinstance(at, int) and at % 8 == 0 and at > 0:
                    named.setdefault(at, label)
            got[cls] = named
        _v8_field_tables.clear()
        _v8_field_tables[id(prog)] = got
    return got


# Where V8 names a slot by what it holds (ExtractMapReferences): a Map's
# constructor slot holds its back pointer (a Map), its API constructor's
# template or, in a context's map and the meta map, the native context; its
# transitions slot a TransitionArray, one transition's FixedArray or a
# prototype map's PrototypeInfo.
_BY_TARGET = {"constructor": {"MAP_TYPE": "back_pointer",
                              "FUNCTION_TEMPLATE_INFO_TYPE": "constructor_function_data",
                              "NATIVE_CONTEXT_TYPE": "native_context"},
              "transitions": {"FIXED_ARRAY_TYPE": "transition",
                              "PROTOTYPE_INFO_TYPE": "prototype_info"}}


def _internal_names(prog: Program, g: gmod.Graph, src, off, to, node_map, kinds, names,
                    strings: StringTable, codes: MapCodes | None = None) -> None:
    """V8's `internal` edges among the slots still `hidden`: a FixedArray's or
    hash table's by index (ExtractFixedArrayReferences), another object's by
    its field's name (a Map's `table`, a sliced string's `parent`, ...)."""
    np = gmod.numpy()
    hid = np.flatnonzero((kinds == gmod.E_HIDDEN) & (src >= g.first_object))
    slot0 = prog.heap.o_fa_data
    code_t = prog.heap.md.types.get("CODE_TYPE")
    for m, sel in _by_map(np, hid, src, node_map, codes):
        if not m:
            continue
        if code_t is not None and _map_type(prog.heap, m) == code_t:
            _code_names(prog, g, sel, src, off, kinds, names, strings)
            continue
        indexed, fields = _slot_rule(prog, m)
        offs = off[sel].astype(np.int64)
        if indexed:
            sel, offs = sel[offs >= slot0], offs[offs >= slot0]
            kinds[sel] = gmod.E_INTERNAL
            names[sel] = strings.add_numbers((offs - slot0) // 8)
            continue
        for o, label in fields.items():
            hit = sel[offs == o]
            if not len(hit):
                continue
            kinds[hit] = gmod.E_INTERNAL
            names[hit] = strings.add(label)
            other = _BY_TARGET.get(label)
            if other:
                h = prog.heap
                tm = node_map[to[hit].astype(np.int64)]
                for x in unique(np, tm).tolist():
                    t = _map_type(h, int(x)) if x else -1
                    relabel = other.get(h.type_name(t)) if t >= 0 else None
                    if relabel:
                        names[hit[tm == x]] = strings.add(relabel)
        first = _descriptors_start(prog, int(m))
        if first:
            at = sel[offs >= first]
            kinds[at] = gmod.E_INTERNAL
            names[at] = strings.add_numbers((offs[offs >= first] - first) // 8)


def _code_names(prog: Program, g: gmod.Graph, sel, src, off, kinds, names,
                strings: StringTable) -> None:
    """A Code object's fields as V8's ExtractCodeReferences names them
    (layouts.code_snapshot_fields): by each object's kind, read from its
    flags (baseline code's bytecode is its `interpreter_data`, optimized
    code's deoptimization data its `deoptimization_data`); from 12.4 none of
    a Code without an instruction stream of its own (a builtin's)."""
    from ..v8 import layouts
    np = gmod.numpy()
    h = prog.heap
    md = h.md
    rule = layouts.code_snapshot_fields(md.v8_version)
    extra = layouts.snapshot_field_offsets(md.v8_version)

    def at(f: str) -> int | None:
        o = md.fields.get(("Code", f), extra.get(("Code", f)))
        return o if isinstance(o, int) and o > 0 else None

    offs = off[sel].astype(np.int64)
    objs = src[sel]
    if rule["stream"] is not None:
        so = at(rule["stream"])
        if so is None:
            return
        keep = np.isin(objs, objs[offs == so])
        sel, offs, objs = sel[keep], offs[keep], objs[keep]
    flags_at = at("flags")
    if not len(sel) or flags_at is None:
        return
    base = md.const("CodeKindBaseline")
    shift, mask = md.const("CodeKindFieldShift"), md.const("CodeKindFieldMask")
    uniq = unique(np, objs)
    kind = np.full(len(uniq), -1, dtype=np.int64)
    for k, i in enumerate(uniq.tolist()):
        try:
            kind[k] = (h.mem.u32(int(g.node_addr[i]) - 1 + flags_at) >> shift) & mask
        except (DecodeError, TargetMemoryError):
            pass
    kind = kind[np.searchsorted(uniq, objs)]
    other = kind >= 0 if rule["deopt_kinds"] == "all" else (kind == base + 1) | (kind == base + 2)
    for fields, which in ((rule["every"], kind >= 0), (rule["baseline"], kind == base),
                          (rule["other"], other & (kind != base))):
        for f, label in fields:
            o = at(f)
            hit = sel[which & (offs == o)] if o is not None else sel[:0]
            if len(hit):
                kinds[hit] = gmod.E_INTERNAL
                names[hit] = strings.add(label)


_weak_maps: dict[tuple[int, int], str] = {}


def _weak_names(prog: Program, weak, src, off, node_map, names, strings: StringTable) -> None:
    """V8's names of the weak slots of a WeakRef (`target`), a WeakCell
    (`target`, `unregister_token`) and an ephemeron table (its element index)."""
    np = gmod.numpy()
    if not len(weak):
        return
    md = prog.heap.md
    maps = node_map[src[weak]]
    for m in unique(np, maps).tolist():
        key = (id(prog), int(m))
        t = _weak_maps.get(key)
        if t is None:
            it = _map_type(prog.heap, int(m))
            t = _weak_maps[key] = prog.heap.type_name(it) if it >= 0 else ""
        sel = weak[maps == m]
        o = off[sel].astype(np.int64)
        if t == "JS_WEAK_REF_TYPE":
            fields = {md.off("JSWeakRef", "target"): "target"}
        elif t == "WEAK_CELL_TYPE":
            fields = {md.off("WeakCell", "target"): "target",
                      md.off("WeakCell", "unregister_token"): "unregister_token"}
        elif t == "EPHEMERON_HASH_TABLE_TYPE":
            for k, x in zip(sel.tolist(), ((o - prog.heap.o_fa_data) // 8).tolist()):
                names[k] = strings.add(str(x))
            continue
        else:
            continue
        for at, label in fields.items():
            names[sel[o == at]] = strings.add(label)
_fields: dict[tuple[int, int], dict[int, str]] = {}

# JS objects' fields V8 names (`internal` edges), by the metadata's class
# and field: every object's, then a function's, a bound function's, a
# typed array's or DataView's, a global object's.
_JS_FIELDS = (("JSReceiver", "raw_properties_or_hash", "properties"),
              ("JSObject", "elements", "elements"))
_TYPE_FIELDS = {
    "function": (("JSFunction", "shared", "shared"), ("JSFunction", "context", "context"),
                 ("JSFunction", "raw_feedback_cell", "feedback_cell"),
                 ("JSFunction", "code", "code"), ("JSFunction", "dispatch_handle", "code")),
    "JS_BOUND_FUNCTION_TYPE": (("JSBoundFunction", "bound_arguments", "bindings"),
                               ("JSBoundFunction", "bound_this", "bound_this"),
                               ("JSBoundFunction", "bound_target_function", "bound_function")),
    "view": (("JSArrayBufferView", "buffer", "buffer"),),
}
_API_TYPES = ("JS_API_OBJECT_TYPE", "JS_SPECIAL_API_OBJECT_TYPE")


def _js_field_names(prog: Program, m: int) -> dict[int, str]:
    """Byte offset -> V8's name of the fields of a JS object of map m that its
    snapshot names: `properties`, `elements`; a function's `shared`,
    `context`, `feedback_cell`, `code`; a bound function's; an API object's
    internal (embedder) fields by their index, those words between its
    header and its in-object properties."""
    key = (id(prog), m)
    got = _fields.get(key)
    if got is not None:
        return got
    h = prog.heap
    md = h.md
    out: dict[int, str] = {}
    t = _map_type(h, m)
    tn = h.type_name(t) if t >= 0 else ""
    if not tn.startswith("JS_"):
        _fields[key] = out  # (a Context is filed as an object too)
        return out
    kinds = [tn]
    if prog.shapes.is_function_type(t) if t >= 0 else False:
        kinds.append("function")
    if tn in ("JS_TYPED_ARRAY_TYPE", "JS_DATA_VIEW_TYPE", "JS_RAB_GSAB_DATA_VIEW_TYPE"):
        kinds.append("view")
    for k in kinds:
        for cls, f, label in _JS_FIELDS + _TYPE_FIELDS.get(k, ()):
            at = md.fields.get((cls, f))
            if isinstance(at, int):
                out[at] = label
    if tn in _API_TYPES:
        first = md.fields.get(("JSObject", "internal_fields"))
        at = md.fields.get(("Map", "inobject_properties_start_or_constructor_function_index"))
        try:
            start = h.mem.u8(m - 1 + at) if isinstance(at, int) else 0
        except (DecodeError, TargetMemoryError):
            start = 0
        if isinstance(first, int):
            for i in range(max(0, min(start * 8 - first, 1 << 12) // 8)):
                out[first + 8 * i] = str(i)
    if len(_fields) > MAX_PROPERTY_MAPS:
        _fields.clear()
    _fields[key] = out
    return out


def _name_slots(sel, off, named: dict[int, str], kind: int, kinds, names,
                strings: StringTable) -> None:
    """Edges `sel` (of objects of one map) at the byte offsets `named` holds
    get that kind and name."""
    np = gmod.numpy()
    if len(named) < 4:
        offs = off[sel]
        for o, label in named.items():
            hit = sel[offs == o]
            if len(hit):
                kinds[hit] = kind
                names[hit] = strings.add(label)
        return
    # Many names: each edge's offset looked up among them at once, the names
    # added in the same order as one by one (only those some edge has).
    keys = np.fromiter(named, dtype=np.int64, count=len(named))
    by = np.argsort(keys, kind="stable")
    sk = keys[by]
    offs = off[sel].astype(np.int64)
    at = np.minimum(np.searchsorted(sk, offs), len(sk) - 1)
    hit = sk[at] == offs
    sel, k = sel[hit], by[at[hit]]
    if not len(sel):
        return
    used = np.bincount(k, minlength=len(keys))
    ids = np.zeros(len(keys), dtype=np.uint32)
    for j, label in enumerate(named.values()):
        if used[j]:
            ids[j] = strings.add(label)
    kinds[sel] = kind
    names[sel] = ids[k]


def _source_maps(np, srcs, node_map) -> tuple[Any, Any]:
    """The distinct maps of edges' sources and, per edge, its source's among
    them (np.unique's), sorting the sources' range of nodes rather than the
    edges: a piece of the graph has several edges a node."""
    a, b = int(srcs.min()), int(srcs.max()) + 1
    um, inv = np.unique(node_map[a:b], return_inverse=True)
    return um, inv[srcs - a]


def _field_names(prog: Program, cand, src, off, to, node_map, kinds, names,
                 strings: StringTable, codes: MapCodes | None = None) -> None:
    """Name the JS objects' fields V8 names (`internal` edges), by map; a
    function's prototype slot by what it holds."""
    np = gmod.numpy()
    for m, sel in _by_map(np, np.flatnonzero(cand), src, node_map, codes):
        named = _js_field_names(prog, m)
        if named:
            _name_slots(sel, off, named, gmod.E_INTERNAL, kinds, names, strings)
        at = _prototype_slot(prog, m)
        if at:
            _name_prototype_slot(prog, sel[off[sel] == at], to, node_map, kinds, names, strings)


_proto_slots: dict[tuple[int, int], int] = {}


def _prototype_slot(prog: Program, m: int) -> int:
    """The byte offset of the prototype slot of the functions of map m (0 for
    a map whose objects have none: no function, or its map's bit_field says
    so)."""
    key = (id(prog), m)
    got = _proto_slots.get(key)
    if got is None:
        from ..v8 import layouts
        h = prog.heap
        md = h.md
        got = 0
        t = _map_type(h, m)
        at = md.fields.get(("JSFunction", "prototype_or_initial_map"))
        bf = md.fields.get(("Map", "bit_field"))
        if t >= 0 and prog.shapes.is_function_type(t) and isinstance(at, int) \
                and isinstance(bf, int):
            try:
                bits = h.mem.u8(m - 1 + bf)
            except (DecodeError, TargetMemoryError):
                bits = 0
            if bits >> layouts.prototype_slot_bit(md.v8_version) & 1:
                got = at
        if len(_proto_slots) > MAX_PROPERTY_MAPS:
            _proto_slots.clear()
        _proto_slots[key] = got
    return got


def _name_prototype_slot(prog: Program, hit, to, node_map, kinds, names,
                         strings: StringTable) -> None:
    """A function's prototype slot (edges `hit`) as V8's
    ExtractJSObjectReferences names it: holding the initial map, `internal`
    `initial_map` (the `prototype` property is then an extra edge, to the
    map's prototype); holding the prototype object itself, the `property`
    `prototype`; the hole stays a slot V8 leaves out."""
    np = gmod.numpy()
    if not len(hit):
        return
    h = prog.heap
    map_t = h.md.types.get("MAP_TYPE")
    js_first = h.md.types.get("JS_PROXY_TYPE", 1 << 16)
    tm = node_map[to[hit].astype(np.int64)]
    for x in unique(np, tm).tolist():
        t = _map_type(h, int(x)) if x else -1
        at = hit[tm == x]
        if t == map_t:
            kinds[at] = gmod.E_INTERNAL
            names[at] = strings.add("initial_map")
        elif t >= js_first:
            kinds[at] = gmod.E_PROPERTY
            names[at] = strings.add("prototype")


_scopes: dict[tuple[int, int], tuple[dict[int, str], bool]] = {}
_ctx_maps: dict[tuple[int, int], int] = {}

# Contexts whose variables V8 names (declaration contexts; strict eval and
# declaration-scope block contexts aside), and those that only get their
# header slots named.
_DECLARATION_CONTEXTS = ("FUNCTION_CONTEXT_TYPE", "SCRIPT_CONTEXT_TYPE", "MODULE_CONTEXT_TYPE")
_NO, _HEADER, _VARIABLES, _NATIVE = 0, 1, 2, 3


def _context_kind(prog: Program, m: int) -> int:
    """Whether a map is a Context's, and whether V8 names its variables."""
    key = (id(prog), m)
    got = _ctx_maps.get(key)
    if got is None:
        h = prog.heap
        t = _map_type(h, m)
        name = h.type_name(t) if t >= 0 else ""
        got = _NO
        if name == "NATIVE_CONTEXT_TYPE":
            got = _NATIVE
        elif name.endswith("CONTEXT_TYPE") and "INFO" not in name:
            got = _VARIABLES if name in _DECLARATION_CONTEXTS else _HEADER
        _ctx_maps[key] = got
    return got


def _scope_facts(prog: Program, si: int) -> tuple[dict[int, str], bool]:
    """What a Context's slots are, from its ScopeInfo si (read once per
    ScopeInfo, by the reader closures' scopes use): byte offset -> variable
    name, and whether its contexts have an extension slot (their third)."""
    key = (id(prog), si)
    got = _scopes.get(key)
    if got is None:
        from ..v8.scopes import HAS_CONTEXT_EXTENSION_SLOT, ScopeInfo
        if len(_scopes) > MAX_PROPERTY_MAPS:
            _scopes.clear()
        try:
            info = ScopeInfo(prog.heap, prog.values.s, si)
            got = ({prog.heap.o_fa_data + 8 * loc.slot: loc.name
                    for loc in info.context_locals()},
                   bool(info.flags & HAS_CONTEXT_EXTENSION_SLOT))
        except (DecodeError, TargetMemoryError):
            got = ({}, False)
        _scopes[key] = got
    return got


def _context_names(prog: Program, g: gmod.Graph, src, lo: int, off, gtype, cand, node_map,
                   kinds, names, strings: StringTable, codes: MapCodes | None = None) -> None:
    """V8's names of a Context's slots: `scope_info` and `previous` (internal),
    its `extension` (internal) where it has one, in a declaration context
    each variable its ScopeInfo names (`context` edges), in a native context
    its slots by V8's names of them (internal;
    layouts.native_context_slot_names), as V8's ExtractContextReferences
    makes them."""
    np = gmod.numpy()
    sel = np.flatnonzero(cand & (gtype != gmod.E_WEAK))
    if not len(sel):
        return
    if codes is None:
        um, inv = _source_maps(np, src[sel], node_map)
        kind = np.array([_context_kind(prog, int(m)) for m in um.tolist()], dtype=np.uint8)[inv]
    else:
        inv = codes.code[src[sel]]
        per = np.zeros(len(codes.maps), dtype=np.uint8)
        for k in np.flatnonzero(np.bincount(inv, minlength=len(codes.maps))).tolist():
            per[k] = _context_kind(prog, int(codes.maps[k]))
        kind = per[inv]
    sel, kind = sel[kind != _NO], kind[kind != _NO]
    if not len(sel):
        return
    o = off[sel]
    slot0 = prog.heap.o_fa_data  # a Context's slots start as a FixedArray's
    for at, label in ((slot0, "scope_info"), (slot0 + 8, "previous")):
        hit = sel[o == at]
        kinds[hit] = gmod.E_INTERNAL
        names[hit] = strings.add(label)
    native = sel[(kind == _NATIVE) & (o > slot0 + 8)]
    if len(native):
        from ..v8 import layouts
        on = off[native].astype(np.int64)
        for i, label in layouts.native_context_slot_names(prog.heap.md.v8_version).items():
            hit = native[on == slot0 + 8 * i]
            if len(hit):
                kinds[hit] = gmod.E_INTERNAL
                names[hit] = strings.add(label)
        # (V8's weak slots, which its GC does not follow: `weak` edges.)
        for i, label in layouts.native_context_weak_slots(prog.heap.md.v8_version).items():
            hit = native[on == slot0 + 8 * i]
            if len(hit):
                kinds[hit] = gmod.E_WEAK
                names[hit] = strings.add(label)
    var = sel[(kind == _VARIABLES) & (o > slot0 + 8)]
    ext = sel[(kind != _NATIVE) & (o == slot0 + 16)]
    if not len(var) and not len(ext):
        return
    # Each context's ScopeInfo: the target of its edge at its first slot.
    ctx = src[var]
    first = np.flatnonzero(off[sel] == slot0)
    si_of = dict(zip(src[sel[first]].tolist(),
                     g.node_addr[g.edge_to[sel[first] + lo].astype(np.int64)].tolist()))
    # A context whose edges the piece cut: its ScopeInfo slot is in the
    # piece before, looked up in the graph.
    for c in set(ctx.tolist()).union(src[ext].tolist()) - si_of.keys():
        a, b = int(g.first_edge[c]), int(g.first_edge[c + 1])
        hit = np.flatnonzero((g.edge_name[a:b] == slot0) & (g.edge_type[a:b] != gmod.E_WEAK))
        if len(hit):
            si_of[c] = int(g.node_addr[int(g.edge_to[a + int(hit[0])])])
    # Its extension (a `with` object, a sloppy eval's variables ...), where
    # its ScopeInfo gives it that slot (Context::has_extension).
    for e, c in zip(ext.tolist(), src[ext].tolist()):
        si = si_of.get(c)
        if si is not None and _scope_facts(prog, int(si))[1]:
            kinds[e] = gmod.E_INTERNAL
            names[e] = strings.add("extension")
    for e, c in zip(var.tolist(), ctx.tolist()):
        si = si_of.get(c)
        if si is None:
            continue
        name = _scope_facts(prog, int(si))[0].get(int(off[e]))
        if name is not None:
            kinds[e] = gmod.E_CONTEXT
            names[e] = strings.add(name)


def _names(prog: Program, m: int) -> dict[int, str]:
    key = (id(prog), m)
    got = _cache.get(key)
    if got is None:
        if len(_cache) > MAX_PROPERTY_MAPS:
            _cache.clear()
        got = _cache[key] = in_object_names(prog, m)
    return got


@dataclass
class Extra:
    """Edges V8 makes that are no slot of their source: from a JS object
    straight to its elements' values (`element`, by index) and from a global
    object to its properties' values (`property`, through the property
    cells), sorted by source; and the root's `shortcut`s to the global objects."""

    src: Any  # uint32 node
    kinds: Any  # uint8
    names: Any  # uint32
    to: Any  # uint32 node
    globals: list[int]
    notes: list[str] = field(default_factory=list)  # caps hit, said to the user


# Far above a real global object's (node's has a few hundred); one that
# reaches it is said in the notes, its further properties unnamed.
MAX_GLOBAL_PROPERTIES = 1 << 20


def extra_edges(prog: Program, g: gmod.Graph, keep, node_map, is_js,
                strings: StringTable, skip=None) -> Extra:
    """V8's element and global property edges, and its shortcuts to the globals.

    skip: per node, a value no element edge goes to (the hole)."""
    np = gmod.numpy()
    h = prog.heap
    md = h.md
    o_elements = md.off("JSObject", "elements")
    fixed = md.types.get("FIXED_ARRAY_TYPE")
    glob = md.types.get("JS_GLOBAL_OBJECT_TYPE")
    fe = g.first_edge
    src_p, kind_p, name_p, to_p = [], [], [], []
    # Elements: the JS object's `elements` slot points at a FixedArray whose
    # slots from the third word on are element 0, 1, ...
    if fixed is not None:
        # The edge of each JS object at the elements offset, if any: found
        # among all edges by their offset (a mask of one byte per edge), then
        # kept by their source, rather than by listing every JS object's edges.
        # (Node indices fit 32 bits: edge_to holds them so.)
        owners, stores = _strong_slots(np, g, o_elements, is_js & keep)
        ok = maps_where(np, node_map, stores, lambda m: _map_type(h, m) == fixed)
        owners, stores = owners[ok], stores[ok]
        # The stores' slots, some SCAN_PIECE at a time (a bigger store alone).
        ends = np.empty(len(stores), dtype=np.int64)
        for i in range(0, len(stores), SCAN_PIECE):
            s = stores[i:i + SCAN_PIECE].astype(np.int64)
            ends[i:i + len(s)] = fe[s + 1] - fe[s]
        np.cumsum(ends, out=ends)
        g.drop_pages()  # (first_edge read across the graph)
        i = 0
        while i < len(stores):
            base = int(ends[i - 1]) if i else 0
            j = max(i + 1, int(np.searchsorted(ends, base + SCAN_PIECE, side="right")))
            _element_edges(np, h, g, keep, skip, owners[i:j], stores[i:j],
                           src_p, kind_p, name_p, to_p)
            g.drop_pages()
            free_pages()  # (the piece's temporaries)
            i = j
        del owners, stores, ends
        g.drop_pages()  # (each pass below reads the graph's pages afresh)
    notes: list[str] = []
    _property_edges(prog, g, keep, node_map, is_js, strings, src_p, kind_p, name_p, to_p,
                    notes)
    g.drop_pages()
    _function_prototypes(prog, g, keep, node_map, strings, src_p, kind_p, name_p, to_p)
    g.drop_pages()
    # Global objects: their properties' values, by name.
    globals_: list[int] = []
    if glob is not None:
        found = gmod.global_objects(prog, g)
        for i in found[keep[found]].tolist():
            globals_.append(i)
            try:
                props = prog.values.own_properties(int(g.node_addr[i]), MAX_GLOBAL_PROPERTIES)
            except (DecodeError, TargetMemoryError):
                continue
            if len(props) >= MAX_GLOBAL_PROPERTIES:
                notes.append(f"global object 0x{int(g.node_addr[i]):x} has {MAX_GLOBAL_PROPERTIES}"
                             " properties or more: only the first are named edges")
            vals = [p.value for p in props if not p.accessor]
            keys = [p.key for p in props if not p.accessor]
            t = g.indices(np.asarray(vals, dtype=np.uint64) if vals else np.zeros(0, np.uint64))
            for key, node in zip(keys, t.tolist()):
                if node >= 0 and keep[node]:
                    src_p.append(np.array([i], dtype=np.uint32))
                    kind_p.append(np.array([gmod.E_PROPERTY], dtype=np.uint8))
                    name_p.append(np.array([strings.add(_key_text(prog, key))],
                                           dtype=np.uint32))
                    to_p.append(np.array([node], dtype=np.uint32))
    if not src_p:
        e = np.zeros(0, dtype=np.uint32)
        return Extra(e, np.zeros(0, np.uint8), np.zeros(0, np.uint32), e, globals_, notes)
    # Sorted by source one array at a time, each part let go once joined.
    src = _joined(np, src_p)
    order = np.argsort(src, kind="stable")
    src = src[order]
    return Extra(src, _joined(np, kind_p)[order], _joined(np, name_p)[order],
                 _joined(np, to_p)[order], globals_, notes)


def _strong_slots(np, g: gmod.Graph, offset: int, want) -> tuple[Any, Any]:
    """(source, target) nodes (32 bits) of the graph's strong edges from slots
    at byte `offset` of the objects `want` marks (bool per node): found a
    piece of the edges at a time, only the wanted kept of each, its pages
    let go after it."""
    fe = g.first_edge
    srcs, tos = [], []
    for lo in range(0, g.edges, SCAN_PIECE):
        hi = min(lo + SCAN_PIECE, g.edges)
        at = np.flatnonzero(g.edge_name[lo:hi] == offset) + lo
        at = at[g.edge_type[at] != gmod.E_WEAK]
        src = np.searchsorted(fe, at, side="right") - 1
        ok = (src >= g.first_object) & want[src]
        srcs.append(src[ok].astype(np.uint32))
        tos.append(g.edge_to[at[ok]])
        g.drop_pages()
    if not srcs:
        return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.uint32)
    return _joined(np, srcs), _joined(np, tos)


def _element_edges(np, h, g: gmod.Graph, keep, skip, owners, stores, src_p: list,
                   kind_p: list, name_p: list, to_p: list) -> None:
    """The element edges of JS objects `owners` (32 bits) to what the slots
    of their elements' FixedArrays `stores` hold."""
    fe = g.first_edge
    start = fe[stores]
    cnt = fe[stores + 1] - start
    own = np.repeat(owners, cnt)
    start -= np.cumsum(cnt) - cnt
    idx = np.repeat(start, cnt)
    del start
    idx += np.arange(len(idx), dtype=np.int64)
    sel = (g.edge_name[idx] >= h.o_fa_data) & (g.edge_type[idx] != gmod.E_WEAK)
    idx, own = idx[sel], own[sel]
    del sel
    to = g.edge_to[idx]
    live = keep[to] if skip is None else keep[to] & ~skip[to]
    src_p.append(own[live].astype(np.uint32))
    kind_p.append(_same(np, live.sum(), gmod.E_ELEMENT, np.uint8))
    name_p.append(((g.edge_name[idx[live]].astype(np.int64) - h.o_fa_data) // 8)
                  .astype(np.uint32))
    to_p.append(to[live].astype(np.uint32))


def _same(np, n: int, value, dtype) -> Any:
    """n times value, as a part of an edge column: where many, a read-only
    view of one item (no memory per edge until the parts are joined)."""
    n = int(n)
    if n < 4096:
        return np.full(n, value, dtype=dtype)  # (made faster than a view)
    return np.broadcast_to(np.array(value, dtype=dtype), (n,))


def _joined(np, parts: list) -> Any:
    """The parts concatenated, the list emptied (their memory let go)."""
    out = np.concatenate(parts)
    parts.clear()
    return out


def _function_prototypes(prog: Program, g: gmod.Graph, keep, node_map, strings: StringTable,
                         src_p: list, kind_p: list, name_p: list, to_p: list) -> None:
    """V8's `prototype` property edge of a function whose prototype slot holds
    its initial map: to that map's prototype (no slot of the function; the
    slot itself is the `initial_map` edge). (A prototype set to a primitive
    lives elsewhere, and gets no edge here.)"""
    np = gmod.numpy()
    h = prog.heap
    md = h.md
    at_off = md.fields.get(("JSFunction", "prototype_or_initial_map"))
    map_t = md.types.get("MAP_TYPE")
    if not isinstance(at_off, int) or map_t is None:
        return
    srcs, to = _strong_slots(np, g, at_off, keep)
    if not len(srcs):
        return
    ok = maps_where(np, node_map, srcs, lambda m: _prototype_slot(prog, m))
    srcs, to = srcs[ok].astype(np.int64), to[ok].astype(np.int64)
    ok = maps_where(np, node_map, to, lambda m: m != 0 and _map_type(h, m) == map_t)
    srcs, to = srcs[ok], to[ok]
    if not len(to):
        return
    maps, inv = np.unique(to, return_inverse=True)
    proto = np.full(len(maps), -1, dtype=np.int64)
    for k, i in enumerate(maps.tolist()):
        try:
            p = g.index(prog.values.fld(int(g.node_addr[i]), "Map", "prototype"))
        except (DecodeError, TargetMemoryError):
            p = None
        if p is not None and keep[p]:
            proto[k] = p
    dst = proto[inv]
    live = dst >= 0
    src_p.append(srcs[live].astype(np.uint32))
    kind_p.append(_same(np, live.sum(), gmod.E_PROPERTY, np.uint8))
    name_p.append(_same(np, live.sum(), strings.add("prototype"), np.uint32))
    to_p.append(dst[live].astype(np.uint32))


def _slot_targets(np, g: gmod.Graph, nodes, offs) -> tuple[Any, Any, Any]:
    """(position in `nodes`, byte offset, target node) of the strong edges of
    `nodes` at the byte offsets `offs` (a sorted array)."""
    fe = g.first_edge
    cnt = fe[nodes + 1] - fe[nodes]
    pos = np.repeat(np.arange(len(nodes), dtype=np.int64), cnt)
    idx = (np.repeat(fe[nodes] - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
           + np.arange(int(cnt.sum()), dtype=np.int64))
    name = g.edge_name[idx].astype(np.int64)
    at = np.isin(name, offs) & (g.edge_type[idx] != gmod.E_WEAK)
    return pos[at], name[at], g.edge_to[idx[at]].astype(np.int64)


# Edges a whole-graph scan reads at once, its pages let go between pieces.
SCAN_PIECE = 1 << 18

# Far above a real heap's: objects in dictionary mode whose properties are
# read one object at a time; past it the rest keep their dictionary's
# numbered edges only, and the notes say so.
MAX_DICTIONARY_OBJECTS = 1 << 20


def _property_edges(prog: Program, g: gmod.Graph, keep, node_map, is_js, strings: StringTable,
                    src_p: list, kind_p: list, name_p: list, to_p: list,
                    notes: list[str]) -> None:
    """V8's `property` edges of JS objects that are no slot of the object: the
    values in its property array (by the map's descriptors), those its map's
    descriptors hold (constants, accessor pairs), and a dictionary-mode
    object's (by its dictionary); an accessor pair's getter and setter as
    `get KEY` and `set KEY`, as ExtractPropertyReferences makes them."""
    np = gmod.numpy()
    h = prog.heap
    md = h.md
    skip = {md.types.get("JS_GLOBAL_OBJECT_TYPE"), md.types.get("JS_GLOBAL_PROXY_TYPE")}
    pair_t = md.types.get("ACCESSOR_PAIR_TYPE")
    oddballs = {md.types.get("ODDBALL_TYPE"), md.types.get("HOLE_TYPE")} - {None}
    o_props = md.off("JSReceiver", "raw_properties_or_hash")
    o_data = md.off("PropertyArray", "data")
    objs = np.flatnonzero(keep & is_js)
    # (Node indices in 32 bits: the graph's edges hold them so.)
    objs = objs[objs >= g.first_object].astype(np.uint32)
    if not len(objs):
        return
    # Grouped by map: by the maps' codes where known (two bytes a node).
    if isinstance(node_map, NodeMaps):
        maps = node_map.codes.code[objs]
    else:
        maps = node_map[objs]
    order = np.argsort(maps, kind="stable").astype(np.uint32)
    maps = maps[order]
    # Where each map's run starts in the sorted maps (without sorting them again).
    starts = np.flatnonzero(np.concatenate(([True], maps[1:] != maps[:-1])))
    um = maps[starts]
    if isinstance(node_map, NodeMaps):
        um = node_map.codes.maps[um]
    del maps
    bounds = np.append(starts, len(order))
    dictionary: list[Any] = []

    def add(src, key: str, to) -> None:
        to = np.asarray(to, dtype=np.int64)
        ok = (to >= 0) & keep[np.maximum(to, 0)]
        if not ok.any():
            return
        src = np.broadcast_to(np.asarray(src, dtype=np.uint32), to.shape)[ok]
        src_p.append(src)
        kind_p.append(_same(np, len(src), gmod.E_PROPERTY, np.uint8))
        name_p.append(_same(np, len(src), strings.add(key), np.uint32))
        to_p.append(to[ok].astype(np.uint32))

    def accessor(src, key: str, pair: int, symbol: bool) -> None:
        # An accessor is an edge only as an AccessorPair (not V8's own
        # AccessorInfo): to it, and to its getter and setter (named `get
        # KEY`, `set KEY`; by the symbol alone where the key is one, as V8).
        if pair < 0 or pair_t is None or _map_type(h, int(node_map[pair])) != pair_t:
            return
        add(src, key, np.full(np.shape(src), pair, dtype=np.int64))
        for part in ("getter", "setter"):
            try:
                w = prog.values.fld(int(g.node_addr[pair]), "AccessorPair", part)
            except (DecodeError, TargetMemoryError, KeyError):
                continue
            t = int(g.indices(np.array([w], dtype=np.uint64))[0])
            if t >= 0 and _map_type(h, int(node_map[t])) not in oddballs:
                add(src, key if symbol else part[:3] + " " + key,
                    np.full(np.shape(src), t, dtype=np.int64))

    texts: dict[int, str] = {}  # key -> its text: the same keys recur across maps

    def key_text(key: int) -> str:
        got = texts.get(key)
        if got is None:
            got = texts[key] = _key_text(prog, key)
        return got

    proto = strings.add("__proto__")
    for k, m in enumerate(um.tolist()):
        if k % 64 == 63:
            g.drop_pages()
        sel = objs[order[bounds[k]:bounds[k + 1]]]
        t = _map_type(h, m)
        # (Contexts are filed as objects too: they have no properties.)
        if t in skip or t < 0 or not h.type_name(t).startswith("JS_"):
            continue
        # Every JS object's prototype, by its map, as V8's `__proto__` edge.
        try:
            p = g.index(prog.values.fld(int(m), "Map", "prototype"))
        except (DecodeError, TargetMemoryError):
            p = None
        if p is not None and keep[p]:
            src_p.append(sel)
            kind_p.append(_same(np, len(sel), gmod.E_PROPERTY, np.uint8))
            name_p.append(_same(np, len(sel), proto, np.uint32))
            to_p.append(_same(np, len(sel), p, np.uint32))
        try:
            fields = prog.values.fast_fields(int(m))
        except (DecodeError, TargetMemoryError):
            continue
        if fields is None:
            dictionary.append(sel)
            continue
        outside = [(key, acc, where) for key, acc, inobj, where in fields if inobj is False]
        if outside:
            pos, _o, arrays = _slot_targets(np, g, sel, np.array([o_props]))
            owners = sel[pos]
            offs = np.array(sorted({o_data + 8 * w for _k, _a, w in outside}), dtype=np.int64)
            p2, o2, vals = _slot_targets(np, g, arrays, offs)
            for key, _acc, where in outside:
                hit = o2 == o_data + 8 * where
                add(owners[p2[hit]], key_text(key), vals[hit])
        for key, acc, inobj, where in fields:
            if inobj is not None:
                continue
            t = int(g.indices(np.array([where], dtype=np.uint64))[0])
            name = key_text(key)
            if not acc:
                add(sel, name, np.full(len(sel), t, dtype=np.int64))
            else:
                accessor(sel, name, t, _is_symbol(prog, key))
    # Dictionary-mode objects' data properties gathered in lists and made one
    # part (not arrays per property), in order: an accessor's part comes after
    # what is gathered before it.
    b_src: list[int] = []
    b_name: list[int] = []
    b_to: list[int] = []

    def flush() -> None:
        if b_src:
            src_p.append(np.array(b_src, dtype=np.uint32))
            kind_p.append(_same(np, len(b_src), gmod.E_PROPERTY, np.uint8))
            name_p.append(np.array(b_name, dtype=np.uint32))
            to_p.append(np.array(b_to, dtype=np.uint32))
            b_src.clear()
            b_name.clear()
            b_to.clear()

    seen = 0
    for sel in dictionary:
        for i in sel.tolist():
            seen += 1
            if seen > MAX_DICTIONARY_OBJECTS:
                flush()
                notes.append(f"more than {MAX_DICTIONARY_OBJECTS} objects in dictionary mode: "
                             "the properties of the rest are numbered edges of their "
                             "dictionaries only")
                return
            try:
                props = prog.values.own_properties(int(g.node_addr[i]))
            except (DecodeError, TargetMemoryError):
                continue
            t = g.indices(np.asarray([p.value for p in props], dtype=np.uint64))
            for p, node in zip(props, t.tolist()):
                name = key_text(p.key)
                if not p.accessor:
                    if node >= 0 and keep[node]:
                        b_src.append(i)
                        b_name.append(strings.add(name))
                        b_to.append(node)
                else:
                    flush()
                    accessor(i, name, node, _is_symbol(prog, p.key))
    flush()


# A key's edge to its value in a WeakMap (no slot of the key): V8 names it
# after the pair and the table ("part of key ... pair in WeakMap ..."); one
# object's edges are shown with this shorter name.
EPHEMERON_LABEL = "<WeakMap value of this key>"


@dataclass
class Named:
    """One edge of one object, as V8's snapshot types and names it."""

    kind: int  # V8's HeapGraphEdge::Type
    name: str  # a property's key, a variable's name, a field's; an index as digits
    to: int  # graph node
    edge: int  # the graph's edge, -1 for one that is no slot (an element, a global's property)
    offset: int  # byte offset of the slot in the object, -1 for no slot

    def label(self) -> str:
        """The edge as findjsrefs and jsretainers show it: `key`, `[index]`,
        `closure:name`, or the offset of a slot V8 numbers `hidden`."""
        if self.kind == gmod.E_ELEMENT:
            return f"[{self.name}]"
        if self.kind == gmod.E_CONTEXT:
            return f"closure:{self.name}"
        if self.kind == gmod.E_HIDDEN:
            return f"<internal slot +{self.offset}>"
        return self.name


def named_edges(prog: Program, g: gmod.Graph, nodes: list[int]) -> dict[int, list[Named]]:
    """The outgoing edges of a few heap objects (graph nodes), typed and named
    by the rules the snapshot writer uses: their slots' edges, and the
    element and global property edges V8 makes besides (extra_edges)."""
    np = gmod.numpy()
    h = prog.heap
    js_first = h.md.types.get("JS_PROXY_TYPE", 1 << 16)
    fe = g.first_edge
    nodes = sorted({int(n) for n in nodes if g.first_object <= n < g.nodes})
    node_map = np.zeros(g.nodes, dtype=np.uint64)
    is_js = np.zeros(g.nodes, dtype=bool)
    for n in nodes:
        # Each object's map, and its targets' (an element store is told by its map).
        for i in [n] + g.edge_to[fe[n]:fe[n + 1]].astype(np.int64).tolist():
            if i >= g.first_object and not node_map[i]:
                try:
                    node_map[i] = h.map_of(int(g.node_addr[i]))
                except (DecodeError, TargetMemoryError):
                    pass
        t = _map_type(h, int(node_map[n])) if node_map[n] else -1
        is_js[n] = t >= js_first
    strings = StringTable()
    out: dict[int, list[Named]] = {}
    for n in nodes:
        lo, hi = int(fe[n]), int(fe[n + 1])
        src = np.full(hi - lo, n, dtype=np.int64)
        typed = type_edges(prog, g, src, lo, hi, node_map, is_js, strings)
        out[n] = [Named(gmod.E_INTERNAL, EPHEMERON_LABEL, t, lo + j, -1)
                  if o == gmod.EPHEMERON else
                  Named(k, strings.items[x] if k not in (gmod.E_ELEMENT, gmod.E_HIDDEN)
                        else str(x), t, lo + j, o)
                  for j, (k, x, t, o) in enumerate(zip(
                      typed.kinds.tolist(), typed.names.tolist(),
                      g.edge_to[lo:hi].astype(np.int64).tolist(),
                      g.edge_name[lo:hi].astype(np.int64).tolist()))]
    if nodes:
        xe = extra_edges(prog, g, np.ones(g.nodes, dtype=bool), node_map, is_js, strings)
        for n, k, x, t in zip(xe.src.tolist(), xe.kinds.tolist(), xe.names.tolist(),
                              xe.to.tolist()):
            if n in out:
                out[n].append(Named(k, str(x) if k == gmod.E_ELEMENT else strings.items[x],
                                    t, -1, -1))
    return out


@dataclass
class BufferData:
    """V8's `system / JSArrayBufferData` nodes: one per backing store of a
    kept ArrayBuffer (buffers sharing a store share the node), its self size
    the buffer's byte length; and the buffers' `backing_store` edges to them
    (`src` graph node -> `data` index into `stores`)."""

    stores: list[int]
    sizes: list[int]
    src: Any  # int64 graph node of each buffer with a store
    data: Any  # int64 index into stores


def buffer_data(prog: Program, g: gmod.Graph, keep, node_map, distinct=None) -> BufferData:
    """The backing stores of the kept ArrayBuffers, as V8's snapshot shows them
    (an off-heap `native` node each, an `internal` edge from the buffer).
    distinct: node_map's distinct values, where known (MapCodes.maps)."""
    np = gmod.numpy()
    h = prog.heap
    abt = h.md.types.get("JS_ARRAY_BUFFER_TYPE")
    stores: list[int] = []
    sizes: list[int] = []
    index: dict[int, int] = {}
    src: list[int] = []
    data: list[int] = []
    if abt is not None:
        # The buffers' maps among all maps (a set, not a copy of the nodes'), then
        # the kept objects that have one.
        if distinct is None:
            distinct = unique(np, node_map)
        bm = [m for m in distinct.tolist() if m and _map_type(h, m) == abt]
        mask = keep & has_map(np, node_map, bm)
        mask[:g.first_object] = False
        for i in np.flatnonzero(mask).tolist():
            try:
                store, n = prog.values.array_buffer_store(int(g.node_addr[i]))
            except (DecodeError, TargetMemoryError):
                continue
            if not store:
                continue
            k = index.get(store)
            if k is None:
                k = index[store] = len(stores)
                stores.append(store)
                sizes.append(n)
            src.append(i)
            data.append(k)
    return BufferData(stores, sizes, np.asarray(src, dtype=np.int64),
                      np.asarray(data, dtype=np.int64))


def _key_text(prog: Program, key: int) -> str:
    """A property key as V8's heap snapshot spells it: a string's text, a
    class's private name its own (`#x`), any other symbol `<symbol
    DESCRIPTION>` (`<symbol>` without one), private symbols too."""
    v = prog.values
    try:
        if v.is_symbol(key):
            d = v.symbol_description(key, 200)
            flags = prog.mem.u32(key - 1 + v.off("Symbol", "flags"))
            if d is not None and flags & prog.md.consts["SymbolPrivateNameMask"]:
                return d
            return f"<symbol {d}>" if d is not None else "<symbol>"
        return v.key_text(key, 200) or "?"
    except (DecodeError, TargetMemoryError):
        return "?"


def _is_symbol(prog: Program, key: int) -> bool:
    try:
        return prog.values.is_symbol(key)
    except (DecodeError, TargetMemoryError):
        return False


def _map_type(h, m: int) -> int:
    try:
        return h.map_type(int(m))
    except (DecodeError, TargetMemoryError):
        return -1
