"""Value commands: `jsprint`, `jsclosure`, `jssource`, `jsconstructor`."""

from __future__ import annotations

import argparse

from ..errors import DecodeError, TargetMemoryError, V8DbgError
from ..values import inspect, preview
from ..values.decoder import Values
from .base import ArgumentError, Result, Session, command, hexaddr

DEFAULT_DEPTH = 2
DEFAULT_STRLEN = 100


def _target(sess: Session, text: str) -> tuple[Values, int]:
    prog = sess.program()
    addr = sess.evaluate(text)
    return prog.values, addr & ((1 << 64) - 1)


def _check_pointer(vals: Values, addr: int, what: str) -> None:
    """A clear error for a top-level address that is no V8 value at all."""
    h = vals.h
    if h.is_smi(addr):
        if addr & 0xFFFFFFFF:
            raise V8DbgError(f"{what}: 0x{addr:x} is neither a heap pointer (ends in binary 01) "
                             "nor a small integer (low 32 bits zero)")
        return
    if not h.is_heap(addr):
        if addr & vals.h.tag_mask == vals.h.heap_tag:
            raise V8DbgError(f"{what}: 0x{addr:x} is too low to be a V8 heap pointer")
        raise V8DbgError(f"{what}: 0x{addr:x} is not a tagged pointer (a V8 heap pointer ends "
                         "in binary 01; a small integer in 0)")
    try:
        h.map_of(addr)
    except TargetMemoryError:
        raise V8DbgError(f"{what}: memory at 0x{addr - 1:x} is not readable in this target") \
            from None
    except DecodeError as e:
        raise V8DbgError(f"{what}: {e}") from None
    if not h.is_valid_object(addr):
        raise V8DbgError(f"{what}: 0x{addr:x} does not point at a V8 heap object")


def _function_at(vals: Values, addr: int, what: str) -> int:
    """A JSFunction at addr; a bound function leads to its target."""
    h = vals.h
    if not h.is_heap(addr):
        raise V8DbgError(f"{what}: 0x{addr:x} is not a heap object pointer "
                         "(a tagged pointer ends in binary 1)")
    try:
        if h.is_type(addr, "SHARED_FUNCTION_INFO_TYPE"):
            addr = _closure_of(vals, addr, what)
        for _ in range(8):
            if vals.f.is_function(addr):
                return addr
            if h.is_type(addr, "JS_BOUND_FUNCTION_TYPE"):
                addr = vals.fld(addr, "JSBoundFunction", "bound_target_function")
                continue
            break
        kind = h.type_name(h.instance_type(addr))
    except TargetMemoryError as e:
        raise V8DbgError(f"{what}: {e}") from None
    raise V8DbgError(f"{what}: 0x{addr:x} is not a JavaScript function (it is {kind})")


def _closure_of(vals: Values, sfi: int, what: str) -> int:
    """A live closure of a SharedFunctionInfo (as jsfunctions lists them), from the census."""
    from ..heap.functions import closure_of
    from ..heap.isolates import choose
    fn = closure_of(vals.prog, choose(vals.prog, address=sfi).heap, sfi)
    if fn is None:
        raise V8DbgError(f"{what}: 0x{sfi:x} is a SharedFunctionInfo with no live closure "
                         "on the heap")
    return fn


@command("jsprint", "print the JS value at an address, like util.inspect",
         "Print the JavaScript value at ADDR (a tagged pointer). Objects show their "
         "constructor and properties in enumeration order, DEPTH levels deep.")
def _jsprint(p: argparse.ArgumentParser):
    p.add_argument("-a", action="store_true", help="show each heap value's address")
    p.add_argument("-d", type=int, default=DEFAULT_DEPTH, metavar="DEPTH",
                   help=f"levels of members to show (default {DEFAULT_DEPTH})")
    p.add_argument("-N", type=int, default=DEFAULT_STRLEN, metavar="STRLEN",
                   help=f"characters of strings, entries of arrays and bytes shown "
                        f"(default {DEFAULT_STRLEN})")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", nargs="+", metavar="ADDR", help="a tagged pointer or expression")

    def run(sess: Session, args: argparse.Namespace) -> Result:
        if args.d < 0 or args.N < 0:
            raise ArgumentError("jsprint: -d and -N take numbers >= 0")
        vals, addr = _target(sess, " ".join(args.addr))
        _check_pointer(vals, addr, "jsprint")
        value = vals.decode(addr, min(args.d, 64), args.N)
        return Result(value, inspect.render(value, args.a))

    return run


@command("jsclosure", "the variables a function's closure captures",
         "Show every variable of the contexts enclosing the function at ADDR, "
         "innermost scope first, by name.")
