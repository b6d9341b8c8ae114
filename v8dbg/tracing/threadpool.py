"""`trace threadpool`: each unit of libuv thread-pool work, from queueing
(uv_queue_work, uv__work_submit) through the start and end of its work
function on a pool thread, by the kind of job that queued it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..inferior.bpftrace import Output
from ..inferior.elf import ElfFile
from ..v8.probes import Sites, class_of_vtable, function_at
from .histogram import Histogram

SITES = ["uv_queue_work", "uv_work_submit", "uv_work_functions", "node_pool_work"]

# libuv's own jobs, by the work function the pool runs for them.
LIBUV_KINDS = {"uv__fs_work": "FSReq", "uv__getaddrinfo_work": "GetAddrInfo",
               "uv__getnameinfo_work": "GetNameInfo", "uv__random_work": "Random"}


def program(sites: Sites, exe: str, pid: int) -> str:
    """Each job's key is what names its kind: the vtable of node's own
    ThreadPoolWork jobs, an add-on's work_cb, libuv's work function."""
    f = sites.facts
    work_fns = [sites.addrs[k] for k in sorted(sites.addrs) if k.startswith("uv_work_functions.")]
    queue_fn = sites.addrs.get("uv_work_functions.0")  # uv__queue_work
    req_off, tpw_off = f["uv_work_t_work_req"], f["ThreadPoolWork_work_req"]
    entries = ", ".join(f"uprobe:{exe}:{a:#x}" for a in work_fns)
    returns = ", ".join(f"uretprobe:{exe}:{a:#x}" for a in work_fns)
    skip_queue = f"arg3 != {queue_fn:#x}" if queue_fn else "1"
    return f"""
uprobe:{exe}:{sites.addr("uv_queue_work"):#x} /pid == {pid}/ {{
  $w = arg1 + {req_off};
  $k = arg2;
  if (arg2 == {sites.addr("node_pool_work"):#x}) {{ $k = *(uint64 *)(arg1 - {tpw_off}); }}
  @tp_kind[$w] = $k;
  @tp_t0[$w] = nsecs;
}}
uprobe:{exe}:{sites.addr("uv_work_submit"):#x} /pid == {pid} && {skip_queue}/ {{
  @tp_kind[arg1] = arg3;
  @tp_t0[arg1] = nsecs;
}}
{entries} /pid == {pid} && @tp_t0[arg0]/ {{
  @tp_t1[arg0] = nsecs;
  @tp_cur[tid] = arg0;
}}
{returns} /pid == {pid} && @tp_cur[tid]/ {{
  $w = @tp_cur[tid];
  $k = @tp_kind[$w];
  $wait = (@tp_t1[$w] - @tp_t0[$w]) / 1000;
  $run = (nsecs - @tp_t1[$w]) / 1000;
  $all = (nsecs - @tp_t0[$w]) / 1000;
  @tp_count[$k] = count();
  @tp_wait[$k] = hist($wait);
  @tp_wait_max[$k] = max($wait);
  @tp_run[$k] = hist($run);
  @tp_run_max[$k] = max($run);
  @tp_lat[$k] = hist($all);
  @tp_lat_max[$k] = max($all);
  delete(@tp_cur[tid]);
  delete(@tp_t0[$w]);
  delete(@tp_t1[$w]);
  delete(@tp_kind[$w]);
}}
END {{ clear(@tp_kind); clear(@tp_t0); clear(@tp_t1); clear(@tp_cur); }}
"""


@dataclass
class Stage:
    """One stage's latency, µs: p50/p99 from the kernel's histogram (the
    upper bound of the bucket that holds them), max exact."""
    p50_us: int | None
    p99_us: int | None
    max_us: int
    histogram: Histogram


@dataclass
class PoolKind:
    kind: str
    key: str  # the address that named it (vtable, work_cb, work function)
    count: int
    total: Stage  # queued to work done
    wait: Stage  # queued to started on a pool thread
    run: Stage  # started to done


@dataclass
class PoolReport:
    kinds: list[PoolKind] = field(default_factory=list)
    lost: int = 0


def kind_name(elf: ElfFile, addr: int) -> str:
    """A job's kind: node's job class (PBKDF2, Scrypt, Zlib...), libuv's own
    job (FSReq...), or an add-on's work function."""
    cls = class_of_vtable(elf, addr)
    if cls:
        # node::crypto::DeriveBitsJob<node::crypto::PBKDF2Traits> -> PBKDF2
        arg = re.search(r"<(?:[\w:()\s]+::)?(\w+?)(?:Traits|Context|Config)?>\s*$", cls)
        if arg:
            return arg.group(1)
        name = cls.rsplit("::", 1)[-1]
        return name[:-len("Stream")] if name.endswith("Stream") and len(name) > 6 else name
    fn = function_at(elf, addr)
    if fn:
        base = fn.split("(")[0]
        return LIBUV_KINDS.get(base, base)
    return f"{addr:#x}"


def _stage(hists: dict, maxes: dict, key: str) -> Stage:
    h = Histogram.from_bpftrace(hists.get(key))
    mx = int(maxes.get(key, 0))
    return Stage(h.percentile(50, mx), h.percentile(99, mx), mx, h)


def decode(out: Output, elf: ElfFile) -> PoolReport:
    m = out.maps
    counts = m.get("@tp_count") or {}
    kinds = []
    for key, n in counts.items():  # type: ignore[union-attr]
        kinds.append(PoolKind(kind_name(elf, int(key)), f"{int(key):#x}", int(n),
                              _stage(m.get("@tp_lat") or {}, m.get("@tp_lat_max") or {}, key),  # type: ignore[arg-type]
                              _stage(m.get("@tp_wait") or {}, m.get("@tp_wait_max") or {}, key),  # type: ignore[arg-type]
                              _stage(m.get("@tp_run") or {}, m.get("@tp_run_max") or {}, key)))  # type: ignore[arg-type]
    kinds.sort(key=lambda k: (-k.count, k.kind))
    return PoolReport(kinds, out.lost)
