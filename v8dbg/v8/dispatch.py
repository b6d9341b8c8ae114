"""A JSFunction's code from V8 13.6 on: through the JS dispatch table.

From 13.6 (node 24) a JSFunction keeps no pointer to its Code but a 32-bit
handle: the index of an entry of a process-wide table, shifted left by
`JSDispatchHandleShift`. Each entry is 16 bytes: the entrypoint, then the
Code's address shifted left by 16 over a marking bit and the 16-bit
parameter count. The table's base is nowhere the metadata or the Isolate
says (a process-wide object's member), and its first segment is often not
in the core; so it is found from the entries themselves: each word pair of
the target's memory whose second word names a Code object votes for the
base that would put a sample function's entry there, and the base is kept
only if the entries it gives carry each sample function's own parameter
count (its SharedFunctionInfo's) -- nearly all of them, checked per core.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError, TargetMemoryError
from .pages import bulk, regions

if TYPE_CHECKING:
    from ..program import Program

# A table region looked at for entries: at most the table's reservation.
MAX_TABLE_BYTES = 1 << 28
# Sample functions whose parameter counts check a base; of them this share
# at least must agree.
SAMPLES = 200
AGREE = 0.9
# The table's base is page-aligned (not to its 64 KB segments: 16 KB only
# in a node 26 core).
BASE_ALIGN = 1 << 12


@dataclass
class DispatchTable:
    """Where the table is (base, handle shift) and how its entries read."""

    base: int
    shift: int
    code_shift: int

    def code(self, prog: Program, handle: int) -> int:
        """The tagged address of the Code the entry of handle holds; 0 if none."""
        if not handle:
            return 0
        try:
            enc = prog.mem.u64(self.base + (handle >> self.shift) * 16 + 8)
        except TargetMemoryError:
            return 0
        a = enc >> self.code_shift & ~1
        return a | 1 if a else 0

    def codes(self, np, prog: Program, handles) -> Any:
        """`code` of many handles at once (0 where none)."""
        out = np.zeros(len(handles), dtype=np.uint64)
        for k, hd in enumerate(handles.tolist()):
            out[k] = self.code(prog, int(hd))
        return out


def applies(prog: Program) -> bool:
    return ("JSFunction", "dispatch_handle") in prog.md.fields


def find(np, prog: Program, functions: list[int], code_objects) -> DispatchTable | None:
    """The table of this process, from sample JSFunctions (tagged addresses)
    and the tagged addresses of every Code object (sorted); None when no
    base is checked out (then functions keep no `code` edge)."""
    md = prog.md
    st = prog.heap_state
    got = st.dispatch
    if got is not False:
        return got
    st.dispatch = None
    at = md.fields[("JSFunction", "dispatch_handle")]
    pc_at = md.fields.get(("SharedFunctionInfo", "internal_formal_parameter_count"))
    shift = md.consts.get("JSDispatchHandleShift", 8)
    code_shift = md.consts.get("JSDispatchCodeShift", 16)
    samples: list[tuple[int, int]] = []  # (index, parameter count)
    step = max(1, len(functions) // SAMPLES)
    for f in functions[::step][:SAMPLES]:
        try:
            hd = prog.mem.u32(f - 1 + at)
            sfi = prog.mem.u64(f - 1 + md.off("JSFunction", "shared"))
            pc = prog.mem.u16(sfi - 1 + pc_at) if isinstance(pc_at, int) else -1
        except (DecodeError, TargetMemoryError):
            continue
        if hd:
            samples.append((hd >> shift, pc))
    if len(samples) < 8 or not len(code_objects):
        return None
    codes = np.sort(np.asarray(code_objects, dtype=np.uint64) - np.uint64(1))
    votes: Counter = Counter()
    probe = sorted({i for i, _ in samples})[:4]
    src = bulk(prog)
    # Not in V8's heap pages nor the binary: the table is a mapping of its
    # own. The highest first (it sits with V8's other reservations).
    heap_pages = {p.address for ps in (st.heaps or {}).values() for p in ps}
    align = md.consts.get("PageAlignment", 1 << 18)
    for lo, hi in sorted(regions(prog), reverse=True):
        if hi - lo > MAX_TABLE_BYTES or hi - lo < 16 or \
                (lo + align - 1) // align * align in heap_pages:
            continue
        try:
            data = src.read(lo, hi - lo)
        except Exception:
            continue
        W = np.frombuffer(data, dtype="<u8", count=(hi - lo) // 16 * 2).reshape(-1, 2)
        a = (W[:, 1] >> np.uint64(code_shift)) & ~np.uint64(1)
        # Most words are not in the Code objects' range at all: only the
        # others are looked up.
        near = np.flatnonzero((a >= codes[0]) & (a <= codes[-1]))
        at = np.minimum(np.searchsorted(codes, a[near]), len(codes) - 1)
        hit = near[codes[at] == a[near]]
        if not len(hit):
            continue
        for e in [lo + 16 * k for k in hit.tolist()]:
            for i in probe:
                b = e - 16 * i
                if b % BASE_ALIGN == 0:
                    votes[b] += 1
        for base, _ in votes.most_common(4):
            if _agree(prog, base, samples):
                st.dispatch = DispatchTable(base, shift, code_shift)
                return st.dispatch
    return None


def _agree(prog: Program, base: int, samples: list[tuple[int, int]]) -> bool:
    """Whether the entries a base gives hold the sample functions' own
    parameter counts (nearly all)."""
    ok = 0
    for i, pc in samples:
        try:
            enc = prog.mem.u64(base + 16 * i + 8)
        except TargetMemoryError:
            continue
        ok += (enc & 0xFFFF) == pc
    return ok >= AGREE * len(samples)
