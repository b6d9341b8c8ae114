"""Stack roots of an optimized frame, read through its safepoint table, on
every line and front end, against V8's own heap snapshot of the same heap.

optframe.js runs `frame` as TurboFan code (--no-turbo-inlining keeps it so)
and aborts from inside it. At the abort its spill slots hold one Kept object
it still needs (a tagged slot at that call) and six Dropped objects it no
longer needs (stale words: made after V8's snapshot was written, garbage).
Read word by word, the frame kept the Dropped objects alive; V8 visits only
the slots its safepoint entry marks, so:

- findjsobjects counts no Dropped and the one Kept, as V8's snapshot does
  (which the frame wrote from inside the same optimized frame), and every
  other name as the snapshot, less at most what only the call writing it
  held (as test_retainers);
- the frame is TurboFan code, its safepoint table was read (no note says a
  frame was taken word by word), and the slot holding Kept is among the
  words read while the slots holding the Dropped objects are not.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from support import FRONTENDS, VERSIONS, json_line, make_core, node_binary, read_json, run

from heapsnapshot import transient
from test_census_snapshot import census_counts, snapshot

FIXTURE = "optframe.js"
FLAGS = ("--allow-natives-syntax", "--no-turbo-inlining")
# Lines whose node runs Maglev code (18-22 builds say "Maglev is not enabled").
MAGLEV = [v for v in VERSIONS if int(v.split(".")[0]) >= 24]


@lru_cache(maxsize=None)
def core_dir(version: str, tier: str = "turbofan") -> Path:
    if tier == "maglev":
        return make_core(version, FIXTURE, FLAGS + ("--no-maglev-inlining",),
                         {"V8DBG_TIER": "maglev"})
    return make_core(version, FIXTURE, FLAGS)


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_counts_equal_snapshot(frontend: str, version: str) -> None:
    d = core_dir(version)
    expected = read_json(d, "expected-optframe.json")
    out = run(frontend, version, d / "core", ["findjsobjects --json"])[0]
    doc = json_line(out, "findjsobjects")
    snap, _boilerplates, _proxies = snapshot(d, expected["snapshot"])
    assert snap["Kept"] == expected["kept"] and snap["Dropped"] == 0, snap
    mine = census_counts(doc)
    assert mine["Dropped"] == 0, "stale spill slots of the optimized frame kept garbage alive"
    assert mine["Kept"] == expected["kept"], "a tagged spill slot of the optimized frame was missed"
    assert doc["unreachable"] >= expected["dropped"], doc["unreachable"]
    gone = transient(d / expected["snapshot"])
    gone["Kept"] = 0
    wrong = {n: (mine[n], snap[n]) for n in set(mine) | set(snap)
             if not snap[n] - gone[n] <= mine[n] <= snap[n]}
    assert not wrong, f"findjsobjects vs snapshot, by name: {wrong}"


def _frame_check(version: str, tier: str):
    """(the words read of the aborting thread's JS segment, their notes, the
    stack slots holding Kept and those holding Dropped objects), on the core
    of this tier."""
    import numpy as np

    from v8dbg.heap import census, isolates, roots
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.program import Program
    from v8dbg.v8 import pages
    d = core_dir(version, tier)
    binary = str(node_binary(version))
    prog = Program(CoreBackend(str(d / "core"), binary), binary)
    heap = isolates.isolates(prog)[0].heap
    top = roots._top(prog, heap)
    _stacks, _dead, spans, note = roots._stacks(prog, pages.regions(prog), top)
    assert note is None and len(spans) == 1, (note, spans)
    words, notes = roots._frame_words(prog, top, spans)
    by_name: dict[str, list[int]] = {"Kept": [], "Dropped": []}
    for st in census.of(prog, heap).maps.values():
        if st.addresses and prog.shapes.is_object_row_type(st.instance_type):
            name = prog.shapes.shape(st.map, st.addresses[0]).constructor
            if name in by_name:
                by_name[name] += list(st.addresses)
    assert len(by_name["Kept"]) == 1 and len(by_name["Dropped"]) == 6, by_name
    lo, hi = spans[0]
    raw = np.frombuffer(prog.mem.read(lo, hi - lo), dtype="<u8")

    def slots(addr: int) -> list[int]:
        return [lo + 8 * int(i) for i in np.nonzero(raw == np.uint64(addr))[0]]

    return words, notes, slots(by_name["Kept"][0]), \
        [a for g in by_name["Dropped"] for a in slots(g)]


def _read(words: list[tuple[int, int]], a: int) -> bool:
    return any(s <= a < e for s, e in words)


@pytest.mark.parametrize("version", VERSIONS)
def test_frame_read_through_its_table(version: str) -> None:
    words, notes, kept, stale = _frame_check(version, "turbofan")
    assert notes == [], notes
    assert kept and any(_read(words, a) for a in kept), kept
    # The frame's dead spill slots still hold them: what word by word kept alive.
    assert stale, "no stale word of a Dropped object on the stack: the fixture tests nothing"
    assert not [hex(a) for a in stale if _read(words, a)]


@pytest.mark.parametrize("version", MAGLEV)
def test_maglev_frame_read_through_its_table(version: str) -> None:
    """Maglev keeps one set of tagged spill slots for every call, and V8
    visits them all: the Dropped objects' slots are read (V8 keeps them
    alive too), as is Kept's; its raw argument count and untagged slots
    are not."""
    words, notes, kept, stale = _frame_check(version, "maglev")
    assert notes == [], notes
    assert kept and all(_read(words, a) for a in kept), kept
    assert len(stale) >= 6 and all(_read(words, a) for a in stale), stale
    d = core_dir(version, "maglev")
    out = run("cli", version, d / "core", ["jsstack --json", "findjsobjects --json"])
    fr = [f for f in json_line(out[0], "jsstack")["frames"] if f.get("function") == "frame"]
    assert fr and fr[0]["tier"] == "maglev", fr
    fp = int(fr[0]["fp"], 16)
    assert not _read(words, fp - 24), "the Maglev frame's raw argument count was read"
    # V8's --print-maglev-code of `frame` on these lines: "stack slots = 21
    # ... tagged slots = 11": 11 tagged slots, 5 untagged, the fixed part.
    inside = [a for a in range(fp + 16 - 8 * 21, fp, 8) if _read(words, a)]
    assert len(inside) == 11 + 2, [hex(a) for a in inside]  # tagged slots, context, function
    mine = census_counts(json_line(out[1], "findjsobjects"))
    assert mine["Kept"] == 1 and mine["Dropped"] == 6, mine
