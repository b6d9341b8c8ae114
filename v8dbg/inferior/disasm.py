"""x86-64 disassembly for the standalone CLI: capstone, else binutils' objdump.

gdb and lldb disassemble with their own disassemblers (in their adapters);
without a debugger, capstone (`pip install v8dbg[disasm]`) is used where it
is installed and objdump otherwise. Both print AT&T syntax, as gdb and lldb
do by default, so the three front ends read alike.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

from ..errors import V8DbgError

MAX_BYTES = 1 << 20  # one function's code; V8's largest optimized code is far smaller


@dataclass(frozen=True)
class Instruction:
    address: int
    size: int
    text: str  # mnemonic and operands


@dataclass
class Disassembly:
    tool: str  # what disassembled it: "capstone 5.0.7", "objdump", "gdb", "lldb"
    instructions: list[Instruction]


def disassemble(address: int, data: bytes) -> Disassembly:
    """Instructions of `data`, which sits at `address` in the target."""
    if len(data) > MAX_BYTES:
        raise V8DbgError(f"{len(data)} bytes of code is more than v8dbg disassembles "
                         f"({MAX_BYTES})")
    try:
        import capstone  # type: ignore[import-not-found]
    except ImportError:
        return _objdump(address, data)
    cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    cs.syntax = capstone.CS_OPT_SYNTAX_ATT
    cs.skipdata = True  # V8's constant pools and padding: shown as .byte, and go on
    out = [Instruction(i.address, i.size, f"{i.mnemonic} {i.op_str}".strip())
           for i in cs.disasm(data, address)]
    return Disassembly(f"capstone {capstone.__version__}", out)


_OBJDUMP_LINE = re.compile(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*\t?(.*)$")


def _objdump(address: int, data: bytes) -> Disassembly:
    """objdump -D on the raw bytes; its continuation lines (long instructions'
    further bytes) are folded into the instruction they belong to."""
    with tempfile.NamedTemporaryFile(prefix="v8dbg-code-", suffix=".bin") as fh:
        fh.write(data)
        fh.flush()
        try:
            res = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64",
                                  f"--adjust-vma={address:#x}", "-w", fh.name],
                                 capture_output=True, text=True, timeout=120,
                                 env={**os.environ, "LC_ALL": "C"})
        except FileNotFoundError:
            raise V8DbgError("no disassembler: install capstone (pip install capstone) "
                             "or binutils' objdump") from None
        except subprocess.TimeoutExpired:
            raise V8DbgError("objdump took over 120 s on this code") from None
    if res.returncode != 0:
        raise V8DbgError(f"objdump failed: {res.stderr.strip()[:200]}")
    out: list[Instruction] = []
    for line in res.stdout.splitlines():
        m = _OBJDUMP_LINE.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        size = len(m.group(2).split())
        text = " ".join(m.group(3).split())
        if out and not text and out[-1].address + out[-1].size == addr:
            last = out.pop()
            out.append(Instruction(last.address, last.size + size, last.text))
            continue
        out.append(Instruction(addr, size, text))
    return Disassembly("objdump", out)
