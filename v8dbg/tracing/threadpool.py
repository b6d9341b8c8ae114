"""`trace threadpool`: each unit of libuv thread-pool work, from queueing
(uv_queue_work, uv__work_submit) through the start and end of its work
function on a pool thread, by the kind of job that queued it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import V8DbgError
from ..inferior.backend import proc_maps
from ..inferior.bpftrace import Output
from ..inferior.elf import ElfFile, open_elf
from ..inferior.process import LoadedModule
from ..inferior.uprobes import cheap_entry
from ..v8.probes import Sites, class_of_vtable, function_at
from . import uvwork
from .histogram import Histogram

SITES = ["uv_queue_work", "uv_work_submit", "uv_work_functions", "node_pool_work"]
OPTIONAL = ["uv_once", "napi_work_vtable", "uv_worker", "uv_mutex_unlock", "uv_mutex_lock"]

# libuv's own jobs, by the work function the pool runs for them.
LIBUV_KINDS = {"uv__fs_work": "FSReq", "uv__getaddrinfo_work": "GetAddrInfo",
               "uv__getnameinfo_work": "GetNameInfo", "uv__random_work": "Random"}


def program(sites: Sites, exe: str, pid: int, elf: ElfFile, worker_timed: bool = False) -> str:
    """Three probe hits a job: where it is queued (uv_queue_work, which
    inlines uv__work_submit, or uv__work_submit for libuv's own jobs; where
    uv_queue_work starts with an instruction the kernel single-steps, both
    as they call uv_once, told apart by the return address) its
    kind is named (the vtable of node's own ThreadPoolWork jobs, an add-on's
    work_cb, libuv's work function) and the time taken; the work function's
    entry and return (a uretprobe) on a pool thread time the run. Each
    probe costs most where the kernel must single-step the instruction
    (inferior/uprobes.py): uv_queue_work's jobs run in uv__queue_work, which
    calls the job's work_cb, and where uv__queue_work's first instruction
    would be single-stepped node's ThreadPoolWork callback is probed in its
    place; other work_cbs (an add-on calling uv_queue_work itself) are then
    counted when queued, by their function, but not timed: timing them
    would need uv__queue_work's entry (single-stepped: ~20 µs on every
    uv_queue_work job, node's own too), a probe inside libuv's worker() on
    its direct calls around the job (bpftrace 0.17 as the distribution builds
    it refuses any probe off a function's start: it cannot check the
    instruction boundary), or the entries of what worker() calls there,
    uv_mutex_lock/unlock (about 11 hits a job from all of node). With
    `worker_timed`, such a job is printed instead (w, work_cb, time) for
    the perf-event uprobes on those calls in worker() to time
    (tracing/uvwork.py). An N-API async work is one of node's jobs, named
    by the add-on's execute callback rather than by node's class."""
    f = sites.facts
    queue_fn = sites.addrs.get("uv_work_functions.0")  # uv__queue_work
    node_fn = sites.addr("node_pool_work")
    req_off, tpw_off = f["uv_work_t_work_req"], f["ThreadPoolWork_work_req"]
    time_queue = queue_fn is not None and cheap_entry(elf, queue_fn)
    work_fns = [sites.addrs[k] for k in sorted(sites.addrs)
                if k.startswith("uv_work_functions.") and (k != "uv_work_functions.0" or time_queue)]
    timed = ", ".join(f"uprobe:{exe}:{a:#x}" for a in work_fns)
    returns = ", ".join(f"uretprobe:{exe}:{a:#x}" for a in work_fns)
    skip_queue = f"arg3 != {queue_fn:#x}" if queue_fn else "1"
    qw, submit = sites.addr("uv_queue_work"), sites.addr("uv_work_submit")
    once = _once_site(elf, sites, qw, "uv_queue_work_once")
    submit_once = _once_site(elf, sites, submit, "uv_work_submit_once", cheap_too=True) \
        if once else None
    if once is None:  # a probe on uv_queue_work's entry: (loop, req, work_cb, after)
        site, req, cb = f"uprobe:{exe}:{qw:#x} /pid == {pid}/", "arg1", "arg2"
    else:  # on uv_once's entry, called from uv_queue_work with the request in a register
        ret, reg = once[0], once[1]
        site = (f"uprobe:{exe}:{sites.addr('uv_once'):#x} /pid == {pid}/ {{\n"
                f"  $ret = *(uint64 *)reg(\"sp\");\n  if ($ret == {ret:#x})")
        req, cb = f'reg("{reg}")', f'*(uint64 *)(reg("{reg}") + {f["uv_work_t_work_cb"]})'
    napi = _napi_work(elf, sites, req)
    untimed = (f'printf("{uvwork.LINE} %lu %lu %lu\\n", $w, $k, nsecs);' if worker_timed
               else "@tp_untimed[$k] = count();")
    queue_job = f"""{{
  $w = {req} + {req_off};
  $k = {cb};
  $timed = {1 if time_queue else 0};
  if ($k == {node_fn:#x}) {{ $k = *(uint64 *)({req} - {tpw_off}); $timed = 1;{napi} }}
  if ($timed) {{ @tp_q[$w] = ($k, nsecs); }}
  else {{ {untimed} }}
}}"""
    if once is None:
        queued = f"\n{site} {queue_job}"
    elif submit_once is None:
        queued = f"\n{site} {queue_job}\n}}"
    else:  # the same uv_once probe, called from uv__work_submit: w and work in the caller's frame
        sret, wreg, work = submit_once
        queued = f"""
{site} {queue_job}
  if ($ret == {sret:#x} && {_value(work)} != {queue_fn or 0:#x}) {{
    @tp_q[reg("{wreg}")] = ({_value(work)}, nsecs);
  }}
}}"""
    if submit_once is None:
        queued += f"""
uprobe:{exe}:{submit:#x} /pid == {pid} && {skip_queue}/ {{
  @tp_q[arg1] = (arg3, nsecs);
}}"""
    node_probe = "" if time_queue else f"""
