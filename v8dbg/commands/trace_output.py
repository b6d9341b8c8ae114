"""`trace` reports as text (counts, DTrace-style histograms) and as the
contract's JSON."""

from __future__ import annotations

import json
from typing import Any


def to_json(what: str, report: Any, elapsed: float) -> str:
    doc: dict[str, Any] = {"duration_s": round(elapsed, 3)}
    if what == "gc":
        doc.update(count=report.count,
                   events=[{"type": t, "duration_us": round(us, 1)} for t, us in report.events],
                   histogram={k.type: k.histogram.to_json() for k in report.kinds},
                   types=[{"type": k.type, "count": k.count, "total_us": k.total_us,
                           "max_us": k.max_us} for k in report.kinds])
        if report.events_dropped:
            doc["events_dropped"] = report.events_dropped
    elif what == "threadpool":
        doc["kinds"] = [{"kind": k.kind, "key": k.key, "count": k.count,
                         "p50_us": k.total.p50_us, "p99_us": k.total.p99_us,
                         "max_us": k.total.max_us,
                         "wait": _stage(k.wait), "run": _stage(k.run),
                         "histogram": k.total.histogram.to_json()} for k in report.kinds]
        if report.untimed:
            doc["untimed"] = [{"kind": u.kind, "key": u.key, "count": u.count}
                              for u in report.untimed]
            if report.untimed_why:
                doc["untimed_why"] = report.untimed_why
    else:
        doc["urls"] = [{"method": u.method, "url": u.url, "count": u.count,
                        "p50_us": u.p50_us, "p99_us": u.p99_us, "max_us": u.max_us,
                        "histogram": u.histogram.to_json()} for u in report.urls]
    if report.lost:
        doc["lost_events"] = report.lost
    return json.dumps(doc)


def _stage(s: Any) -> dict:
    return {"p50_us": s.p50_us, "p99_us": s.p99_us, "max_us": s.max_us}


def _us(v: int | None) -> str:
    return "-" if v is None else f"{v}"


def to_text(what: str, report: Any, pid: int, elapsed: float) -> str:
    out: list[str] = []
    if what == "gc":
        out.append(f"process {pid}: {report.count} GCs in {elapsed:.2f} s")
        for k in report.kinds:
            out.append("")
            out.append(f"{k.type}: {k.count}, pause total {k.total_us} µs, max {k.max_us} µs")
            out += k.histogram.render()
        if report.events_dropped:
            out.append(f"({report.events_dropped} GCs past the first {len(report.events)} "
                       "not listed one by one; the counts above hold them)")
    elif what == "threadpool":
        n = sum(k.count for k in report.kinds)
        out.append(f"process {pid}: {n} thread-pool jobs in {elapsed:.2f} s "
                   "(p50/p99 are power-of-two bucket bounds, max exact; µs)")
        out.append(f"{'kind':<28} {'count':>7} {'p50':>8} {'p99':>8} {'max':>8} "
                   f"{'wait p50':>9} {'wait max':>9} {'run p50':>8} {'run max':>8}")
        for k in report.kinds:
            out.append(f"{k.kind[:28]:<28} {k.count:>7} {_us(k.total.p50_us):>8} "
                       f"{_us(k.total.p99_us):>8} {k.total.max_us:>8} {_us(k.wait.p50_us):>9} "
                       f"{k.wait.max_us:>9} {_us(k.run.p50_us):>8} {k.run.max_us:>8}")
        for u in report.untimed:
            out.append(f"{u.kind[:28]:<28} {u.count:>7} queued, not timed "
                       "(uv_queue_work from an add-on)")
        if report.untimed and report.untimed_why:
            out.append(f"  not timed: {report.untimed_why}")
        for k in report.kinds:
            out.append("")
            out.append(f"{k.kind}: queued to done")
            out += k.total.histogram.render()
    else:
        n = sum(u.count for u in report.urls)
        out.append(f"process {pid}: {n} HTTP requests in {elapsed:.2f} s "
                   "(parsed to response written; p50/p99 bucket bounds, max exact; µs)")
        out.append(f"{'method':<8} {'url':<40} {'count':>7} {'p50':>8} {'p99':>8} {'max':>8}")
        for u in report.urls:
            out.append(f"{u.method:<8} {u.url[:40]:<40} {u.count:>7} {_us(u.p50_us):>8} "
                       f"{_us(u.p99_us):>8} {u.max_us:>8}")
        for u in report.urls:
            out.append("")
            out.append(f"{u.method} {u.url}")
            out += u.histogram.render()
    if report.lost:
        out.append(f"v8dbg: the kernel dropped {report.lost} events")
    return "\n".join(out)
