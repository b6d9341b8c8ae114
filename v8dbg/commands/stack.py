"""Stack commands: `jsstack` and `jsframe`."""

from __future__ import annotations

import argparse

from .. import errors
from ..errors import V8DbgError
from ..program import Program
from ..stack import exception, segments
from ..stack.asyncframes import async_frames
from ..stack.frames import Frame, StackDecoder
from ..inferior.backend import ThreadInfo
from ..v8.metadata import warn_once
from ..values import preview
from ..values.jserrors import captured_frames_text
from .base import ArgumentError, Result, Session, command, hexaddr

MAX_THREADS = 4096


def pick_thread(prog: Program, tid: int | None) -> ThreadInfo:
    threads = prog.backend.threads()
    if not threads:
        raise V8DbgError("the target has no threads")
    want = tid if tid is not None else prog.backend.selected_thread()
    for t in threads:
        if t.tid == want:
            if t.regs is None:
                raise V8DbgError(f"no registers for thread {t.tid}")
            return t
    if tid is not None:
        raise V8DbgError(f"no thread {tid} (threads: {', '.join(str(t.tid) for t in threads)})")
    if threads[0].regs is None:
        raise V8DbgError(f"no registers for thread {threads[0].tid}")
    return threads[0]


def thread_frames(prog: Program, thread: ThreadInfo) -> list[Frame]:
    frames = prog.stack.frames_of(thread, errors.DEBUG)
    recovery = prog.stack.recoveries.get(thread.tid)
    if recovery is not None:
        msg = segments.loss_message(prog, recovery)
        if msg:
            warn_once(msg)
    return frames


def frame_json(dec: StackDecoder, fr: Frame, verbose: bool) -> dict:
    d: dict = {"index": fr.index, "kind": fr.kind, "pc": hexaddr(fr.pc), "fp": hexaddr(fr.fp)}
    if fr.kind == "native":
        d["symbol"] = fr.symbol
        if fr.module:
            d["module"] = fr.module
    elif fr.kind == "internal":
        d["frame_type"] = fr.frame_type
        if fr.symbol:
            d["symbol"] = fr.symbol
    else:
        d.update({"function": fr.function, "script": fr.script, "line": fr.line,
                  "column": fr.column, "tier": fr.tier, "inlined": fr.inlined,
                  "function_address": hexaddr(fr.function_address)})
        if fr.constructor:
            d["constructor"] = True
        if fr.note:
            d["note"] = fr.note
        if verbose and fr.optimized_out:
            # An inlined function's receiver and arguments live on only in the
            # optimized code's registers and slots, if at all.
            d["optimized_out"] = True
            d["this"] = {"type": "optimized_out"}
            d["args"] = []
        elif verbose:
            d["this"] = _summary(dec, fr.receiver)
            d["args"] = [_summary(dec, a) for a in fr.args]
    return d


def _summary(dec: StackDecoder, v: int | None) -> dict:
    if v is None:
        return {"type": "undefined"}
    return preview.summarize(dec.prog.values, v)


def _receiver_text(value: dict) -> str:
    """A frame's `this`; the global object (a sloppy call's receiver) only named,
    as its hundreds of members would fill the listing (JSON keeps them)."""
    if value.get("global_proxy"):
        return "<global>"
    return preview.text(value)


def frame_text(fj: dict, verbose: bool) -> str:
    idx = f"#{fj['index']:<3}"
    pc = f"{int(fj['pc'], 16):#018x}"
    kind = fj["kind"]
    if kind == "native":
        sym = fj.get("symbol") or "??"
        mod = f" ({fj['module']})" if fj.get("module") else ""
        return f"{idx} {pc} {sym}{mod}"
    if kind == "internal":
        sym = f" {fj['symbol']}" if fj.get("symbol") else ""
        return f"{idx} {pc} <{fj['frame_type']}>{sym}"
    name = fj.get("function") or "(anonymous)"
    if fj.get("constructor"):
        name = f"new {name}"
    if fj.get("script") is None:
        where = "<builtin>" if fj.get("tier") == "builtin" else "<unknown>"
    else:
        where = f"{fj['script']}:{fj['line']}:{fj['column']}" if fj.get("line") else fj["script"]
    tier = fj.get("tier") or "?"
    extra = " inlined" if fj.get("inlined") else ""
    line = f"{idx} {pc} {name} at {where} [{tier}{extra}]"
    if fj.get("note"):
        line += f" ({fj['note']})"
    if verbose and fj.get("optimized_out"):
        return "\n".join([line, "       this: optimized out", "       args: optimized out"])
    if verbose and "args" in fj:
        lines = [line, f"       this: {_receiver_text(fj['this'])}"]
        for i, a in enumerate(fj["args"]):
            lines.append(f"       arg{i}: {preview.text(a)}")
        return "\n".join(lines)
    return line


