"""`trace http`: server requests per method and URL, from node's llhttp
callbacks (the request line and headers parsed) to the first write on the
same connection (its response going out)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..inferior.bpftrace import Output
from ..inferior.elf import ElfFile
from .histogram import Histogram
from ..v8.probes import Sites

SITES = ["http_message_begin", "http_url", "http_headers_complete"]

# llhttp's method numbers (llhttp.h, llhttp_method_t), the common ones.
METHODS = {0: "DELETE", 1: "GET", 2: "HEAD", 3: "POST", 4: "PUT", 5: "CONNECT",
           6: "OPTIONS", 7: "TRACE", 28: "PATCH", 33: "PURGE", 34: "MKCOL"}


def program(sites: Sites, exe: str, pid: int) -> str:
    """The connection is the fd the event-loop thread last read: llhttp runs
    inside node's read callback, right after libuv's read(2) of that socket."""
    meth = sites.facts["llhttp_method"]
    return f"""
tracepoint:syscalls:sys_enter_read /pid == {pid}/ {{ @http_rfd[tid] = args->fd; }}
uprobe:{exe}:{sites.addr("http_message_begin"):#x} /pid == {pid}/ {{
  @http_conn[arg0] = @http_rfd[tid];
  @http_url[arg0] = "";
}}
uprobe:{exe}:{sites.addr("http_url"):#x} /pid == {pid}/ {{ @http_url[arg0] = str(arg1, arg2); }}
uprobe:{exe}:{sites.addr("http_headers_complete"):#x} /pid == {pid}/ {{
  $fd = @http_conn[arg0];
  @http_t0[$fd] = nsecs;
  @http_parser[$fd] = arg0;
  @http_method[arg0] = *(uint8 *)(arg0 + {meth});
}}
tracepoint:syscalls:sys_enter_write, tracepoint:syscalls:sys_enter_writev
/pid == {pid} && @http_t0[args->fd]/ {{
  $p = @http_parser[args->fd];
  $us = (nsecs - @http_t0[args->fd]) / 1000;
  delete(@http_t0[args->fd]);
  @http_lat[@http_method[$p], @http_url[$p]] = hist($us);
  @http_max[@http_method[$p], @http_url[$p]] = max($us);
}}
END {{ clear(@http_rfd); clear(@http_conn); clear(@http_url); clear(@http_t0);
      clear(@http_method); clear(@http_parser); }}
"""


@dataclass
class UrlStats:
    method: str
    url: str
    count: int
    p50_us: int | None
    p99_us: int | None
    max_us: int
    histogram: Histogram


@dataclass
class HttpReport:
    urls: list[UrlStats] = field(default_factory=list)
    lost: int = 0


def _split(key: str) -> tuple[int, str]:
    """bpftrace prints a (method, url) key as `1,/alpha`."""
    m, _, url = key.partition(",")
    return int(m), url


def decode(out: Output, elf: ElfFile) -> HttpReport:
    m = out.maps
    hists = m.get("@http_lat") or {}
    maxes = m.get("@http_max") or {}
    urls = []
    for key, rows in hists.items():  # type: ignore[union-attr]
        meth, url = _split(key)
        h = Histogram.from_bpftrace(rows)
        mx = int(maxes.get(key, 0))  # type: ignore[union-attr]
        urls.append(UrlStats(METHODS.get(meth, f"method-{meth}"), url, h.count,
                             h.percentile(50, mx), h.percentile(99, mx), mx, h))
    urls.sort(key=lambda u: (-u.count, u.url, u.method))
    return HttpReport(urls, out.lost)
