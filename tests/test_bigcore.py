"""A core of a heap over 1 GB: more than 4,096 program headers (V8 maps each
256 KB heap page apart, and the kernel writes a header per mapping).

Node 24 makes 7,500,000 instances of one class (tests/fixtures/bigheap.js,
about 1.2 GB of heap, some 4,500 program headers) and aborts from a known
stack. Every instance must be counted, and jsstack's JS frames must be the
fixture's own Error().stack, in every front end. (gdb needs some 0.45 GB and
lldb some 0.9 GB of memory for this core; the core is 1.9 GB, 1.3 GB on disk.)
"""

from __future__ import annotations

import pytest

from support import FRONTENDS, json_line, make_core, read_json, run
from test_stack import compare

VERSION = "24.21.0"


@pytest.fixture(scope="module")
def big():
    return make_core(VERSION, "bigheap.js", ("--max-old-space-size=4096",), timeout=900)


def test_every_program_header_read(big) -> None:
    import sys
    from support import ROOT
    sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.corefile import CoreBackend
    from v8dbg.inferior.elf import ElfFile
    elf = ElfFile(str(big / "core"))
    assert elf.phnum > 4096, f"the fixture's core has only {elf.phnum} program headers"
    assert len(elf.segments) == elf.phnum
    assert not CoreBackend(str(big / "core")).truncated


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_every_instance_and_the_stack(frontend: str, big) -> None:
    want = read_json(big, "expected-bigheap.json")
    census, stack = run(frontend, VERSION, big / "core",
                        ["findjsobjects -c Item --json", "jsstack --json"])
    doc = json_line(census, "findjsobjects")
    got = sum(g["count"] for g in doc["groups"] if g["constructor"] == "Item")
    assert got == want["items"], census[-2000:]
    assert "truncated" not in census + stack
    compare(json_line(stack, "jsstack"), (big / "expected-stack.txt").read_text())


def _pn_xnum_copy(d, cut_section_header: bool = False):
    """A copy of d/core laid out as the kernel writes a core of 65,535 or more
    mappings: e_phnum PN_XNUM, the real count in section header 0 (sh_info),
    that header written last. `cut_section_header`: the copy cut before it."""
    import struct
    from support import write_sparse
    name = "core-xnum-cut" if cut_section_header else "core-xnum"
    out = d / name
    if out.exists():
        return out
    data = bytearray((d / "core").read_bytes())
    phnum = struct.unpack_from("<H", data, 56)[0]
    shoff = len(data)
    struct.pack_into("<Q", data, 40, shoff)
    struct.pack_into("<HHHH", data, 56, 0xFFFF, 64, 1, 0)  # phnum, shentsize, shnum, shstrndx
    if not cut_section_header:
        data += struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 1, 0, phnum, 0, 0)
    write_sparse(out, data)
    return out


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "section-header-cut"])
def test_pn_xnum_core(cut: bool) -> None:
    """Program headers counted in section header 0 (PN_XNUM) are all read; a
    core cut before that header still has its table read up to its data."""
    d = make_core(VERSION, "census.js")
    want = read_json(d, "expected-census.json")["widgets"]
    core = _pn_xnum_copy(d, cut)
    out = run("cli", VERSION, core, ["findjsobjects -c Widget --json"])[0]
    doc = json_line(out, "findjsobjects")
    assert sum(g["count"] for g in doc["groups"] if g["constructor"] == "Widget") == want, out
    assert ("truncated" in out) == cut, out


def test_program_header_cap_is_reported(monkeypatch) -> None:
    """The reader's cap on program headers (far above real cores) is named
    when a core reaches it, never a silent cut."""
    import sys
    from support import ROOT, node_binary
    sys.path.insert(0, str(ROOT))
    import v8dbg.inferior.elf as elf
    from v8dbg.commands import Session, load_all
    from v8dbg.inferior.corefile import CoreBackend
    core = make_core(VERSION, "census.js") / "core"
    monkeypatch.setattr(elf, "MAX_PROGRAM_HEADERS", 50)
    be = CoreBackend(str(core), str(node_binary(VERSION)))
    assert len(be.elf.segments) == 50 and be.elf.phnum > 50
    assert be.limits and "only the first 50 are read" in be.limits[0]
    load_all()
    import v8dbg.v8.metadata as md
    monkeypatch.setattr(md, "_warned", set())
    warned: list[str] = []
    monkeypatch.setattr(md, "warn_once", lambda m, again=False: warned.append(m))
    Session(lambda: be, str(node_binary(VERSION))).run("nodeinfo", [])
    assert any("only the first 50 are read" in w for w in warned), warned


def test_large_object_pages_counted_alike(big, monkeypatch) -> None:
    """The array of 7.5 million Items lives on a large object's page; counted
    from its first words or walked word by word, the census is the same."""
    from support import core_program
    from v8dbg.heap import census, walk

    def scan() -> tuple[int, dict[int, int]]:
        prog, _be = core_program(big / "core", VERSION)
        c = census.scan(prog)
        assert not c.damaged_pages
        return c.total_objects, {m: st.count for m, st in c.maps.items()}

    seen: list[object] = []
    one = walk._one_object

    def counted(w, p, rec):
        r = one(w, p, rec)
        seen.append(r)
        return r

    monkeypatch.setattr(walk, "_one_object", counted)
    fast = scan()
    assert any(r is not None for r in seen), "no page was counted from its first words"
    monkeypatch.setattr(walk, "_one_object", lambda w, p, rec: None)
    assert scan() == fast
