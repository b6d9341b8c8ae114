"""The JavaScript view of a thread's stack: machine frames decoded as V8 sees them.

Each machine frame is native (C/C++, unwound by CFI), a typed V8 frame
(entry, exit, stub, construct: a frame-type marker in the context slot) or a
JavaScript frame (a context and a JSFunction in their slots). A JS frame's
position comes from the tier that runs it: the bytecode offset slot
(interpreted, also in frames the deoptimizer rebuilt), the pc -> bytecode
map (baseline), or the deoptimization data at the return address, with
inlining (Maglev, TurboFan).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError, why
from ..inferior.backend import Registers, ThreadInfo
from ..inferior.unwind import MachineFrame, follows_call, walk
from ..v8.builtins import UNNAMED as UNNAMED_BUILTIN
from . import segments
from .byframe import FrameIndex
from .jit import JitFrames

if TYPE_CHECKING:
    from ..program import Program

# Builtins an interpreted frame returns into: its trampoline, and the ones the
# deoptimizer makes the frames it rebuilds return into.
INTERPRETER_BUILTINS = ("InterpreterEntryTrampoline", "InterpreterEntryTrampolineForProfiling",
                        "InterpreterEnterAtBytecode", "InterpreterEnterAtNextBytecode",
                        "InterpreterEnterBytecodeAdvance", "InterpreterEnterBytecodeDispatch",
                        "BaselineOrInterpreterEnterAtBytecode",
                        "BaselineOrInterpreterEnterAtNextBytecode", "NotifyDeoptimized")

MAX_ARGS = 256
MAX_PROTOTYPES = 16
# Words above sp searched for the return address of a stub that runs on its
# caller's frame: a trampoline has pushed nothing yet, a prologue one to three.
MAX_STUB_WORDS = 4
STUB_NOTE = "no frame of its own: the frame pointer is the next frame's"
# A word this near sp points into the stack; a return address's code header
# is looked for at most this far back (a pc's, 1 MB: codes.SCAN_LIMIT).
STACK_NEAR = 8 << 20
STUB_CODE_SCAN = 256 << 10


@dataclass
class Frame:
    index: int
    kind: str  # "native", "js", "internal"
    pc: int
    fp: int
    sp: int
    symbol: str | None = None
    module: str | None = None
    frame_type: str | None = None
    function: str | None = None
    function_address: int | None = None
    script: str | None = None
    line: int | None = None
    column: int | None = None
    tier: str | None = None
    inlined: bool = False
    receiver: int | None = None
    args: list[int] = field(default_factory=list)
    sfi: int | None = None
    bytecode_offset: int | None = None
    position: int | None = None
    script_address: int | None = None
    note: str | None = None
    constructor: bool = False  # called with `new`
    optimized_out: bool = False  # receiver and arguments not kept (an inlined frame)
    lazy_deopt: bool = False  # its code is marked for deoptimization on return
    depth: int = 0  # which machine frame of the thread's walk it belongs to


class StackDecoder:
    """Turns machine frames into native, internal and JS frames."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.h = prog.heap
        self.s = prog.strings
        self.f = prog.functions
        md = prog.md
        self.md = md
        self.off_marker = md.const("off_fp_context_or_frame_type", md.const("off_fp_context"))
        self.off_function = md.const("off_fp_function")
        self.off_args = md.const("off_fp_args")
        self.off_bc_array = md.const("off_fp_bytecode_array")
        self.off_bc_offset = md.const("off_fp_bytecode_offset")
        self.frame_types = {v: k[len("frametype_"):] for k, v in md.consts.items()
                            if k.startswith("frametype_")}
        self.code = prog.codes
        self.jit = JitFrames(self)
        # Each thread's frames, per debug mode (notes on undecodable frames say more there).
        self._threads: dict[tuple[int, bool], list[Frame]] = {}
        self.recovery: segments.Recovery | None = None
        # What the last decode of each thread found out of V8's own thread state.
        self.recoveries: dict[int, segments.Recovery | None] = {}
        # Every isolate's thread state (segments.thread_tops), read once.
        self.thread_tops: list[segments.ThreadTop] | None = None
        # The machine frames of the last decode, and of each thread decoded.
        self.machine: list[MachineFrame] = []
        self._indexes: dict[int, FrameIndex] = {}

    # -- classification --------------------------------------------------

    def _marker(self, fp: int) -> int | None:
        """The frame-type marker in the context slot, or None for a JS frame."""
        v = self.prog.mem.i64(fp + self.off_marker)
        if v & 1:
            return None  # a tagged context pointer
        if 0 <= v < 1 << 16:
            return v >> 1
        return -1

    def frames_of(self, thread: ThreadInfo, debug: bool = False) -> list[Frame]:
        """A thread's frames, decoded once per target state."""
        key = (thread.tid, debug)
        cached = self._threads.get(key)
        if cached is not None:
            return cached
        if thread.regs is None:
            # A debugger gives no registers for a thread that is running.
            raise V8DbgError(f"no registers for thread {thread.tid}")
        frames = self.decode(thread.regs)
        self._threads[key] = frames
        self.recoveries[thread.tid] = self.recovery
        if not debug:
            self._indexes[thread.tid] = FrameIndex(self.machine, frames)
        return frames

    def index_of(self, thread: ThreadInfo) -> FrameIndex:
        """A thread's frames by machine frame, for a debugger asking about one
        of its own frames at a time (decoded once per target state)."""
        if thread.tid not in self._indexes:
            self.frames_of(thread)
        return self._indexes[thread.tid]

    def decode(self, regs: Registers, limit: int = 4096) -> list[Frame]:
        machine = walk(self.prog, regs, limit)
        # JS segments the native walk missed come from V8's thread state.
        machine, self.recovery = segments.complete(self.prog, regs, machine, limit)
        out: list[Frame] = []
        split: list[MachineFrame] = []
        for mf in machine:
            frames = self._decode_one(mf, len(out), bool(split) and not mf.interrupted)
            split.append(mf)
            if len(frames) > 1 and frames[0].kind == "internal" and frames[1].sp != mf.sp:
                # A stub on its caller's frame, and the caller at the return
                # address it was called with: two machine frames, as a
                # debugger's own unwinder finds them.
                split.append(MachineFrame(frames[1].pc, frames[1].sp, mf.fp, native=False))
                frames[0].depth = len(split) - 2
                for fr in frames[1:]:
                    fr.depth = len(split) - 1
            else:
                for fr in frames:
                    fr.depth = len(split) - 1
            out.extend(frames)
        self.machine = split
        for i, fr in enumerate(out):
            fr.index = i
            # A construct call leaves a construct frame just below the callee.
            if fr.kind == "js" and not fr.inlined and i + 1 < len(out) and \
                    out[i + 1].kind == "internal" and \
                    out[i + 1].frame_type in ("ConstructFrame", "FastConstructFrame"):
                fr.constructor = True
        return out

    def decode_machine_frame(self, mf: MachineFrame, caller: bool) -> list[Frame]:
        """The frames of one machine frame (several when it inlined others),
        for a caller that walks the stack itself (the profiler)."""
        return self._decode_one(mf, 0, caller)

    def _decode_one(self, mf: MachineFrame, index: int, caller: bool) -> list[Frame]:
        prog = self.prog
        # A caller's pc is a return address, possibly just past a noreturn call.
        sym = prog.symbolize(mf.pc - 1 if caller and mf.native else mf.pc)
        base = Frame(index, "native", mf.pc, mf.fp, mf.sp,
                     symbol=sym.name if sym else None, module=sym.module if sym else None)
        if sym is None and mf.native is False and prog.module_for(mf.pc) is not None:
            lm = prog.module_for(mf.pc)
            if lm is not None and lm.elf is None:
                base.module = lm.path.rsplit("/", 1)[-1]  # a library missing here
        if mf.native:
            return [base]
        builtin = prog.builtin_at(mf.pc)
        lm = prog.module_for(mf.pc)
        if lm is not None and builtin is None:
            # Native code we could not unwind by CFI; keep it as native.
            return [base]
        try:
            marker = self._marker(mf.fp)
        except TargetMemoryError:
            base.kind = "internal"
            base.frame_type = "Unknown"
            return [base]
        if marker is not None:
            base.kind = "internal"
            base.frame_type = self.frame_types.get(marker, f"Frame{marker}" if marker >= 0 else "Unknown")
            if builtin:
                base.symbol = builtin
            fr = self._builtin_exit(base, marker)
            return [fr] if fr is not None else [base]
        try:
            return self._js_frames(mf, builtin, base, caller)
        except (DecodeError, TargetMemoryError, V8DbgError) as e:
            base.kind = "js"
            base.note = why(e)
            if base.function is None:
                base.function = "<unknown>"
            return [base]

    def _builtin_exit(self, base: Frame, marker: int) -> Frame | None:
        """A C++ builtin called from JS (BuiltinExitFrame) is a JS frame in V8's traces."""
        if self.frame_types.get(marker) not in ("BuiltinExitFrame",):
            return None
        try:
            fn = self.prog.mem.u64(base.fp + self.md.const("BuiltinExitFrameTargetOffset"))
            if not self.f.is_function(fn):
                return None
            sfi = self.f.shared(fn)
            # An API callback (a FunctionTemplate's C++ function) called through
            # HandleApiCall: V8's stack traces leave it out.
            data = self.f.function_data(sfi)
            if self.h.is_heap(data) and self.h.is_type(data, "FUNCTION_TEMPLATE_INFO_TYPE"):
                return None
        except (DecodeError, TargetMemoryError, V8DbgError):
            return None
        base.kind = "js"
        base.function_address = fn
        base.sfi = sfi
        base.function = self.f.debug_name(sfi)
        base.tier = "builtin"
        return base

    def _js_frames(self, mf: MachineFrame, builtin: str | None, base: Frame,
                   caller: bool) -> list[Frame]:
        mem = self.prog.mem
        fn = mem.u64(mf.fp + self.off_function)
        if not self.f.is_function(fn):
            raise DecodeError(f"frame at fp 0x{mf.fp:x} holds no JSFunction (0x{fn:x})")
        sfi = self.f.shared(fn)
        fr = base
        fr.kind = "js"
        fr.function_address = fn
        fr.sfi = sfi
        self._receiver_args(fr, sfi)
        fr.function = self.display_name(fn, sfi, fr.receiver)
        script = self.f.script(sfi)
        if builtin == UNNAMED_BUILTIN and self._interpreted(mf.fp):
            builtin = "InterpreterEntryTrampoline"  # a stripped binary names no builtin
        stub = builtin is not None and builtin not in INTERPRETER_BUILTINS \
            and not builtin.endswith("Handler")
        if stub and (script is None or caller):
            # A JS builtin (Array.prototype.map, ...): no script position.
            fr.tier = "builtin"
            fr.script = None
            return [fr]
        if script is not None:
            fr.script = self.f.script_name(script)
            fr.script_address = script
        if stub:
            assert builtin is not None
            return self._under_stub(mf, builtin, fr, fn, sfi, script)
        if builtin is not None:
            return [self._interpreter_frame(mf, fr, script)]
        # JIT code on the heap: baseline, Maglev or TurboFan.
        return self.jit.frames(mf, fr, fn, sfi, script)

    def _interpreter_frame(self, mf: MachineFrame, fr: Frame, script: int | None) -> Frame:
        """An interpreted frame: the bytecode offset the interpreter keeps in it."""
        mem = self.prog.mem
        fr.tier = "interpreted"
        bc = mem.u64(mf.fp + self.off_bc_array)
        raw = mem.u64(mf.fp + self.off_bc_offset)
        if not self.h.is_smi(raw):
            raise DecodeError("interpreted frame without a bytecode offset")
        offset = self.h.smi(raw) - (self.md.off("BytecodeArray", "data") - 1)
        fr.bytecode_offset = offset
        self._place(fr, script, self.f.bytecode_position(bc, offset))
        return fr

    def _under_stub(self, mf: MachineFrame, builtin: str, fr: Frame, fn: int, sfi: int,
                    script: int | None) -> list[Frame]:
        """The thread stopped in a builtin, but fp holds a script function's frame.

        A builtin that implements a JavaScript function runs in a frame of its
        own, holding that function, which has no script. So this builtin is a
        stub (a call trampoline, an allocation or arithmetic helper, or one
        that builds or tears down the function's frame) running on that
        function's frame. The stub is the innermost frame; the function is
        placed by its bytecode offset when interpreted, else at the return
        address the stub was called with, if one into the function's code
        lies just above sp.
        """
        top = Frame(fr.index, "internal", mf.pc, mf.fp, mf.sp, symbol=builtin,
                    frame_type="StubFrame", note=STUB_NOTE)
        interpreted = self._interpreted(mf.fp)
        ret = self._return_into(mf.sp, fn, sfi, interpreted)
        try:
            if interpreted:
                if ret is not None:
                    fr.pc, fr.sp = ret
                return [top, self._interpreter_frame(mf, fr, script)]
            if ret is None:
                fr.note = f"position unknown: stopped in {builtin}, no return address " \
                          "into the function's code above sp"
                return [top, fr]
            # A return address: the interrupted pc's rule for a line does
            # not apply (see Codes.first_position_wins).
            first, self.code.first_position_wins = self.code.first_position_wins, False
            try:
                frames = self.jit.frames(replace(mf, pc=ret[0]), fr, fn, sfi, script)
            finally:
                self.code.first_position_wins = first
            # The caller resumes at the return address, with the stack above it.
            fr.pc, fr.sp = ret
            for g in frames:
                g.pc, g.sp = ret
            return [top, *frames]
        except (DecodeError, TargetMemoryError, V8DbgError) as e:
            fr.note = why(e)
            return [top, fr]

    def _return_into(self, sp: int, fn: int, sfi: int,
                     interpreted: bool) -> tuple[int, int] | None:
        """(return address, the caller's sp) for the first of the words just
        above sp that lies in JIT code of the function sfi, or in the
        interpreter for an interpreted caller. (Words in other functions'
        code are passed over: a callee entered before it set up a frame.)
        Words that point into the stack, or do not follow a call
        instruction, are no return address; for the others the search back
        for a code header is shorter than for a pc."""
        for i in range(MAX_STUB_WORDS):
            try:
                w = self.prog.mem.u64(sp + 8 * i)
            except TargetMemoryError:
                return None
            if interpreted:
                b = self.prog.builtin_at(w)
                if b is not None and (b in INTERPRETER_BUILTINS or b.endswith("Handler")):
                    return w, sp + 8 * (i + 1)
            elif abs(w - sp) >= STACK_NEAR and self.prog.module_for(w) is None and \
                    follows_call(self.prog, w):
                try:
                    info = self.code.code_for_pc(w, fn, STUB_CODE_SCAN)
                    if info is not None and self.code.is_jit(info.kind) and \
                            info.start < w <= info.start + info.size and \
                            self.code.runs_function(info, sfi, w):
                        return w, sp + 8 * (i + 1)
                except (DecodeError, TargetMemoryError):
                    pass
        return None

    def _interpreted(self, fp: int) -> bool:
        """An interpreter frame keeps a BytecodeArray and a Smi offset in its slots."""
        try:
            bc = self.prog.mem.u64(fp + self.off_bc_array)
            raw = self.prog.mem.u64(fp + self.off_bc_offset)
            return self.h.is_heap(bc) and self.h.is_type(bc, "BYTECODE_ARRAY_TYPE") \
                and self.h.is_smi(raw)
        except (DecodeError, TargetMemoryError, V8DbgError):
            return False

    def display_name(self, fn: int, sfi: int, receiver: int | None = None) -> str:
        """The name V8's stack traces give a function.

        An own `name` data property wins -- V8 sets one for methods with
        computed or symbol keys -- then the SharedFunctionInfo's debug name;
        a nameless function called as a method is named by the property of
        the receiver (or its prototypes) that holds it, as V8 does.
        """
        vals = self.prog.values
        try:
            v = vals.own_data_property(fn, "name")
        except (DecodeError, TargetMemoryError, V8DbgError):
            v = None
        if v is not None and self.h.is_heap(v) and self.s.is_string(v):
            return self.s.text(v, 512)
        name = self.f.debug_name(sfi)
        if name or receiver is None or not self.h.is_heap(receiver):
            return name
        return self._method_name(receiver, fn) or ""

    def _method_name(self, receiver: int, fn: int) -> str | None:
        """The key under which `receiver` or a prototype holds `fn` (bounded search)."""
        h, vals = self.h, self.prog.values
        obj = receiver
        for _ in range(MAX_PROTOTYPES):
            try:
                if not h.type_name(h.instance_type(obj)).startswith("JS_"):
                    return None
                for p in vals.own_properties(obj, 256):
                    if not p.accessor and p.value == fn and self.s.is_string(p.key):
                        return self.s.text(p.key, 512)
                obj = h.field(h.map_of(obj), "Map", "prototype")
            except (DecodeError, TargetMemoryError, V8DbgError):
                return None
            if not h.is_heap(obj):
                return None
        return None

    def _place(self, fr: Frame, script: int | None, pos: int | None) -> None:
        fr.position = pos
        if script is None or pos is None:
            return
        lc = self.f.position_to_line_col(script, pos)
        fr.line, fr.column = lc.line, lc.column

    def _receiver_args(self, fr: Frame, sfi: int) -> None:
        """Receiver and the arguments actually passed (argc from the frame when V8 keeps it)."""
        mem = self.prog.mem
        base = fr.fp + self.off_args
        argc = None
        off_argc = self.md.consts.get("off_fp_argc")
        if off_argc is not None:
            try:
                argc = mem.u64(fr.fp + off_argc)
                if self.md.const("ArgcIncludesReceiver"):
                    argc -= 1
                if not 0 <= argc <= MAX_ARGS:
                    argc = None
            except TargetMemoryError:
                argc = None
        if argc is None:
            argc = min(self.f.parameter_count(sfi), MAX_ARGS)
        try:
            fr.receiver = mem.u64(base)
            fr.args = [mem.u64(base + 8 * (i + 1)) for i in range(argc)]
        except TargetMemoryError:
            fr.args = []
