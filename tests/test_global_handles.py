"""V8's global handles found from the Isolate, as V8 links them (Isolate ->
GlobalHandles -> NodeSpace -> NodeBlock -> next block), not by a scan of
native memory.

On every pinned line, on the retainer tests' core (leakchain.js):

- the blocks and the strong and weak handles the chain gives are those the
  scan of native memory finds (the scan stays, for the fallback), and
  there are some (node's BaseObjects and persistent handles);
- where the Isolate's lists are placed, the root groups are made without
  the scan and without walking malloc's freed chunks or the other memory
  only the scan skips (each made to fail here), the notes say nothing, and
  `(Global handles)` holds what the chain gives;
- a chain broken at the GlobalHandles (its memory garbage) or at a block
  (a back-pointer wrong) is said in the notes, and the scan's handles
  stand instead.

The chain's own rules (blocks in next_ order, a circle, the cap, a block
whose back-pointers are wrong) on a made-up memory of three blocks."""

from __future__ import annotations

import struct
from functools import lru_cache

import pytest

from support import VERSIONS, core_program, make_core

LEAK = "leakchain.js"


def _setup(version: str):
    import numpy as np

    from v8dbg.heap import isolates, roots
    prog, _backend = core_program(make_core(version, LEAK) / "core", version)
    heap = isolates.isolates(prog)[0].heap
    return np, prog, heap, roots


def _bounds(prog, heap: int) -> tuple[int, int]:
    from v8dbg.v8 import pages
    ps = pages.find_heaps(prog, pages.layout(prog))[heap]
    return min(p.address for p in ps), max(p.end for p in ps)


@lru_cache(maxsize=None)
def scanned(version: str):
    """(strong, weak, blocks) of the scan of every native word outside V8's chunks."""
    np, prog, heap, roots = _setup(version)
    from v8dbg.v8 import pages
    lo, hi = _bounds(prog, heap)
    regs = pages.regions(prog)
    lay = pages.layout(prog)
    heaps = pages.find_heaps(prog, lay)
    chunks = sorted([(p.address, max(p.end, p.address + lay.align)) for ps in heaps.values()
                     for p in ps] + roots._chunks(prog, lay, regs, heaps))
    strong, weak, blocks, cut, _v, _w = roots._global_handles(
        np, prog, roots._cut(regs, chunks), lo, hi, [roots.MAX_NATIVE_BYTES])
    assert not cut
    return strong, weak, blocks


@pytest.mark.parametrize("version", VERSIONS)
def test_chain_finds_what_the_scan_finds(version: str) -> None:
    np, prog, heap, roots = _setup(version)
    lo, hi = _bounds(prog, heap)
    chain, why = roots._chain_handles(np, prog, roots._isolate_span(prog, heap), lo, hi)
    assert why is None and chain is not None, why
    strong, weak, blocks, notes = chain
    s_strong, s_weak, s_blocks = scanned(version)
    assert blocks and len(strong) >= 20 and len(weak) >= 1, (blocks, len(strong), len(weak))
    assert blocks == s_blocks and not notes
    assert np.array_equal(strong, s_strong) and np.array_equal(weak, s_weak)


@pytest.mark.parametrize("version", VERSIONS)
def test_precise_roots_scan_no_native_memory(version: str, monkeypatch) -> None:
    np, prog, heap, roots = _setup(version)
    lo, hi = _bounds(prog, heap)
    strong, weak, _blocks = scanned(version)  # (the scan itself, before it is forbidden)

    def no(*_a, **_k):
        raise AssertionError("native memory scanned in the precise path")

    for name in ("_global_handles", "_freed", "_no_roots", "_address_maps"):
        monkeypatch.setattr(roots, name, no)
    groups = roots.root_groups(np, prog, heap, lo, hi)
    assert not groups[0].notes, groups[0].notes
    assert roots.NATIVE not in [g.name for g in groups]
    gh = [g for g in groups if g.name == roots.GLOBAL][0]
    assert np.array_equal(gh.values, strong) and np.array_equal(gh.weak, weak)


class _Damaged:
    """A reader of the core whose bytes in [lo, hi) are garbage."""

    def __init__(self, real, lo: int, hi: int, bad: int) -> None:
        self.real, self.lo, self.hi, self.bad = real, lo, hi, bad
        self.real_read = real.read

    def read(self, address: int, size: int) -> bytes:
        data = bytearray(self.real_read(address, size))
        for a in range(max(address, self.lo), min(address + size, self.hi)):
            data[a - address] = self.bad
        return bytes(data)

    def __getattr__(self, name: str):
        return getattr(self.real, name)


def _damaged(prog, lo: int, hi: int, bad: int) -> None:
    """Make prog's memory read garbage over [lo, hi), through its page cache
    and past it."""
    from v8dbg.v8 import pages
    prog.heap_state.bulk = _Damaged(pages.bulk(prog), lo, hi, bad)
    prog.mem.backend = _Damaged(prog.mem.backend, lo, hi, bad)
    prog.mem.clear()