def _async_frames(prog: Program, thread: ThreadInfo, first: int,
                  room: int | None) -> list[tuple[dict, str]]:
    """The `at async` frames V8 would add after the thread's machine frames
    (as JSON and text, numbered on from `first` in the text only)."""
    top = segments.top_for(prog, thread.regs) if thread.regs is not None else None
    if top is None:
        return []
    st = async_frames(prog, top.isolate)
    if st.note:
        warn_once(st.note)
    if st.cut:
        warn_once(f"jsstack: the async chain is longer than {len(st.frames)} frames; "
                  "the rest is not shown")
    frames = st.frames if room is None else st.frames[:room]
    return [(af.to_json(), f"#{first + i:<3} {'<async>':>18} {af.text()[len('async '):]}")
            for i, af in enumerate(frames)]


def exception_text(value: dict, verbose: bool) -> list[str]:
    """`exception: TypeError: message`; with -v also the stack V8 captured."""
    if value.get("type") != "error":
        return [f"exception: {preview.text(value)}"]
    head = value.get("constructor") or "Error"
    if value.get("message"):
        head += f": {value['message']}"
    out = [f"exception: {head}"]
    if verbose:
        stack = value.get("stack")
        if stack:
            out += ["    " + ln.strip() for ln in stack.splitlines()[1:] if ln.strip().startswith("at ")]
        else:
            out += [f"    {f}" for f in captured_frames_text(value)]
    return out


@command("jsstack", "mixed native and JavaScript backtrace of the selected thread",
         "Show the selected thread's stack, innermost frame first: native frames "
         "with their symbols and JavaScript frames with function, script:line:column "
         "and execution tier. When the thread's isolate holds an exception (one it "
         "is unwinding with, or the uncaught one --abort-on-uncaught-exception "
         "aborted on), an `exception:` line names it first (with -v, also the "
         "frames V8 captured for it). When the thread runs a microtask that resumed "
         "an async function (or settles a promise), the `at async` frames V8's own "
         "Error().stack would print follow the machine frames.")
def _jsstack(p: argparse.ArgumentParser):
    p.add_argument("-v", action="store_true",
                   help="show this and each argument, and the exception's captured frames")
    p.add_argument("-a", action="store_true",
                   help="also show V8-internal frames (entry, exit, stub, builtin)")
    p.add_argument("-n", type=int, metavar="N", help="show at most N frames")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--thread", type=int, metavar="TID",
                       help="a thread other than the selected one")
    which.add_argument("--all", action="store_true",
                       help="every thread of the process, idle ones too (JavaScript on the "
                            "main thread and workers, native frames only on the others)")

    def one(prog: Program, thread: ThreadInfo, args: argparse.Namespace) -> tuple[dict, str]:
        frames = thread_frames(prog, thread)
        dec = prog.stack
        shown = [fr for fr in frames if args.a or fr.kind != "internal"]
        if args.n is not None:
            shown = shown[:args.n]
        fjs = [frame_json(dec, fr, args.v) for fr in shown]
        data: dict = {"thread": {"tid": thread.tid, "name": thread.name}}
        lines = [f"thread {thread.tid}" + (f" ({thread.name})" if thread.name else "")]
        if thread.regs is not None:
            cut: list[str] = []
            thrown = exception.thrown(prog, thread.regs, cut)
            for n in cut:
                warn_once(n)
            if thrown is not None:
                data["exception"] = prog.values.decode(thrown.value, 1)
                lines += exception_text(data["exception"], args.v)
        texts = [frame_text(fj, args.v) for fj in fjs]
        if thread.regs is not None and (args.n is None or len(fjs) < args.n):
            for fj, tx in _async_frames(prog, thread, fjs[-1]["index"] + 1 if fjs else 0,
                                        None if args.n is None else args.n - len(fjs)):
                fjs.append(fj)
                texts.append(tx)
        data["frames"] = fjs
        return data, "\n".join(lines + texts)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        if args.n is not None and args.n < 0:
            raise ArgumentError("jsstack: -n takes a number of frames >= 0")
        prog = sess.program()
        if not args.all:
            data, text = one(prog, pick_thread(prog, args.thread), args)
            return Result(data, text)
        threads = prog.backend.threads()
        if not threads:
            raise V8DbgError("the target has no threads")
        # The selected thread first, then by id: the same order in every front
        # end (gdb lists the newest thread first).
        selected = prog.backend.selected_thread()
        threads = sorted(threads, key=lambda t: (t.tid != selected, t.tid))
        if len(threads) > MAX_THREADS:
            warn_once(f"jsstack --all: the target has {len(threads)} threads; the first "
                      f"{MAX_THREADS} are shown")
        docs, texts = [], []
        for t in threads[:MAX_THREADS]:
            try:
                data, text = one(prog, t, args)
            except V8DbgError as e:
                # One thread that cannot be walked does not hide the others.
                data = {"thread": {"tid": t.tid, "name": t.name}, "frames": [],
                        "error": str(e)}
                text = f"thread {t.tid}" + (f" ({t.name})" if t.name else "") + \
                    f"\n    v8dbg: {e}"
            docs.append(data)
            texts.append(text)
        return Result({"threads": docs}, "\n\n".join(texts))

    return run


