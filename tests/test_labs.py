"""Allocation areas found from where a page walk meets damage (v8dbg/v8/pages.py `labs_at`).

Past an allocation area's top lies memory not yet allocated, holding what
the page held before; V8 keeps its spaces' areas beside the Heap, but a
thread that allocates apart (a compiler's LocalHeap, in old space) keeps
its own in native memory. Seen in a node 18.20.8 core of
tests/fixtures/leakchain.js: a page walked as damaged 14,024 bytes past a
ByteArray, where such an area's (heap, start, top, limit) lay 2.7 MB past
the Heap. The search is checked here on memory laid out that way; the real
core's census is checked by tests/test_retainers.py (no damaged page).
"""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

from v8dbg.v8 import pages as vp

PAGE = 0x5500000000
NATIVE = 0x38000000


class _Memory:
    def __init__(self, parts: dict[int, bytes]) -> None:
        self.parts = parts

    def regions(self):
        return [(a, a + len(b)) for a, b in sorted(self.parts.items())]

    def read(self, address: int, size: int) -> bytes:
        for a, b in self.parts.items():
            if a <= address and address + size <= a + len(b):
                return b[address - a:address - a + size]
        raise OSError("unmapped")


def _prog(mem: _Memory):
    return SimpleNamespace(heap_state=SimpleNamespace(bulk=mem), backend=mem)


def _page() -> vp.Page:
    return vp.Page(PAGE, 0, 0, PAGE + 0x100, PAGE + 0x40000, PAGE)


def _native(words: list[int], at: int = 0x2aeb88) -> bytes:
    out = bytearray(0x300000)
    struct.pack_into(f"<{len(words)}Q", out, at, *words)
    return bytes(out)


def test_found_from_its_top() -> None:
    top = PAGE + 0x29788
    heap = NATIVE + 0xb7338
    mem = _Memory({NATIVE: _native([heap, top - 0x160, top, top + 14024, 0x41]),
                   PAGE: bytes(0x40000)})
    budget = [1 << 30]
    assert vp.labs_at(_prog(mem), [_page()], [top], budget) == {top: (top - 0x160, top, top + 14024)}
    assert budget[0] < 1 << 30


def test_across_a_piece_boundary(monkeypatch) -> None:
    monkeypatch.setattr(vp, "_LAB_PIECE", 0x1000)
    top = PAGE + 0x800
    mem = _Memory({NATIVE: _native([top - 8, top, top + 0x100], at=0x1000 - 8),
                   PAGE: bytes(0x40000)})
    assert vp.labs_at(_prog(mem), [_page()], [top], [1 << 30]) == {top: (top - 8, top, top + 0x100)}


def test_not_an_area() -> None:
    """A top word with no area around it, a limit past the page, a start
    after the top, a budget spent, a top outside every page: none."""
    top = PAGE + 0x29788
    p = [_page()]
    for words in ([0, top, 0], [top - 16, top, PAGE + 0x50000], [top + 8, top, top + 64]):
        mem = _Memory({NATIVE: _native(words), PAGE: bytes(0x40000)})
        assert vp.labs_at(_prog(mem), p, [top], [1 << 30]) == {}, words
    mem = _Memory({NATIVE: _native([top - 8, top, top + 64]), PAGE: bytes(0x40000)})
    assert vp.labs_at(_prog(mem), p, [top], [0x1000]) == {}
    assert vp.labs_at(_prog(mem), p, [PAGE + 0x50000], [1 << 30]) == {}


def test_heap_pages_are_not_searched() -> None:
    """A triple inside V8's own pages is no allocation area (an object's
    words): only native memory is read."""
    top = PAGE + 0x800
    inside = bytearray(0x40000)
    struct.pack_into("<3Q", inside, 0x2000, top - 8, top, top + 64)
    mem = _Memory({PAGE: bytes(inside)})
    assert vp.labs_at(_prog(mem), [_page()], [top], [1 << 30]) == {}


@pytest.mark.parametrize("numpy", [True, False])
def test_several_tops_in_one_read(numpy: bool, monkeypatch) -> None:
    """The areas of several damaged pages found in one pass over native
    memory (words compared with NumPy, or bytes searched without it); a top
    with none around it is left out."""
    if not numpy:
        monkeypatch.setenv("V8DBG_NO_NUMPY", "1")
    t1, t2, t3 = PAGE + 0x800, PAGE + 0x9000, PAGE + 0x20000
    out = bytearray(0x300000)
    struct.pack_into("<3Q", out, 0x100, t1 - 8, t1, t1 + 0x40)
    struct.pack_into("<3Q", out, 0x2ff000, t2 - 0x20, t2, t2 + 0x80)
    mem = _Memory({NATIVE: bytes(out), PAGE: bytes(0x40000)})
    budget = [1 << 30]
    got = vp.labs_at(_prog(mem), [_page()], [t1, t2, t3], budget)
    assert got == {t1: (t1 - 8, t1, t1 + 0x40), t2: (t2 - 0x20, t2, t2 + 0x80)}
    assert (1 << 30) - budget[0] == len(out)  # (native memory read once)
