"""Rows of the census that grew between two heaps of one program: DevTools'
Comparison view and memlab's find-leaks, from two cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from .groups import Group


@dataclass
class Growth:
    """One row of the newer heap with what the older one had of it."""

    group: Group
    retained: int | None  # this heap's retained size of the row (None: not asked)
    old_count: int
    old_size: int
    old_retained: int | None

    @property
    def count_growth(self) -> int:
        return self.group.count - self.old_count

    @property
    def size_growth(self) -> int:
        return self.group.size - self.old_size

    @property
    def retained_growth(self) -> int | None:
        if self.retained is None or self.old_retained is None:
            return None
        return self.retained - self.old_retained


def grown(new: list[Group], old: list[Group], new_retained: list[int] | None = None,
          old_retained: list[int] | None = None, by: str = "count") -> list[Growth]:
    """The rows of `new` that grew over `old` (matched by constructor and property
    names), most grown first: by count, size or retained size."""
    before: dict[tuple[str, tuple[str, ...]], tuple[int, int, int]] = {}
    for i, g in enumerate(old):
        k = (g.constructor, tuple(g.properties))
        c, s, r = before.get(k, (0, 0, 0))
        before[k] = (c + g.count, s + g.size, r + (old_retained[i] if old_retained else 0))
    out: list[Growth] = []
    for i, g in enumerate(new):
        c, s, r = before.get((g.constructor, tuple(g.properties)), (0, 0, 0))
        row = Growth(g, new_retained[i] if new_retained else None, c, s,
                     r if old_retained else None)
        if row.count_growth > 0 or row.size_growth > 0 or (row.retained_growth or 0) > 0:
            out.append(row)

    def key(x: Growth) -> tuple:
        main = x.retained_growth if by == "retained" else x.size_growth if by == "size" \
            else x.count_growth
        return (-(main or 0), -x.count_growth, x.group.constructor, x.group.properties)
    out.sort(key=key)
    return out