@command("jsframe", "one frame of the backtrace in detail",
         "Show frame N of `jsstack -a` numbering: its function, position, receiver, "
         "arguments and source lines around the position.")
def _jsframe(p: argparse.ArgumentParser):
    p.add_argument("-v", action="store_true", help="show values in full")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("--thread", type=int, metavar="TID", help="a thread other than the selected one")
    p.add_argument("n", type=int, metavar="N", help="frame number, as jsstack prints it")

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        thread = pick_thread(prog, args.thread)
        frames = thread_frames(prog, thread)
        if not 0 <= args.n < len(frames):
            raise V8DbgError(f"jsframe: no frame {args.n} (frames 0-{len(frames) - 1})")
        fr = frames[args.n]
        dec = prog.stack
        fj = frame_json(dec, fr, True)
        extra: list[str] = []
        if fr.kind == "js" and fr.function_address is not None:
            from .values import frame_details
            extra = frame_details(prog, fr, fj, args.v)
        lines = [frame_text(fj, True)] + extra
        if fr.kind == "js" and fr.sfi is not None:
            fj["parameters"] = dec.f.parameter_count(fr.sfi)
            src = _source_lines(dec, fr)
            if src:
                fj["source"] = src
                lines.append("")
                for ln, txt, cur in src:
                    lines.append(f"  {'>' if cur else ' '} {ln:5} {txt}")
        return Result(fj, "\n".join(lines))

    return run


def _source_lines(dec: StackDecoder, fr: Frame, context: int = 3) -> list:
    if fr.script_address is None or fr.line is None:
        return []
    f = dec.f
    starts = f.line_starts(fr.script_address)
    lo = max(1, fr.line - context)
    hi = min(len(starts), fr.line + context)
    end_off = starts[hi] if hi < len(starts) else None
    src = f.script_source(fr.script_address, (end_off or starts[-1] + 4096) + 1) or ""
    out = []
    for ln in range(lo, hi + 1):
        a = starts[ln - 1]
        b = starts[ln] if ln < len(starts) else len(src)
        out.append([ln, src[a:b].rstrip("\r\n")[:400], ln == fr.line])
    return out


@command("v8dbg", "list the v8dbg commands", needs_program=False)
def _help(p: argparse.ArgumentParser):
    p.add_argument("word", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        from .base import COMMANDS, did_you_mean
        if args.word:
            # lldb has no sub-commands: `v8dbg jstack` is a mistyped name there.
            word = args.word[0]
            names = sorted(n for n in COMMANDS if n != "v8dbg")
            if word in names:
                raise ArgumentError(f"type `{word}` itself (each command has its own name)")
            raise ArgumentError(f"unknown command '{word}'{did_you_mean(word, names)}; "
                                "`v8dbg` lists them")
        rows = [(c.name, c.summary) for c in COMMANDS.values() if c.name != "v8dbg"]
        text = "v8dbg commands (each takes -h for help):\n" + "\n".join(
            f"  {n:16} {s}" for n, s in sorted(rows))
        return Result({"commands": [n for n, _ in sorted(rows)]}, text)

    return run
