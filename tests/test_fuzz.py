"""Fuzzing the decoders with synthetic memory (hypothesis).

A fake backend serves memory from a few buffers and nothing else: (a) random
bytes (with many words pointing back into the buffer, so decoders follow
them), and (b) the pages around the real objects of a node 24 core (the
stack, the JS functions of every frame, their arguments and what those point
at), mutated word by word. The real node binary gives the metadata.

Every decoder entry point must either return or raise a V8DbgError -- never
another exception -- and return within CALL_BOUND seconds of CPU time. The heap census,
and every command as the front ends run it, also run over the whole real
core with words of its V8 pages (headers included) damaged.
"""

from __future__ import annotations

import os
import random
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import make_core, node_binary

from v8dbg.errors import TargetMemoryError, V8DbgError
from v8dbg.stack.frames import StackDecoder
from v8dbg.v8.functions import Functions
from v8dbg.v8.tagged import Heap
from v8dbg.program import Program
from v8dbg.v8.strings import Strings
from v8dbg.inferior.backend import PAGE, Mapping, Memory, Registers, ThreadInfo

VERSION = "24.21.0"
CALL_BOUND = 2.0
# V8DBG_FUZZ_SCALE=10 runs ten times the examples (a longer local run).
SCALE = max(1, int(os.environ.get("V8DBG_FUZZ_SCALE", "1")))
RANDOM_BASE = 0x3A0000000000
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class FakeBackend:
    """Memory from a dict of pages; anything else is unreadable."""

    kind = "fake"
    live = False

    def __init__(self, pages: dict[int, bytes], regs: Registers | None = None) -> None:
        self.pages = pages
        self.regs = regs

    def read(self, addr: int, size: int) -> bytes:
        if size < 0 or addr < 0:
            raise TargetMemoryError(addr, max(size, 0))
        if size == 0:
            return b""
        out = []
        first, last = addr // PAGE, (addr + size - 1) // PAGE
        if last - first > 4096:
            raise TargetMemoryError(addr, size)
        for pno in range(first, last + 1):
            p = self.pages.get(pno)
            if p is None:
                raise TargetMemoryError(addr, size)
            out.append(p)
        blob = b"".join(out)
        off = addr - first * PAGE
        return blob[off:off + size]

    def regions(self) -> list[tuple[int, int]]:
        return [(p * PAGE, (p + 1) * PAGE) for p in sorted(self.pages)]

    def threads(self) -> list[ThreadInfo]:
        return [ThreadInfo(1, "main", self.regs)]

    def selected_thread(self) -> int | None:
        return 1

    def mappings(self) -> list[Mapping]:
        return []

    def executable(self) -> str | None:
        return str(node_binary(VERSION))

    def pid(self) -> int | None:
        return 1

    def generation(self) -> int:
        return 0


@dataclass
class Real:
    """Pages copied from a real core, and the objects on them."""

    pages: dict[int, bytes]
    objects: list[int]        # tagged addresses of real heap objects
    functions: list[int]      # JSFunctions of the JS frames
    strings: list[int]
    regs: Registers
    stack: tuple[int, int]    # [lo, hi) of the copied stack


PROG: dict[str, Program] = {}


def program(backend: FakeBackend) -> Program:
    """One Program (metadata, symbols) for the run; each example gets fresh memory."""
    prog = PROG.get("p")
    if prog is None:
        prog = Program(backend, binary=str(node_binary(VERSION)))
        # Load the symbol table now, not inside the first timed call.
        prog.symbolize(0x1000000)
        PROG["p"] = prog
    prog.backend = backend
    prog.mem = Memory(backend)
    prog.forget()
    return prog


