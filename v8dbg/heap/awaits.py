"""Suspended async functions and async generators in a heap, and their await
chains (`jsasync`).

Every JSAsyncFunctionObject / JSAsyncGeneratorObject the census finds whose
continuation is a bytecode offset (suspended, neither running nor done) is
one suspended function, placed at its await. What it awaits is the pending
promise whose reactions hold its await closure; who awaits it, the suspended
functions awaiting its own promise. Its chain is V8's async stack walk from
its promise on (stack/asyncframes.py), so it reads as the `at async` frames
V8 would print if the function resumed now. The census counts what is in the
heap, reachable or not: a chain no root holds any more is listed too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..interrupt import check_interrupted
from ..stack.asyncframes import MAX_ASYNC_FRAMES, MAX_REACTIONS, AsyncFrame, AsyncWalker
from . import census

if TYPE_CHECKING:
    from ..program import Program

MAX_SUSPENDED = 1 << 20  # suspended functions decoded; more are counted, not shown


@dataclass
class Suspended:
    """One suspended async function (or async generator) at its await."""

    frame: AsyncFrame
    generator: bool  # an async generator, not an async function
    awaits: int | None = None  # the promise it waits on
    awaited_by: list[int] = field(default_factory=list)  # generators awaiting its promise
    chain: list[AsyncFrame] = field(default_factory=list)  # itself, then V8's async frames
    chain_cut: bool = False


@dataclass
class AsyncCensus:
    functions: list[Suspended]
    chains: list[list[AsyncFrame]]  # one per innermost suspended function, innermost first
    groups: list[tuple[int, list[AsyncFrame]]]  # equal chains counted, most numerous first
    total: int  # suspended functions found (may exceed those decoded)
    undecodable: int = 0
    cut_chains: int = 0


def _key(chain: list[AsyncFrame]) -> tuple:
    return tuple((f.function, f.script, f.line, f.column, f.index) for f in chain)


def suspended(prog: Program, heap: int) -> AsyncCensus:
    """Every suspended async function of an isolate's heap, with its chain."""
    c = census.of(prog, heap)
    h = prog.heap
    types = {h.md.types.get(n): n for n in ("JS_ASYNC_FUNCTION_OBJECT_TYPE",
                                            "JS_ASYNC_GENERATOR_OBJECT_TYPE")}
    promise_type = h.md.types.get("JS_PROMISE_TYPE")
    gens: list[int] = []
    promises: list[int] = []
    for st in c.maps.values():
        if st.addresses is None:
            continue
        if st.instance_type in types:
            gens.extend(st.addresses)
        elif st.instance_type == promise_type:
            promises.extend(st.addresses)
    w = AsyncWalker(prog)
    # What each suspended function awaits: the pending promise holding its await closure.
    awaits: dict[int, int] = {}
    for i, p in enumerate(promises):
        if i & 0xfff == 0:
            check_interrupted()
        try:
            r = h.field(p, "JSPromise", "reactions_or_result")
            if not h.is_heap(r) or not h.is_type(r, "PROMISE_REACTION_TYPE"):
                continue
            for r in w.reactions(p, MAX_REACTIONS):
                g = w.await_generator(h.field(r, "PromiseReaction", "fulfill_handler"))
                if g is not None:
                    awaits[g] = p
        except (DecodeError, TargetMemoryError, V8DbgError):
            continue
    found: list[Suspended] = []
    total = undecodable = 0
    for g in sorted(gens):
        try:
            if h.smi(h.field(g, "JSGeneratorObject", "continuation")) < 0:
                continue  # running (-2) or done (-1)
        except (DecodeError, TargetMemoryError, V8DbgError):
            continue
        total += 1
        if len(found) >= MAX_SUSPENDED:
            continue
        try:
            frame = w.generator_frame(g)
        except (DecodeError, TargetMemoryError, V8DbgError):
            undecodable += 1
            continue
        is_gen = types.get(h.instance_type(g)) == "JS_ASYNC_GENERATOR_OBJECT_TYPE"
        found.append(Suspended(frame, is_gen, awaits.get(g)))
    by_promise: dict[int, list[int]] = {}
    for s in found:
        if s.awaits is not None and s.frame.generator is not None:
            by_promise.setdefault(s.awaits, []).append(s.frame.generator)
    inner: set[int] = set()
    cut = 0
    after: dict[int, tuple[list[AsyncFrame], bool]] = {}  # a promise's frames on, once
    for i, s in enumerate(found):
        if i & 0xff == 0:
            check_interrupted()
        g = s.frame.generator
        assert g is not None
        try:
            p = w.generator_promise(g)
            s.awaited_by = sorted(by_promise.get(p, [])) if p is not None else []
            rest, s.chain_cut = _frames_after(w, p, after)
        except (DecodeError, TargetMemoryError, V8DbgError):
            rest = []
        s.chain = [s.frame] + rest
        cut += s.chain_cut
        inner.update(f.generator for f in rest if f.generator is not None)
    chains = [s.chain for s in found if s.frame.generator not in inner]
    counted: dict[tuple, list] = {}
    for ch in chains:
        k = _key(ch)
        if k in counted:
            counted[k][0] += 1
        else:
            counted[k] = [1, ch]
    groups = sorted(((n, ch) for n, ch in counted.values()),
                    key=lambda g: (-g[0], [f.function for f in reversed(g[1])]))
    return AsyncCensus(found, chains, groups, total, undecodable, cut)


def _frames_after(w: AsyncWalker, promise: int | None,
                  after: dict[int, tuple[list[AsyncFrame], bool]]) -> tuple[list[AsyncFrame], bool]:
    """V8's async frames from a promise on (and whether the cap cut them),
    each promise on the way walked once for all the chains through it."""
    path: list[tuple[int, AsyncFrame | None]] = []
    on_path: set[int] = set()
    p = promise
    cut = False
    while p is not None and p not in after and p not in on_path:
        if len(path) >= MAX_ASYNC_FRAMES:
            cut = True
            break
        on_path.add(p)
        frame, nxt = w.step(p)
        path.append((p, frame))
        p = nxt
    tail, tail_cut = after.get(p, ([], False)) if p is not None else ([], False)
    cut = cut or tail_cut
    for q, frame in reversed(path):
        tail = ([frame] if frame is not None else []) + tail
        if len(tail) > MAX_ASYNC_FRAMES:
            tail, cut = tail[:MAX_ASYNC_FRAMES], True
        after[q] = (tail, cut)
    return tail, cut
