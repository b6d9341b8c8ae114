"""Text rendering of VALUE dicts that reads like node's util.inspect.

Works on the decoded dicts only (no target access), so every front end
prints the same text. Short values stay on one line; long ones break like
util.inspect does, two spaces per level.
"""

from __future__ import annotations

import datetime
import re
import struct
from typing import Any

BREAK_LENGTH = 80
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
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


def _key(k: str) -> str:
    if k.startswith("Symbol(") and k.endswith(")"):
        return f"[{k}]"
    return k if _IDENT.match(k) else quote(k)


def _addr(v: dict, show: bool) -> str:
    return f" @{v['address']}" if show and v.get("address") else ""


def _number(value: Any) -> str:
    if isinstance(value, float):
        r = repr(value)
        if r.endswith(".0"):
            r = r[:-2]
        if "e" in r:
            mant, exp = r.split("e")
            r = f"{mant}e{'+' if not exp.startswith('-') else ''}{int(exp)}"
        return r
    return str(value)


def _date(ms: Any) -> str:
    if not isinstance(ms, (int, float)):
        return "Invalid Date"
    try:
        d = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + \
            datetime.timedelta(milliseconds=ms)
    except OverflowError:
        return f"Date({ms})"
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def _wrap(head: str, parts: list[str], open_: str, close: str, indent: int) -> str:
    """`head { a, b }` on one line if it fits, else one part per line."""
    if not parts:
        return f"{head}{open_}{close}" if not head else f"{head} {open_}{close}"
    one = f"{open_} {', '.join(parts)} {close}"
    prefix = f"{head} " if head else ""
    if len(prefix) + len(one) + indent <= BREAK_LENGTH and "\n" not in one:
        return prefix + one
    pad = " " * (indent + 2)
    body = (",\n").join(pad + p for p in parts)
    return f"{prefix}{open_}\n{body}\n{' ' * indent}{close}"


def render(v: dict, show_addr: bool = False, indent: int = 0, top: bool = True) -> str:
    """util.inspect-like text for one VALUE."""
    t = v.get("type")
    a = _addr(v, show_addr)
    if t == "number":
        return _number(v["value"])
    if t == "string":
        s = quote(v["value"])
        if v.get("truncated"):
            s += f"... {v['length'] - len(v['value'])} more characters"
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
    if t == "function":
        return _function(v) + a
    if t == "bound_function":
        return f"[Function: {v.get('name') or 'bound'}]" + a
    if t == "accessor":
        g = v.get("getter", {}).get("type") == "function"
        s = v.get("setter", {}).get("type") == "function"
        return "[Getter/Setter]" if g and s else ("[Getter]" if g else ("[Setter]" if s else
                                                                        "[Getter/Setter]"))
    if v.get("circular"):
        return f"[Circular{(' ' + v['address']) if v.get('address') else ''}]"
    if t == "date":
        return _date(v.get("value")) + a
    if t == "regexp":
        return f"/{v.get('source')}/{v.get('flags', '')}" + a
    if t == "other":
        err = f": {v['error']}" if v.get("error") else ""
        return f"<{v.get('v8_type', 'unknown')}{err}>" + (f" {v['address']}" if v.get("address")
                                                          else "")
    if t == "array":
        return _array(v, show_addr, indent)
    if t == "object":
        return _object(v, show_addr, indent)
    if t == "error":
        return _error(v, show_addr, indent, top)
    if t in ("map", "set"):
        return _collection(v, show_addr, indent)
    if t == "promise":
        head = "Promise" + a
        if v.get("state") == "pending":
            return f"{head} {{ <pending> }}"
        res = render(v["result"], show_addr, indent + 2, False) if "result" in v else "?"
        pre = "<rejected> " if v.get("state") == "rejected" else ""
        return _wrap(head, [pre + res], "{", "}", indent)
    if t == "proxy":
        if v.get("truncated"):
            return "[Proxy]" + a
        return _wrap("Proxy" + a, [render(v["target"], show_addr, indent + 2, False),
                                   render(v["handler"], show_addr, indent + 2, False)],
                     "[", "]", indent)
    if t == "boxed":
        inner = v.get("value", {})
        kind = {"number": "Number", "string": "String", "boolean": "Boolean",
                "symbol": "Symbol", "bigint": "BigInt"}.get(inner.get("type", ""), "Object")
        return f"[{kind}: {render(inner, False, indent, False)}]" + a
    if t == "typedarray":
        return _typed(v, show_addr, indent)
    if t == "arraybuffer":
        data = " ".join(v["bytes"][i:i + 2] for i in range(0, len(v["bytes"]), 2))
        more = " ..." if v.get("truncated") else ""
        return _wrap("ArrayBuffer" + a, [f"[Uint8Contents]: <{data}{more}>",
                                         f"byteLength: {v['byte_length']}"], "{", "}", indent)
    return f"<{t}>" + a


def _function(v: dict) -> str:
    name = v.get("name") or ""
    if v.get("class"):
        return f"[class {name or '(anonymous)'}]"
    kind = v.get("kind") or "Function"
    return f"[{kind}: {name}]" if name else f"[{kind} (anonymous)]"


def _props(v: dict, show_addr: bool, indent: int) -> list[str]:
    out = []
    for e in v.get("elements", []) if v.get("type") != "array" else []:
        out.append(f"{quote(str(e['index']))}: {render(e['value'], show_addr, indent + 2, False)}")
    for p in v.get("properties", []):
        if p["key"] == "..." and p["value"].get("v8_type") == "more properties":
            out.append("...")
            continue
        out.append(f"{_key(p['key'])}: {render(p['value'], show_addr, indent + 2, False)}")
    return out


