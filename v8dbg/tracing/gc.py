"""`trace gc`: each collection with its type and pause, from V8's GC
prologue/epilogue calls (the ones perf_hooks' 'gc' entries come from)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..inferior.bpftrace import Output
from ..inferior.elf import ElfFile
from ..v8.probes import Sites
from .histogram import Histogram

SITES = ["gc_prologue", "gc_epilogue"]
OPTIONAL = ["gc_perform", "gc_incremental"]


def program(sites: Sites, exe: str, pid: int, elf: ElfFile | None = None) -> str:
    """Per thread and GC type: the prologue's time; at the epilogue the pause
    goes into the kernel's count, histogram and maximum, and one line out
    (a few hits a GC, each on a push: no cheaper site is needed, so `elf`
    goes unread)."""
    pro, epi = sites.addr("gc_prologue"), sites.addr("gc_epilogue")
    # Lines that inline the callbacks' calls: the functions they sit in.
    perform = [a for k, a in sorted(sites.addrs.items()) if k.startswith("gc_perform.")]
    incremental = [sites.addrs[k] for k in ("gc_incremental.0", "gc_incremental.1") if k in sites.addrs]
    extra = ""
    if perform:
        entries = ", ".join(f"uprobe:{exe}:{a:#x}" for a in perform)
        returns = ", ".join(f"uretprobe:{exe}:{a:#x}" for a in perform)
        extra += f"""
{entries} /pid == {pid}/ {{ @gc_pstart[tid] = nsecs; @gc_ptype[tid] = 0x100 | (arg1 & 0xff); }}
{returns} /pid == {pid} && @gc_pstart[tid]/ {{
  $t = @gc_ptype[tid];
  $ns = nsecs - @gc_pstart[tid];
  delete(@gc_pstart[tid]);
  @gc_count[$t] = count();
  @gc_hist[$t] = hist($ns / 1000);
  @gc_max[$t] = max($ns / 1000);
  @gc_sum[$t] = sum($ns / 1000);
  printf("%d %d\\n", $t, $ns);
}}
"""
    if len(incremental) == 2:  # (prologue, epilogue): from the one's entry to the other's return
        extra += f"""
uprobe:{exe}:{incremental[0]:#x} /pid == {pid}/ {{ @gc_istart[tid] = nsecs; }}
uretprobe:{exe}:{incremental[1]:#x} /pid == {pid} && @gc_istart[tid]/ {{
  $ns = nsecs - @gc_istart[tid];
  delete(@gc_istart[tid]);
  @gc_count[8] = count();
  @gc_hist[8] = hist($ns / 1000);
  @gc_max[8] = max($ns / 1000);
  @gc_sum[8] = sum($ns / 1000);
  printf("8 %d\\n", $ns);
}}
"""
    more_end = (" clear(@gc_pstart); clear(@gc_ptype);" if perform else "") + \
        (" clear(@gc_istart);" if len(incremental) == 2 else "")
    return extra + f"""
uprobe:{exe}:{pro:#x} /pid == {pid}/ {{ @gc_start[tid, arg1 & 0xff] = nsecs; }}
uprobe:{exe}:{epi:#x} /pid == {pid} && @gc_start[tid, arg1 & 0xff]/ {{
  $t = arg1 & 0xff;
  $ns = nsecs - @gc_start[tid, $t];
  delete(@gc_start[tid, $t]);
  @gc_count[$t] = count();
  @gc_hist[$t] = hist($ns / 1000);
  @gc_max[$t] = max($ns / 1000);
  @gc_sum[$t] = sum($ns / 1000);
  printf("%d %d\\n", $t, $ns);
}}
END {{ clear(@gc_start);{more_end} }}
"""


@dataclass
class GcKind:
    type: str
    count: int
    total_us: int
    max_us: int
    histogram: Histogram


@dataclass
class GcReport:
    count: int
    kinds: list[GcKind] = field(default_factory=list)
    events: list[tuple[str, float]] = field(default_factory=list)  # (type, pause µs)
    events_dropped: int = 0
    lost: int = 0


def decode(out: Output, sites: Sites) -> GcReport:
    names: dict[int, str] = sites.facts.get("gc_types", {})

    def name(t: int) -> str:
        return names.get(t, f"type-{t}")

    counts = out.maps.get("@gc_count") or {}
    hists = out.maps.get("@gc_hist") or {}
    maxes = out.maps.get("@gc_max") or {}
    sums = out.maps.get("@gc_sum") or {}
    kinds = []
    for key, n in sorted(counts.items(), key=lambda kv: -int(kv[1])):  # type: ignore[union-attr]
        t = int(key)
        kinds.append(GcKind(name(t), int(n), int(sums.get(key, 0)), int(maxes.get(key, 0)),  # type: ignore[union-attr]
                            Histogram.from_bpftrace(hists.get(key))))  # type: ignore[union-attr]
    events = []
    for ln in out.lines:
        parts = ln.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            events.append((name(int(parts[0])), int(parts[1]) / 1000.0))
    return GcReport(sum(k.count for k in kinds), kinds, events, out.lines_dropped, out.lost)
