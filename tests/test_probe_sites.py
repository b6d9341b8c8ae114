"""Every uprobe `trace` places, on every pinned line, is on an instruction
the kernel emulates (a push or a nop): a single-stepped one costs ten times
as much a hit (inferior/uprobes.py). No BPF needed: the programs are built
from each line's binary and their probe addresses read back."""

from __future__ import annotations

import os
import re

import pytest

from support import VERSIONS, node_binary


@pytest.mark.parametrize("version", VERSIONS)
def test_every_probe_is_emulated(version):
    from v8dbg.inferior.elf import open_elf
    from v8dbg.inferior.uprobes import cheap_entry
    from v8dbg.tracing import gc, http, threadpool
    from v8dbg.v8 import probes
    exe = os.path.realpath(node_binary(version))
    elf = open_elf(exe)
    for mod in (gc, threadpool, http):
        sites = probes.find(elf, mod.SITES, getattr(mod, "OPTIONAL", []))
        text = mod.program(sites, exe, 1, elf)
        addrs = [int(a, 16) for a in re.findall(r"u(?:ret)?probe:[^:]+:(0x[0-9a-f]+)", text)]
        assert addrs, text
        slow = [f"{a:#x} {probes.function_at(elf, a)}" for a in addrs if not cheap_entry(elf, a)]
        assert not slow, f"{mod.__name__}: single-stepped probes on {version}: {slow}"


@pytest.mark.parametrize("version", VERSIONS)
def test_worker_sites_are_emulated(version):
    """Where uv__queue_work's entry would be single-stepped (node 18 to 24),
    the two perf-event uprobes in libuv's worker() that time an add-on's
    uv_queue_work jobs in its place are found, and are calls the kernel
    emulates; where it is not (26), none is needed. That they fire:
    test_trace.py::test_threadpool_addon_jobs times those jobs."""
    from v8dbg.inferior.elf import open_elf
    from v8dbg.inferior.uprobes import cheap_entry
    from v8dbg.tracing import threadpool, uvwork
    from v8dbg.v8 import probes
    elf = open_elf(os.path.realpath(node_binary(version)))
    sites = probes.find(elf, threadpool.SITES, threadpool.OPTIONAL)
    ws = uvwork.worker_sites(elf, sites)
    queue_fn = sites.addr("uv_work_functions.0")
    if cheap_entry(elf, queue_fn):
        assert ws is None, ws
        return
    assert ws is not None, f"{version}: no worker() call sites (the table or the binary changed)"
    for at in (ws.before, ws.after):
        assert cheap_entry(elf, at), f"{version}: {at:#x} would be single-stepped"
        assert probes.function_at(elf, at) == "worker", probes.function_at(elf, at)
