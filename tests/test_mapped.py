"""The heap graph's arrays in a temporary file's pages (v8dbg/heap/mapped.py).

What they are for: once dropped, their pages leave this process's resident
memory and the data stays. Checked by the process's own RSS, and what is
made where no file can be (no directory, a full disk) is an ordinary array.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from v8dbg.heap import mapped


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_zeroed_writable_and_in_the_directory(tmp_path) -> None:
    a = mapped.file_array(np, 1000, np.uint32, str(tmp_path))
    assert a.dtype == np.uint32 and len(a) == 1000 and a.flags.writeable
    assert not a.any()
    a[::7] = 9
    assert mapped._mapping(a[10:20]) is not None  # (a view finds its mapping)
    # The file is unnamed: nothing is left in the directory, even meanwhile.
    assert not list(tmp_path.iterdir())


def test_dropped_pages_leave_memory_and_keep_the_data(tmp_path) -> None:
    n = 64 << 20  # bytes
    a = mapped.file_array(np, n // 8, np.uint64, str(tmp_path))
    a[:] = np.arange(len(a), dtype=np.uint64)
    before = _rss_mb()
    mapped.drop(a[:5])  # (the whole mapping, from any view of it)
    after = _rss_mb()
    assert before - after > 48, (before, after)
    assert int(a[12345]) == 12345 and int(a[-1]) == len(a) - 1
    assert int(a.sum(dtype=np.uint64)) == len(a) * (len(a) - 1) // 2


def test_arrays_in_memory_are_left_alone() -> None:
    a = np.arange(1 << 20, dtype=np.uint64)
    mapped.drop(a, None, a[3:])
    assert int(a[-1]) == (1 << 20) - 1


def test_no_file_no_room(monkeypatch, tmp_path) -> None:
    """A directory that is not there: the system's place. No file at all, or
    a full disk (its blocks are reserved at once): an array in memory."""
    a = mapped.file_array(np, 10, np.int64, str(tmp_path / "not-there"))
    assert mapped._mapping(a) is not None and not a.any()

    def full(fd, off, size):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", full)
    b = mapped.file_array(np, 10, np.int64, str(tmp_path))
    assert mapped._mapping(b) is None and b.flags.writeable and not b.any()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("count", [0, 1])
def test_small_counts(count: int, tmp_path) -> None:
    a = mapped.file_array(np, count, np.uint8, str(tmp_path))
    assert len(a) == count


def test_census_addresses_aside(monkeypatch, tmp_path) -> None:
    """The census's addresses go to one file's pages (in the directory
    given: jsheapsnapshot's, beside its FILE), each map's a view of its
    part that reads as the array did (Python ints, in order), its pages
    let go; where no file can be made, the arrays stay as they are."""
    from array import array

    from v8dbg.heap import census, groups
    acc = {0x1000: array("Q", range(100, 5000, 3)), 0x2000: array("Q"),
           0x3000: array("Q", [2**64 - 1, 7])}
    want = {m: list(a) for m, a in acc.items()}
    got = census._aside(np, acc, str(tmp_path))
    with open("/proc/self/maps") as f:
        assert f"{tmp_path}/#" in f.read(), "the file is not in the directory given"
    assert not acc and list(got) == list(want)
    for m, v in got.items():
        assert mapped._mapping(v.obj) is not None, hex(m)  # (a view of a file array)
        assert list(v) == want[m] and len(v) == len(want[m])
        assert all(type(x) is int for x in v)
    assert got[0x3000][0] == 2**64 - 1 and list(got[0x1000][:2]) == [100, 103]
    # A row of several maps' objects: their addresses joined, views or arrays.
    row = groups.Group("Session", [], maps=[0x1000, 0x3000, 0x4000],
                       dict_members={0x4000: array("Q", [5, 6])})
    monkeypatch.setattr(groups, "live_maps", lambda prog, heap: [
        census.MapStats(m, 0, 0, len(v), v) for m, v in got.items()])
    assert list(groups.members(None, 0, row)) == want[0x1000] + want[0x3000] + [5, 6]
    monkeypatch.setattr(os, "posix_fallocate",
                        lambda fd, off, size: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    acc = {0x1000: array("Q", [1, 2])}
    kept = census._aside(np, dict(acc))
    assert type(kept[0x1000]) is array and list(kept[0x1000]) == [1, 2]
