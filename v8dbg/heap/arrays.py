"""Sorted sets of integers in NumPy arrays, made by sorting.

Recent NumPy (2.4 measured) makes `np.unique` (with no index, inverse or
counts asked for) and what is built on it (`union1d`) with a
hash table: some five times slower than a sort on a heap's node numbers,
and twenty on numbers mostly distinct. The heap's passes ask for such sets
hundreds of times; these sort instead, in every NumPy alike.
"""

from __future__ import annotations

from typing import Any


def unique(np, a) -> Any:
    """The distinct values of `a`, ascending (np.unique's result)."""
    s = np.sort(np.asarray(a).ravel())
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def union(np, a, b) -> Any:
    """The distinct values of a and b together, ascending (np.union1d)."""
    return unique(np, np.concatenate([np.asarray(a).ravel(), np.asarray(b).ravel()]))

