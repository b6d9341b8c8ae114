"""Text rendering of VALUE dicts that reads like node's util.inspect.

Works on the decoded dicts only (no target access), so every front end
prints the same text. The layout follows util.inspect's defaults
(breakLength 80, compact 3): an object goes on one line when it fits and
holds nothing nested three levels deeper; long arrays of short entries are
grouped into aligned columns.
"""

from __future__ import annotations

import datetime
import math
import re
import struct
from typing import Any

from ..v8.typenames import class_of
from .jserrors import captured_frames_text

BREAK_LENGTH = 80
COMPACT = 3
_KEY = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v"}


def quote(text: str) -> str:
    """A JS string literal the way util.inspect picks quotes."""
    q = "'"
    if "'" in text:
        q = '"' if '"' not in text else ("`" if "`" not in text and "${" not in text else "'")
    out = []
    for ch in text:
        if ch == q or ch == "\\":
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return q + "".join(out) + q


def js_number(value: Any) -> str:
    """A number as JavaScript's Number.prototype.toString writes it."""
    if isinstance(value, str):
        return value  # NaN, Infinity, -Infinity, -0
    if isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    r = repr(abs(value))  # shortest round-trip digits
    mant, _, exp = r.partition("e")
    intpart, _, frac = mant.partition(".")
    digits = (intpart + frac).lstrip("0")
    # n: position of the decimal point relative to the digit string (JS's "n").
    n = len(intpart) + (int(exp) if exp else 0)
    if intpart == "0":
        lead = len(frac) - len(frac.lstrip("0"))
        n = -lead + (int(exp) if exp else 0)
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    body = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{body}e{'+' if e >= 0 else '-'}{abs(e)}"


def _date(ms: Any) -> str:
    if not isinstance(ms, (int, float)):
        return "Invalid Date"
    try:
        d = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + \
            datetime.timedelta(milliseconds=ms)
    except OverflowError:
        return f"Date({ms})"
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def _key(k: str) -> str:
    if k.startswith("Symbol(") and k.endswith(")"):
        return f"[{k}]"
    return k if _KEY.match(k) else quote(k)


class _Ctx:
    """util.inspect's formatting state: indentation and the innermost depth seen."""

    def __init__(self, show_addr: bool, indent: int) -> None:
        self.show = show_addr
        self.indent = indent
        self.current_depth = 0
        self.circular: dict[str, int] = {}  # address -> util's reference number


def render(v: dict, show_addr: bool = False, indent: int = 0, top: bool = True) -> str:
    """util.inspect-like text for one VALUE (`show_addr` adds `@0x...` to heap values)."""
    return _fmt(_Ctx(show_addr, indent), v, 0, top)


def _addr(ctx: _Ctx, v: dict) -> str:
    return f" @{v['address']}" if ctx.show and v.get("address") else ""


def _fmt(ctx: _Ctx, v: dict, level: int, top: bool = False) -> str:
    t = v.get("type")
    a = _addr(ctx, v)
    if t == "number":
        return js_number(v["value"])
    if t == "string":
        s = quote(v["value"])
        if v.get("truncated"):
            s += f"... {v['length'] - len(v['value'].encode('utf-16-le')) // 2} more characters"
        return s + a
    if t == "boolean":
        return "true" if v["value"] else "false"
    if t in ("null", "undefined"):
        return t
    if t == "hole":
        return "<hole>"
    if t == "symbol":
        d = v.get("description")
        return f"Symbol({d if d is not None else ''})" + a
    if t == "bigint":
        return f"{v['value']}n" + a
    if v.get("circular"):
        key = v.get("address") or ""
        idx = ctx.circular.setdefault(key, len(ctx.circular) + 1)
        return f"[Circular *{idx}]" + a
    if t == "function":
        if v.get("properties"):
            return _container(ctx, v, level, a)
        if v.get("truncated"):
            return "[Function]" + a
        return _function(v) + a
    if t == "bound_function":
        return f"[Function: {v.get('name') or 'bound'}]" + a
    if t == "accessor":
        g = v.get("getter", {}).get("type") == "function"
        s = v.get("setter", {}).get("type") == "function"
        if g and s:
            return "[Getter/Setter]"
        return "[Getter]" if g else ("[Setter]" if s else "[Getter/Setter]")
    if t == "date":
        return _date(v.get("value")) + a
    if t == "regexp":
        return f"/{v.get('source')}/{v.get('flags', '')}" + a
    if t == "other":
        return _other(v)
    if t == "boxed":
        inner = v.get("value", {})
        kind = {"number": "Number", "string": "String", "boolean": "Boolean",
                "symbol": "Symbol", "bigint": "BigInt"}.get(inner.get("type", ""), "Object")
        return f"[{kind}: {_fmt(ctx, inner, level)}]" + a
    if t == "typedarray" and v.get("constructor") == "Buffer":
        return _buffer(v) + a
    return _container(ctx, v, level, a)


