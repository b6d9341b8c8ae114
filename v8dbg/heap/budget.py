"""How much memory the heap's graph may take here, and how much it will.

The graph and what is computed on it (reachability, dominators, a
snapshot's columns) live in this process: a heap too big for the memory
left would get the process killed by the kernel (taking the debugger and
its session with it) or fail deep in an allocation. So before the graph's
edges are made, its peak is estimated from what the page walk found (the
objects, and the slots that may hold references) and compared with what
this process may still take: the memory the system says is available
(`MemAvailable`), less where a cgroup (a container) sets a lower limit, or
V8DBG_MEMORY_LIMIT (a size: `3G`, `500M`, bytes) where set. Past it, the
command stops with a message saying both.

The estimate is measured, not derived: the heaviest heap commands
(`jsheapsnapshot`, `findjsobjects --retained`) peak at about 60 bytes per
object and 19 per slot the walk counts (`docs/benchmarks.md`: 2.06
million objects, 13.3 million slots, 351-385 MB) beyond what the process
held before.
"""

from __future__ import annotations

import os
import re

PER_OBJECT = 60
PER_SLOT = 19
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.I)


def parse_size(text: str) -> int | None:
    """Bytes of a size such as `3G`, `500M`, `1.5g`, `123456`; None if it is none."""
    m = _SIZE.fullmatch(text)
    if not m:
        return None
    return int(float(m.group(1)) * 1024 ** "bkmgt".index((m.group(2) or "b").lower()))


def _meminfo(key: str) -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _cgroup_room() -> int | None:
    """What this process's cgroup (v2) lets it take still, where it sets a limit."""
    try:
        with open("/proc/self/cgroup") as fh:
            rel = next((ln.split("::", 1)[1].strip() for ln in fh if ln.startswith("0::")), None)
        if rel is None:
            return None
        base = os.path.join("/sys/fs/cgroup", rel.lstrip("/"))
        with open(os.path.join(base, "memory.max")) as fh:
            top = fh.read().strip()
        if top == "max":
            return None
        with open(os.path.join(base, "memory.current")) as fh:
            used = int(fh.read().strip())
        return max(int(top) - used, 0)
    except (OSError, ValueError, StopIteration):
        return None


def room() -> tuple[int | None, str]:
    """(Bytes this process may still take, None where unknown; what says so)."""
    rss = _rss()
    limit = os.environ.get("V8DBG_MEMORY_LIMIT")
    if limit:
        n = parse_size(limit)
        if n is not None:
            return max(n - rss, 0), f"V8DBG_MEMORY_LIMIT={limit.strip()}"
    got = _meminfo("MemAvailable")
    why = "the memory the system has available"
    cg = _cgroup_room()
    if cg is not None and (got is None or cg < got):
        got, why = cg, "its cgroup's memory limit"
    return got, why


def check_graph(objects: int, slots: int, what: str = "the heap's graph") -> str | None:
    """A message when the graph of `objects` objects with `slots` slots would
    not fit in what this process may still take; None when it fits."""
    need = PER_OBJECT * objects + PER_SLOT * slots
    have, why = room()
    if have is None or need <= have:
        return None
    mb = 1 << 20
    return (f"{what} ({objects} objects, {slots} slots to read) would need about "
            f"{need // mb} MB more at its peak, and {why} leaves {have // mb} MB "
            "(V8DBG_MEMORY_LIMIT=SIZE sets how much v8dbg may use)")
