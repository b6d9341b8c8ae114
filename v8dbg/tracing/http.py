"""`trace http`: server requests per method and URL, from node's llhttp
callbacks (the request line and headers parsed) to the first write on the
same connection (its response going out)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..inferior.bpftrace import Output
from ..inferior.elf import ElfFile
from ..inferior.uprobes import cheap_entry
from .histogram import Histogram
from ..v8.probes import Sites

SITES = ["http_url", "http_headers_complete"]
OPTIONAL = ["http_on_headers_complete"]

# llhttp's method numbers (llhttp.h, llhttp_method_t), the common ones.
METHODS = {0: "DELETE", 1: "GET", 2: "HEAD", 3: "POST", 4: "PUT", 5: "CONNECT",
           6: "OPTIONS", 7: "TRACE", 28: "PATCH", 33: "PURGE", 34: "MKCOL"}


def program(sites: Sites, exe: str, pid: int, elf: ElfFile) -> str:
    """One probe hit a request where the line allows, two elsewhere: the
    headers parsed (the request's method byte in llhttp_t, its URL, the
    time), keyed by the connection: the fd the event-loop thread last read,
    as llhttp runs inside node's read callback right after libuv's read(2)
    of that socket. The response's first write(2)/writev(2) on that fd ends
    it. The system-call tracepoints see every process, so their programs
    test the pid before anything else. Each uprobe is put where the kernel
    emulates the instruction (inferior/uprobes.py): node's llhttp callbacks
    where they start with a push, else the Parser's own on_headers_complete
    (llhttp_t at a per-release offset in it), with the URL read from the
    Parser's url_ rather than from a probe on on_url."""
    f = sites.facts
    meth = f["llhttp_method"]
    raw = sites.addr("http_headers_complete")
    member = sites.addrs.get("http_on_headers_complete")
    if cheap_entry(elf, raw) or member is None or not cheap_entry(elf, member):
        site, llhttp = raw, "arg0"
    else:
        site, llhttp = member, f"(arg0 + {f['Parser_llhttp']})"
    url_raw = sites.addr("http_url")
    if cheap_entry(elf, url_raw) or f.get("llhttp_url") is None:
        url_probe = (f'uprobe:{exe}:{url_raw:#x} /pid == {pid}/ '
                     '{ @http_purl[arg0] = str(arg1, arg2); }')
        url = f"@http_purl[{llhttp}]"
    else:
        url_probe = ""
        at = f["llhttp_url"]  # node's StringPtr url_: str_, on_heap_, size_
        url = f"str(*(uint64 *)({llhttp} + {at}), *(uint64 *)({llhttp} + {at + 16}))"
    return f"""
tracepoint:syscalls:sys_enter_read /pid == {pid}/ {{ @http_rfd[tid] = args->fd; }}
{url_probe}
uprobe:{exe}:{site:#x} /pid == {pid}/ {{
  $fd = @http_rfd[tid];
  @http_t0[$fd] = nsecs;
  @http_method[$fd] = *(uint8 *)({llhttp} + {meth});
  @http_url[$fd] = {url};
}}
tracepoint:syscalls:sys_enter_write, tracepoint:syscalls:sys_enter_writev
/pid == {pid} && @http_t0[args->fd]/ {{
  $us = (nsecs - @http_t0[args->fd]) / 1000;
  delete(@http_t0[args->fd]);
  @http_lat[@http_method[args->fd], @http_url[args->fd]] = hist($us);
  @http_max[@http_method[args->fd], @http_url[args->fd]] = max($us);
}}
END {{ clear(@http_rfd); clear(@http_url); clear(@http_t0); clear(@http_method);{
      " clear(@http_purl);" if url_probe else ""} }}
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