@pytest.fixture(scope="module")
def real() -> Real:
    from v8dbg.inferior.corefile import CoreBackend
    d = make_core(VERSION, "stack.js", ("--allow-natives-syntax",), {"V8DBG_TIER": "interpreted"})
    cb = CoreBackend(str(d / "core"), str(node_binary(VERSION)))
    prog = Program(cb, binary=str(node_binary(VERSION)))
    dec = StackDecoder(prog)
    th = cb.threads()[0]
    assert th.regs is not None
    frames = dec.decode(th.regs)
    js = [f for f in frames if f.kind == "js" and f.function_address]
    assert len(js) > 10, "the real core should have many JS frames"
    functions = [f.function_address for f in js if f.function_address]
    objs: set[int] = set(functions)
    for f in js:
        for v in [f.receiver, f.sfi, f.script_address, *f.args]:
            if v is not None and dec.h.is_heap(v):
                objs.add(v)
    # Two levels of what they point at: maps, SFIs, contexts, names, bytecode, tables.
    frontier = set(objs)
    for _ in range(2):
        nxt = set()
        for a in frontier:
            for i in range(12):
                try:
                    w = cb.read(a - 1 + 8 * i, 8)
                except TargetMemoryError:
                    break
                v = struct.unpack("<Q", w)[0]
                if dec.h.is_heap(v) and v not in objs and prog.mem.readable(v - 1, 8):
                    nxt.add(v)
        objs |= nxt
        frontier = nxt
    pages: dict[int, bytes] = {}

    def grab(pno: int) -> None:
        if pno not in pages and len(pages) < 600:
            try:
                pages[pno] = cb.read(pno * PAGE, PAGE)
            except TargetMemoryError:
                pass

    for a in sorted(objs):
        grab((a - 1) // PAGE)
        grab((a - 1) // PAGE + 1)
        grab(((a - 1) & ~0x3FFFF) // PAGE)  # the V8 page header
    lo = th.regs.rsp & ~(PAGE - 1)
    hi = (max(f.fp for f in frames if f.fp) + 2 * PAGE) & ~(PAGE - 1)
    for pno in range(lo // PAGE, min(hi, lo + 256 * PAGE) // PAGE):
        grab(pno)
    strings = [a for a in objs if Strings(dec.h).is_string(a)]
    # Start the walks at the first JS frame: libc's frames need mappings the fake lacks.
    regs = Registers(js[0].pc, js[0].sp, js[0].fp)
    return Real(pages, sorted(objs), functions, strings, regs, (lo, hi))


def guarded(fn: Callable[..., Any], *args: Any, bound: float = CALL_BOUND) -> Any:
    """Call a decoder: a V8DbgError is a fine answer; anything else fails the test.

    The bound is on CPU time, so a busy machine does not fail the test while a
    loop that does not end still does.
    """
    t0 = time.process_time()
    try:
        return fn(*args)
    except V8DbgError:
        return None
    finally:
        took = time.process_time() - t0
        assert took < bound, f"{getattr(fn, '__qualname__', fn)}{args} took {took:.2f} s"


def exercise(prog: Program, addrs: list[int], regs: Registers | None) -> None:
    """Every decoder entry point on each address (and the stack from regs)."""
    h = Heap(prog)
    s = Strings(h)
    f = Functions(h, s)
    try:
        from v8dbg.values.decoder import Values
        vals: Any = Values(prog)
    except ImportError:
        vals = None
    for a in addrs:
        guarded(s.read, a, 200)
        guarded(s.read, a, 1 << 20)
        guarded(h.instance_type, a)
        guarded(h.array_items, a, 1000)
        guarded(h.oddball_name, a)
        guarded(f.is_function, a)
        sfi = guarded(f.shared, a)
        for target in (a, sfi) if sfi else (a,):
            guarded(f.debug_name, target)
            guarded(f.start_position, target)
            guarded(f.end_position, target)
            guarded(f.parameter_count, target)
            bc = guarded(f.bytecode_array, target)
            if bc:
                guarded(f.bytecode_position, bc, 7)
            script = guarded(f.script, target)
            if script:
                guarded(f.script_name, script)
                guarded(f.position_to_line_col, script, 100)
        guarded(f.script_name, a)
        guarded(f.script_source, a, 4096)
        guarded(f.position_to_line_col, a, 10)
        if vals is not None:
            guarded(vals.decode, a, 2, 100)
            guarded(vals.decode, a, 6, 1000)
            guarded(vals.constructor_name, a)
            guarded(vals.own_properties, a)
            guarded(vals.closure_variables, a)
            guarded(vals.function_source, a, 4096)
        try:
            from v8dbg.heap.shapes import constructor_name
            guarded(constructor_name, prog, a)
        except ImportError:
            pass
    if regs is not None:
        dec = StackDecoder(prog)
        frames = guarded(dec.decode, regs)
        for fr in frames or []:
            if vals is not None:
                for v in [fr.receiver, *fr.args][:4]:
                    if v is not None:
                        guarded(vals.decode, v, 1, 50)


# -- (a) random bytes ---------------------------------------------------------

def random_pages(seed: int, npages: int, pointer_share: float) -> dict[int, bytes]:
    rng = random.Random(seed)
    words = []
    size = npages * PAGE
    for _ in range(size // 8):
        if rng.random() < pointer_share:
            words.append((RANDOM_BASE + rng.randrange(0, size, 8)) | 1)
        elif rng.random() < 0.2:
            words.append(rng.randrange(-(1 << 31), 1 << 31) << 32 & 0xFFFFFFFFFFFFFFFF)  # a Smi
        else:
            words.append(rng.getrandbits(64))
    blob = struct.pack(f"<{len(words)}Q", *words)
    return {RANDOM_BASE // PAGE + i: blob[i * PAGE:(i + 1) * PAGE] for i in range(npages)}


@settings(max_examples=600 * SCALE, **SETTINGS)
@given(seed=st.integers(0, 2 ** 32 - 1), npages=st.integers(1, 8),
       share=st.sampled_from([0.0, 0.3, 0.7, 1.0]),
       picks=st.lists(st.integers(0, 8 * PAGE // 8 - 1), min_size=1, max_size=6),
       rip=st.integers(0, 2 ** 64 - 1), rsp_word=st.integers(0, 8 * PAGE // 8 - 1))
def test_random_memory(seed: int, npages: int, share: float, picks: list[int], rip: int,
                       rsp_word: int) -> None:
    pages = random_pages(seed, npages, share)
    size = npages * PAGE
    addrs = [(RANDOM_BASE + (8 * p) % size) | 1 for p in picks]
    sp = RANDOM_BASE + (8 * rsp_word) % size
    fake = FakeBackend(pages)
    prog = program(fake)
    regs = Registers(rip, sp, sp + 8 * (rip % 16))
    exercise(prog, addrs, regs)


@settings(max_examples=200 * SCALE, **SETTINGS)
@given(words=st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=40))
def test_random_registers_on_random_words(words: list[int]) -> None:
    """Registers and addresses that are any 64-bit numbers at all."""
    fake = FakeBackend(random_pages(len(words), 2, 0.5))
    prog = program(fake)
    regs = Registers(words[0], words[-1], words[len(words) // 2])
    exercise(prog, words[:4], regs)


# -- (b) mutations of real objects ------------------------------------------

INTERESTING = [0, 1, 2, 3, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFF00000000, 0x8000000000000000,
               0x7FFFFFFFFFFFFFFF, 0xFFFFFFFF00000000, 0x0000100000000000 | 1, 0x41414141414141,
               0x7FFFFFFF << 32, 1 << 32, 0x1000]


def mutated(real: Real, muts: list[tuple[int, int, int]], data) -> dict[int, bytes]:
    pages = dict(real.pages)
    for obj_i, field, kind in muts:
        obj = real.objects[obj_i % len(real.objects)]
        addr = obj - 1 + 8 * field
        pno, off = addr // PAGE, addr % PAGE
        if pno not in pages or off > PAGE - 8:
            continue
        old = struct.unpack_from("<Q", pages[pno], off)[0]
        if kind == 0:
            new = data.draw(st.sampled_from(INTERESTING))
        elif kind == 1:
            new = data.draw(st.sampled_from(real.objects))   # cycles and wrong types
        elif kind == 2:
            new = old ^ (1 << data.draw(st.integers(0, 63)))
        elif kind == 3:
            new = (data.draw(st.integers(-(1 << 31), (1 << 31) - 1)) << 32) & (2 ** 64 - 1)
        elif kind == 4:
            # absurd 32-bit lengths in either half of the word
            n = data.draw(st.sampled_from([0x7FFFFFFF, 0xFFFFFFFF, 0x40000000, 1 << 24]))
            new = (old & 0xFFFFFFFF) | (n << 32) if data.draw(st.booleans()) else \
                (old & ~0xFFFFFFFF) | n
        else:
            new = data.draw(st.integers(0, 2 ** 64 - 1))
        b = bytearray(pages[pno])
        struct.pack_into("<Q", b, off, new & (2 ** 64 - 1))
        pages[pno] = bytes(b)
    return pages


def test_real_pages_decode(real: Real) -> None:
    """The copied pages are enough for the decoders: the fuzzing starts from real objects."""
    prog = program(FakeBackend(real.pages, real.regs))
    h = Heap(prog)
    s = Strings(h)
    f = Functions(h, s)
    names = {f.debug_name(f.shared(fn)) for fn in real.functions}
    assert {"die", "leaf", "arrow"} <= names, names
    texts = [guarded(s.read, a) for a in real.strings]
    assert "hello" in [t.text for t in texts if t is not None]
    frames = StackDecoder(prog).decode(real.regs)
    assert any(fr.function == "die" for fr in frames), [fr.function for fr in frames]


@settings(max_examples=1000 * SCALE, **SETTINGS)
@given(muts=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 15), st.integers(0, 5)),
                     min_size=1, max_size=24),
       picks=st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=4),
       data=st.data())
def test_mutated_objects(real: Real, muts: list[tuple[int, int, int]], picks: list[int],
                         data) -> None:
    pages = mutated(real, muts, data)
    # Decode the mutated objects themselves and a few others.
    addrs = [real.objects[m[0] % len(real.objects)] for m in muts[:4]]
    addrs += [real.objects[p % len(real.objects)] for p in picks]
    prog = program(FakeBackend(pages, real.regs))
    exercise(prog, addrs, real.regs if data.draw(st.booleans()) else None)


@settings(max_examples=400 * SCALE, **SETTINGS)
@given(stack_muts=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 2 ** 64 - 1)),
                           min_size=1, max_size=32))
def test_mutated_stack(real: Real, stack_muts: list[tuple[int, int]]) -> None:
    """The real stack with words overwritten: frame pointers, markers, function slots."""
    pages = dict(real.pages)
    lo, hi = real.stack
    nwords = (hi - lo) // 8
    for w, value in stack_muts:
        addr = lo + 8 * (w % nwords)
        pno = addr // PAGE
        if pno in pages:
            b = bytearray(pages[pno])
            # Half the time a plausible value: a real object or a nearby stack address.
            if value & 1:
                value = real.objects[value % len(real.objects)]
            elif value & 2:
                value = lo + 8 * (value % nwords)
            struct.pack_into("<Q", b, addr % PAGE, value)
            pages[pno] = bytes(b)
    prog = program(FakeBackend(pages, real.regs))
    exercise(prog, [], real.regs)


class OverlayBackend(FakeBackend):
    """A real core with some of its pages replaced: the whole heap, damaged in places."""

    def __init__(self, base: Any, overlay: dict[int, bytes]) -> None:
        super().__init__(overlay)
        self.base = base

    def read(self, addr: int, size: int) -> bytes:
        first, last = addr // PAGE, (addr + size - 1) // PAGE if size else addr // PAGE
        if not any(p in self.pages for p in range(first, min(last, first + 20000) + 1)):
            return self.base.read(addr, size)
        if size > 64 << 20:
            raise TargetMemoryError(addr, size)
        out = bytearray()
        for pno in range(first, last + 1):
            blob = self.pages.get(pno)
            if blob is None:
                blob = self.base.read(pno * PAGE, PAGE)
            out += blob
        off = addr - first * PAGE
        return bytes(out[off:off + size])

    def regions(self) -> list[tuple[int, int]]:
        return self.base.regions()


@pytest.fixture(scope="module")
def heap_core() -> tuple[Any, list[tuple[int, int]]]:
    """The real core, and the [start, end) object areas of its V8 pages."""
    from v8dbg.heap import census
    from v8dbg.inferior.corefile import CoreBackend
    d = make_core(VERSION, "stack.js", ("--allow-natives-syntax",), {"V8DBG_TIER": "interpreted"})
    cb = CoreBackend(str(d / "core"), str(node_binary(VERSION)))
    prog = program(OverlayBackend(cb, {}))
    c = census.scan(prog)
    assert c.total_objects > 10000 and c.pages
    return cb, [(p.address, p.end) for p in c.pages]


MUTS = st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 10 ** 9), st.integers(0, 3),
                          st.integers(0, 2 ** 64 - 1)), min_size=1, max_size=400)


def damaged_heap(cb: Any, pages: list[tuple[int, int]],
                 muts: list[tuple[int, int, int, int]]) -> OverlayBackend:
    overlay: dict[int, bytes] = {}
    for page_i, where, kind, value in muts:
        start, end = pages[page_i % len(pages)]
        # A quarter of the damage in the page header, the rest among the objects.
        addr = start + 8 * (where % 64) if kind == 0 else start + 8 * (where % ((end - start) // 8))
        pno = addr // PAGE
        blob = bytearray(overlay.get(pno) or cb.read(pno * PAGE, PAGE))
        old = struct.unpack_from("<Q", blob, addr % PAGE)[0]
        new = {0: value, 1: value, 2: old ^ (1 << (value % 64)),
               3: (value % (1 << 31)) << 32}[kind]
        struct.pack_into("<Q", blob, addr % PAGE, new)
        overlay[pno] = bytes(blob)
    return OverlayBackend(cb, overlay)


@settings(max_examples=30 * SCALE, **SETTINGS)
@given(muts=MUTS)
def test_census_on_damaged_heap(heap_core: tuple[Any, list[tuple[int, int]]],
                                muts: list[tuple[int, int, int, int]]) -> None:
    """The census over a whole real heap whose words (page headers included) are damaged."""
    from v8dbg.heap import census
    cb, pages = heap_core
    prog = program(damaged_heap(cb, pages, muts))
    guarded_slow(census.scan, prog)


@settings(max_examples=10 * SCALE, **SETTINGS)
@given(muts=MUTS)
def test_commands_on_damaged_heap(heap_core: tuple[Any, list[tuple[int, int]]],
                                  muts: list[tuple[int, int, int, int]]) -> None:
    """Every command, as the front ends run it, on the damaged heap: no internal error."""
    from test_corrupt import commands, targets
    from v8dbg.commands import Session, load_all
    load_all()
    cb, pages = heap_core
    backend = damaged_heap(cb, pages, muts)
    backend.threads = cb.threads  # type: ignore[method-assign]
    backend.selected_thread = cb.selected_thread  # type: ignore[method-assign]
    backend.mappings = cb.mappings  # type: ignore[method-assign]
    sess = Session(lambda: backend, str(node_binary(VERSION)))
    sess._prog = program(backend)  # reuse the loaded metadata
    sess._key = (id(backend), None)
    for cmd in commands(targets(VERSION)):
        name, _, rest = cmd.partition(" ")
        t0 = time.monotonic()
        text, ok = sess.run(name, rest)
        assert time.monotonic() - t0 < 15, cmd
        assert "internal error" not in text and "Traceback" not in text, f"{cmd}: {text}"
        assert ok or text.startswith(("v8dbg: ", '{"error"')), f"{cmd}: {text}"
        if cmd == "jsstack":  # the damage is in the heap, the stack is intact
            assert ok and text.startswith("thread "), text


def guarded_slow(fn: Callable[..., Any], *args: Any) -> Any:
    """guarded() with the bound of a whole-heap scan."""
    return guarded(fn, *args, bound=15.0)


def test_census_on_fake_memory(real: Real) -> None:
    """The heap census on memory that is only scraps of a heap, or random bytes."""
    try:
        from v8dbg.heap import census
    except ImportError:
        pytest.skip("no census module")
    for pages in (real.pages, random_pages(7, 16, 0.5),
                  {p: bytes(reversed(b)) for p, b in real.pages.items()}):
        prog = program(FakeBackend(pages, real.regs))
        guarded(census.scan, prog)


# -- hand-made damage: string cycles -----------------------------------------

SYNTH = 0x200000000000


@pytest.mark.parametrize("tname", ["CONS_ONE_BYTE_STRING_TYPE", "CONS_TWO_BYTE_STRING_TYPE",
                                   "SLICED_ONE_BYTE_STRING_TYPE", "THIN_TWO_BYTE_STRING_TYPE"])
@pytest.mark.parametrize("length", [1, 1000, 0x3FFFFFFF])
def test_string_cycles(tname: str, length: int) -> None:
    """A cons/sliced/thin string that leads back to itself (directly and through a
    second string): a DecodeError, quickly, whatever the length claims."""
    prog = program(FakeBackend({}))
    h = Heap(prog)
    s = Strings(h)
    itype = prog.md.types.get(tname)
    assert itype is not None, tname
    buf = bytearray(PAGE)
    mp, a, b = SYNTH + 0x101, SYNTH + 0x201, SYNTH + 0x301
    struct.pack_into("<H", buf, mp - 1 - SYNTH + h.o_itype, itype)
    for obj, other in ((a, b), (b, a)):
        struct.pack_into("<Q", buf, obj - 1 - SYNTH, mp)
        struct.pack_into("<I", buf, obj - 1 - SYNTH + s.o_len, length)
        for off in {s.o_first, s.o_parent, s.o_actual}:
            struct.pack_into("<Q", buf, obj - 1 - SYNTH + off, obj if obj == a else other)
        struct.pack_into("<Q", buf, obj - 1 - SYNTH + s.o_second, other)
        struct.pack_into("<Q", buf, obj - 1 - SYNTH + s.o_offset, 0)
    prog = program(FakeBackend({SYNTH // PAGE: bytes(buf)}))
    s = Strings(Heap(prog))
    for obj in (a, b):
        t0 = time.process_time()
        with pytest.raises(V8DbgError):
            s.read(obj, 1 << 20)
        assert time.process_time() - t0 < 0.5
