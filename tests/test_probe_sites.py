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
