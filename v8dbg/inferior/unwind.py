"""Walk a thread's machine stack: CFI for native code, frame pointers for V8 code.

V8's builtins and JIT code carry no unwind tables but always keep rbp as a
frame pointer; C/C++ code carries `.eh_frame`. Each step picks the method by
where the pc is, so the walk crosses JS/C++ boundaries in both directions.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TargetMemoryError
from .backend import Registers
from .cfi import RBP, RSP
from .process import Target

MAX_FRAMES = 4096


# x86-64 Linux rt_sigreturn trampoline (glibc's __restore_rt): mov $15, %rax; syscall.
SIGRETURN_CODE = bytes.fromhex("48c7c00f0000000f05")
# Where a signal frame keeps the interrupted registers: the ucontext sits at
# the trampoline's sp; its mcontext (after uc_flags, uc_link and uc_stack)
# holds r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, 8 bytes each.
UC_MCONTEXT = 40
MC_RBP, MC_RSP, MC_RIP = 10 * 8, 15 * 8, 16 * 8


@dataclass
class MachineFrame:
    """One physical frame: the pc being executed and its frame registers."""

    pc: int
    sp: int
    fp: int
    native: bool  # unwound through CFI (C/C++); else a V8 or unknown frame
    interrupted: bool = False  # resumes at pc (a signal arrived there): pc is no return address


def follows_call(prog: Target, addr: int) -> bool:
    """Could addr be a return address: do the bytes before it end in an
    x86-64 call (rel32; or through a register or memory operand, ModRM /2,
    with any REX prefix before it)? A cheap test before a costly lookup."""
    try:
        b = prog.mem.read(addr - 8, 8)
    except TargetMemoryError:
        return False
    if b[3] == 0xE8:  # call rel32
        return True
    for n in range(2, 8):  # FF /2 taking the last n bytes
        op, modrm = b[8 - n], b[9 - n]
        if op != 0xFF or (modrm >> 3) & 7 != 2:
            continue
        mod, rm = modrm >> 6, modrm & 7
        size = 2
        if mod != 3 and rm == 4:
            size += 1  # SIB
        if mod == 1:
            size += 1
        elif mod == 2 or (mod == 0 and rm == 5):
            size += 4
        if size == n:
            return True
    return False


def _sigreturn(prog: Target, pc: int) -> bool:
    """Is pc the signal-return trampoline a handler returns into?"""
    cache = prog.sigreturn_pcs
    hit = cache.get(pc)
    if hit is None:
        try:
            hit = prog.mem.read(pc, len(SIGRETURN_CODE)) == SIGRETURN_CODE
        except TargetMemoryError:
            hit = False
        cache[pc] = hit
    return hit


def walk(prog: Target, regs: Registers, limit: int = MAX_FRAMES,
         caller: bool = False) -> list[MachineFrame]:
    """`caller`: regs.rip is a return address (a frame found on the stack),
    so its unwind rule is looked up at the call, as for every outer frame."""
    starts_at_call = caller
    mem = prog.mem
    pc, sp, fp = regs.rip, regs.rsp, regs.rbp
    frames: list[MachineFrame] = []
    seen: set[tuple[int, int]] = set()
    interrupted = False
    for depth in range(min(limit, MAX_FRAMES)):
        if pc == 0 or (pc, sp) in seen:
            break
        seen.add((pc, sp))
        caller = (depth > 0 or starts_at_call) and not interrupted
        if caller and _sigreturn(prog, pc):
            # A signal handler's frame ends here: go on from the registers the
            # kernel saved when the signal interrupted the code below.
            frames.append(MachineFrame(pc, sp, fp, True))
            try:
                mc = sp + UC_MCONTEXT
                pc, fp, sp = mem.u64(mc + MC_RIP), mem.u64(mc + MC_RBP), mem.u64(mc + MC_RSP)
            except TargetMemoryError:
                break
            interrupted = True
            continue
        lm = prog.module_for(pc)
        rule = None
        if lm is not None and prog.builtin_at(pc) is None and lm.cfi is not None:
            link = lm.link_address(pc - (1 if caller else 0))
            rule = lm.cfi.rule_at(link) if link is not None else None
        was_interrupted, interrupted = interrupted, False
        if rule is not None and rule.cfa_reg in (RSP, RBP):
            frames.append(MachineFrame(pc, sp, fp, True, was_interrupted))
            cfa = (sp if rule.cfa_reg == RSP else fp) + rule.cfa_off
            try:
                ra = mem.u64(cfa + rule.ra_off)
                nfp = mem.u64(cfa + rule.rbp_off) if rule.rbp_off is not None else fp
            except TargetMemoryError:
                break
            if cfa <= sp and depth:
                break
            pc, sp, fp = ra, cfa, nfp
            continue
        frames.append(MachineFrame(pc, sp, fp, False, was_interrupted))
        # Frame-pointer step; the chain must move up the stack.
        if fp == 0 or fp < sp or fp & 7:
            break
        try:
            nfp = mem.u64(fp)
            ra = mem.u64(fp + 8)
        except TargetMemoryError:
            break
        if nfp != 0 and nfp <= fp:
            # The chain ends (or is corrupt); one last frame is still useful.
            pc, sp, fp = ra, fp + 16, 0
            continue
        pc, sp, fp = ra, fp + 16, nfp
    return frames
