"""jsheapsnapshot's number formatting (most of a snapshot's bytes) against
Python's own `str` of the same numbers: every width a column can have
(up to 13 digits, past the 8 of the test cores' largest node rows), zeros,
the powers of ten at each width's edge, and rows formatted in more than
one piece. The string table, which keeps numbers' names as runs of
integers, against a plain list and dictionary of the same strings, and its
runs written as json.dumps writes the strings; a table filled apart and
added to it piece by piece (the edges' names), against the same calls made
on it directly."""

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


def test_bulk_json_equals_json() -> None:
    """A run of one-byte strings written in bulk as json.dumps writes them
    (empty strings, one, many, every slice), and left to json.dumps (None)
    where one needs escaping: a quote, a backslash, a control character,
    DEL or a byte past ASCII."""
    from v8dbg.heap.strtable import Bulk
    rng = random.Random(5)
    plain = [""] + ["".join(rng.choice("ab -_/:0123456789xyz{}[]") for _ in range(rng.randrange(9)))
                    for _ in range(60)]
    cases = [plain, [""], ["", ""], ["user-1"]] + \
        [plain[:7] + [bad] + plain[7:12] for bad in ('q"x', "a\\b", "\n", "\x7f", "\xe9", "\x00")]
    for texts in cases:
        raw = [t.encode("latin-1") for t in texts]
        bulk = Bulk(np.frombuffer(b"".join(raw), dtype=np.uint8),
                    np.cumsum([len(r) for r in raw]).astype(np.int64))
        for a in range(len(texts)):
            for b in range(a, len(texts) + 1, 3):
                got = bulk.json(np, a, b)
                want = json.dumps(texts[a:b], separators=(",\n", ":"))[1:-1].encode()
                plain_run = all(t.isascii() and t.isprintable() and '"' not in t and "\\" not in t
                                for t in texts[a:b])
                assert got == (want if plain_run else None), (texts[a:b], got, want)


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


def test_string_table_added_from_another() -> None:
    """Names made in a table of their own, piece by piece, and added to the
    file's table as each piece is written (other strings added in between)
    get the indices and the order of the same calls made on the file's table
    itself: the writer types the edges before it writes the nodes."""
    rng = random.Random(19)

    def call(t: StringTable, op, arg):
        if op == "add":
            return [t.add(arg)]
        if op == "all":
            return t.add_all(arg)
        return t.add_numbers(np.array(arg, dtype=np.int64)).tolist()

    def some_call():
        r = rng.random()
        pick = lambda: rng.choice(["a", "b", "0", "17", "017", "\uff11", "map",  # noqa: E731
                                   str(rng.randint(0, 300)), str(rng.randint(0, 10**9))])
        if r < 0.3:
            return "add", pick()
        if r < 0.6:
            return "all", [pick() for _ in range(rng.randint(0, 4))]
        return "numbers", [rng.randint(0, rng.choice([10, 100, 1000]))
                           for _ in range(rng.randint(0, 20))]

    for _ in range(200):
        direct, file, scratch = StringTable(), StringTable(), StringTable()
        pieces = [[some_call() for _ in range(rng.randint(0, 6))] for _ in range(6)]
        between = [[some_call() for _ in range(rng.randint(0, 3))] for _ in range(6)]
        want, seen, ends = [], [], []
        for piece in pieces:  # the scratch table first, all pieces
            for op, arg in piece:
                seen.append(call(scratch, op, arg))
            ends.append(len(scratch.items))
        got, done, remap, k = [], 0, np.zeros(len(scratch.items), dtype=np.int64), 0
        for piece, other, end in zip(pieces, between, ends):
            for op, arg in other:  # strings from elsewhere, to both tables
                assert call(direct, op, arg) == call(file, op, arg)
            for op, arg in piece:
                want.append(call(direct, op, arg))
            remap[done:end] = file.add_from(scratch, done, end)
            done = end
            got.extend([remap[i] for i in ids] for ids in seen[k:k + len(piece)])
            k += len(piece)
        assert got == want
        assert list(file.items) == list(direct.items)


