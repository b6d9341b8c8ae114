"""Walking one V8 heap page object by object, the size of each from its map.

One algorithm, whatever the front end: the pure-Python steps and, when NumPy
is importable, the same steps computed in bulk (`NumpyPages`), which must
give the same objects. Only live objects are counted: free space and filler
objects are stepped over, and a page the walk cannot finish is reported.

One idea, so one module despite its length: the classifier of maps, the
walk and its NumPy form must agree object for object, and sit together.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..v8 import layouts
from ..v8.pages import Page, _Layout, bulk
from ..v8.tagged import Heap
from .arrays import unique, union

if TYPE_CHECKING:
    from ..program import Program

MAX_RESYNC_WORDS = 1 << 18
OS_PAGE = 4096  # what V8 discards free memory by


HASH_SIZE = 1 << 20
# Buffers up to this size are kept from page to page by the NumPy walk (a
# regular page is 256 KB); a large object's page gets its own, freed after it.
REUSE_BYTES = 1 << 20


# Object kinds, for the walk's size computation.
K_FIXED, K_ARRAY, K_SEQ1, K_SEQ2, K_BYTES, K_FREE, K_UNKNOWN, K_BIGINT, K_PROPARRAY, \
    K_DESCRIPTORS, K_WEAKLIST, K_BYTECODE, K_BAD, K_NCTX, K_CODE = range(15)


class _Classifier:
    """Per map: how to size its objects and whether to count them."""

    def __init__(self, h: Heap, reader=None) -> None:
        self.h = h
        md = h.md
        self.mem = h.mem
        # Maps are read the way pages are (`bulk`): a debugger's core file
        # directly, far faster than its memory API for many small reads.
        self.read = reader or (lambda a, n: h.mem.read(a, n))
        t = md.types
        self.metas: dict[int, bool] = {}
        self.map_type = t.get("MAP_TYPE")
        self.free = t.get("FREE_SPACE_TYPE")
        self.free_shift = 0 if md.consts.get("FreeSpaceSizeInWords") else 3
        self.filler = t.get("FILLER_TYPE")
        self.receiver_first = t.get("JS_PROXY_TYPE", 1024)
        fa_first = t.get("FIXED_ARRAY_TYPE")
        fa_last = t.get("BYTE_ARRAY_TYPE")
        arrays = set()
        if fa_first is not None and fa_last is not None and fa_last > fa_first:
            # V8 numbers FixedArray and its subclasses (hash tables, ...) in one run.
            arrays.update(range(fa_first, fa_last))
        for name, v in t.items():
            if (name.endswith("HASH_TABLE_TYPE") or name.endswith("DICTIONARY_TYPE")
                    or name.startswith("ORDERED_") or name.endswith("FIXED_ARRAY_TYPE")
                    or name in ("FIXED_DOUBLE_ARRAY_TYPE", "EMBEDDER_DATA_ARRAY_TYPE",
                                "CLOSURE_FEEDBACK_CELL_ARRAY_TYPE", "TRANSITION_ARRAY_TYPE")) \
                    and not name.startswith(("SWISS", "SMALL_ORDERED")):
                arrays.add(v)
        for k in ("SCRIPT_CONTEXT_TABLE_TYPE", "OBJECT_BOILERPLATE_DESCRIPTION_TYPE",
                  "SLOPPY_ARGUMENTS_ELEMENTS_TYPE", "REG_EXP_MATCH_INFO_TYPE",
                  "ARRAY_LIST_TYPE", "BYTE_ARRAY_TYPE", "BYTECODE_ARRAY_TYPE"):
            arrays.discard(t.get(k, -1))
        lo, hi = md.consts.get("FirstContextType"), md.consts.get("LastContextType")
        if lo is not None and hi is not None:
            arrays.update(range(lo, hi + 1))
        self.arrays = arrays
        self.bytes_types = {t[k] for k in ("BYTE_ARRAY_TYPE", "TRUSTED_BYTE_ARRAY_TYPE") if k in t}
        self.bigint = t.get("BIG_INT_BASE_TYPE", 129)
        self.proparray = t.get("PROPERTY_ARRAY_TYPE")
        self.descriptors = {t[k] for k in ("DESCRIPTOR_ARRAY_TYPE", "STRONG_DESCRIPTOR_ARRAY_TYPE")
                            if k in t}
        self.desc_header = md.fields.get(("DescriptorArray", "header_size"), 24)
        self.weaklist = t.get("WEAK_ARRAY_LIST_TYPE")
        self.bytecode = t.get("BYTECODE_ARRAY_TYPE")
        self.native_context = t.get("NATIVE_CONTEXT_TYPE")
        self.nctx_extra = md.consts.get("NativeContextExtraWords", 0)
        self.bytecode_header = md.fields.get(("BytecodeArray", "data"), 56)
        self._code_rule(md)
        self.nonstring = md.const("FirstNonstringType")
        self.o_isw = md.fields.get(("Map", "instance_size_in_words"),
                                   md.fields.get(("Map", "instance_size"), 8))
        self.o_type = md.off("Map", "instance_type")
        self.fixed_words = {t[k]: n for k, n in layouts.fixed_object_words(md.v8_version).items()
                            if k in t}

    def _code_rule(self, md) -> None:
        """How machine code objects are sized, where this V8's layout says:
        the InstructionStream's own body size (V8 12+), its Code's
        instruction and metadata sizes (V8 11), or the Code's own (V8 10).
        Without a rule they run to the next map word, which past the last
        one on a page is the page's never-used rest."""
        t, f = md.types, md.fields
        self.code_type = t.get("INSTRUCTION_STREAM_TYPE", t.get("CODE_TYPE"))
        self.code_align = md.consts.get("CodeAlignment", 0)
        self.code_rule: tuple[int, int, int, int] | None = None  # (header, at, size, meta)
        if self.code_type is None or not self.code_align:
            return
        if "INSTRUCTION_STREAM_TYPE" in t:
            header = f.get(("InstructionStream", "instruction_start"))
            if header is None:
                return
            if ("InstructionStream", "body_size") in f:
                self.code_rule = (header, 0, f[("InstructionStream", "body_size")], -1)
            elif ("Code", "metadata_size") in f and ("Code", "instruction_size") in f:
                self.code_rule = (header, 1, f[("Code", "instruction_size")],
                                  f[("Code", "metadata_size")])
        elif md.consts.get("CodeInstructionsInline") and ("Code", "metadata_size") in f:
            self.code_rule = (f[("Code", "instruction_start")], 0, f[("Code", "instruction_size")],
                              f[("Code", "metadata_size")])

    def code_size(self, words, i: int) -> int:
        """Words of the machine code object at word i by V8's rule (its header
        and body, rounded up to the code alignment); 0 when unknown."""
        header, via, at, meta = self.code_rule  # type: ignore[misc]
        try:
            if via:  # the sizes sit in the InstructionStream's Code
                raw = self.read(int(words[i + 1]) - 1 + at, 4 + meta - at)
                body = sum(struct.unpack_from("<I", raw, k)[0] for k in (0, meta - at))
            else:
                body = sum(int(words[i + o // 8]) >> (8 * (o % 8)) & 0xFFFFFFFF
                           for o in ((at, meta) if meta >= 0 else (at,)))
        except Exception:  # past the page, or a Code not (yet) there
            return 0
        a = self.code_align
        return (header + body + a - 1) // a * a >> 3

    def is_meta(self, mm: int) -> bool:
        """A meta map is its own map (V8 12+ has one per native context too)."""
        r = self.metas.get(mm)
        if r is None:
            try:
                r = mm & 3 == 1 and mm > 0x10000 and \
                    struct.unpack("<Q", self.read(mm - 1, 8))[0] == mm
            except Exception:
                r = False
            if len(self.metas) < 10000:
                self.metas[mm] = r
        return r

    def classify(self, m: int) -> tuple[int, int, int, bool]:
        """(kind, fixed size in words, instance type, record address?)."""
        if m & 3 != 1 or m < 0x10000:
            return (K_BAD, 0, -1, False)
        try:
            raw = self.read(m - 1, 16)
            if len(raw) != 16:
                return (K_BAD, 0, -1, False)
        except Exception:
            return (K_BAD, 0, -1, False)
        mm = struct.unpack_from("<Q", raw, 0)[0]
        if not self.is_meta(mm):
            return (K_BAD, 0, -1, False)
        isw = raw[self.o_isw]
        itype = struct.unpack_from("<H", raw, self.o_type)[0]
        if itype == self.free:
            return (K_FREE, 0, itype, False)
        if not isw and itype in self.fixed_words:
            return (K_FIXED, self.fixed_words[itype], itype, False)
        if itype < self.nonstring:
            if itype & 7 == 0:  # sequential
                return (K_SEQ1 if itype & 8 else K_SEQ2, 0, itype, False)
            return (K_FIXED, isw, itype, False) if isw else (K_UNKNOWN, 0, itype, False)
        if isw:
            # Addresses are kept of JS objects.
            return (K_FIXED, isw, itype, itype >= self.receiver_first)
        if itype == self.native_context:
            return (K_NCTX, 0, itype, False)
        if itype in self.arrays:
            return (K_ARRAY, 0, itype, False)
        if itype in self.bytes_types:
            return (K_BYTES, 0, itype, False)
        if itype == self.bigint:
            return (K_BIGINT, 0, itype, False)
        if itype == self.proparray:
            return (K_PROPARRAY, 0, itype, False)
        if itype in self.descriptors:
            return (K_DESCRIPTORS, 0, itype, False)
        if itype == self.weaklist:
            return (K_WEAKLIST, 0, itype, False)
        if itype == self.bytecode:
            return (K_BYTECODE, 0, itype, False)
        if itype == self.code_type and self.code_rule is not None:
            return (K_CODE, 0, itype, False)
        return (K_UNKNOWN, 0, itype, False)


def _var_size(kind: int, words, i: int, cls: _Classifier) -> int:
    """Size in words of a variable-size object at word i (0 if unknown)."""
    w1 = int(words[i + 1])
    if kind == K_ARRAY:
        return 2 + (w1 >> 32)
    if kind == K_SEQ1:
        return 2 + ((w1 >> 32) + 7 >> 3)
    if kind == K_SEQ2:
        return 2 + ((w1 >> 32) * 2 + 7 >> 3)
    if kind == K_FREE:
        return (w1 >> 32) >> cls.free_shift
    if kind == K_BYTES:
        return 2 + ((w1 >> 32) + 7 >> 3)
    if kind == K_BIGINT:
        return 2 + ((w1 & 0xFFFFFFFF) >> 1 & 0x3FFFFFFF)
    if kind == K_PROPARRAY:
        return 2 + ((w1 >> 32) & 0x3FF)
    if kind == K_DESCRIPTORS:
        return (cls.desc_header >> 3) + 3 * (w1 & 0xFFFF)
    if kind == K_WEAKLIST:
        return 3 + (w1 >> 32)
    if kind == K_BYTECODE:
        return (cls.bytecode_header + (w1 >> 32) + 7) >> 3
    if kind == K_NCTX:
        return 2 + (w1 >> 32) + cls.nctx_extra
    if kind == K_CODE:
        return cls.code_size(words, i)
    return 0


@dataclass
class PageWalk:
    """What the walk of one page found."""

    count: int = 0  # live objects (free space and fillers not counted)
    records: dict = field(default_factory=dict)  # JS-object map -> addresses (array or NumPy)
    unknown: int = 0  # objects sized by resynchronising (a kind with no size rule)
    damaged: bool = False  # the walk met a word that is no map, or ran past the page
    skipped: int = 0  # bytes the walk stepped over without finding objects in them
    damaged_at: int = 0  # the address where it first met damage


class Walker:
    """The page walk; keeps the per-map classification between pages and commands."""

    def __init__(self, prog: Program, h: Heap) -> None:
        self.prog = prog
        self.h = h
        self.cls = _Classifier(h, bulk(prog).read)
        self.cache: dict[int, tuple[int, int, int, bool]] = {}
        self.codes: dict[int, int] = {}
        self.bad: dict[int, tuple[int, int, int, bool]] = {}

    def info(self, m: int) -> tuple[int, int, int, bool]:
        """The classification of a map word (words that are not maps kept apart)."""
        r = self.cache.get(m)
        if r is None:
            r = self.bad.get(m)
            if r is None:
                r = self.cls.classify(m)
                if r[0] == K_BAD:
                    if len(self.bad) > 500000:
                        self.bad.clear()
                    self.bad[m] = r
                else:
                    self.cache[m] = r
        return r

    def read_page(self, p: Page) -> memoryview | None:
        try:
            data = bulk(self.prog).read(p.start, p.end - p.start)
        except Exception:
            return None
        if len(data) != p.end - p.start:
            return None
        return memoryview(bytes(data) if not isinstance(data, (bytes, bytearray)) else data) \
            .cast("Q")

    def _resync(self, words, j: int, stop: int) -> int:
        """The first word at or after j (before stop) that is a map; stop if none."""
        info = self.info
        while j < stop:
            v = int(words[j])
            if v & 3 == 1 and info(v)[0] != K_BAD:
                return j
            j += 1
        return stop

    def size_at(self, words, i: int, n: int) -> int:
        """Words of the object at i by its map's size rule; 0 when no rule applies."""
        info = self.info(int(words[i]))
        kind = info[0]
        if kind == K_FIXED:
            return info[1]
        if kind in (K_BAD, K_UNKNOWN) or i + 1 >= n:
            return 0
        return _var_size(kind, words, i, self.cls)

    def step(self, words, i: int, n: int, res: PageWalk, rec: bool, base1: int,
             starts: list | None = None, records: dict | None = None) -> int:
        """The object at word i: count it into res; return where the next one starts."""
        m = int(words[i])
        info = self.cache.get(m) or self.info(m)
        kind = info[0]
        if kind == K_BAD:
            if m == 0:
                # Never-used memory: the rest of an allocation area no list
                # placed (a helper thread's, or code space's), zeros to the
                # page's end or up to the object allocated after it.
                j = i + 1
                while j < n and not int(words[j]):
                    j += 1
                if j == n:
                    return n
                v = int(words[j])
                if v & 3 == 1 and self.info(v)[0] != K_BAD:
                    return j
                if not (base1 - 1 + 8 * i) & (OS_PAGE - 1) and j - i >= OS_PAGE // 8:
                    # Whole OS pages of a free range V8's sweeper gave back
                    # (discarded: zeros in the core, the free block's header
                    # with them): its dead bytes run on to the next object.
                    return self._resync(words, j, min(n, j + MAX_RESYNC_WORDS))
            j = self._resync(words, i + 1, min(n, i + MAX_RESYNC_WORDS))
            if not res.damaged:
                res.damaged_at = base1 - 1 + 8 * i
            res.damaged = True
            res.skipped += 8 * (j - i)
            return j
        if kind == K_FIXED:
            size = info[1]
        elif kind == K_UNKNOWN:
            size = 0 if i + 1 < n else -1
        elif i + 1 < n:
            size = _var_size(kind, words, i, self.cls)
        else:
            size = -1
        if size == 0:
            # No size rule (or a size of 0): the object runs to the next map word.
            stop = min(n, i + MAX_RESYNC_WORDS)
            size = self._resync(words, i + 2, stop) - i if i + 2 < stop else stop - i
            if kind != K_FREE:
                res.unknown += 1
        if size < 0 or i + size > n:
            if not res.damaged:
                res.damaged_at = base1 - 1 + 8 * i
            res.damaged = True
            res.skipped += 8 * (n - i)
            return n
        if kind == K_FREE:
            return i + size
        res.count += 1
        if starts is not None:
            starts.append((base1 + 8 * i, m, size))
        elif rec and info[3]:
            recs = res.records if records is None else records
            a = recs.get(m)
            if a is None:
                a = recs[m] = array("Q")
            a.append(base1 + 8 * i)
        return i + size

    def walk(self, p: Page, words, rec: bool = True, starts: list | None = None,
             sink: dict | None = None) -> PageWalk:
        """Walk one page in plain Python: `step` for each object, the common kinds inline.

        Per map a small code says how `step` would size it: > 0 a fixed
        size in words, -1 a FixedArray, -2/-3 a sequential one-/two-byte
        string, -5 free space (not counted), <= -100 a JS object of fixed
        size -100 - code (its address is kept, into `sink` when given), -9
        any other (`step` itself). Where the
        inline sizing cannot decide (a length word past the page, the last
        object running past it) `step` decides.
        """
        res = PageWalk()
        n = len(words)
        base1 = p.start + 1
        skips = page_skips(p)
        tops = sorted(skips)
        k = 0
        nt = tops[0] if tops else n + 1
        i = 0
        records = res.records if sink is None else sink
        if starts is not None:
            while i < n:
                if i >= nt:
                    if i == nt:
                        i = skips[nt]
                    while k < len(tops) and tops[k] < i:
                        k += 1
                    nt = tops[k] if k < len(tops) else n + 1
                    continue
                i = self.step(words, i, n, res, rec, base1, starts)
            return res
        get = self.codes.get
        fs = self.cls.free_shift
        cnt = 0
        last = c = m = -1
        while True:
            try:
                while i < n:
                    if i >= nt:
                        if i == nt:
                            i = skips[nt]
                        while k < len(tops) and tops[k] < i:
                            k += 1
                        nt = tops[k] if k < len(tops) else n + 1
                        continue
                    m = words[i]
                    c = get(m)
                    if c is None:
                        c = self._learn(m)
                    last = i
                    if c > 0:
                        i += c
                        cnt += 1
                    elif c <= -100:
                        if rec:
                            a = records.get(m)
                            if a is None:
                                a = records[m] = array("Q")
                            a.append(base1 + (i << 3))
                        i -= 100 + c
                        cnt += 1
                    elif c == -1:
                        i += 2 + (words[i + 1] >> 32)
                        cnt += 1
                    elif c == -2:
                        i += 2 + (((words[i + 1] >> 32) + 7) >> 3)
                        cnt += 1
                    elif c == -3:
                        i += 2 + (((words[i + 1] >> 32) * 2 + 7) >> 3)
                        cnt += 1
                    elif c == -5 and (words[i + 1] >> 32) >> fs:
                        i += (words[i + 1] >> 32) >> fs  # free space: not counted
                    else:
                        c = -9
                        i = self.step(words, i, n, res, rec, base1, None, records)
                break
            except IndexError:  # a length word past the page
                c = -9
                i = self.step(words, i, n, res, rec, base1, None, records)
        if i > n:
            # The last object, sized inline, runs past the page: undo it; `step` decides.
            if c != -5:
                cnt -= 1
            if c <= -100 and rec:
                records[m].pop()
            self.step(words, last, n, res, rec, base1, None, records)
        res.count += cnt
        return res

    def _learn(self, m: int) -> int:
        kind, size, _itype, recd = self.info(m)
        if kind == K_FIXED:
            c = -100 - size if recd else size
        elif kind == K_ARRAY:
            c = -1
        elif kind == K_SEQ1:
            c = -2
        elif kind == K_SEQ2:
            c = -3
        elif kind == K_FREE:
            c = -5
        else:
            c = -9
        if kind != K_BAD:
            self.codes[m] = c
        return c

    def marked_walk(self, p: Page, words, rec: bool = True,
                    starts: list | None = None) -> PageWalk:
        """The walk of a page not yet swept: only the objects at its mark bits."""
        assert p.marks is not None
        res = PageWalk()
        n = len(words)
        step = max(1, _Layout(self.prog).mark_bits)  # mark bits per live object
        nxt = 0
        for i in p.marks:
            if i < nxt or i >= n:
                continue
            m = int(words[i])
            info = self.info(m)
            kind = info[0]
            size = self.size_at(words, i, n)
            nxt = i + (size if size > 0 else step)
            if kind == K_BAD or kind == K_FREE:
                continue
            if size <= 0:
                res.unknown += 1
            addr = p.start + 8 * i + 1
            res.count += 1
            if starts is not None:
                starts.append((addr, m, max(size, step)))
            elif rec and info[3]:
                a = res.records.get(m)
                if a is None:
                    a = res.records[m] = array("Q")
                a.append(addr)
        return res


def page_skips(p: Page) -> dict[int, int]:
    """Allocation-area gaps of a page, as word index of their top -> index of their limit."""
    return {(t - p.start) >> 3: (lim - p.start) >> 3 for t, lim in p.skips
            if p.start <= t <= p.end and lim > t}


VECTOR_KINDS = (K_FIXED, K_ARRAY, K_SEQ1, K_SEQ2, K_BYTES, K_FREE, K_BIGINT, K_PROPARRAY,
                K_DESCRIPTORS, K_WEAKLIST, K_BYTECODE, K_NCTX)


def python_steps(w: Walker, words, cand: list[int]) -> list[int]:
    """Size in words of the object at each candidate word, as `Walker.step` would
    size it without resynchronising: 0 where `step` must decide (no size rule,
    no length word, a size of 0, or an object running past the page)."""
    n = len(words)
    out = []
    for i in cand:
        s = w.size_at(words, i, n) if w.info(int(words[i]))[0] in VECTOR_KINDS else 0
        out.append(s if 0 < s and i + s <= n else 0)
    return out


def vector_steps(np, cls: _Classifier, W, cand, kind, fixed):
    """`python_steps` for all candidates at once (W the page's words, kind and
    fixed the classification of each candidate's map)."""
    n = len(W)
    S = fixed.astype(np.int64)
    # Only objects of no fixed size need their length word.
    nf = np.flatnonzero(kind != K_FIXED)
    w1 = W[np.minimum(cand[nf] + 1, n - 1)]
    hi = (w1 >> np.uint64(32)).astype(np.int64)
    lo = (w1 & np.uint64(0xFFFFFFFF)).astype(np.int64)
    kinds = kind[nf]
    present = set(np.flatnonzero(np.bincount(kinds, minlength=1)).tolist())
    for k, expr in ((K_ARRAY, lambda h, l: 2 + h),
                    (K_SEQ1, lambda h, l: 2 + ((h + 7) >> 3)),
                    (K_SEQ2, lambda h, l: 2 + ((2 * h + 7) >> 3)),
                    (K_FREE, lambda h, l: h >> cls.free_shift),
                    (K_BYTES, lambda h, l: 2 + ((h + 7) >> 3)),
                    (K_BIGINT, lambda h, l: 2 + ((l >> 1) & 0x3FFFFFFF)),
                    (K_PROPARRAY, lambda h, l: 2 + (h & 0x3FF)),
                    (K_DESCRIPTORS, lambda h, l: (cls.desc_header >> 3) + 3 * (l & 0xFFFF)),
                    (K_WEAKLIST, lambda h, l: 3 + h),
                    (K_BYTECODE, lambda h, l: (cls.bytecode_header + h + 7) >> 3),
                    (K_NCTX, lambda h, l: 2 + h + cls.nctx_extra)):
        if k in present:
            sel = kinds == k
            S[nf[sel]] = expr(hi[sel], lo[sel])
    if len(cand) and cand[-1] == n - 1 and kind[-1] != K_FIXED:
        S[-1] = 0  # its length word is past the page: `step` decides
    bad = (S <= 0) | (cand + S > n)
    if bad.any():
        S[bad] = 0
    return S


def _hash_shape(np, K) -> tuple[int, int]:
    """(table size, shift) for NumPy's map table: the smallest size from 64
    slots per map up (to HASH_SIZE) where some shift of the map words gives
    every map its own slot; HASH_SIZE and shift 3 when none does."""
    size = 4096
    while size < 64 * len(K) and size < HASH_SIZE:
        size <<= 1
    while True:
        for shift in range(3, 13):
            h = (K >> np.uint64(shift)) & np.uint64(size - 1)
            if len(unique(np, h)) == len(K):
                return size, shift
        if size >= HASH_SIZE:
            return HASH_SIZE, 3
        size = min(size << 2, HASH_SIZE)


class NumpyPages:
    """`Walker.walk` with NumPy: the steps from every known map word at once.

    Per page, every word that holds a known map is a candidate object start,
    and `vector_steps` sizes all of them; a short Python loop then follows
    the chain of steps from the area start (each object is mostly followed
    by the next candidate, so only the breaks cost a Python step). Where
    the chain cannot go on in bulk, `Walker.step` takes the one object.
    """

    def __init__(self, w: Walker, np) -> None:
        self.w = w
        self.np = np
        self._known = -1
        # Buffers reused from page to page: a fresh 256 KB array per step of
        # every page is a fresh mapping from the C library, faulted in page
        # by page (a tenth of the walk of a multi-GB heap).
        self._buf = bytearray()
        self._h = np.empty(0, dtype=np.int64)
        self._at = np.empty(0, dtype=np.int64)

    def read(self, p: Page):
        """The page's bytes, in a buffer the next page reuses (only what the
        walk keeps is copied out of it); None when they cannot be read."""
        size = p.end - p.start
        into = getattr(bulk(self.w.prog), "read_into", None)
        if into is None:
            words = self.w.read_page(p)
            return None if words is None else (
                words.obj if hasattr(words, "obj") else words.tobytes())
        if size > REUSE_BYTES:  # a large object's page: its own buffer, freed after it
            view = memoryview(bytearray(size))
        else:
            if len(self._buf) < size:
                self._buf = bytearray(size)
            view = memoryview(self._buf)[:size]
        if into(p.start, view):
            return view
        words = self.w.read_page(p)  # spread over segments, or a file's pages
        return None if words is None else (
            words.obj if hasattr(words, "obj") else words.tobytes())

    def _tables(self) -> None:
        np = self.np
        cache = self.w.cache
        if len(cache) == self._known:
            return
        items = sorted((m, info) for m, info in cache.items() if info[0] in VECTOR_KINDS)
        self.K = np.array([m for m, _ in items], dtype=np.uint64)
        self.KK = np.array([info[0] for _, info in items], dtype=np.int16)
        self.KS = np.array([info[1] for _, info in items], dtype=np.int64)
        self.KR = np.array([bool(info[3]) for _, info in items], dtype=bool)
        # A direct-mapped table from some middle bits of a word to its index in
        # K (+1): one gather per page instead of a binary search per word. The
        # table is kept small enough to stay in the CPU's cache (a 4 MB table
        # made the gather a third of the walk), with the bits chosen so that
        # no two maps share a slot where some choice allows it; a map that
        # still loses its slot is just not a candidate: `step` takes it.
        self.size, self.shift = _hash_shape(np, self.K)
        dtype = np.int16 if len(items) < 1 << 15 else np.int32
        table = np.zeros(self.size, dtype=dtype)
        h = ((self.K >> np.uint64(self.shift)) & np.uint64(self.size - 1)).astype(np.int64)
        table[h[::-1]] = np.arange(len(items), 0, -1, dtype=dtype)
        self.T = table
        self._known = len(cache)

    def candidates(self, W):
        """(word indices holding a known map of a vector kind, their index in K)."""
        np = self.np
        if len(W) * 8 > REUSE_BYTES:
            h = np.empty(len(W), dtype=np.int64)
        else:
            if len(self._h) < len(W):
                self._h = np.empty(len(W), dtype=np.int64)
            h = self._h[:len(W)]
        np.right_shift(W.view(np.int64), self.shift, out=h)
        h &= self.size - 1
        idx = self.T.take(h)
        # Most words hash to an empty slot: compare only the others with K
        # (nonzero of a bool array is some three times faster than of ints).
        hit = np.flatnonzero(idx != 0)
        ki = idx[hit] - 1
        same = self.K[ki] == W[hit]
        return hit[same], ki[same]

    def walk(self, p: Page, data, rec: bool = True, starts: list | None = None,
             chain: list | None = None) -> PageWalk:
        """The walk of one page; with `starts` (and `chain`), every object's
        (address, map, size in words) instead of the JS objects' addresses:
        those `step` takes appended to starts, the chain's as arrays (word
        index, size, map) to chain."""
        np = self.np
        self._tables()
        W = np.frombuffer(data, dtype="<u8")
        n = len(W)
        w = self.w
        if n < 2 or not len(self.K):
            return w.walk(p, memoryview(data).cast("Q"), rec, starts)
        res = PageWalk()
        K = self.K
        cand, ki = self.candidates(W)
        kind = self.KK[ki]
        S = vector_steps(np, w.cls, W, cand, kind, self.KS[ki])
        m = len(cand)
        nextpos = cand + S
        # Candidate index by word index (m where none): one gather, no search.
        if n * 8 > REUSE_BYTES:
            at = np.empty(n + 1, dtype=np.int64)
        else:
            if len(self._at) < n + 1:
                self._at = np.empty(n + 1, dtype=np.int64)
            at = self._at[:n + 1]
        at.fill(m)
        at[cand] = np.arange(m)
        ci = at[np.minimum(nextpos, n)]
        ci_c = np.minimum(ci, m - 1)
        ok = (ci < m) & (S > 0)
        skips = page_skips(p)
        if skips:
            # Never step onto an allocation-area top inside the chain.
            tops = np.array(sorted(skips), dtype=np.int64)
            ok &= ~np.isin(nextpos, tops)
        # Each object is mostly followed by the next candidate, so only the
        # "breaks" (a jump over map words inside an object's body, or a stop)
        # need a Python step each.
        nxt = np.where(ok, ci_c, m)
        breaks = np.flatnonzero(nxt != np.arange(1, m + 1)).tolist()
        nb = len(breaks)
        parts = []
        pos = 0
        base1 = p.start + 1
        while pos < n:
            if pos in skips:
                pos = skips[pos]
                continue
            c = int(np.searchsorted(cand, pos))
            if c < m and int(cand[c]) == pos and int(S[c]) > 0:
                while True:
                    k = bisect.bisect_left(breaks, c)
                    b = breaks[k] if k < nb else m - 1
                    sb = int(S[b])
                    if sb <= 0:  # b cannot be sized in bulk: `step` takes it
                        parts.append((c, b))
                        pos = int(cand[b])
                        break
                    parts.append((c, b + 1))
                    c2 = int(nxt[b])
                    pos = int(cand[b]) + sb
                    if c2 >= m:
                        break
                    c = c2
                if sb > 0:
                    continue
            pos = w.step(W, pos, n, res, rec, base1, starts)
        if parts:
            if len(parts) == 1:
                ch = np.arange(parts[0][0], parts[0][1])
            else:
                ch = np.concatenate([np.arange(x, y) for x, y in parts])
            counted = kind[ch] != K_FREE
            res.count += int(counted.sum())
            if chain is not None:
                cc = ch[counted]
                chain.append((cand[cc], S[cc], K[ki[cc]]))
            elif rec:
                self._record(res, p, cand, ki, ch[self.KR[ki[ch]] & counted])
        return res

    def _record(self, res: PageWalk, p: Page, cand, ki, rc) -> None:
        """Add the chain's JS objects to res.records, per map in address order."""
        np = self.np
        if not len(rc):
            return
        addrs = (cand[rc] * 8 + (p.start + 1)).astype(np.uint64)
        mids = ki[rc]
        order = np.argsort(mids, kind="stable")
        mids = mids[order]
        addrs = addrs[order]
        cuts = np.flatnonzero(np.diff(mids)) + 1
        starts = [0] + cuts.tolist()
        ends = cuts.tolist() + [len(mids)]
        recs = res.records
        for a, b in zip(starts, ends):
            mp = int(self.K[mids[a]])
            got = addrs[a:b]
            old = recs.get(mp)
            if old is not None:
                # Objects `step` recorded on this page interleave with the chain's.
                got = np.sort(np.concatenate([np.frombuffer(old, dtype=np.uint64), got]))
            recs[mp] = got




def _code_owners(w: Walker, pages: list[Page]) -> set[int]:
    """Spaces whose pages hold machine code (InstructionStream, or Code in V8 10)."""
    t = w.prog.md.types
    code_types = {t[k] for k in ("INSTRUCTION_STREAM_TYPE", "CODE_TYPE") if k in t}
    if "INSTRUCTION_STREAM_TYPE" in t:
        code_types = {t["INSTRUCTION_STREAM_TYPE"]}
    out: set[int] = set()
    for p in pages:
        if p.owner in out or not p.owner:
            continue
        try:
            head = bulk(w.prog).read(p.start, min(4096, p.end - p.start))
        except Exception:
            continue
        pos = 0
        for _ in range(8):  # the first few objects tell
            if pos + 16 > len(head):
                break
            m, w1 = struct.unpack_from("<QQ", head, pos)
            info = w.info(m)
            if info[0] == K_BAD:
                break
            if info[2] in code_types:
                out.add(p.owner)
                break
            if info[0] == K_FREE:
                pos += ((w1 >> 32) << (3 - w.cls.free_shift))
            elif info[0] == K_FIXED:
                pos += 8 * info[1]
            else:
                break
    return out


def _one_object(w: Walker, p: Page, rec: bool) -> PageWalk | None:
    """The walk of a large object's page (bigger than any regular page: it holds
    one object) from that object's first words, when its size rule says it
    fills the page; None otherwise (the page is then walked whole). A 200 MB
    array is not read, nor its words looked at one by one, to learn it is one."""
    n = (p.end - p.start) >> 3
    try:
        head = bytes(bulk(w.prog).read(p.start, 16))
    except Exception:
        return None
    words = memoryview(head).cast("Q")
    m = int(words[0])
    info = w.info(m)
    if info[0] in (K_BAD, K_UNKNOWN, K_FREE) or w.size_at(words, 0, n) != n:
        return None
    res = PageWalk(count=1)
    if rec and info[3]:
        res.records[m] = array("Q", [p.start + 1])
    return res


@dataclass
class PageObjects:
    """Every object one walk of a page counts, for the census and the heap
    graph at once: the walk's result (its records the census's, as
    `walk_page` gives them) and, ascending, each object's word index, size
    in words and map word, with the page's distinct maps (`maps` is
    `distinct[inverse]`). `data`: the page's bytes where the walk read them
    whole (a buffer the next page's read reuses), else None."""

    result: PageWalk
    data: Any
    starts: Any
    sizes: Any
    maps: Any
    distinct: Any
    inverse: Any


def _distinct(np, nw: NumpyPages | None, maps) -> tuple[Any, Any]:
    """np.unique(maps, return_inverse=True) without sorting the page's maps:
    those the bulk walk's table knows found through it, the others (few:
    maps of no size rule) sorted apart."""
    if nw is None or not len(maps):
        return np.unique(maps, return_inverse=True)
    nw._tables()
    K = nw.K
    if not len(K):
        return np.unique(maps, return_inverse=True)
    idx = nw.T.take(((maps >> np.uint64(nw.shift)) & np.uint64(nw.size - 1)).astype(np.intp))
    idx = idx.astype(np.intp) - 1
    hit = (idx >= 0) & (K[np.maximum(idx, 0)] == maps)
    present = np.zeros(len(K), dtype=bool)
    present[idx[hit]] = True
    distinct = K[present]
    if not hit.all():
        distinct = union(np, distinct, maps[~hit])
    return distinct, np.searchsorted(distinct, maps)


def page_objects(np, w: Walker, nw: NumpyPages | None, p: Page,
                 code_owners: set[int]) -> PageObjects:
    """`walk_page` keeping every object it steps over (np: NumPy; nw the bulk
    walk, None for the plain-Python one)."""
    rec = p.owner not in code_owners
    size = p.end - p.start
    steps: list = []
    chain: list = []
    data = None
    res = None
    if p.marks is None and size > REUSE_BYTES and _one_object(w, p, rec) is not None:
        m = struct.unpack("<Q", bytes(bulk(w.prog).read(p.start, 8)))[0]
        res = PageWalk(count=1)
        steps.append((p.start + 1, m, size >> 3))
    elif p.marks is None and nw is not None and rec:
        data = nw.read(p)
        if data is not None:
            res = nw.walk(p, data, False, steps, chain)
    else:
        words = w.read_page(p)
        if words is not None:
            data = words
            res = w.marked_walk(p, words, rec, steps) if p.marks is not None \
                else w.walk(p, words, rec, steps)
            if not rec:  # as `walk_page` says of machine code
                res.damaged = False
                res.skipped = 0
    if res is None:
        res = PageWalk(damaged=True, skipped=size)
    # The chain's objects ascend (one part per walk); those `step` took are
    # put in their places among them.
    starts = np.concatenate([c for c, _, _ in chain] or [np.zeros(0, dtype=np.int64)])
    sizes = np.concatenate([z for _, z, _ in chain] or [np.zeros(0, dtype=np.int64)])
    maps = np.concatenate([m for _, _, m in chain] or [np.zeros(0, dtype=np.uint64)])
    if steps:
        st = np.array([(a - 1 - p.start) >> 3 for a, _, _ in steps], dtype=np.int64)
        sz = np.array([z for _, _, z in steps], dtype=np.int64)
        sm = np.array([m for _, m, _ in steps], dtype=np.uint64)
        into = np.searchsorted(starts, st)
        starts, sizes, maps = np.insert(starts, into, st), np.insert(sizes, into, sz), \
            np.insert(maps, into, sm)
    starts, sizes = starts.astype(np.int64, copy=False), sizes.astype(np.int64, copy=False)
    maps = maps.astype(np.uint64, copy=False)
    distinct, inverse = _distinct(np, nw, maps)
    if rec and len(starts):
        keep = np.array([bool(w.info(m)[3]) for m in distinct.tolist()], dtype=bool)
        sel = keep[inverse]
        if sel.any():
            which = inverse[sel]
            addrs = starts[sel].astype(np.uint64) * np.uint64(8) + np.uint64(p.start + 1)
            # (16-bit keys: NumPy's stable sort is then a radix sort)
            order = np.argsort(which.astype(np.uint16) if len(distinct) <= 1 << 16 else which,
                               kind="stable")
            which, addrs = which[order], addrs[order]
            cuts = (np.flatnonzero(np.diff(which)) + 1).tolist()
            for x, y in zip([0] + cuts, cuts + [len(which)]):
                res.records[int(distinct[which[x]])] = addrs[x:y]
    return PageObjects(res, data, starts, sizes, maps, distinct, inverse)


def walk_page(w: Walker, nw: NumpyPages | None, p: Page, code_owners: set[int],
              sink: dict | None = None) -> PageWalk:
    """The walk of one page, by the one algorithm (NumPy only speeds it up).

    The plain-Python walk appends JS objects' addresses straight to `sink`
    (map -> array); the others return them in the result's records."""
    # Machine code holds map words (inline map checks); no JavaScript object
    # lives there, so nothing on those pages is recorded.
    rec = p.owner not in code_owners
    if p.marks is None and p.end - p.start > REUSE_BYTES:
        one = _one_object(w, p, rec)
        if one is not None:
            return one
    if p.marks is None and nw is not None and rec:
        data = nw.read(p)
        if data is None:
            return PageWalk(damaged=True, skipped=p.end - p.start)
        return nw.walk(p, data, rec)
    words = w.read_page(p)
    if words is None:
        return PageWalk(damaged=True, skipped=p.end - p.start)
    if p.marks is not None:
        r = w.marked_walk(p, words, rec)
    else:
        r = w.walk(p, words, rec, None, sink)
    if not rec:
        # Machine code has no size rule here: those pages are walked by
        # resynchronising, so a stray word there is no sign of damage.
        r.damaged = False
        r.skipped = 0
    return r
