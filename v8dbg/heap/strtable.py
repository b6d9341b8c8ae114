"""A snapshot's string table: each string once, in first-use order.

Most of a big heap's strings are numbers: an array's or hash table's slots
are named by their index, so a table of a million slots brings the names
"0" .. "999999". Those are kept as runs of integers (a NumPy array each, in
the order they were added), with a number -> index table, rather than as a
Python string and a dictionary entry each; the writer formats the runs in
bulk. Most of the rest are the heap's own one-byte strings (a string
object is named by its characters): those are kept as their characters,
one byte array for a run of them, and found again by a 128-bit hash of
their characters in sorted arrays, not as a Python string and a dictionary
entry each. Every other string is kept as itself.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterator

from .arrays import spliced, unique
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


# Strings hashed per call of `_hashes`: bytes of characters at most (longer
# runs are hashed a piece at a time, to bound the temporary arrays).
HASH_PIECE = 1 << 16
# Strings add_bulk looks up and adds at once.
BULK_PIECE = 1 << 15
# The two hashes' multipliers (odd: invertible modulo 2**64), and the length's.
_P1, _P2, _PLEN = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_POWERS: list = []  # (powers of _P1, of _P2), made once


def _hashes(np, chars, starts, ends) -> tuple[Any, Any]:
    """Two 64-bit hashes of each string chars[starts[i]:ends[i]] (one byte a
    character): polynomial in each character (plus one), the length mixed
    into the second. Equal strings hash alike; two different ones collide in
    both with a chance of about 2**-128 per pair."""
    n = len(starts)
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    if not n:
        return h1, h2
    lens = (ends - starts).astype(np.int64)
    top = int(lens.max())
    if not _POWERS or len(_POWERS[0]) <= top:
        _POWERS[:] = [_power_table(np, m, max(top + 1, 2048)) for m in (_P1, _P2)]
    pw1, pw2 = _POWERS
    cum = np.cumsum(lens)
    i = 0
    while i < n:
        # A piece of strings with HASH_PIECE characters at most (one at least).
        j = max(int(np.searchsorted(cum, int(cum[i] - lens[i]) + HASH_PIECE, side="right")),
                i + 1)
        ln = lens[i:j]
        full = np.flatnonzero(ln > 0)
        if len(full):
            ln = ln[full]
            firsts = np.cumsum(ln) - ln
            # Each character's place in its string, and the character (plus one).
            pos = np.arange(int(ln.sum()), dtype=np.int64) - np.repeat(firsts, ln)
            c = chars[np.repeat(starts[i:j][full].astype(np.int64), ln) + pos]
            c = c.astype(np.uint64) + np.uint64(1)
            h1[full + i] = np.add.reduceat(c * pw1[pos], firsts)
            h2[full + i] = np.add.reduceat(c * pw2[pos], firsts)
            del pos, c
        i = j
    h2 += lens.astype(np.uint64) * np.uint64(_PLEN)
    return h1, h2


def gather(np, chars, starts, lens) -> Any:
    """chars[starts[i]:starts[i] + lens[i]] for each i, one after another (a
    piece of HASH_PIECE characters at a time: the index arrays stay small)."""
    lens = np.asarray(lens, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.cumsum(lens)
    out = np.empty(int(ends[-1]) if len(ends) else 0, dtype=np.uint8)
    i, n = 0, len(lens)
    while i < n:
        base = int(ends[i] - lens[i])
        j = max(int(np.searchsorted(ends, base + HASH_PIECE, side="right")), i + 1)
        ln = lens[i:j]
        firsts = np.cumsum(ln) - ln
        out[base:int(ends[j - 1])] = chars[np.repeat(starts[i:j] - firsts, ln) +
                                           np.arange(int(ln.sum()), dtype=np.int64)]
        i = j
    return out


def _power_table(np, m: int, k: int) -> Any:
    """m**0 .. m**(k-1) modulo 2**64."""
    out = np.empty(k, dtype=np.uint64)
    out[0] = 1
    out[1:] = m
    return np.cumprod(out, dtype=np.uint64)


class Bulk:
    """A run of one-byte strings as their characters: string i is
    chars[ends[i-1]:ends[i]] (ends[-1] taken as 0)."""

    def __init__(self, chars, ends) -> None:
        self.chars = chars  # uint8
        self.ends = ends  # int64

    def __len__(self) -> int:
        return len(self.ends)

    def text(self, i: int) -> str:
        a = int(self.ends[i - 1]) if i else 0
        return bytes(self.chars[a:int(self.ends[i])]).decode("latin-1")

    def json(self, np, a: int, b: int) -> bytes | None:
        """Strings a .. b-1 as JSON strings `"..."` joined by `,\n`, made in
        bulk where none needs escaping (no control character, quote,
        backslash or non-ASCII byte: the usual case), else None (json.dumps
        them)."""
        if b <= a:
            return b""
        base = int(self.ends[a - 1]) if a else 0
        chars = self.chars[base:int(self.ends[b - 1])]
        if len(chars) and ((chars < 0x20) | (chars == 0x22) | (chars == 0x5C) |
                           (chars > 0x7E)).any():
            return None
        ends = self.ends[a:b] - base
        lens = np.diff(ends, prepend=0)
        n = b - a
        # String i takes lens[i] + 4 bytes: its quotes, then `,\n`.
        first = ends - lens + 4 * np.arange(n)
        out = np.empty(len(chars) + 4 * n, dtype=np.uint8)
        out[first] = ord('"')
        out[np.repeat(first + 1 - (ends - lens), lens) + np.arange(len(chars))] = chars
        last = first + lens + 1
        out[last] = ord('"')
        out[last + 1] = ord(",")
        out[last + 2] = ord("\n")
        return out[:-2].tobytes()

    def texts(self, a: int, b: int) -> list[str]:
        """Strings a .. b-1, decoded at once."""
        if b <= a:
            return []
        base = int(self.ends[a - 1]) if a else 0
        page = bytes(self.chars[base:int(self.ends[b - 1])]).decode("latin-1")
        e = (self.ends[a:b] - base).tolist()
        return list(map(page.__getitem__, map(slice, [0] + e[:-1], e)))


class Items:
    """The strings by index (a sequence): plain strings in lists, runs of
    numbers in arrays and runs of one-byte strings (`Bulk`), one after
    another."""

    def __init__(self) -> None:
        self.parts: list[Any] = []  # list[str], a Bulk run, or a uint32 array of numbers
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
        if isinstance(part, Bulk):
            return part.text(i - self.starts[k])
        x = part[i - self.starts[k]]
        return x if isinstance(x, str) else str(int(x))

    def __iter__(self) -> Iterator[str]:
        for part in self.parts:
            if isinstance(part, list):
                yield from part
            elif isinstance(part, Bulk):
                for a in range(0, len(part), 1 << 16):
                    yield from part.texts(a, min(a + (1 << 16), len(part)))
            else:
                yield from map(str, part.tolist())

    def append(self, s: str) -> int:
        if not self.parts or not isinstance(self.parts[-1], list):
            self.parts.append([])
            self.starts.append(self.n)
        self.parts[-1].append(s)
        self.n += 1
        return self.n - 1

    def extend(self, strs: list[str]) -> int:
        """Add strings (none of them a number of the table); the index of the first."""
        if not self.parts or not isinstance(self.parts[-1], list):
            self.parts.append([])
            self.starts.append(self.n)
        self.parts[-1].extend(strs)
        self.n += len(strs)
        return self.n - len(strs)

    def extend_numbers(self, nums) -> int:
        """Add a run of numbers (or a Bulk run of strings); the index of its first."""
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
        # The hashes of the Bulk runs' strings and of the one-byte strings of
        # `index` up to _synced, sorted (by the first, then the second), with
        # each one's index; _run: the most entries one first hash has.
        self._h1: Any = None
        self._h2: Any = None
        self._hi: Any = None
        self._run = 0
        self._synced = 0

    def _lookup(self, np, q1, q2) -> Any:
        """The index of each hashed string (q1, q2) in the table, -1 where none."""
        out = np.full(len(q1), -1, dtype=np.int64)
        if self._h1 is None or not len(q1) or not len(self._h1):
            return out
        at = np.searchsorted(self._h1, q1)
        for step in range(self._run):
            p = np.minimum(at + step, len(self._h1) - 1)
            hit = (self._h1[p] == q1) & (self._h2[p] == q2) & (out < 0)
            out[hit] = self._hi[p[hit]]
        return out

    def _in_bulk(self, strs: list[str]) -> list[int]:
        """The index of each string (none in `index`) among the hashed ones, -1
        where none: only one-byte (Latin-1) strings can be there."""
        np = gmod.numpy()
        out = [-1] * len(strs)
        if self._h1 is None:
            return out
        which, enc = [], []
        for k, x in enumerate(strs):
            try:
                enc.append(x.encode("latin-1"))
            except UnicodeEncodeError:
                continue
            which.append(k)
        if not which:
            return out
        chars = np.frombuffer(b"".join(enc), dtype=np.uint8)
        ends = np.cumsum([len(b) for b in enc], dtype=np.int64)
        got = self._lookup(np, *_hashes(np, chars, ends - np.array([len(b) for b in enc]), ends))
        for k, i in zip(which, got.tolist()):
            out[k] = i
        return out

    def _one_in_bulk(self, s: str) -> int:
        """`_in_bulk` of one string, hashed in Python (the same hashes as
        `_hashes`): a name the writer adds alone, most of them short."""
        if len(s) > 256:
            return self._in_bulk([s])[0]
        try:
            b = s.encode("latin-1")
        except UnicodeEncodeError:
            return -1
        h1 = h2 = 0
        p1 = p2 = 1
        mask = (1 << 64) - 1
        for c in b:
            h1 = (h1 + (c + 1) * p1) & mask
            h2 = (h2 + (c + 1) * p2) & mask
            p1 = p1 * _P1 & mask
            p2 = p2 * _P2 & mask
        h2 = (h2 + len(b) * _PLEN) & mask
        h1s = self._h1
        at = int(h1s.searchsorted(h1s.dtype.type(h1)))  # (not a Python int: no float64)
        for k in range(at, min(at + self._run, len(h1s))):
            if int(h1s[k]) == h1 and int(self._h2[k]) == h2:
                return int(self._hi[k])
        return -1

    def _hashed(self, np, h1, h2, idx) -> None:
        """Add (h1, h2) -> idx entries to the ones sorted by h1 (the new ones
        sorted, then merged in: a table filled a piece at a time is not sorted
        again whole each time; a column at a time, so that no more than one
        old column is held beside its merged copy)."""
        order = np.argsort(h1, kind="stable")
        # (Indices in 32 bits: a table has fewer strings than that.)
        h1, h2, idx = h1[order], h2[order], idx[order].astype(np.int32)
        if self._h1 is not None and len(self._h1):
            at = np.searchsorted(self._h1, h1, side="right")
            self._h1, = spliced(np, [self._h1], at, [h1])
            self._h2, = spliced(np, [self._h2], at, [h2])
            self._hi, = spliced(np, [self._hi], at, [idx])
        else:
            self._h1, self._h2, self._hi = h1, h2, idx
        # The most entries one first hash has: only the new ones' runs can
        # have grown.
        if len(h1):
            runs = np.searchsorted(self._h1, h1, side="right") - np.searchsorted(self._h1, h1)
            self._run = max(self._run, int(runs.max()))

    def add_bulk(self, chars, starts, ends) -> Any:
        """The indices of the one-byte strings chars[starts[i]:ends[i]] (uint8
        characters, ends - starts below 2**31), added as `add` would add their
        texts (each once): the new ones kept as their characters (a
        Bulk run, in first-use order), found by hash, with no Python string
        each. Empty strings and strings of digits (numbers of the number
        table, perhaps) are added one by one, before the others."""
        self._check_open()
        np = gmod.numpy()
        n = len(starts)
        out = np.zeros(n, dtype=np.int64)
        if not n:
            return out.astype(np.uint32)
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        lens = ends - starts
        # Digits-only strings of up to 9 characters, and empty ones: by `add`.
        own = lens == 0
        short = np.flatnonzero((lens > 0) & (lens <= 9))
        step = max(HASH_PIECE // 16, 1)
        for a in range(0, len(short), step):
            k = short[a:a + step]
            at = starts[k][:, None] + np.arange(9)
            inside = at < ends[k][:, None]
            c = chars[np.minimum(at, len(chars) - 1)]
            own[k] = ((c >= 48) & (c <= 57) | ~inside).all(axis=1)
            del at, inside, c
        for k in np.flatnonzero(own).tolist():
            out[k] = self.add(bytes(chars[int(starts[k]):int(ends[k])]).decode("latin-1"))
        rest = np.flatnonzero(~own)
        if not len(rest):
            return out.astype(np.uint32)
        # The one-byte strings of `index` added since the last call, hashed.
        if len(self.index) > self._synced:
            import itertools
            keys = list(itertools.islice(self.index, self._synced, None))
            self._synced = len(self.index)
            latin, enc = [], []
            for x in keys:
                try:
                    enc.append(x.encode("latin-1"))
                except UnicodeEncodeError:
                    continue
                latin.append(self.index[x])
            if enc:
                ln = np.array([len(b) for b in enc], dtype=np.int64)
                ke = np.cumsum(ln)
                k1, k2 = _hashes(np, np.frombuffer(b"".join(enc), dtype=np.uint8), ke - ln, ke)
                self._hashed(np, k1, k2, np.array(latin, dtype=np.int64))
                del k1, k2, ke, ln
            del keys, latin, enc
        # A piece of strings at a time (each piece's new strings found by the
        # next): the temporaries stay a few MB however many strings there are.
        for a in range(0, len(rest), BULK_PIECE):
            self._add_hashed(np, chars, starts, ends, lens, rest[a:a + BULK_PIECE], out)
        return out.astype(np.uint32)

    def _add_hashed(self, np, chars, starts, ends, lens, rest, out) -> None:
        """add_bulk of the strings `rest` (none a number or empty): their
        indices into out."""
        h1, h2 = _hashes(np, chars, starts[rest], ends[rest])
        got = self._lookup(np, h1, h2)
        out[rest] = got
        miss = np.flatnonzero(got < 0)
        if len(miss):
            # The new ones, each once, in first-use order.
            m1, m2 = h1[miss], h2[miss]
            order = np.lexsort((m2, m1))
            head = np.ones(len(order), dtype=bool)
            head[1:] = (np.diff(m1[order]) != 0) | (np.diff(m2[order]) != 0)
            group = np.cumsum(head) - 1  # by sorted position
            firsts = order[head]  # each distinct string's first among miss (smallest)
            fo = np.argsort(firsts, kind="stable")  # distinct strings in first-use order
            rank = np.empty(len(fo), dtype=np.int64)
            rank[fo] = np.arange(len(fo))
            which = rest[miss[firsts[fo]]]  # the strings kept, in order
            ln = lens[which]
            kept_ends = np.cumsum(ln)
            kept = gather(np, chars, starts[which], ln)
            first = self.items.extend_numbers(Bulk(kept, kept_ends))
            new_idx = np.empty(len(miss), dtype=np.int64)
            new_idx[order] = first + rank[group]
            out[rest[miss]] = new_idx
            self._hashed(np, m1[firsts[fo]], m2[firsts[fo]],
                         first + np.arange(len(fo), dtype=np.int64))

    def drop_lookups(self) -> None:
        """Let go of what finds a string's index (the dictionary, the hashes,
        the number table) once no string will be added: the strings
        themselves (`items`) stay."""
        self.index = {}
        self._numbers = self._h1 = self._h2 = self._hi = None
        self._spelled = {}
        self._run = self._synced = 0
        self._closed = True

    _closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("a string added to a table whose lookups were let go")

    def add(self, s: str) -> int:
        self._check_open()
        i = self.index.get(s)
        if i is not None:
            return i
        n = _number(s)
        if n < 0 and self._h1 is not None:
            i = self._one_in_bulk(s)
            if i >= 0:
                self.index[s] = i
                return i
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
        strings, most of them new): the new ones found and added with a few
        calls over the whole list (in first-use order) rather than a step of
        Python per string; a list with a digit string among its new ones
        (which may belong in the number table) is added one by one."""
        self._check_open()
        index = self.index
        new = [s for s in dict.fromkeys(texts) if s not in index]
        if new and self._h1 is not None:
            # Strings of a Bulk run: found by hash, then known by name.
            got = self._in_bulk(new)
            index.update((s, i) for s, i in zip(new, got) if i >= 0)
            new = [s for s, i in zip(new, got) if i < 0]
        if new:
            if any(map(str.isdigit, new)):
                return [self.add(s) for s in texts]
            first = self.items.extend(new)
            index.update(zip(new, range(first, first + len(new))))
        return list(map(index.__getitem__, texts))

    def add_numbers(self, nums) -> Any:
        """The indices of the decimal strings of `nums` (non-negative
        integers below MAX_NUMBER, a NumPy array), the new ones added in
        ascending order. An array's slots are named by their index: a
        million-slot array names a million edges, and most pieces of the
        graph name the same few."""
        self._check_open()
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
                new = unique(np, absent)
            else:  # many: marked in a table rather than sorted
                seen = np.zeros(len(self._numbers), dtype=bool)
                seen[absent] = True
                new = np.flatnonzero(seen)
            # (Kept in 32 bits: every number of the table fits.)
            first = self.items.extend_numbers(new.astype(np.uint32))
            self._numbers[new] = np.arange(first, first + len(new), dtype=np.int32)
            ids = self._numbers[nums]
        return ids.astype(np.uint32)

    def add_from(self, other: StringTable, start: int, stop: int) -> Any:
        """Add the strings other.items[start:stop] as they were added to `other`
        (a table the same calls filled apart): the indices of each here, and the
        new ones in the order the same calls made on this table would add them."""
        np = gmod.numpy()
        items = other.items
        out = []
        k = max(0, bisect_right(items.starts, start) - 1)
        while k < len(items.parts) and items.starts[k] < stop:
            part, at = items.parts[k], items.starts[k]
            a, b = max(start, at) - at, min(stop, at + len(part)) - at
            if b > a:
                if isinstance(part, list):
                    out.append(np.array(self.add_all(part[a:b]), dtype=np.uint32))
                elif isinstance(part, Bulk):
                    out.append(np.array(self.add_all(part.texts(a, b)), dtype=np.uint32))
                else:
                    out.append(self.add_numbers(part[a:b]))
            k += 1
        return np.concatenate(out) if out else np.zeros(0, dtype=np.uint32)
