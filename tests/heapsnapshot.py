"""V8's .heapsnapshot files as graphs, and what DevTools computes from them.

`read` turns a snapshot (as `v8.writeHeapSnapshot()` writes it) into the
array form v8dbg's heap graph uses (CSR edges, V8's edge type numbers, the
synthetic root as node 0), with the snapshot's ids, names and types beside.
`devtools` runs Chrome DevTools' own snapshot worker (tests/tools/
devtools_retained.mjs, the pinned chrome-devtools-frontend package) on the
same file: the reference the retained sizes are checked against.
"""

from __future__ import annotations

import json
from collections import Counter
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from support import CACHE, ROOT, node_binary

DEVTOOLS_VERSION = "1.0.1705227"
DEVTOOLS = CACHE / "npm" / f"chrome-devtools-frontend-{DEVTOOLS_VERSION}"
TYPESCRIPT = CACHE / "npm" / "typescript-5.6.3"
TOOL = ROOT / "tests" / "tools" / "devtools_retained.mjs"
_WEAKMAP_EDGE = re.compile(r"^\d+ / part of key \(.*? @\d+\) -> value \(.*? @\d+\) pair in WeakMap "
                           r"\(table @(\d+)\)$")


@dataclass
class Snapshot:
    """A heap snapshot's nodes and edges as NumPy arrays; node 0 is the root."""

    ids: np.ndarray  # uint64 node id
    types: np.ndarray  # uint8 index into node_types
    names: np.ndarray  # uint32 index into strings
    sizes: np.ndarray  # uint64 self size
    first_edge: np.ndarray  # int64, n + 1
    edge_to: np.ndarray  # uint32 node index
    edge_type: np.ndarray  # uint8, V8's HeapGraphEdge::Type
    edge_name: np.ndarray  # uint32: string index, or the element index
    node_types: list[str]
    edge_types: list[str]
    strings: list[str]

    def name(self, i: int) -> str:
        return self.strings[int(self.names[i])]

    def type(self, i: int) -> str:
        return self.node_types[int(self.types[i])]

    def weakmap_table_edges(self) -> np.ndarray:
        """Bool per edge: a WeakMap table's internal edge to a value, which
        DevTools does not count as retaining (the key's edge does)."""
        internal = self.edge_types.index("internal")
        out = np.zeros(len(self.edge_to), bool)
        src = np.repeat(np.arange(len(self.ids)), np.diff(self.first_edge))
        for e in np.flatnonzero(self.edge_type == internal).tolist():
            m = _WEAKMAP_EDGE.match(self.strings[int(self.edge_name[e])])
            if m and int(m.group(1)) == int(self.ids[src[e]]):
                out[e] = True
        return out


