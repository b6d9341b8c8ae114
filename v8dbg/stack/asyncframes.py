"""Async frames: the `at async ...` lines V8's own Error().stack adds after
the frames on the machine stack.

V8 finds them from the microtask it runs now (the isolate's current_microtask
root). When that is a promise reaction job resuming an async function (an
await closure as its handler), the closure's context holds the function's
generator object, and the chain goes on from that function's promise; else
from the promise the job settles. From a promise V8 follows its one reaction
(none or several end the chain): an await closure names the next suspended
async function (or async generator), a Promise.all / allSettled / any element
closure a combinator frame with the element's index (and goes on from the
combinator's own promise), a capability's resolve function or a plain
`then` the promise it settles. The same walk, started at any suspended async
function's promise, gives the chain `jsasync` shows for it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError

if TYPE_CHECKING:
    from ..program import Program

MAX_ASYNC_FRAMES = 256  # a chain longer than this is cut, and said so
MAX_REACTIONS = 4096  # reactions read off one promise (jsasync's awaiters)
MICROTASK_SEARCH_BYTES = 16 << 10  # of the Isolate, searched for an unmeasured release

# The closures V8 makes for `await` (the handler a reaction job resumes an
# async function or async generator with).
AWAIT_FULFILL = ("AsyncFunctionAwaitResolveClosure", "AsyncGeneratorAwaitResolveClosure",
                 "AsyncGeneratorYieldWithAwaitResolveClosure")
AWAIT_REJECT = ("AsyncFunctionAwaitRejectClosure", "AsyncGeneratorAwaitRejectClosure")
# A combinator's element closure, the handler it sits in, and the combinator's name.
COMBINATORS = {"PromiseAllResolveElementClosure": ("fulfill", "Promise.all"),
               "PromiseAllSettledResolveElementClosure": ("fulfill", "Promise.allSettled"),
               "PromiseAnyRejectElementClosure": ("reject", "Promise.any")}

_names: dict[int, list[str] | None] = {}


@dataclass
class AsyncFrame:
    """One `at async` frame: a suspended async function (or async generator)
    at its await, or a promise combinator waiting on element `index`."""

    function: str  # as V8 prints it: "outer", "Service.settle", "Promise.all"
    script: str | None = None
    line: int | None = None
    column: int | None = None
    index: int | None = None  # a combinator's element index
    generator: int | None = None  # the suspended generator object
    function_address: int | None = None

    def to_json(self) -> dict:
        d: dict = {"kind": "js", "async": True, "function": self.function}
        if self.generator is None:
            d["index"] = self.index
        else:
            d.update({"script": self.script, "line": self.line, "column": self.column,
                      "function_address": f"0x{self.function_address:x}"
                      if self.function_address is not None else None,
                      "generator": f"0x{self.generator:x}"})
        return d

    def text(self) -> str:
        if self.generator is None:
            return f"async {self.function} (index {self.index})"
        where = f"{self.script}:{self.line}:{self.column}" if self.line else \
            (self.script or "<unknown>")
        return f"async {self.function} at {where}"


@dataclass
class AsyncStack:
    frames: list[AsyncFrame]
    cut: bool = False  # MAX_ASYNC_FRAMES reached
    note: str | None = None  # why there are none, when V8 would say more


class AsyncWalker:
    """V8's async stack-trace walk over the target's memory."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.h = prog.heap
        self.f = prog.functions
        self.md = prog.md
        self.names = builtin_names(prog)
        # What many suspended functions share, read once (jsasync walks thousands).
        self._frames: dict[int, AsyncFrame] = {}
        self._builtins: dict[int, str | None] = {}
        self._display: dict[tuple[int, int], str] = {}
        self._places: dict[tuple[int, int], tuple[str | None, int | None, int | None]] = {}
        self._awaits: dict[int, int | None] = {}  # await closure -> its generator

    # -- small readers ----------------------------------------------------

    def builtin(self, fn: int) -> str | None:
        """The builtin a JSFunction runs (its SharedFunctionInfo's builtin id), if any."""
        h = self.h
        if not h.is_heap(fn) or not self.f.is_function(fn) or self.names is None:
            return None
        sfi = self.f.shared(fn)
        if sfi not in self._builtins:
            data = self.f.function_data(sfi)
            i = h.smi(data) if h.is_smi(data) else -1
            self._builtins[sfi] = self.names[i] if 0 <= i < len(self.names) else None
        return self._builtins[sfi]

    def slot(self, ctx: int, i: int) -> int:
        """Slot i of a context (laid out as a FixedArray)."""
        if not self.h.is_heap(ctx) or not 0 <= i < self.h.array_length(ctx):
            raise DecodeError(f"0x{ctx:x} has no context slot {i}")
        return self.h.array_get(ctx, i)

    def context_of(self, fn: int) -> int:
        return self.h.field(fn, "JSFunction", "context")

    def is_pending(self, promise: int) -> bool:
        flags = self.h.smi(self.h.field(promise, "JSPromise", "flags"))
        return flags & 3 == 0  # Promise::kPending

    def await_generator(self, handler: int) -> int | None:
        """The generator an await closure resumes (its context's extension)."""
        if handler in self._awaits:
            return self._awaits[handler]
        gen: int | None = None
        if self.builtin(handler) in AWAIT_FULFILL + AWAIT_REJECT:
            gen = self.slot(self.context_of(handler), self.md.const("AwaitContextGeneratorSlot"))
            if not (self.h.is_heap(gen) and self.h.is_type(gen, "JS_ASYNC_FUNCTION_OBJECT_TYPE",
                                                            "JS_ASYNC_GENERATOR_OBJECT_TYPE")):
                gen = None
        if len(self._awaits) < 1 << 20:
            self._awaits[handler] = gen
        return gen

    def generator_promise(self, gen: int) -> int | None:
        """The promise an async function settles, or that of the request an
        async generator serves now."""
        h = self.h
        if h.is_type(gen, "JS_ASYNC_FUNCTION_OBJECT_TYPE"):
            p = h.field(gen, "JSAsyncFunctionObject", "promise")
        else:
            q = h.field(gen, "JSAsyncGeneratorObject", "queue")
            if not h.is_heap(q) or not h.is_type(q, "ASYNC_GENERATOR_REQUEST_TYPE"):
                return None
            p = h.field(q, "AsyncGeneratorRequest", "promise")
        return p if h.is_heap(p) and h.is_type(p, "JS_PROMISE_TYPE") else None

    def reactions(self, promise: int, cap: int = MAX_REACTIONS) -> list[int]:
        """A pending promise's reactions (V8 keeps them newest first)."""
        h = self.h
        out: list[int] = []
        r = h.field(promise, "JSPromise", "reactions_or_result")
        while h.is_heap(r) and h.is_type(r, "PROMISE_REACTION_TYPE") and len(out) < cap:
            out.append(r)
            r = h.field(r, "PromiseReaction", "next")
        return out

    def capability_promise(self, cap: int) -> int | None:
        h = self.h
        if h.is_heap(cap) and h.is_type(cap, "PROMISE_CAPABILITY_TYPE"):
            cap = h.field(cap, "PromiseCapability", "promise")
        return cap if h.is_heap(cap) and h.is_type(cap, "JS_PROMISE_TYPE") else None

    # -- frames -------------------------------------------------------------

    def generator_frame(self, gen: int) -> AsyncFrame:
        """A suspended async function at its await: the generator's bytecode
        offset placed by the function's source positions."""
        got = self._frames.get(gen)
        if got is not None:
            return got
        h, f = self.h, self.f
        fn = h.field(gen, "JSGeneratorObject", "function")
        sfi = f.shared(fn)
        receiver = h.field(gen, "JSGeneratorObject", "receiver")
        # A method's name depends on its receiver's constructor: keyed by its map.
        rkey = h.map_of(receiver) if h.is_heap(receiver) else receiver
        name = self._display.get((fn, rkey))
        if name is None:
            name = self._display[(fn, rkey)] = self._name(fn, sfi, receiver)
        raw = h.field(gen, "JSGeneratorObject", "input_or_debug_pos")
        offset = h.smi(raw) - (self.md.off("BytecodeArray", "data") - 1) if h.is_smi(raw) else -1
        place = self._places.get((sfi, offset))
        if place is None:
            place = self._places[(sfi, offset)] = self._place(sfi, offset)
        frame = AsyncFrame(name, *place, generator=gen, function_address=fn)
        if len(self._frames) < 1 << 20:
            self._frames[gen] = frame
        return frame

    def _place(self, sfi: int, offset: int) -> tuple[str | None, int | None, int | None]:
        """Script name, line and column of a bytecode offset of a function."""
        f = self.f
        script = f.script(sfi)
        if script is None:
            return (None, None, None)
        name = f.script_name(script)
        bc = f.bytecode_array(sfi)
        if bc is None or offset < 0:
            return (name, None, None)
        pos = f.bytecode_position(bc, offset)
        if pos is None:
            return (name, None, None)
        lc = f.position_to_line_col(script, pos)
        return (name, lc.line, lc.column)

    def _name(self, fn: int, sfi: int, receiver: int) -> str:
        """The name V8 prints: a method call's (the receiver an object other
        than the global proxy) prefixed by the receiver's constructor name."""
        name = self.prog.stack.display_name(fn, sfi, receiver)
        h = self.h
        try:
            if not h.is_heap(receiver) or not h.type_name(h.instance_type(receiver)).startswith("JS_") \
                    or h.is_type(receiver, "JS_GLOBAL_PROXY_TYPE"):
                return name
            ctor = self.prog.values.constructor_name(receiver)
        except (DecodeError, TargetMemoryError, V8DbgError):
            return name
        if ctor and name and not name.startswith(ctor + "."):
            return f"{ctor}.{name}"
        if ctor and not name:
            return f"{ctor}.<anonymous>"
        return name

    def _element_index(self, fn: int) -> int | None:
        """A combinator's element closure keeps its element's index + 1 as its
        identity hash (a Smi where properties go)."""
        v = self.h.field(fn, "JSReceiver", "raw_properties_or_hash") \
            if self.md.has("JSReceiver", "raw_properties_or_hash") else self.h.mem.u64(fn - 1 + 8)
        return self.h.smi(v) - 1 if self.h.is_smi(v) else None

    def step(self, promise: int) -> tuple[AsyncFrame | None, int | None]:
        """One step of V8's walk from a promise: the frame it adds (if any)
        and the promise it goes on from (None: the chain ends here)."""
        h = self.h
        if not self.is_pending(promise):
            return None, None
        reactions = self.reactions(promise, 2)
        if len(reactions) != 1:
            return None, None
        r = reactions[0]
        fulfill = h.field(r, "PromiseReaction", "fulfill_handler")
        reject = h.field(r, "PromiseReaction", "reject_handler")
        if self._awaits.get(fulfill) is not None or self.builtin(fulfill) in AWAIT_FULFILL:
            gen = self.await_generator(fulfill)
            if gen is not None:
                return self.generator_frame(gen), self.generator_promise(gen)
        fb, rb = self.builtin(fulfill), self.builtin(reject)
        for element_builtin, (which, name) in COMBINATORS.items():
            if (fb if which == "fulfill" else rb) != element_builtin:
                continue
            if name == "Promise.allSettled" and not self.md.const("AsyncTraceAllSettled"):
                break  # this V8 goes on from the reaction's own promise (none)
            element = fulfill if which == "fulfill" else reject
            frame = AsyncFrame(name, index=self._element_index(element))
            ctx = self.context_of(element)
            if h.is_type(ctx, "NATIVE_CONTEXT_TYPE"):
                return frame, None  # the element was settled: its context is gone
            return frame, self.capability_promise(
                self.slot(ctx, self.md.const("CombinatorCapabilitySlot")))
        if fb == "PromiseCapabilityDefaultResolve":
            p = self.slot(self.context_of(fulfill), self.md.const("CapabilityResolvePromiseSlot"))
            return None, (p if h.is_heap(p) and h.is_type(p, "JS_PROMISE_TYPE") else None)
        return None, self.capability_promise(h.field(r, "PromiseReaction", "promise_or_capability"))

    def from_promise(self, promise: int | None, limit: int = MAX_ASYNC_FRAMES) -> AsyncStack:
        """The async frames from a promise on, as V8 walks them."""
        out = AsyncStack([])
        seen: set[int] = set()
        while promise is not None and promise not in seen:
            if len(seen) >= limit:
                out.cut = True
                break
            seen.add(promise)
            frame, promise = self.step(promise)
            if frame is not None:
                out.frames.append(frame)
        return out

    def current_microtask(self, isolate: int) -> int | None:
        """The isolate's current_microtask root: the first of the release's
        measured offsets whose neighbours are the roots V8 puts around it,
        else the one place in the Isolate's first words that fits (a release
        not measured). None when none does."""
        from ..v8.layouts import current_microtask_slots
        for off in current_microtask_slots(self.md):
            got = self._root_at(isolate, off)
            if got is not None:
                return got
        try:
            data = self.h.mem.read(isolate, MICROTASK_SEARCH_BYTES)
        except TargetMemoryError:
            return None
        words = struct.unpack(f"<{len(data) // 8}Q", data)
        fits = []
        for i in range(4, len(words)):
            if all(words[i - k] & 3 == 1 for k in range(1, 5)) and words[i] & 3 == 1:
                got = self._root_at(isolate, 8 * i)
                if got is not None:
                    fits.append(got)
                    if len(fits) > 1:
                        return None
        return fits[0] if fits else None

    def _root_at(self, isolate: int, off: int) -> int | None:
        """The word at isolate+off if it sits where current_microtask does
        among the roots: after undefined and three lists (the last the message
        listeners), and holding undefined or a microtask."""
        h, mem = self.h, self.h.mem
        lists = ("FIXED_ARRAY_TYPE", "ARRAY_LIST_TYPE")
        try:
            words = [mem.u64(isolate + off + 8 * k) for k in range(-4, 1)]
            if h.oddball_name(words[0]) != "undefined" or not all(
                    h.is_heap(w) and h.is_type(w, *lists) for w in words[1:4]):
                return None
            task = words[4]
            if h.is_heap(task) and (h.oddball_name(task) == "undefined" or h.type_name(
                    h.instance_type(task)).endswith("_TASK_TYPE")):
                return task
        except (DecodeError, TargetMemoryError, V8DbgError):
            pass
        return None

    def current(self, isolate: int) -> AsyncStack:
        """The async frames of the microtask the isolate runs now."""
        h = self.h
        task = self.current_microtask(isolate)
        if task is None:
            return AsyncStack([], note="async frames: where this node keeps its current "
                                       "microtask could not be found; none are shown")
        if not h.is_type(task, "PROMISE_FULFILL_REACTION_JOB_TASK_TYPE",
                         "PROMISE_REJECT_REACTION_JOB_TASK_TYPE"):
            return AsyncStack([])
        handler = h.field(task, "PromiseReactionJobTask", "handler")
        gen = self.await_generator(handler)
        if gen is not None:
            cont = h.smi(h.field(gen, "JSGeneratorObject", "continuation"))
            if cont != -2:  # JSGeneratorObject::kGeneratorExecuting
                return AsyncStack([])
            return self.from_promise(self.generator_promise(gen))
        if self.builtin(handler) in AWAIT_FULFILL + AWAIT_REJECT:
            return AsyncStack([])
        p = h.field(task, "PromiseReactionJobTask", "promise_or_capability")
        if h.is_heap(p) and h.is_type(p, "JS_PROMISE_TYPE"):
            return self.from_promise(p)
        return AsyncStack([])


def builtin_names(prog: Program) -> list[str] | None:
    """Builtin names by index, from V8's builtin metadata array (read once per binary)."""
    key = id(prog.binary)
    if key not in _names:
        table = prog.md.builtins
        if table is not None:
            _names[key] = list(table.names)
        else:
            from ..v8.embedded import builtin_names as read
            _names[key] = read(prog.binary, prog.md.const("BuiltinMetadataSize"))
    return _names[key]


def async_frames(prog: Program, isolate: int) -> AsyncStack:
    """The async frames V8 would add to a stack trace taken now in this isolate;
    none (with a note) when the target's memory does not let them be read."""
    try:
        return AsyncWalker(prog).current(isolate)
    except (DecodeError, TargetMemoryError, V8DbgError) as e:
        return AsyncStack([], note=f"async frames could not be read: {e}")