def _other(v: dict) -> str:
    """A V8-internal object by its class, as a debugger user knows it
    (`<FunctionContext 0x...>`); any other note as it is."""
    kind = v.get("v8_type", "unknown")
    err = f": {v['error']}" if v.get("error") else ""
    if re.fullmatch(r"[A-Z][A-Z0-9_]*_TYPE", kind):
        where = f" {v['address']}" if v.get("address") else ""
        return f"<{class_of(kind)}{where}{err}>"
    where = f" {v['address']}" if v.get("address") else ""
    return f"<{kind}{err}>{where}"


def _function(v: dict) -> str:
    name = v.get("name") or ""
    if v.get("class"):
        ext = f" extends {v['extends']}" if v.get("extends") else ""
        return f"[class {name or '(anonymous)'}{ext}]"
    kind = v.get("kind") or "Function"
    if name:
        return f"[{kind}: {name}]"
    return f"[{kind} (anonymous)]"


def _prefix(ctor: str | None, tag: str | None, fallback: str, size: str = "") -> str:
    """util's getPrefix: `Ctor `, `Ctor [tag] `, `[Object: null prototype] `."""
    if ctor is None:
        if tag and tag != fallback:
            return f"[{fallback}{size}: null prototype] [{tag}] "
        return f"[{fallback}{size}: null prototype] "
    if tag and tag != ctor:
        return f"{ctor}{size} [{tag}] "
    return f"{ctor}{size} "