@pytest.mark.parametrize("where", ["global_handles", "block"])
@pytest.mark.parametrize("version", VERSIONS)
def test_broken_chain_falls_back_to_the_scan(version: str, where: str) -> None:
    np, prog, heap, roots = _setup(version)
    from v8dbg.v8 import globalhandles
    lo, hi = _bounds(prog, heap)
    strong, weak, _blocks = scanned(version)
    span = roots._isolate_span(prog, heap)
    words = struct.unpack(f"<{(span[1] - span[0]) // 8}Q",
                          prog.mem.read(span[0], span[1] - span[0]))
    chain = globalhandles.find(prog.mem, prog.md.v8_version, span[0], words)
    assert chain.error is None
    if where == "global_handles":
        _damaged(prog, chain.global_handles, chain.global_handles + 64, 0x5A)
        said = "GlobalHandles was not found"
    else:
        end = chain.blocks[0][1]  # its next_, global_handles_, space_ after the nodes
        _damaged(prog, end + 8, end + 24, 0x08)
        said = "does not point back to its GlobalHandles"
    groups = roots.root_groups(np, prog, heap, lo, hi)
    notes = groups[0].notes
    assert any("V8's global handles could not be followed from the Isolate" in n and said in n
               for n in notes), notes
    gh = [g for g in groups if g.name == roots.GLOBAL][0]
    assert np.array_equal(gh.values, strong) and np.array_equal(gh.weak, weak)
    assert roots.NATIVE not in [g.name for g in groups]  # the lists are placed still


class _Memory:
    """A made-up memory of little-endian words, for the chain's rules."""

    def __init__(self) -> None:
        self.words: dict[int, int] = {}

    def put(self, addr: int, *ws: int) -> None:
        for i, w in enumerate(ws):
            self.words[addr + 8 * i] = w

    def read(self, address: int, size: int) -> bytes:
        from v8dbg.errors import TargetMemoryError
        if address & 7 or size & 7 or any(address + i not in self.words
                                          for i in range(0, size, 8)):
            raise TargetMemoryError(address, size)
        return b"".join(struct.pack("<Q", self.words[address + i]) for i in range(0, size, 8))


ISO, GH, SPACE = 0x100000, 0x200000, 0x300000
BLOCKS = (0x400000, 0x500000, 0x600000)


def _made(version=(13, 6, 0)) -> tuple[_Memory, tuple[int, ...], int]:
    """An Isolate pointing to a GlobalHandles whose regular space has three
    blocks, first_block_ the last made (as V8 prepends them)."""
    from v8dbg.v8 import layouts
    node, spaces = layouts.global_handles(version)
    mem = _Memory()
    iso_words = (0x1234, GH + 0x40, GH, 0x99)  # one pointer to an unrelated object
    mem.put(ISO, *iso_words)
    mem.put(GH + 0x40, 0)
    g = [ISO] + [0] * (max(spaces) // 8)
    for k, off in enumerate(spaces):
        g[off // 8] = SPACE + 0x100 * k
        mem.put(SPACE + 0x100 * k, GH, 0)
    mem.put(GH, *g)
    mem.put(SPACE, GH, BLOCKS[0])
    span = layouts.GLOBAL_HANDLE_BLOCK * node
    for b, nxt in zip(BLOCKS, BLOCKS[1:] + (0,)):
        mem.put(b + span, nxt, GH, SPACE)
    return mem, iso_words, span


def test_chain_rules_on_made_up_memory(monkeypatch) -> None:
    from v8dbg.v8 import globalhandles
    for version in ((10, 2, 0), (13, 6, 0)):
        mem, words, span = _made(version)
        got = globalhandles.find(mem, version, ISO, words)
        assert got.error is None and got.global_handles == GH and not got.notes, got
        assert got.blocks == [(b, b + span) for b in BLOCKS]
    version = (13, 6, 0)
    mem, words, span = _made(version)
    mem.put(BLOCKS[2] + span, BLOCKS[1])  # a circle
    got = globalhandles.find(mem, version, ISO, words)
    assert got.error and "circle" in got.error
    mem, words, span = _made(version)
    mem.put(BLOCKS[1] + span + 16, SPACE + 8)  # another space
    got = globalhandles.find(mem, version, ISO, words)
    assert got.error and f"{BLOCKS[1]:#x} does not point back" in got.error
    mem, words, span = _made(version)
    del mem.words[BLOCKS[2] + span]
    got = globalhandles.find(mem, version, ISO, words)
    assert got.error and f"{BLOCKS[2]:#x} cannot be read" in got.error
    mem, words, span = _made(version)
    monkeypatch.setattr(globalhandles, "MAX_BLOCKS", 2)
    got = globalhandles.find(mem, version, ISO, words)
    assert got.error is None and len(got.blocks) == 2
    assert any("over 2 blocks" in n for n in got.notes), got.notes
    got = globalhandles.find(mem, (9, 4, 0), ISO, words)
    assert got.error and "no layout" in got.error
