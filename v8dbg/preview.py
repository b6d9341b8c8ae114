"""One-line summaries of JS values, for stack listings (`jsstack -v`)."""

from __future__ import annotations

import math
import struct

from .errors import DecodeError, TargetMemoryError, V8DbgError
from .functions import Functions
from .heap import Heap
from .strings import Strings


def _num(v: float) -> dict:
    if math.isnan(v):
        return {"type": "number", "value": "NaN"}
    if math.isinf(v):
        return {"type": "number", "value": "Infinity" if v > 0 else "-Infinity"}
    if v == 0 and math.copysign(1, v) < 0:
        return {"type": "number", "value": "-0"}
    if v.is_integer() and abs(v) < 2 ** 53:
        return {"type": "number", "value": int(v)}
    return {"type": "number", "value": v}


def summarize(h: Heap, s: Strings, f: Functions, v: int, strlen: int = 40) -> dict:
    """A depth-0 VALUE: type, address and scalar content, no members."""
    if h.is_smi(v):
        return {"type": "number", "value": h.smi(v)}
    if not h.is_heap(v):
        return {"type": "other", "v8_type": "not a tagged value", "address": f"0x{v:x}"}
    addr = f"0x{v:x}"
    try:
        itype = h.instance_type(v)
        name = h.type_name(itype)
        if h.is_string_type(itype):
            js = s.read(v, strlen)
            return {"type": "string", "address": addr, "value": js.text, "length": js.length,
                    "truncated": js.truncated}
        odd = h.oddball_name(v)
        if odd in ("undefined", "null", "hole"):
            return {"type": odd, "address": addr}
        if odd in ("true", "false"):
            return {"type": "boolean", "address": addr, "value": odd == "true"}
        if name == "HEAP_NUMBER_TYPE":
            raw = h.mem.read(v - 1 + h.md.off("HeapNumber", "value"), 8)
            out = _num(struct.unpack("<d", raw)[0])
            out["address"] = addr
            return out
        if f.is_function(v):
            sfi = f.shared(v)
            return {"type": "function", "address": addr, "name": f.debug_name(sfi)}
        if name == "JS_ARRAY_TYPE":
            ln = h.field(v, "JSArray", "length") if h.md.has("JSArray", "length") \
                else h.field_at(v, 24)
            out = {"type": "array", "address": addr, "truncated": True}
            if h.is_smi(ln):
                out["length"] = h.smi(ln)
            return out
        if name.startswith("JS_"):
            return {"type": "object", "address": addr, "truncated": True}
        return {"type": "other", "address": addr, "v8_type": name}
    except (DecodeError, TargetMemoryError, V8DbgError) as e:
        return {"type": "other", "address": addr, "v8_type": f"unreadable: {e}"}


def text(value: dict) -> str:
    """The one-line text form of a summary."""
    t = value.get("type")
    if t == "string":
        body = value["value"].replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
        return f"'{body}{'...' if value.get('truncated') else ''}'"
    if t == "number":
        return str(value["value"])
    if t == "boolean":
        return "true" if value["value"] else "false"
    if t in ("undefined", "null", "hole"):
        return "<hole>" if t == "hole" else t
    if t == "function":
        return f"[Function: {value.get('name') or '(anonymous)'}]"
    if t == "array":
        return f"Array({value.get('length', '?')}) {value.get('address', '')}"
    if t == "object":
        return f"{value.get('constructor') or 'Object'} {{...}} {value.get('address', '')}"
    return f"<{value.get('v8_type', t)}> {value.get('address', '')}"
