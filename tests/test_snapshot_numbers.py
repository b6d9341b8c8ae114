"""jsheapsnapshot's number formatting (most of a snapshot's bytes) against
Python's own `str` of the same numbers: every width a column can have
(up to 13 digits, past the 8 of the test cores' largest node rows), zeros,
the powers of ten at each width's edge, and rows formatted in more than
one piece. The string table, which keeps numbers' names as runs of
integers, against a plain list and dictionary of the same strings, and its
runs written as json.dumps writes the strings."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from v8dbg.heap import snapshot
from v8dbg.heap.strtable import StringTable


def _expected(cols) -> bytes:
    return ",".join(str(int(x)) for row in zip(*cols) for x in row).encode()


EDGES = [0, 1, 9, 10, 99, 100, 9999, 10000, 99999999, 100000000, 10**12 - 1, 10**12,
         10**12 + 5]


@pytest.mark.parametrize("rows", [snapshot.ROWS, 7])
def test_decimal_equals_str(monkeypatch, rows: int) -> None:
    monkeypatch.setattr(snapshot, "ROWS", rows)
    rng = np.random.default_rng(19)
    n = 1000
    cols = [rng.integers(0, 14, n, dtype=np.uint8),  # a node type: one or two digits
            rng.integers(0, 10**6, n).astype(np.uint32),
            np.zeros(n, dtype=np.int64),  # trace_node_id, detachedness
            np.resize(np.array(EDGES, dtype=np.int64), n),
            (10 ** rng.integers(0, 13, n)) * rng.integers(1, 10, n)]
    assert snapshot._decimal(np, cols) == _expected(cols)
    one = [np.array(EDGES, dtype=np.int64)]
    assert snapshot._decimal(np, one) == _expected(one)
    assert snapshot._decimal(np, [np.zeros(0, dtype=np.int64)]) == b""


def test_quoted_equals_json() -> None:
    nums = np.array(EDGES[:10] + [5, 0, 123456789], dtype=np.int64)
    want = json.dumps([str(x) for x in nums.tolist()], separators=(",\n", ":"))[1:-1]
    assert snapshot._quoted(np, nums) == want.encode()
    assert snapshot._quoted(np, np.zeros(0, dtype=np.int64)) == b""


def test_string_table_as_a_list() -> None:
    """Strings added one by one or by list (numbers among them, "017" not
    one) and numbers in bulk get the indices a list with a dictionary gives them."""
    rng = random.Random(19)
    for _ in range(200):
        t, index, items = StringTable(), {}, []

        def plain(s: str) -> int:
            if s not in index:
                index[s] = len(items)
                items.append(s)
            return index[s]

        for _ in range(30):
            r = rng.random()
            if r < 0.6:
                some = [rng.choice(["a", "0", "17", "017", "5", "\uff11", str(rng.randint(0, 300)),
                                    str(rng.randint(0, 10**9))]) for _ in range(3)]
                if r < 0.3:
                    assert t.add(some[0]) == plain(some[0]), some[0]
                else:
                    assert t.add_all(some) == [plain(s) for s in some], some
            else:
                top = rng.choice([10, 100, 1000])
                nums = [rng.randint(0, top) for _ in range(rng.randint(0, 20))]
                got = t.add_numbers(np.array(nums, dtype=np.int64)).tolist()
                for x in sorted({x for x in nums if str(x) not in index}):
                    plain(str(x))
                assert got == [index[str(x)] for x in nums]
        assert len(t.items) == len(items) and list(t.items) == items
        assert [t.items[i] for i in range(len(items))] == items
