"""The join of uv_queue_work records (bpftrace's lines) with worker()'s
perf-event hits (tracing/uvwork.py), on made-up hits: a request address
used again, hits before their line, other jobs' runs let go. The real
thing: test_trace.py::test_threadpool_addon_jobs."""

from __future__ import annotations

from v8dbg.inferior.perf_uprobes import Hit
from v8dbg.tracing.uvwork import GRACE_NS, Joiner

BEFORE, AFTER, WQ = 0x1000, 0x2000, 0x18


def run(tid: int, w: int, start: int, end: int) -> list[Hit]:
    return [Hit(BEFORE, tid, start, w + WQ), Hit(AFTER, tid, end, w + WQ)]


def test_join_by_request_in_time_order() -> None:
    j = Joiner(BEFORE, AFTER, WQ)
    w = 0x7000
    # The same request queued twice (freed and allocated again): each run
    # takes the latest record before it.
    j.hits(run(1, w, 2_000_000, 42_000_000))
    j.lines([f"@tpq {w} 11 1000000"])  # a line may come after the hits it belongs to
    j.join()
    j.lines([f"@tpq {w} 12 50000000", "something else"])
    j.hits(run(2, w, 51_000_000, 71_000_000))
    j.join(final=True)
    assert [(t.key, t.wait_us, t.run_us, t.total_us) for t in j.done] == [
        (11, 1000, 40000, 41000), (12, 1000, 20000, 21000)]
    assert j.unjoined() == {} and j.held == 0


def test_other_jobs_let_go_and_unfinished_reported() -> None:
    j = Joiner(BEFORE, AFTER, WQ)
    j.lines(["@tpq 16 7 1000"])  # queued, never seen to run
    j.hits(run(1, 0x9000, 2000, 3000))  # node's own job: no record claims it
    j.hits([Hit(BEFORE, 1, GRACE_NS + 10_000, 0x9100 + WQ)])  # a later hit moves time on
    j.join()
    assert j.runs == type(j.runs)() and j.done == []
    assert j.unjoined() == {7: 1}


def test_end_without_its_start_is_not_a_run() -> None:
    j = Joiner(BEFORE, AFTER, WQ)
    j.lines(["@tpq 4096 5 0"])
    j.hits([Hit(AFTER, 3, 10, 4096 + WQ), Hit(BEFORE, 3, 20, 4096 + WQ),
            Hit(AFTER, 3, 30, 8192 + WQ)])  # another w ends: not this job's end
    j.join(final=True)
    assert j.done == [] and j.unjoined() == {5: 1}


def test_earlier_job_of_a_reused_request_is_untimed_not_lost() -> None:
    """A job that ran before the probes were placed, whose request address a
    later job reuses: the later run takes the later record, the earlier job
    is counted untimed (not dropped)."""
    j = Joiner(BEFORE, AFTER, WQ)
    w = 0x5000
    j.lines([f"@tpq {w} 9 1000"])  # ran unseen: no hits
    j.lines([f"@tpq {w} 9 5000000"])
    j.hits(run(1, w, 6_000_000, 46_000_000))
    j.join(final=True)
    assert [(t.key, t.wait_us, t.run_us) for t in j.done] == [(9, 1000, 40000)]
    assert j.unjoined() == {9: 1} and j.held == 0
