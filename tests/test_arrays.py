"""The heap layer's sorted sets (v8dbg/heap/arrays.py) against NumPy's own
np.unique and np.union1d, on the kinds of arrays the heap
passes make: node numbers (32 bits), addresses and maps (64 bits), empty
and one-element arrays, many repeats and none. Parallel columns spliced
at the same places against np.insert of each."""

from __future__ import annotations

import numpy as np
import pytest

from v8dbg.heap.arrays import spliced, union, unique

rng = np.random.default_rng(29)
CASES = [np.zeros(0, np.uint32), np.array([7], np.uint64),
         rng.integers(0, 50, 1000).astype(np.uint32),
         rng.integers(0, 2**40, 5000).astype(np.uint64) * np.uint64(8) + np.uint64(1),
         np.arange(10000, dtype=np.int64)[::-1].copy(),
         rng.integers(-5, 5, (30, 3))]


@pytest.mark.parametrize("a", CASES, ids=range(len(CASES)))
def test_sets_as_numpy(a) -> None:
    got = unique(np, a)
    assert got.dtype == np.unique(a).dtype and np.array_equal(got, np.unique(a))
    for b in CASES:
        if b.dtype.kind != a.dtype.kind:
            continue
        assert np.array_equal(union(np, a, b), np.union1d(a, b))


@pytest.mark.parametrize("n,m", [(0, 0), (0, 4), (6, 0), (1, 1), (50, 20), (1000, 1000)])
@pytest.mark.parametrize("places", ["sorted", "unsorted"])
def test_spliced_as_insert(n: int, m: int, places: str) -> None:
    """The same columns np.insert gives, of each column's own dtype: new
    items at the start, the end, several at one place, a scalar value."""
    r = np.random.default_rng(n * 7 + m)
    cols = [r.integers(0, 2**31, n).astype(np.uint32), r.integers(0, 7, n).astype(np.uint8),
            r.integers(0, 2**40, n).astype(np.int64)]
    at = r.integers(0, n + 1, m)
    if m > 2:
        at[:2] = [0, n]
        at[2] = at[1]
    if places == "sorted":
        at = np.sort(at)
    vals = [r.integers(0, 2**31, m).astype(np.uint32), np.uint8(4),
            r.integers(0, 2**40, m).astype(np.int64)]
    got = spliced(np, cols, at, vals)
    for g, c, v in zip(got, cols, vals):
        want = np.insert(c, at, v)
        assert g.dtype == c.dtype and np.array_equal(g, want)