def _object(v: dict, show_addr: bool, indent: int) -> str:
    ctor = v.get("constructor")
    a = _addr(v, show_addr)
    tag = v.get("tag")
    if ctor is None:
        head = "[Object: null prototype]"
    elif v.get("arguments"):
        head = "[Arguments]"
    elif ctor == "Object" and not tag:
        head = ""
    else:
        head = ctor
    if tag and tag != ctor:
        head = f"{head or 'Object'} [{tag}]"
    head += a
    if v.get("truncated"):
        return f"[{ctor or 'Object'}]" + a
    return _wrap(head.strip(), _props(v, show_addr, indent), "{", "}", indent)


def _array(v: dict, show_addr: bool, indent: int) -> str:
    a = _addr(v, show_addr)
    if v.get("truncated") and "elements" not in v:
        return "[Array]" + a
    parts: list[str] = []
    holes = 0
    elems = v.get("elements", [])
    for e in elems:
        if e.get("type") == "hole":
            holes += 1
            continue
        if holes:
            parts.append(f"<{holes} empty item{'s' if holes > 1 else ''}>")
            holes = 0
        parts.append(render(e, show_addr, indent + 2, False))
    length = v.get("length", len(elems))
    if "sparse_tail" in v:
        pos = len(elems)
        for e in v["sparse_tail"]:
            holes += e["index"] - pos
            if holes:
                parts.append(f"<{holes} empty item{'s' if holes > 1 else ''}>")
                holes = 0
            parts.append(render(e["value"], show_addr, indent + 2, False))
            pos = e["index"] + 1
        holes += length - pos
        elems = []
        length = 0
    rest = length - len(elems)
    if holes and not rest:
        parts.append(f"<{holes} empty item{'s' if holes > 1 else ''}>")
    elif holes:
        rest += holes
    if rest > 0:
        parts.append(f"... {rest} more item{'s' if rest > 1 else ''}")
    parts += _props(v, show_addr, indent)
    return _wrap(a.strip(), parts, "[", "]", indent)


def _error(v: dict, show_addr: bool, indent: int, top: bool = True) -> str:
    a = _addr(v, show_addr)
    head = v.get("stack") or f"{v.get('constructor') or 'Error'}: {v.get('message') or ''}"
    if not top:
        head = head.split("\n", 1)[0]  # nested errors: the first line of the stack
    elif v.get("frames") and not v.get("stack"):
        head += "".join(f"\n    at {f}" for f in v["frames"])
    props = _props(v, show_addr, indent)
    if not props:
        return head + a
    return _wrap(head + a, props, "{", "}", indent)


def _collection(v: dict, show_addr: bool, indent: int) -> str:
    a = _addr(v, show_addr)
    is_map = v["type"] == "map"
    name = v.get("constructor") or ("Map" if is_map else "Set")
    if v.get("weak"):
        name = "WeakMap" if is_map else "WeakSet"
        head = name + a
    else:
        head = f"{name}({v.get('size', '?')})" + a
    if v.get("truncated") and "entries" not in v and "values" not in v:
        return f"[{name}]" + a
    if is_map:
        parts = [f"{render(k, show_addr, indent + 2, False)} => "
                 f"{render(val, show_addr, indent + 2, False)}" for k, val in v.get("entries", [])]
    else:
        parts = [render(x, show_addr, indent + 2, False) for x in v.get("values", [])]
    shown = len(parts)
    if v.get("size", shown) > shown and not v.get("weak"):
        parts.append(f"... {v['size'] - shown} more items")
    return _wrap(head, parts, "{", "}", indent)


_FORMATS = {"Uint8": "B", "Int8": "b", "Uint8Clamped": "B", "Uint16": "H", "Int16": "h",
            "Uint32": "I", "Int32": "i", "Float32": "f", "Float64": "d", "BigUint64": "Q",
            "BigInt64": "q", "Float16": "e"}


def _typed(v: dict, show_addr: bool, indent: int) -> str:
    a = _addr(v, show_addr)
    kind = v.get("kind", "")
    raw = bytes.fromhex(v.get("bytes", ""))
    if kind == "DataView":
        return _wrap("DataView" + a, [f"byteLength: {v['byte_length']}",
                                      f"byteOffset: {v['byte_offset']}"], "{", "}", indent)
    if v.get("constructor") == "Buffer":
        raw = raw[:50]  # as many bytes as node's buffer.INSPECT_MAX_BYTES
        data = " ".join(f"{b:02x}" for b in raw)
        more = v["length"] - len(raw)
        return f"<Buffer{' ' + data if data else ''}{f' ... {more} more bytes' if more > 0 else ''}>" + a
    fmt = _FORMATS.get(kind[:-len("Array")] if kind.endswith("Array") else kind, "B")
    size = struct.calcsize(fmt)
    n = len(raw) // size
    nums = struct.unpack(f"<{n}{fmt}", raw[:n * size]) if n else ()
    big = kind.startswith("Big")
    parts = [f"{x}n" if big else _number(x) for x in nums]
    more = v["length"] - n
    if more > 0:
        parts.append(f"... {more} more item{'s' if more > 1 else ''}")
    return _wrap(f"{v.get('constructor') or kind}({v['length']})" + a, parts, "[", "]", indent)