def _jsclosure(p: argparse.ArgumentParser):
    p.add_argument("-d", type=int, default=0, metavar="DEPTH",
                   help="levels of members to show for each value (default 0)")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", nargs="+", metavar="ADDR", help="a JSFunction pointer or expression")

    def run(sess: Session, args: argparse.Namespace) -> Result:
        vals, addr = _target(sess, " ".join(args.addr))
        fn = _function_at(vals, addr, "jsclosure")
        name = vals.function_name(fn)
        props = 1000 if args.d > 0 else preview.PREVIEW_PROPS
        variables = vals.closure_variables(fn, max(args.d, 0), DEFAULT_STRLEN, props)
        data = {"function": name, "address": hexaddr(fn),
                "variables": [{"name": v["name"], "value": v["value"]} for v in variables]}
        lines = [f"closure of {name or '(anonymous)'} {hexaddr(fn)}"]
        if not variables:
            lines.append("  (no captured variables)")
        last_ctx = None
        for v in variables:
            if v["context"] != last_ctx:
                lines.append(f"  context {v['context']}:")
                last_ctx = v["context"]
            lines.append(f"    {v['name']}: {preview.text(v['value'])}")
        return Result(data, "\n".join(lines))

    return run


@command("jssource", "the source text of a function",
         "Print the source of the function at ADDR from its script, with line numbers.")
def _jssource(p: argparse.ArgumentParser):
    p.add_argument("-n", type=int, metavar="LINES", help="print at most LINES lines")
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", nargs="+", metavar="ADDR", help="a JSFunction pointer or expression")

    def run(sess: Session, args: argparse.Namespace) -> Result:
        if args.n is not None and args.n < 0:
            raise ArgumentError("jssource: -n takes a number of lines >= 0")
        vals, addr = _target(sess, " ".join(args.addr))
        fn = _function_at(vals, addr, "jssource")
        text, line, column = vals.function_source(fn)
        sfi = vals.f.shared(fn)
        script = vals.f.script(sfi)
        sname = vals.f.script_name(script) if script is not None else None
        lines = text.split("\n")
        more = 0
        if args.n is not None:
            more = max(len(lines) - args.n, 0)
            lines = lines[:args.n]
        data = {"function": vals.function_name(fn), "script": sname, "line": line,
                "column": column, "source": "\n".join(lines)}
        out = [f"{vals.function_name(fn) or '(anonymous)'} at {sname}:{line}:{column}"]
        for i, ln in enumerate(lines):
            out.append(f"{line + i:6}  {ln}")
        if more:
            out.append(f"        ... {more} more line{'s' if more > 1 else ''}")
            data["truncated"] = True
        return Result(data, "\n".join(out))

    return run


@command("jsconstructor", "the constructor name of an object",
         "Print the name of the constructor of the object at ADDR, as util.inspect shows it.")
def _jsconstructor(p: argparse.ArgumentParser):
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("addr", nargs="+", metavar="ADDR", help="an object pointer or expression")

    def run(sess: Session, args: argparse.Namespace) -> Result:
        vals, addr = _target(sess, " ".join(args.addr))
        h = vals.h
        if not h.is_heap(addr):
            raise V8DbgError(f"jsconstructor: 0x{addr:x} is not a heap object pointer")
        try:
            itype = h.instance_type(addr)
        except (DecodeError, TargetMemoryError) as e:
            raise V8DbgError(f"jsconstructor: {e}") from None
        name = h.type_name(itype)
        if h.is_string_type(itype) or not (name.startswith("JS_") or vals.f.is_function(addr)):
            raise V8DbgError(f"jsconstructor: 0x{addr:x} is not a JavaScript object (it is {name})")
        ctor = vals.constructor_name(addr)
        text = ctor if ctor is not None else "null (no prototype)"
        return Result({"address": hexaddr(addr), "constructor": ctor}, text)

    return run


def frame_details(prog, fr, fj: dict, full: bool) -> list[str]:
    """Closure variables of a JS frame's function (and, with -v, full values).

    Adds `closure` (and deeper `this`/`args` when full) to the frame's JSON
    and returns the text lines for the closure variables.
    """
    vals = prog.values
    depth = DEFAULT_DEPTH if full else 0
    if full:
        if fr.receiver is not None:
            fj["this"] = vals.decode(fr.receiver, depth, DEFAULT_STRLEN)
        fj["args"] = [vals.decode(a, depth, DEFAULT_STRLEN) for a in fr.args]
    try:
        variables = vals.closure_variables(fr.function_address, depth, DEFAULT_STRLEN,
                                           1000 if full else preview.PREVIEW_PROPS)
    except V8DbgError as e:
        fj["closure_error"] = str(e)
        return [f"       closure: <{e}>"]
    fj["closure"] = [{"name": v["name"], "value": v["value"]} for v in variables]
    lines = []
    for v in variables:
        text = inspect.render(v["value"], False, 7)
        if not full:
            text = " ".join(part.strip() for part in text.split("\n"))
        lines.append(f"       closure {v['name']}: {text}")
    return lines