uprobe:{exe}:{node_fn:#x} /pid == {pid} && @tp_q[arg0 + {req_off}].1/ {{
  $w = arg0 + {req_off};
  @tp_cur[tid] = (@tp_q[$w].0, @tp_q[$w].1, nsecs);
  delete(@tp_q[$w]);
}}"""
    if not time_queue:
        returns += f", uretprobe:{exe}:{node_fn:#x}"
    return queued + node_probe + f"""
{timed} /pid == {pid} && @tp_q[arg0].1/ {{
  @tp_cur[tid] = (@tp_q[arg0].0, @tp_q[arg0].1, nsecs);
  delete(@tp_q[arg0]);
}}
{returns} /pid == {pid} && @tp_cur[tid].1/ {{
  $c = @tp_cur[tid];
  delete(@tp_cur[tid]);
  $k = $c.0;
  $wait = ($c.2 - $c.1) / 1000;
  $run = (nsecs - $c.2) / 1000;
  $all = (nsecs - $c.1) / 1000;
  @tp_count[$k] = count();
  @tp_wait[$k] = hist($wait);
  @tp_wait_max[$k] = max($wait);
  @tp_run[$k] = hist($run);
  @tp_run_max[$k] = max($run);
  @tp_lat[$k] = hist($all);
  @tp_lat_max[$k] = max($all);
}}
END {{ clear(@tp_q); clear(@tp_cur); }}
"""


def _once_site(elf: ElfFile, sites: Sites, caller: int, fact_name: str,
               cheap_too: bool = False) -> tuple | None:
    """(return address, *where the values are) of `caller`'s call of
    uv_once, from the line's table entry `fact_name`: where the caller's own
    entry would be single-stepped (or `cheap_too`), the table has the site,
    and the binary has a call of uv_once right there; else None."""
    fact = sites.facts.get(fact_name)
    once = sites.addrs.get("uv_once")
    if not fact or once is None or (cheap_entry(elf, caller) and not cheap_too):
        return None
    ret = caller + fact[0]
    call = elf.read(ret - 5, 5) or b""
    if len(call) != 5 or call[0] != 0xE8:
        return None
    if ret + int.from_bytes(call[1:], "little", signed=True) != once:
        return None
    return (ret, *fact[1:])


def _napi_work(elf: ElfFile, sites: Sites, req: str) -> str:
    """bpftrace statements that, for a job whose vtable ($k) is N-API's
    async work class, take the add-on's execute callback as its kind; ""
    where the line's table or the binary lacks them."""
    vt = sites.addrs.get("napi_work_vtable")
    off = sites.facts.get("napi_work_execute")
    span = elf.symbol_start(vt) if vt is not None else None
    if vt is None or off is None or span is None or span[0] != vt or not span[1]:
        return ""
    return (f"\n    if ($k >= {vt:#x} && $k < {vt + span[1]:#x}) "
            f"{{ $k = *(uint64 *)({req} + {off}); }}")


def _value(where: str) -> str:
    """A bpftrace expression for a register ("r14") or a caller's frame slot ("bp-0x30")."""
    if "-" in where:
        reg, off = where.split("-", 1)
        return f'*(uint64 *)(reg("{reg}") - {off})'
    return f'reg("{where}")'



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
class Untimed:
    """Jobs counted when queued, not timed (see program())."""
    kind: str
    key: str
    count: int


@dataclass
class PoolReport:
    kinds: list[PoolKind] = field(default_factory=list)
    lost: int = 0
    untimed: list[Untimed] = field(default_factory=list)
    untimed_why: str | None = None  # why the untimed jobs were not timed


