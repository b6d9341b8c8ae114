"""`jscode`: a JS function's code, disassembled, with its source positions."""

from __future__ import annotations

import argparse

from ..errors import V8DbgError
from ..stack.code import CodeReader, FunctionCode, SourceMark
from ..inferior.disasm import Instruction
from .base import ArgumentError, Result, Session, command, hexaddr
from .stack import pick_thread, thread_frames


@command("jscode", "the code of a JS function, with its source positions",
         "Disassemble the code a JavaScript function runs now -- the machine code of "
         "Sparkplug, Maglev or TurboFan, or the bytecode of an interpreted function -- "
         "with the source position (script:line:column) before the instructions it "
         "maps to, and the frame's pc marked =>. Give a frame of `jsstack -a` "
         "(--frame N) or a JSFunction's address. Machine code is disassembled by gdb "
         "or lldb in a debugger; standalone by capstone where installed, else objdump.")
def _jscode(p: argparse.ArgumentParser):
    p.add_argument("--frame", type=int, metavar="N", help="frame N of `jsstack -a`")
    p.add_argument("--thread", type=int, metavar="TID", help="a thread other than the selected one")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", nargs="?", metavar="ADDR", help="a JSFunction")

    def run(sess: Session, args: argparse.Namespace) -> Result:
        if (args.frame is None) == (args.addr is None):
            raise ArgumentError("jscode: give either --frame N or a function's ADDR")
        prog = sess.program()
        reader = CodeReader(prog)
        if args.frame is not None:
            frames = thread_frames(prog, pick_thread(prog, args.thread))
            if not 0 <= args.frame < len(frames):
                raise V8DbgError(f"jscode: no frame {args.frame} (frames 0-{len(frames) - 1})")
            fc = reader.of_frame(frames, args.frame)
        else:
            fc = reader.of_function(sess.evaluate(args.addr))
        if fc.is_bytecode:
            return _bytecode(fc)
        insns, tool = _disassemble(prog.backend, fc)
        return _machine(fc, insns, tool)

    return run


MAX_RESTARTS = 4096


def _disassemble(backend, fc: FunctionCode) -> tuple[list[Instruction], str]:
    """The whole code, disassembled. A disassembler may stop at bytes it cannot
    decode (lldb does, at data Maglev and TurboFan keep among the instructions):
    such a byte is shown as `.byte` and disassembly goes on after it. It may
    also read such data as instructions and run past where real ones start
    again: the offsets of source positions and the frame's pc are instruction
    starts V8 itself recorded, so an instruction running over one is not taken,
    its bytes up to there are shown as `.byte`, and disassembly starts afresh
    at that offset."""
    out: list[Instruction] = []
    at = 0
    tool = ""
    starts = sorted({m.offset for m in fc.marks if 0 < m.offset < len(fc.data)}
                    | ({fc.pc - fc.start} if fc.pc is not None and
                       0 < fc.pc - fc.start < len(fc.data) else set()))
    k = 0
    for _ in range(MAX_RESTARTS):
        if at >= len(fc.data):
            break
        dis = backend.disassemble(fc.start + at, fc.data[at:])
        tool = dis.tool
        for i in dis.instructions:
            while k < len(starts) and starts[k] <= at:
                k += 1
            nxt = starts[k] if k < len(starts) else len(fc.data)
            if i.address != fc.start + at or i.size <= 0 or at + i.size > nxt:
                break
            out.append(i)
            at += i.size
        if at < len(fc.data):
            while k < len(starts) and starts[k] <= at:
                k += 1
            nxt = starts[k] if k < len(starts) else at + 1
            # Resynchronise at the next recorded instruction start when it is near
            # (the bytes between are data); else step over one byte.
            end = nxt if nxt - at <= 16 else at + 1
            for b in range(at, end):
                out.append(Instruction(fc.start + b, 1, f".byte {fc.data[b]:#04x}"))
            at = end
    else:
        fc.notes.append(f"disassembly stopped after {MAX_RESTARTS} undecodable bytes")
    return out, tool


