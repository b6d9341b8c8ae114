"""Power-of-two histograms as the kernel keeps them (bpftrace's hist()),
and the percentiles they can tell."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Histogram:
    """Buckets [low, high] with counts; `high` None for the [0] and open buckets."""
    buckets: list[tuple[int, int, int]] = field(default_factory=list)  # (low, high, count)

    @classmethod
    def from_bpftrace(cls, rows: list[dict] | None) -> "Histogram":
        out = []
        for r in rows or []:
            low = int(r.get("min", 0))
            high = int(r["max"]) if "max" in r else low
            out.append((low, high, int(r.get("count", 0))))
        return cls(out)

    @classmethod
    def from_values(cls, values: list[int]) -> "Histogram":
        """The buckets bpftrace's hist() would keep for `values` (>= 0):
        [0], [1], then [2^k, 2^(k+1) - 1], so both sources read alike."""
        counts: dict[int, int] = {}
        for v in values:
            k = max(int(v), 0).bit_length()  # 0 -> 0, 1 -> 1, 2..3 -> 2, ...
            counts[k] = counts.get(k, 0) + 1
        top = max(counts, default=-1)
        out = [((1 << (k - 1)) if k else 0, (1 << k) - 1 if k else 0, counts.get(k, 0))
               for k in range(top + 1)]
        return cls(out)

    @property
    def count(self) -> int:
        return sum(c for _, _, c in self.buckets)

    def percentile(self, q: float, cap: int | None = None) -> int | None:
        """The upper bound of the bucket holding the q-th percentile (never
        above `cap`, the exact maximum the kernel kept)."""
        total = self.count
        if not total:
            return None
        need = q / 100.0 * total
        seen = 0
        for _low, high, c in self.buckets:
            seen += c
            if seen >= need and c:
                return min(high, cap) if cap is not None else high
        return cap

    def to_json(self) -> list[dict]:
        return [{"low": lo, "high": hi, "count": c} for lo, hi, c in self.buckets if c]

    def render(self, unit: str = "us", width: int = 40) -> list[str]:
        """DTrace quantize style: value, bar, count; empty rows at the ends cut."""
        rows = [(lo, c) for lo, _hi, c in self.buckets]
        while rows and rows[-1][1] == 0:
            rows.pop()
        first = next((i for i, (_, c) in enumerate(rows) if c), len(rows))
        rows = rows[max(0, first - 1):]
        if not rows:
            return []
        peak = max(c for _, c in rows) or 1
        out = [f"{'value (' + unit + ')':>16}  {'-' * 14} distribution {'-' * 12} count"]
        for lo, c in rows:
            bar = "@" * (round(width * c / peak) if c else 0)
            out.append(f"{lo:>16} |{bar:<{width}} {c}")
        return out