class MappedFunctions:
    """The functions of the other files a live process mapped (an add-on's
    .node), by runtime address: /proc/PID/maps read once, each file's
    symbol table read from the file when first asked."""

    def __init__(self, pid: int) -> None:
        self.maps = [m for m in proc_maps(pid) if not m.path.endswith(" (deleted)")]
        self._files: dict[str, tuple[ElfFile, list] | None] = {}

    def name(self, addr: int) -> str | None:
        m = next((m for m in self.maps if m.start <= addr < m.end), None)
        if m is None:
            return None
        if m.path not in self._files:
            try:
                elf = open_elf(m.path)
                same = [(x.start, x.end, x.offset) for x in self.maps if x.path == m.path]
                self._files[m.path] = (elf, elf.loader_links(same))
            except (V8DbgError, OSError, ValueError):
                self._files[m.path] = None
        found = self._files[m.path]
        if found is None:
            return None
        elf, links = found
        link = LoadedModule(m.start, m.end, m.offset, m.path, elf, links=links).link_address(addr)
        return function_at(elf, link) if link is not None else None


def kind_name(elf: ElfFile, addr: int, mapped: MappedFunctions | None = None) -> str:
    """A job's kind: node's job class (PBKDF2, Scrypt, Zlib...), libuv's own
    job (FSReq...), or an add-on's work function (its N-API execute
    callback or uv_queue_work's work_cb), from the add-on's file."""
    cls = class_of_vtable(elf, addr)
    if cls:
        # node::crypto::DeriveBitsJob<node::crypto::PBKDF2Traits> -> PBKDF2
        arg = re.search(r"<(?:[\w:()\s]+::)?(\w+?)(?:Traits|Context|Config)?>\s*$", cls)
        if arg:
            return arg.group(1)
        name = cls.rsplit("::", 1)[-1]
        return name[:-len("Stream")] if name.endswith("Stream") and len(name) > 6 else name
    fn = function_at(elf, addr) or (mapped.name(addr) if mapped is not None else None)
    if fn:
        base = fn.split("(")[0]
        return LIBUV_KINDS.get(base, base)
    return f"{addr:#x}"


def _stage(hists: dict, maxes: dict, key: str) -> Stage:
    h = Histogram.from_bpftrace(hists.get(key))
    mx = int(maxes.get(key, 0))
    return Stage(h.percentile(50, mx), h.percentile(99, mx), mx, h)


def decode(out: Output, elf: ElfFile, pid: int | None = None,
           joined: uvwork.Joiner | None = None, untimed_why: str | None = None) -> PoolReport:
    """The report; an add-on's functions are named from the files process
    `pid` maps (read now: while it still runs); `joined`: the jobs timed
    in worker() (uvwork.py), and those it could not."""
    m = out.maps
    mapped = MappedFunctions(pid) if pid is not None else None
    counts = m.get("@tp_count") or {}
    kinds = []
    for key, n in counts.items():  # type: ignore[union-attr]
        kinds.append(PoolKind(kind_name(elf, int(key), mapped), f"{int(key):#x}", int(n),
                              _stage(m.get("@tp_lat") or {}, m.get("@tp_lat_max") or {}, key),  # type: ignore[arg-type]
                              _stage(m.get("@tp_wait") or {}, m.get("@tp_wait_max") or {}, key),  # type: ignore[arg-type]
                              _stage(m.get("@tp_run") or {}, m.get("@tp_run_max") or {}, key)))  # type: ignore[arg-type]
    untimed = [Untimed(kind_name(elf, int(key), mapped), f"{int(key):#x}", int(n))
               for key, n in (m.get("@tp_untimed") or {}).items()]  # type: ignore[union-attr]
    if joined is not None:
        kinds += _worker_kinds(joined, elf, mapped)
        untimed += [Untimed(kind_name(elf, key, mapped), f"{key:#x}", n)
                    for key, n in joined.unjoined().items()]
        if joined.unjoined():
            untimed_why = ("not seen to finish: run before the probes that time them were "
                           "placed (at the first such job), still running when tracing "
                           "stopped, or run on a pool thread that started during the trace")
        if joined.dropped:
            untimed_why = (f"{joined.dropped} job records past the first "
                           f"{uvwork.MAX_PENDING:,} held unjoined were not kept")
    if out.lines_dropped:
        untimed_why = f"{out.lines_dropped} job records past bpftrace's line cap were not read"
    kinds.sort(key=lambda k: (-k.count, k.kind))
    untimed.sort(key=lambda u: (-u.count, u.kind))
    lost = out.lost + (joined.lost if joined is not None else 0)
    return PoolReport(kinds, lost, untimed, untimed_why if untimed else None)


def _worker_kinds(joined: uvwork.Joiner, elf: ElfFile,
                  mapped: MappedFunctions | None) -> list[PoolKind]:
    """The jobs timed in worker(), by their work_cb, with the same stages."""
    by: dict[int, list[uvwork.Timed]] = {}
    for t in joined.done:
        by.setdefault(t.key, []).append(t)
    out = []
    for key, ts in by.items():
        out.append(PoolKind(kind_name(elf, key, mapped), f"{key:#x}", len(ts),
                            _values([t.total_us for t in ts]),
                            _values([t.wait_us for t in ts]),
                            _values([t.run_us for t in ts])))
    return out


def _values(vals: list[int]) -> Stage:
    h = Histogram.from_values(vals)
    mx = max(vals)
    return Stage(h.percentile(50, mx), h.percentile(99, mx), mx, h)