def _container(ctx: _Ctx, v: dict, level: int, a: str) -> str:
    """Objects with members: pick braces and entries, then lay them out like util."""
    t = v.get("type")
    base = ""
    is_array = False
    numbers: list[bool] = []
    entries: list[Any] = []  # (kind, payload) formatted below, one level deeper
    if t == "array":
        prefix = "" if v.get("constructor", "Array") == "Array" else \
            _prefix(v.get("constructor"), None, "Array", f"({v['length']})")
        braces = [f"{prefix}[", "]"]
        trunc_name = "Array"
        is_array = True
    elif t == "object":
        ctor, tag = v.get("constructor"), v.get("tag")
        if v.get("arguments"):
            braces = ["[Arguments] {", "}"]
        elif ctor == "Object" and not tag:
            braces = ["{", "}"]
        else:
            braces = [f"{_prefix(ctor, tag, 'Object')}{{", "}"]
        trunc_name = ctor or "Object: null prototype"
    elif t in ("map", "set"):
        name = v.get("constructor") or ("Map" if t == "map" else "Set")
        if v.get("weak"):
            name = "WeakMap" if t == "map" else "WeakSet"
            braces = [f"{name} {{", "}"]
        else:
            braces = [f"{name}({v.get('size', '?')}) {{", "}"]
        trunc_name = name
    elif t == "error":
        base = v.get("stack") or f"{v.get('constructor') or 'Error'}: {v.get('message') or ''}"
        if v.get("frames") and not v.get("stack"):
            base += "".join(f"\n    {f}" for f in captured_frames_text(v))
        if ctx.indent:
            base = base.replace("\n", "\n" + " " * ctx.indent)
        braces = ["{", "}"]
        trunc_name = v.get("constructor") or "Error"
    elif t == "function":
        base = _function(v)
        braces = ["{", "}"]
        trunc_name = "Function"
    elif t == "promise":
        braces = ["Promise {", "}"]
        trunc_name = "Promise"
    elif t == "proxy":
        braces = ["Proxy [", "]"]
        trunc_name = "Proxy"
    elif t == "typedarray":
        if v.get("kind") == "DataView":
            braces = ["DataView {", "}"]
            trunc_name = "DataView"
        else:
            name = v.get("constructor") or v.get("kind", "TypedArray")
            braces = [f"{name}({v['length']}) [", "]"]
            trunc_name = name
            is_array = True
    elif t == "arraybuffer":
        braces = ["ArrayBuffer {", "}"]
        trunc_name = "ArrayBuffer"
    else:
        return f"<{t}>" + a
    if a and base:
        base += a
    elif a:
        braces[0] = f"{braces[0][:-1].rstrip()}{a} {braces[0][-1]}".lstrip()
    if v.get("truncated") and not _has_members(v):
        return f"[{trunc_name}]" + a
    saved_depth = ctx.current_depth
    ctx.current_depth = level + 1  # util sets it on entering an object, children overwrite it

    # Entries, formatted one level deeper with two more spaces of indentation.
    output: list[str] = []
    ctx_level = level + 1

    def sub(x: dict) -> str:
        ctx.indent += 2
        try:
            return _fmt(ctx, x, ctx_level)
        finally:
            ctx.indent -= 2

    if t == "array":
        output, numbers = _array_entries(v, sub)
    elif t == "typedarray" and is_array:
        output, numbers = _typed_entries(v)
    elif t == "typedarray":
        output = [f"byteLength: {v['byte_length']}", f"byteOffset: {v['byte_offset']}"]
    elif t == "arraybuffer":
        data = " ".join(v["bytes"][i:i + 2] for i in range(0, len(v["bytes"]), 2))
        more = " ..." if v.get("truncated") else ""
        output = [f"[Uint8Contents]: <{data}{more}>", f"byteLength: {v['byte_length']}"]
    elif t in ("map", "set"):
        items = v.get("entries" if t == "map" else "values", [])
        if v.get("weak") and not items:
            output = ["<items unknown>"]
        ctx.indent += 2
        try:
            if t == "map":
                output += [f"{_fmt(ctx, k, ctx_level)} => {_fmt(ctx, val, ctx_level)}"
                           for k, val in items]
            else:
                output += [_fmt(ctx, x, ctx_level) for x in items]
        finally:
            ctx.indent -= 2
        if not v.get("weak") and v.get("size", len(items)) > len(items):
            output.append(f"... {v['size'] - len(items)} more items")
    elif t == "promise":
        if v.get("state") == "pending":
            output = ["<pending>"]
        else:
            res = sub(v["result"]) if "result" in v else "?"
            output = [("<rejected> " if v.get("state") == "rejected" else "") + res]
    elif t == "proxy":
        output = [sub(v["target"]), sub(v["handler"])] if "target" in v else []
    if t in ("object", "error", "array", "function"):
        for e in v.get("elements", []) if t == "object" else []:
            output.append(f"{quote(str(e['index']))}: {sub(e['value'])}")
        for p in v.get("properties", []):
            if p["key"] == "..." and p["value"].get("v8_type") == "more properties":
                output.append("...")
                continue
            if t == "error" and p["key"] in ("name", "message", "stack") and \
                    p["value"].get("type") == "string" and p["value"]["value"] in base:
                continue  # util drops keys the stack already shows
            output.append(f"{_key(p['key'])}: {sub(p['value'])}")
        if t == "error" and "cause" in v:
            output.append(f"[cause]: {sub(v['cause'])}")

    ref = ctx.circular.get(v.get("address") or "")
    if ref is not None:  # util marks the target of a cycle at its start
        base = f"<ref *{ref}>" if not base else f"<ref *{ref}> {base}"
    if not output:
        ctx.current_depth = saved_depth  # util returns before entering an empty object
        if t == "error":
            return base
        return braces[0] + braces[1]
    return _reduce(ctx, output, base, braces, is_array, ctx_level, numbers)


def _has_members(v: dict) -> bool:
    return any(k in v for k in ("elements", "properties", "entries", "values", "result", "target",
                                "bytes"))


def _array_entries(v: dict, sub) -> tuple[list[str], list[bool]]:
    output: list[str] = []
    numbers: list[bool] = []
    holes = 0

    def flush() -> None:
        nonlocal holes
        if holes:
            output.append(f"<{holes} empty item{'s' if holes > 1 else ''}>")
            numbers.append(False)
            holes = 0

    elems = v.get("elements", [])
    for e in elems:
        if e.get("type") == "hole":
            holes += 1
            continue
        flush()
        output.append(sub(e))
        numbers.append(e.get("type") in ("number", "bigint"))
    length = v.get("length", len(elems))
    pos = len(elems)
    if "sparse_tail" in v:
        for e in v["sparse_tail"]:
            holes += e["index"] - pos
            flush()
            output.append(sub(e["value"]))
            numbers.append(e["value"].get("type") in ("number", "bigint"))
            pos = e["index"] + 1
        holes += length - pos
        flush()
    else:
        rest = length - pos
        if rest and not holes:
            output.append(f"... {rest} more item{'s' if rest > 1 else ''}")
        elif rest:
            output.append(f"... {rest + holes} more item{'s' if rest + holes > 1 else ''}")
            holes = 0
        flush()
    return output, numbers