def _mark_json(m: SourceMark) -> dict:
    return {"offset": m.offset, "function": m.function, "script": m.script, "line": m.line,
            "column": m.column, "inlined": m.inlined}


def _mark_text(m: SourceMark) -> str:
    where = m.script or "<no script>"
    if m.line is not None:
        where += f":{m.line}:{m.column}"
    return f"  {where}" + (f" ({m.function or '(anonymous)'}, inlined)" if m.inlined else "")


def _head(fc: FunctionCode, what: str) -> tuple[dict, list[str]]:
    where = fc.script or "<no script>"
    if fc.line is not None:
        where += f":{fc.line}:{fc.column}"
    data = {"function": fc.function, "script": fc.script, "line": fc.line,
            "column": fc.column, "tier": fc.tier, "code": hexaddr(fc.address),
            "start": hexaddr(fc.start), "size": len(fc.data),
            "positions": [_mark_json(m) for m in fc.marks]}
    lines = [f"{fc.function or '(anonymous)'} at {where} [{fc.tier}]",
             f"{what} 0x{fc.address:x}: {len(fc.data)} bytes at 0x{fc.start:x}"]
    return data, lines


def _interleave(marks: list[SourceMark], offsets: list[int]) -> dict[int, SourceMark]:
    """The position to print before each instruction: the last mark at or
    before it that no earlier instruction has shown."""
    out: dict[int, SourceMark] = {}
    k = 0
    for off in offsets:
        pending = None
        while k < len(marks) and marks[k].offset <= off:
            pending = marks[k]
            k += 1
        if pending is not None:
            out[off] = pending
    return out


def _machine(fc: FunctionCode, insns: list[Instruction], tool: str) -> Result:
    data, lines = _head(fc, "code")
    lines[-1] += f", disassembled by {tool}"
    pc_off = fc.pc - fc.start if fc.pc is not None else None
    data["disassembler"] = tool
    data["pc"] = pc_off
    data["pc_address"] = hexaddr(fc.pc)
    rows = []
    at = _interleave(fc.marks, [i.address - fc.start for i in insns])
    for i in insns:
        off = i.address - fc.start
        raw = fc.data[off:off + i.size] if 0 <= off < len(fc.data) else b""
        rows.append({"address": hexaddr(i.address), "offset": off, "bytes": raw.hex(),
                     "text": i.text})
        if off in at:
            lines.append(_mark_text(at[off]))
        arrow = "=>" if off == pc_off else "  "
        lines.append(f"  {arrow} 0x{i.address:x} <+{off}>: {i.text}")
    if pc_off is not None and not any(r["offset"] == pc_off for r in rows):
        fc.notes.append(f"the frame's pc 0x{fc.pc:x} is at no instruction start of this code")
    data["instructions"] = rows
    data["notes"] = fc.notes
    lines += [f"note: {n}" for n in fc.notes]
    return Result(data, "\n".join(lines))


def _bytecode(fc: FunctionCode) -> Result:
    data, lines = _head(fc, "bytecode")
    data["disassembler"] = None
    data["pc"] = fc.pc
    data["pc_address"] = None
    at = _interleave(fc.marks, [b.offset for b in fc.bytecodes])
    rows = []
    for b in fc.bytecodes:
        rows.append({"address": hexaddr(fc.start + b.offset), "offset": b.offset,
                     "bytes": b.data.hex(), "text": b.name})
        if b.offset in at:
            lines.append(_mark_text(at[b.offset]))
        arrow = "=>" if b.offset == fc.pc else "  "
        name = b.name or "?"
        lines.append(f"  {arrow} {b.offset:5}  {name:34} {b.data.hex(' ')}")
    data["instructions"] = rows
    data["notes"] = fc.notes
    lines += [f"note: {n}" for n in fc.notes]
    return Result(data, "\n".join(lines))
