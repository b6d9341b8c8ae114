"""What a uprobe costs where it is placed (x86-64).

A uprobe replaces the instruction with int3; on the hit the kernel either
emulates the instruction it displaced or single-steps a copy of it out of
line, which takes a second trap. Linux emulates the pushes of a register and
the nops (and relative jumps and calls); anything else is single-stepped.
Measured here (KVM guest, kernel 6.18, bpftrace 0.17, an empty probe): about
1.5-3 µs a hit on `push %rbp` or `nop`, 18-28 µs on `endbr64` or a `lea`. So
`trace` puts its probes on function entries whose first instruction is
emulated, choosing another site where a release's first instruction is not.
"""

from __future__ import annotations

from .elf import ElfFile


def emulated(code: bytes) -> bool:
    """True when the kernel emulates the instruction `code` starts with."""
    if not code:
        return False
    b = code[0]
    if 0x50 <= b <= 0x57 or b == 0x90:  # push %rax..%rdi, nop
        return True
    if b == 0x41 and len(code) > 1 and 0x50 <= code[1] <= 0x57:  # push %r8..%r15
        return True
    if b == 0x66 and len(code) > 1 and code[1] == 0x90:  # xchg %ax,%ax
        return True
    if b == 0x0F and len(code) > 1 and code[1] == 0x1F:  # nopl/nopw
        return True
    if b in (0xE8, 0xE9, 0xEB):  # call rel32, jmp rel32, jmp rel8
        return True
    return False


def cheap_entry(elf: ElfFile, addr: int) -> bool:
    """True when a uprobe at `addr` (link-time) is emulated, not single-stepped."""
    return emulated(elf.read(addr, 4) or b"")