_FORMATS = {"Uint8": "B", "Int8": "b", "Uint8Clamped": "B", "Uint16": "H", "Int16": "h",
            "Uint32": "I", "Int32": "i", "Float32": "f", "Float64": "d", "BigUint64": "Q",
            "BigInt64": "q", "Float16": "e"}


def _typed_entries(v: dict) -> tuple[list[str], list[bool]]:
    kind = v.get("kind", "")
    raw = bytes.fromhex(v.get("bytes", ""))
    fmt = _FORMATS.get(kind[:-len("Array")] if kind.endswith("Array") else kind, "B")
    size = struct.calcsize(fmt)
    n = len(raw) // size
    nums = struct.unpack(f"<{n}{fmt}", raw[:n * size]) if n else ()
    big = kind.startswith("Big")
    out = [f"{x}n" if big else js_number(float(x) if fmt in "efd" else x) for x in nums]
    more = v["length"] - n
    if more > 0:
        out.append(f"... {more} more item{'s' if more > 1 else ''}")
    return out, [True] * n


def _buffer(v: dict) -> str:
    raw = bytes.fromhex(v.get("bytes", ""))[:50]  # node's buffer.INSPECT_MAX_BYTES
    data = " ".join(f"{b:02x}" for b in raw)
    more = v["length"] - len(raw)
    return f"<Buffer{' ' + data if data else ''}{f' ... {more} more bytes' if more > 0 else ''}>"


def _reduce(ctx: _Ctx, output: list[str], base: str, braces: list[str], is_array: bool,
            level: int, numbers: list[bool]) -> str:
    """util's reduceToSingleString with compact = 3."""
    entries = len(output)
    if is_array and entries > 6:
        output = _group(ctx, output, numbers)
    if ctx.current_depth - level < COMPACT and entries == len(output):
        start = len(output) + ctx.indent + len(braces[0]) + len(base) + 10
        if _below_break(output, start, base):
            joined = ", ".join(output)
            if "\n" not in joined:
                return f"{base + ' ' if base else ''}{braces[0]} {joined} {braces[1]}"
    ind = "\n" + " " * ctx.indent
    body = f",{ind}  ".join(output)
    return f"{base + ' ' if base else ''}{braces[0]}{ind}  {body}{ind}{braces[1]}"


def _below_break(output: list[str], start: int, base: str) -> bool:
    total = len(output) + start
    if total + len(output) > BREAK_LENGTH:
        return False
    for o in output:
        total += len(o)
        if total > BREAK_LENGTH:
            return False
    return base == "" or "\n" not in base


def _group(ctx: _Ctx, output: list[str], numbers: list[bool]) -> list[str]:
    """util's groupArrayElements: short entries in aligned columns."""
    total = 0
    max_len = 0
    out_len = len(output)
    if output and output[-1].startswith("... ") and output[-1].endswith(("more items",
                                                                          "more item")):
        out_len -= 1
    sep = 2
    data_len = []
    for i in range(out_len):
        n = len(output[i])
        data_len.append(n)
        total += n + sep
        max_len = max(max_len, n)
    actual_max = max_len + sep
    if out_len and actual_max * 3 + ctx.indent < BREAK_LENGTH and \
            (total / actual_max > 5 or max_len <= 6):
        average_bias = math.sqrt(actual_max - total / len(output))
        biased_max = max(actual_max - 3 - average_bias, 1)
        columns = min(round(math.sqrt(2.5 * biased_max * out_len) / biased_max),
                      (BREAK_LENGTH - ctx.indent) // actual_max, COMPACT * 4, 15)
        if columns <= 1:
            return output
        max_line = []
        for i in range(columns):
            line_len = 0
            for j in range(i, out_len, columns):
                line_len = max(line_len, data_len[j])
            max_line.append(line_len + sep)
        pad_start = all(numbers[:len(output)]) and len(numbers) >= out_len
        tmp = []
        for i in range(0, out_len, columns):
            upto = min(i + columns, out_len)
            parts = []
            for j in range(i, upto - 1):
                cell = f"{output[j]}, "
                parts.append(cell.rjust(max_line[j - i]) if pad_start
                             else cell.ljust(max_line[j - i]))
            j = upto - 1
            if pad_start:
                parts.append(output[j].rjust(max_line[j - i] - sep))
            else:
                parts.append(output[j])
            tmp.append("".join(parts))
        if out_len < len(output):
            tmp.append(output[out_len])
        return tmp
    return output