@pytest.mark.parametrize("piece", [7, 1 << 18])
def test_string_table_bulk(monkeypatch, piece: int) -> None:
    """A heap's one-byte strings added by their characters (`add_bulk`), mixed
    with strings added by name before and after, and numbers: each index
    gives back its string, every string is in the table once, and strings
    of digits keep to the number table (hashed a few characters at a time
    too, to cross the pieces' bounds)."""
    from v8dbg.heap import strtable
    monkeypatch.setattr(strtable, "HASH_PIECE", piece)
    rng = random.Random(23)
    alphabet = ["a", "b", "\xe9", "0", "1", "7", "-", "\x00"]

    def word() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 3, 9, 10, 40])))

    for _ in range(60):
        t = StringTable()
        for _ in range(rng.randint(1, 8)):
            r = rng.random()
            if r < 0.25:
                w = rng.choice([word(), "\u0100x", "map"])
                assert t.items[t.add(w)] == w
            elif r < 0.45:
                ws = [word() for _ in range(rng.randint(0, 5))] + ["\u0101"]
                assert [t.items[i] for i in t.add_all(ws)] == ws
            elif r < 0.55:
                nums = np.array([rng.randint(0, 50) for _ in range(5)], dtype=np.int64)
                assert [t.items[i] for i in t.add_numbers(nums).tolist()] == \
                    [str(x) for x in nums.tolist()]
            else:
                ws = [word() for _ in range(rng.randint(0, 30))]
                raw = "".join(ws).encode("latin-1")
                ends = np.cumsum([len(w) for w in ws], dtype=np.int64)
                got = t.add_bulk(np.frombuffer(raw, dtype=np.uint8),
                                 ends - np.array([len(w) for w in ws], dtype=np.int64), ends)
                assert [t.items[i] for i in got.tolist()] == ws
        items = list(t.items)
        assert len(items) == len(set(items)) == len(t.items), items
        assert [t.items[i] for i in range(len(items))] == items


def test_string_table_bulk_in_pieces(monkeypatch) -> None:
    """add_bulk a few strings at a time (each piece's new strings found by the
    next, the hashes merged in) makes the same table as all at once: the
    same indices, the same strings in the same order."""
    from v8dbg.heap import strtable
    rng = random.Random(41)
    words = ["".join(rng.choice("ab\xe901") for _ in range(rng.choice([0, 1, 2, 5, 12])))
             for _ in range(3000)]
    raw = "".join(words).encode("latin-1")
    lens = np.array([len(w) for w in words], dtype=np.int64)
    ends = np.cumsum(lens)
    made = []
    for piece in (1 << 17, 5, 1):
        monkeypatch.setattr(strtable, "BULK_PIECE", piece)
        t = StringTable()
        t.add("ab")
        first = t.add_bulk(np.frombuffer(raw, dtype=np.uint8), ends - lens, ends)
        again = t.add_bulk(np.frombuffer(raw, dtype=np.uint8), ends - lens, ends)
        assert first.tolist() == again.tolist()
        assert [t.items[i] for i in first.tolist()] == words
        # A name added alone finds its string among the hashes merged piece by piece.
        assert [t.add(w) for w in words[::97]] == first.tolist()[::97]
        made.append((first.tolist(), list(t.items)))
    assert made[0] == made[1] == made[2]


def test_string_table_lookups_let_go() -> None:
    """Once the writer lets a table's lookups go, its strings stay readable,
    and adding one more is an error, never a silent duplicate."""
    t = StringTable()
    ids = [t.add("x"), *t.add_numbers(np.array([3, 40])).tolist(), t.add("y")]
    t.drop_lookups()
    assert [t.items[i] for i in ids] == ["x", "3", "40", "y"]
    for add in (lambda: t.add("x"), lambda: t.add_all(["z"]),
                lambda: t.add_numbers(np.array([1]))):
        with pytest.raises(RuntimeError):
            add()


def test_string_hash_alone_as_in_bulk() -> None:
    """A name added alone is hashed in Python: the same hashes as the
    characters hashed in arrays, so it finds its string in a Bulk run."""
    from v8dbg.heap import strtable
    rng = random.Random(5)
    words = ["", "a", "map", "\xe9t\xe9", "x" * 300, "k" * 256, "\x00\x00"] + sorted(
        {"".join(rng.choice("abcdefgh\xe9") for _ in range(rng.randint(1, 12)))
         for _ in range(5000)} - {"a", "map"})
    raw = "".join(words).encode("latin-1")
    ends = np.cumsum([len(w) for w in words], dtype=np.int64)
    h1, h2 = strtable._hashes(np, np.frombuffer(raw, dtype=np.uint8),
                              ends - np.array([len(w) for w in words]), ends)
    t = StringTable()
    t._hashed(np, h1, h2, np.arange(len(words), dtype=np.int64))
    assert [t._one_in_bulk(w) for w in words] == list(range(len(words)))
    assert t._one_in_bulk("absent") == -1 and t._one_in_bulk("\u0100") == -1


