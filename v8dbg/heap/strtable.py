"""A snapshot's string table: each string once, in first-use order.

Most of a big heap's strings are numbers: an array's or hash table's slots
are named by their index, so a table of a million slots brings the names
"0" .. "999999". Those are kept as runs of integers (a NumPy array each, in
the order they were added), with a number -> index table, rather than as a
Python string and a dictionary entry each; the writer formats the runs in
bulk. Every other string is kept as itself.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterator

from . import graph as gmod

# Numbers a string may stand for in the number table: V8's largest
# FixedArray has fewer slots than this.
MAX_NUMBER = 1 << 27


def _number(s: str) -> int:
    """The number a canonical decimal string spells ("0", "17"; not "017"),
    else -1."""
    if s.isdigit() and s.isascii() and len(s) < 10 and (s[0] != "0" or len(s) == 1):
        n = int(s)
        return n if n < MAX_NUMBER else -1
    return -1


class Items:
    """The strings by index (a sequence): plain strings in lists and runs of
    numbers in arrays, one after another."""

    def __init__(self) -> None:
        self.parts: list[Any] = []  # list[str] or an int64 array of numbers
        self.starts: list[int] = []  # index of each part's first string
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        k = bisect_right(self.starts, i) - 1
        part = self.parts[k]
        x = part[i - self.starts[k]]
        return x if isinstance(x, str) else str(int(x))

    def __iter__(self) -> Iterator[str]:
        for part in self.parts:
            if isinstance(part, list):
                yield from part
            else:
                yield from map(str, part.tolist())

    def append(self, s: str) -> int:
        if not self.parts or not isinstance(self.parts[-1], list):
            self.parts.append([])
            self.starts.append(self.n)
        self.parts[-1].append(s)
        self.n += 1
        return self.n - 1

    def extend_numbers(self, nums) -> int:
        """Add a run of numbers; the index of its first."""
        self.parts.append(nums)
        self.starts.append(self.n)
        self.n += len(nums)
        return self.n - len(nums)


class StringTable:
    """Strings in first-use order, each once (a snapshot's `strings`)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}  # strings other than the numbers in the table
        self.items = Items()
        self._numbers: Any = None  # number -> index of its string, -1 where none yet
        self._spelled: dict[int, int] = {}  # numbers beyond the table, added as strings

    def add(self, s: str) -> int:
        i = self.index.get(s)
        if i is not None:
            return i
        n = _number(s)
        if n >= 0:
            if self._numbers is not None and n < len(self._numbers):
                i = int(self._numbers[n])
                if i < 0:
                    i = self._numbers[n] = self.items.append(s)
                return i
            self._spelled[n] = i = self.index[s] = self.items.append(s)
            return i
        i = self.index[s] = self.items.append(s)
        return i

    def add_all(self, texts: list[str]) -> list[int]:
        """The indices of `texts`, each added as `add` would (a heap's
        strings, most of them new, in one loop)."""
        index, items = self.index, self.items
        out = []
        for s in texts:
            i = index.get(s)
            if i is None:
                if s.isdigit():
                    i = self.add(s)
                else:
                    if not items.parts or not isinstance(items.parts[-1], list):
                        items.append(s)
                    else:
                        items.parts[-1].append(s)
                        items.n += 1
                    i = index[s] = items.n - 1
            out.append(i)
        return out

    def add_numbers(self, nums) -> Any:
        """The indices of the decimal strings of `nums` (non-negative
        integers below MAX_NUMBER, a NumPy array), the new ones added in
        ascending order. An array's slots are named by their index: a
        million-slot array names a million edges, and most pieces of the
        graph name the same few."""
        np = gmod.numpy()
        nums = np.asarray(nums, dtype=np.int64)
        if not len(nums):
            return np.zeros(0, dtype=np.uint32)
        top = int(nums.max()) + 1
        if top > MAX_NUMBER:
            return np.array([self.add(str(x)) for x in nums.tolist()], dtype=np.uint32)
        have = 0 if self._numbers is None else len(self._numbers)
        if have < top:
            grown = np.full(min(max(top, 2 * have), MAX_NUMBER), -1, dtype=np.int32)
            if have:
                grown[:have] = self._numbers
            for n, i in list(self._spelled.items()):
                if n < len(grown):
                    grown[n] = i
                    del self._spelled[n]
            self._numbers = grown
        ids = self._numbers[nums]
        miss = ids < 0
        if miss.any():
            absent = nums[miss]
            if len(absent) * 16 < len(self._numbers):
                new = np.unique(absent)
            else:  # many: marked in a table rather than sorted
                seen = np.zeros(len(self._numbers), dtype=bool)
                seen[absent] = True
                new = np.flatnonzero(seen)
            first = self.items.extend_numbers(new)
            self._numbers[new] = np.arange(first, first + len(new), dtype=np.int32)
            ids = self._numbers[nums]
        return ids.astype(np.uint32)
