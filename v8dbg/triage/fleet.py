"""A fleet's cores read in parallel and grouped into buckets by signature.

One task per core, in a process pool on this machine or on a Dask cluster
(`distributed`, an optional extra): workers get the core's path or URL and
read it where it lies; only the small CoreCrash / CoreProblem comes back, and
the buckets are made here, in the client.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import V8DbgError
from .crash import CoreCrash, CoreProblem, crash_of

DASK_CONNECT_TIMEOUT = 15.0  # seconds to reach a scheduler

Result = CoreCrash | CoreProblem


@dataclass
class Bucket:
    """The cores of one signature; `example` is the first core (by path) in it."""

    signature: str
    crashes: list[CoreCrash] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.crashes)

    @property
    def example(self) -> CoreCrash:
        return self.crashes[0]

    @property
    def node_versions(self) -> list[str]:
        return sorted({c.node_version or "?" for c in self.crashes}, key=_version_key)


def _version_key(v: str) -> tuple:
    try:
        return tuple(int(x) for x in v.lstrip("v").split("."))
    except ValueError:
        return (1 << 30, v)


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def buckets_of(results: list[Result]) -> tuple[list[Bucket], list[CoreProblem]]:
    """Buckets by count (then signature), each's cores by path; problems by path."""
    by: dict[str, Bucket] = {}
    problems: list[CoreProblem] = []
    for r in results:
        if isinstance(r, CoreProblem):
            problems.append(r)
        else:
            by.setdefault(r.signature, Bucket(r.signature)).crashes.append(r)
    for b in by.values():
        b.crashes.sort(key=lambda c: c.path)
    return (sorted(by.values(), key=lambda b: (-b.count, b.signature)),
            sorted(problems, key=lambda p: p.path))


def _ignore_interrupt() -> None:
    """A pool worker leaves Ctrl-C to the client, which stops the run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_local(cores: list[str], binary_dirs: tuple[str, ...], workers: int) -> Iterator[Result]:
    """Each core's result as it is done, `workers` processes at a time (in
    this process with one)."""
    if workers <= 1 or len(cores) <= 1:
        for c in cores:
            yield crash_of(c, binary_dirs)
        return
    # (Imported here: the pool's modules cost every other command's start-up
    # some 10 ms.)
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context
    with ProcessPoolExecutor(max_workers=min(workers, len(cores)),
                             mp_context=get_context("fork"),
                             initializer=_ignore_interrupt) as pool:
        futures = [pool.submit(crash_of, c, binary_dirs) for c in cores]
        try:
            for f in as_completed(futures):
                yield f.result()
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def run_dask(cores: list[str], binary_dirs: tuple[str, ...], address: str) -> Iterator[Result]:
    """Each core's result as a Dask cluster's workers finish it."""
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise V8DbgError("--dask needs Dask's distributed package: "
                         "pip install 'v8dbg[dask]'") from None
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as e:
        raise V8DbgError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    try:
        if not cores:
            return
        # pure=False: two paths may name the same file, each is its own task.
        futures = client.map(crash_of, cores, binary_dirs=binary_dirs, pure=False)
        try:
            for f in dask_completed(futures, loop=client.loop):
                try:
                    yield f.result()
                except Exception as e:  # noqa: BLE001 -- a worker lost, not one bad core
                    yield CoreProblem(cores[futures.index(f)], f"the Dask task failed: {e}")
        finally:
            client.cancel(futures)
    finally:
        client.close()


def run(cores: list[str], binary_dirs: tuple[str, ...] = (), workers: int | None = None,
        dask: str | None = None,
        progress: Callable[[int, int, int], None] | None = None) -> list[Result]:
    """Every core's result; `progress(done, total, errors)` after each."""
    it = (run_dask(cores, binary_dirs, dask) if dask else
          run_local(cores, binary_dirs, workers or default_workers()))
    out: list[Result] = []
    errors = 0
    for r in it:
        out.append(r)
        errors += isinstance(r, CoreProblem)
        if progress is not None:
            progress(len(out), len(cores), errors)
    return out