def test_extra_edges_inserted_as_sorted() -> None:
    """Edges added to the sorted extra edges (a WeakMap's, the buffers') land
    where a stable sort of both by source puts them (xe's columns replaced
    by the longer ones, one at a time: xe itself comes back)."""
    from v8dbg.heap.edges import Extra
    rng = np.random.default_rng(3)
    for n, m in [(0, 4), (50, 0), (200, 30), (1000, 1000)]:
        src = np.sort(rng.integers(0, 60, n)).astype(np.int32)
        xe = Extra(src, rng.integers(0, 5, n).astype(np.uint8),
                   np.arange(n, dtype=np.uint32), rng.integers(0, 99, n).astype(np.int32), [], [])
        s2 = rng.integers(0, 60, m)
        k2 = np.full(m, 3, np.uint8)
        n2 = np.arange(n, n + m, dtype=np.uint32)
        t2 = rng.integers(0, 99, m)
        before = [xe.src, xe.kinds, xe.names, xe.to]
        got = snapshot._inserted(np, xe, s2, k2, n2, t2)
        assert got is xe
        order = np.argsort(np.concatenate([before[0], s2]), kind="stable")
        for have, a, b in [(got.src, before[0], s2), (got.kinds, before[1], k2),
                           (got.names, before[2], n2), (got.to, before[3], t2)]:
            assert have.tolist() == np.concatenate([a, b])[order].tolist()
        assert got.src.dtype == before[0].dtype and got.to.dtype == before[3].dtype


def test_node_ranges_bounded() -> None:
    """The writer's ranges of nodes cover every node once, in order, each with
    CHUNK nodes and EDGE_CHUNK edges at most unless it is one node."""
    rng = np.random.default_rng(9)
    degrees = rng.integers(0, 4, 300_000)
    degrees[[1, 2, 77, 150_000]] = [3_000_000, 10, snapshot.EDGE_CHUNK + 1, snapshot.EDGE_CHUNK]
    fe = np.concatenate([[0], np.cumsum(degrees)])
    ranges = snapshot._node_ranges(np, fe, 1, len(degrees))
    assert ranges[0][0] == 1 and ranges[-1][1] == len(degrees)
    assert all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
    for a, b in ranges:
        assert b - a <= snapshot.CHUNK
        assert b - a == 1 or fe[b] - fe[a] <= snapshot.EDGE_CHUNK
    assert (1, 2) in ranges and (77, 78) in ranges


@pytest.mark.parametrize("rows", [snapshot.ROWS, 5])
def test_merged_rows_as_sorted(monkeypatch, rows: int) -> None:
    """A range's kept edges with V8's extra edges merged in, a piece at a
    time, are the rows a stable sort of both by source gives (each extra
    edge after its source's own edges): extras at the start, at the end,
    many on one node, none, and a range with no edge of its own; pieces
    smaller than a node's edges too."""
    monkeypatch.setattr(snapshot, "ROWS", rows)
    rng = np.random.default_rng(17)
    k = 7
    for nodes, n, m in [(1, 0, 3), (1, 40, 0), (5, 40, 9), (30, 200, 200), (3, 12, 40),
                        (400, 1000, 30)]:
        src = np.sort(rng.integers(0, nodes, n))
        xsrc = np.sort(rng.integers(0, nodes, m))
        if m > 2:
            xsrc[0], xsrc[-1] = 0, nodes - 1
        kinds = rng.integers(0, 7, n).astype(np.uint8)
        names = rng.integers(0, 10**6, n).astype(np.uint32)
        to = rng.integers(0, 10**5, n).astype(np.int32)
        xk = rng.integers(0, 7, m).astype(np.uint8)
        xn = rng.integers(0, 10**6, m).astype(np.uint32)
        xr = rng.integers(0, 10**5, m).astype(np.int32)
        # Extra edge i goes before kept edge xpos[i]: after its source's own.
        xpos = np.searchsorted(src, xsrc, side="right").astype(np.int64)
        got = b",".join(snapshot._merged_rows(np, kinds, names, to, k, xpos, xk, xn, xr))
        order = np.argsort(np.concatenate([src, xsrc]), kind="stable")
        want = [np.concatenate([a, b])[order] for a, b in
                [(kinds, xk), (names, xn), (to.astype(np.int64) * k, xr.astype(np.int64) * k)]]
        assert got == _expected(want), (nodes, n, m)
