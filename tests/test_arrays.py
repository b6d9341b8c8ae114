"""The heap layer's sorted sets (v8dbg/heap/arrays.py) against NumPy's own
np.unique and np.union1d, on the kinds of arrays the heap
passes make: node numbers (32 bits), addresses and maps (64 bits), empty
and one-element arrays, many repeats and none."""

from __future__ import annotations

import numpy as np
import pytest

from v8dbg.heap.arrays import union, unique

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
