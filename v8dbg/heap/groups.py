"""Live JS objects grouped by shape: constructor name and property names,
as findjsobjects lists them, and the instances of one constructor. Live
means reached from a GC root (graph.py): garbage no GC has collected yet
is in no group.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError
from . import census, graph

if TYPE_CHECKING:
    from ..program import Program


def _hex(v: int | None) -> str | None:
    return None if v is None else f"0x{v:x}"


MAX_DICT_SHAPES = 20000  # dictionary-mode objects whose keys are read one by one


@dataclass
class Group:
    constructor: str
    properties: list[str]
    count: int = 0
    size: int = 0
    representative: int = 0
    maps: list[int] = field(default_factory=list)
    # Map -> this row's objects of that dictionary-mode map (whose objects each
    # have their own keys, so that one map's objects fall into several rows):
    # kept as the row is made, not read again for its members.
    dict_members: dict[int, array] = field(default_factory=dict, repr=False, compare=False)


def live_maps(prog: Program, heap: int) -> list[census.MapStats]:
    """The census's maps with only the objects some GC root reaches (all of
    them where reachability cannot be told), in the census's order; made once
    per heap, as every row's members are taken from it."""
    got = prog.heap_state.live.get(heap)
    if got is not None:
        return got
    c = census.of(prog, heap)
    r = graph.reachable(prog, heap)
    if r.addresses is None:
        out = list(c.maps.values())
        prog.heap_state.live[heap] = out
        return out
    out = []
    for st in c.maps.values():
        a = r.addresses.get(st.map, st.addresses)
        if a is st.addresses:
            out.append(st)
            continue
        per = st.size // st.count if st.count else 0
        out.append(census.MapStats(st.map, st.instance_type, per * len(a), len(a), a))
    prog.heap_state.live[heap] = out
    return out


def groups(prog: Program, heap: int) -> list[Group]:
    """Live JS objects grouped by constructor name and property names."""
    cached = prog.heap_state.groups.get(heap)
    if isinstance(cached, list):
        return cached
    sh = prog.shapes
    groups: dict[tuple[str, tuple[str, ...]], Group] = {}
    dict_budget = MAX_DICT_SHAPES
    for st in live_maps(prog, heap):
        if st.addresses is None or not st.count or not sh.is_object_row_type(st.instance_type):
            continue
        try:
            shape = sh.shape(st.map, st.addresses[0])
        except (DecodeError, TargetMemoryError):
            continue
        per = st.size // st.count if st.count else 0
        if shape.dictionary and st.count <= dict_budget:
            dict_budget -= st.count
            for a in st.addresses:
                name, names = sh.name_and_properties(a, st.map)
                key = (name, tuple(names))
                g = groups.get(key)
                if g is None:
                    g = groups[key] = Group(key[0], list(key[1]), representative=a)
                g.count += 1
                g.size += per
                got = g.dict_members.get(st.map)
                if got is None:
                    got = g.dict_members[st.map] = array("Q")
                    g.maps.append(st.map)
                got.append(a)
            continue
        key = (shape.constructor, tuple(shape.properties))
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(key[0], list(key[1]), representative=st.addresses[0])
        g.count += st.count
        g.size += st.size
        g.maps.append(st.map)
    out = sorted(groups.values(), key=lambda g: (-g.count, g.constructor, g.properties))
    prog.heap_state.groups[heap] = out
    return out


def proxies(prog: Program, heap: int) -> int:
    """How many live JSProxy objects the heap holds: no rows of the census
    (V8's snapshot files them as `system / JSProxy`, not as objects), counted apart."""
    sh = prog.shapes
    return sum(st.count for st in live_maps(prog, heap) if sh.is_proxy_type(st.instance_type))


def members(prog: Program, heap: int, g: Group) -> list[int] | array:
    """Addresses of the live objects of one row (those groups() put in it)."""
    live = {st.map: st for st in live_maps(prog, heap)} if len(g.dict_members) < len(g.maps) \
        else {}
    parts: list = []
    for m in g.maps:
        got = g.dict_members.get(m)
        if got is not None:
            parts.append(got)
            continue
        st = live.get(m)
        if st is None or st.addresses is None or not st.count:
            continue
        parts.append(st.addresses)
    if len(parts) == 1:
        return parts[0]
    out = array("Q")
    for part in parts:
        # (Bytes copied: a part is an array of 8-byte items, or a view of one.)
        out.frombytes(memoryview(part).cast("B"))
    return out


def instances(prog: Program, heap: int, name: str) -> list[int] | array:
    """Addresses of the live objects whose constructor name is `name`, ascending."""
    live = {st.map: st for st in live_maps(prog, heap)}
    sh = prog.shapes
    parts: list = []
    for g in groups(prog, heap):
        if g.constructor != name:
            continue
        for m in g.maps:
            st = live.get(m)
            if st is None or st.addresses is None or not st.count:
                continue
            if sh.shape(m, st.addresses[0]).dictionary:
                want = g.properties
                parts.append([a for a in st.addresses
                              if sh.name_and_properties(a, m) == (name, want)])
            else:
                parts.append(st.addresses)
    if len(parts) == 1:
        return parts[0]  # one map: already in address order
    return sorted(set(a for part in parts for a in part))
