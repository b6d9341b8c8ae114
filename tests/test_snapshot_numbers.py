"""jsheapsnapshot's number formatting (most of a snapshot's bytes) against
Python's own `str` of the same numbers: every width a column can have
(up to 13 digits, past the 8 of the test cores' largest node rows), zeros,
the powers of ten at each width's edge, and rows formatted in more than
one piece."""

from __future__ import annotations

import numpy as np
import pytest

from v8dbg.heap import snapshot


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