@lru_cache(maxsize=4)
def read(path: Path) -> Snapshot:
    snap = json.loads(Path(path).read_text())
    meta = snap["snapshot"]["meta"]
    nf, ef = meta["node_fields"], meta["edge_fields"]
    nodes = np.asarray(snap["nodes"], np.uint64).reshape(-1, len(nf))
    edges = np.asarray(snap["edges"], np.uint64).reshape(-1, len(ef))
    counts = nodes[:, nf.index("edge_count")].astype(np.int64)
    first = np.zeros(len(nodes) + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    edge_types = meta["edge_types"][0]
    assert edge_types[:7] == ["context", "element", "property", "internal", "hidden", "shortcut", "weak"]
    return Snapshot(
        ids=nodes[:, nf.index("id")].copy(),
        types=nodes[:, nf.index("type")].astype(np.uint8),
        names=nodes[:, nf.index("name")].astype(np.uint32),
        sizes=nodes[:, nf.index("self_size")].copy(),
        first_edge=first,
        edge_to=(edges[:, ef.index("to_node")] // len(nf)).astype(np.uint32),
        edge_type=edges[:, ef.index("type")].astype(np.uint8),
        edge_name=edges[:, ef.index("name_or_index")].astype(np.uint32),
        node_types=meta["node_types"][0], edge_types=edge_types, strings=snap["strings"])


def sub_roots(path: Path) -> list[str]:
    """The names of a snapshot's (GC roots) children, in the file's order."""
    snap = read(path)
    return [snap.name(int(j)) for j in snap.edge_to[snap.first_edge[1]:snap.first_edge[2]]]


@dataclass
class Reference:
    """DevTools' numbers for every node, in snapshot order."""

    ids: np.ndarray
    self_sizes: np.ndarray  # after DevTools moves hidden/array nodes' sizes to their owner
    retained: np.ndarray
    dominator: np.ndarray  # the dominator's id


@lru_cache(maxsize=4)
def devtools(path: Path) -> Reference:
    """Chrome DevTools' retained sizes of a snapshot (cached beside it).

    The worker runs on node 24 whatever line wrote the snapshot: it needs a
    recent JavaScript engine (Promise.withResolvers), the format is the same.
    """
    if not (DEVTOOLS / "front_end").is_dir() or not (TYPESCRIPT / "lib").is_dir():
        pytest.skip("chrome-devtools-frontend or typescript missing: run scripts/setup.sh")
    path = Path(path)
    out = path.with_suffix(".devtools.json")
    if not out.exists():
        build = CACHE / "devtools-build" / DEVTOOLS_VERSION
        tmp = out.with_suffix(".tmp")
        subprocess.run([str(node_binary("24.21.0")), str(TOOL), str(DEVTOOLS), str(TYPESCRIPT), str(build),
                        str(path), str(tmp)], check=True, capture_output=True, timeout=600)
        tmp.rename(out)
    doc = json.loads(out.read_text())
    return Reference(np.asarray(doc["ids"], np.uint64), np.asarray(doc["self"], np.uint64),
                     np.asarray(doc["retained"], np.float64).astype(np.uint64),
                     np.asarray(doc["dominator"], np.uint64))


# From V8 14 (node 26) an IdentityMap's table is a sub-root of its own,
# `(Identity map)`: the writer's, or a compile job's running while V8's file
# is written (seen on TypeScript: getPipelinePhase and what its closures
# hold, held by nothing else at that moment and gone from the core).
TRANSIENT_ROOTS = ("(Handle scope)", "(Stack roots)", "(Identity map)")
# A (Strong roots) edge so named is an IdentityMap's table, registered as a
# strong root while the map lives: the snapshot writer's own (on TypeScript,
# node 20, its table is a freed malloc chunk in the core).
TRANSIENT_STRONG = " / IdentityMapBase"


@lru_cache(maxsize=8)
@lru_cache(maxsize=None)
def devtools_tree(path: Path):
    """V8's snapshot at path and its dominator tree as v8dbg computes it,
    checked node by node against Chrome DevTools' own loader."""
    from v8dbg.heap import dominators as D
    snap = read(path)
    ref = devtools(path)
    tree = D.retained_sizes(snap.first_edge, snap.edge_to, snap.edge_type, ref.self_sizes, 0,
                            snap.weakmap_table_edges())
    assert (tree.retained == ref.retained).all()
    return snap, tree


def transient(path: Path) -> "Counter[str]":
    """Per name, the snapshot's object nodes that only the call writing the
    snapshot kept alive: reached from the root only through `(Handle scope)`,
    `(Stack roots)`, `(Identity map)` or an IdentityMap's `(Strong roots)`
    edges (weak edges never retain), directly or through other such objects
    -- e.g. the buffer the writer used and its ArrayBuffer. A core taken
    after that call returned may hold them as garbage."""
    snap = json.loads(Path(path).read_text())
    meta = snap["snapshot"]["meta"]
    nf, ef = meta["node_fields"], meta["edge_fields"]
    k, ke = len(nf), len(ef)
    ni, eci, ti = nf.index("name"), nf.index("edge_count"), nf.index("type")
    eto, ety, ena = ef.index("to_node"), ef.index("type"), ef.index("name_or_index")
    internal = meta["edge_types"][0].index("internal")
    weak = meta["edge_types"][0].index("weak")
    objects = meta["node_types"][0].index("object")
    nodes, edges, strings = snap["nodes"], snap["edges"], snap["strings"]
    n = len(nodes) // k
    first = [0] * (n + 1)
    for i in range(n):
        first[i + 1] = first[i] + nodes[i * k + eci] * ke
    skip = {i for i in range(n) if strings[nodes[i * k + ni]] in TRANSIENT_ROOTS}
    strong = {i for i in range(n) if strings[nodes[i * k + ni]] == "(Strong roots)"}

    def reached(avoid: set[int]) -> bytearray:
        seen = bytearray(n)
        seen[0] = 1
        todo = [0]
        while todo:
            i = todo.pop()
            if i in avoid:
                continue
            for j in range(first[i], first[i + 1], ke):
                if edges[j + ety] == weak:
                    continue
                if avoid and i in strong and edges[j + ety] == internal and \
                        strings[edges[j + ena]].endswith(TRANSIENT_STRONG):
                    continue
                t = edges[j + eto] // k
                if not seen[t]:
                    seen[t] = 1
                    todo.append(t)
        return seen

    everywhere, without = reached(set()), reached(skip)
    out: Counter = Counter()
    for i in range(n):
        if everywhere[i] and not without[i] and nodes[i * k + ti] == objects:
            out[strings[nodes[i * k + ni]]] += 1
    return out
