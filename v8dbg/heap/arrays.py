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



def spliced(np, cols: list, at, values: list) -> list:
    """np.insert(col, at, value) of each column, the same places in each
    (`at`: places from 0 to len(col), one per value; a value may be a
    scalar, not a shorter array): the merged
    positions worked out once for all columns, not once per column, and no
    more than a scatter into each (the graph's pages and the writer's rows
    splice several parallel columns at a time)."""
    at = np.asarray(at, dtype=np.int64)
    m = len(at)
    n = len(cols[0])
    if m and not bool((at[1:] >= at[:-1]).all()):
        order = np.argsort(at, kind="stable")  # (np.insert's order for unsorted places)
        at = at[order]
        values = [v if np.ndim(v) == 0 else np.asarray(v)[order] for v in values]
    where = at + np.arange(m, dtype=np.int64)  # each new item's place in the result
    rest = np.ones(n + m, dtype=bool)
    rest[where] = False
    out = []
    for c, v in zip(cols, values):
        o = np.empty(n + m, dtype=c.dtype)
        o[where] = v
        o[rest] = c
        out.append(o)
    return out
