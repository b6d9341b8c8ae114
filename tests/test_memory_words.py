"""The memory interface's fixed-size reads, and NumPy's loading.

`Memory.u64` and its kin unpack in place from a cached page; they must give
what decoding `Memory.read`'s bytes gives, and fail where it fails.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from v8dbg.errors import TargetMemoryError
from v8dbg.inferior.backend import PAGE, Memory

ROOT = Path(__file__).resolve().parent.parent


class _Pages:
    """A backend of three readable pages (0x10000 ..) with a hole in the
    middle page's place, each byte its address's low byte."""

    kind = "core"
    live = False

    def read(self, address: int, size: int) -> bytes:
        if not all(0x10000 <= a < 0x13000 and not 0x11000 <= a < 0x12000
                   for a in (address, address + size - 1)):
            raise TargetMemoryError(address, size)
        return bytes((address + i) & 0xFF for i in range(size))


_FORMATS = {"u64": "<Q", "i64": "<q", "u32": "<I", "i32": "<i", "u16": "<H", "i16": "<h",
            "u8": "<B"}


def _by_read(mem: Memory, name: str, address: int):
    fmt = _FORMATS[name]
    try:
        return struct.unpack(fmt, mem.read(address, struct.calcsize(fmt)))[0]
    except TargetMemoryError as e:
        return ("error", e.args)


def _by_word(mem: Memory, name: str, address: int):
    try:
        return getattr(mem, name)(address)
    except TargetMemoryError as e:
        return ("error", e.args)


@pytest.mark.parametrize("name", sorted(_FORMATS))
def test_words_as_read_gives_them(name: str) -> None:
    """Every width at every place of a page, at its edges (a value across
    two pages, one of them unreadable), and outside what can be read
    (negative, past 2**64): the same value or the same error as `read`."""
    addrs = [0x10000 + k for k in range(0, PAGE + 16)] + \
        [0x11000 - k for k in range(1, 9)] + [0x12000 - k for k in range(0, 9)] + \
        [0x13000 - k for k in range(0, 9)] + [-8, -1, 0, 1 << 64, (1 << 64) - 4, 0x0FFF_FFFC]
    mem_a, mem_b = Memory(_Pages()), Memory(_Pages())
    for a in addrs:
        assert _by_word(mem_a, name, a) == _by_read(mem_b, name, a), hex(a)
    # And from a cache already holding the pages.
    for a in addrs:
        assert _by_word(mem_a, name, a) == _by_read(mem_b, name, a), hex(a)


def test_numpy_loads_without_openblas_threads() -> None:
    """NumPy loaded through numpylib starts no OpenBLAS worker thread (plain
    `import numpy` starts one per further core) and leaves the environment
    as it was; a user's own setting is kept."""
    probe = ("import os, sys; sys.path.insert(0, %r); %s; "
             "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}

    def threads(load: str, extra: dict | None = None) -> tuple[int, str]:
        out = subprocess.run([sys.executable, "-c", probe % (str(ROOT), load)],
                             env={**env, **(extra or {})}, capture_output=True, text=True,
                             check=True).stdout.split()
        return int(out[0]), out[1]

    ours, left = threads("from v8dbg import numpylib; numpylib.load()")
    assert (ours, left) == (1, "None")
    plain, _ = threads("import numpy")
    if (os.cpu_count() or 1) > 1:
        assert plain > 1, "plain NumPy started no OpenBLAS thread here: nothing to compare"
    # The user's own number is theirs.
    assert threads("from v8dbg import numpylib; numpylib.load()",
                   {"OPENBLAS_NUM_THREADS": "2"}) == (2, "2") or (os.cpu_count() or 1) < 2
