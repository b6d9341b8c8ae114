"""One-line summaries of JS values, for stack listings (`jsstack -v`).

A thin layer over the value decoder: depth 0 (an object's own members, with
nested objects shown by constructor only), short strings, few properties.
"""

from __future__ import annotations

import re

from . import inspect
from ..errors import V8DbgError
from ..v8.functions import Functions
from ..v8.tagged import Heap
from ..v8.strings import Strings

PREVIEW_STRLEN = 40
PREVIEW_PROPS = 12


def summarize(h: Heap, s: Strings, f: Functions, v: int, strlen: int = PREVIEW_STRLEN) -> dict:
    """A depth-0 VALUE for a frame's receiver or argument."""
    from .decoder import Values
    vals = h.prog.cache.get("values")
    if not isinstance(vals, Values) or vals.h is not h:
        vals = Values(h.prog, h, s, f)
        h.prog.cache["values"] = vals
    try:
        return vals.decode(v, 0, strlen, PREVIEW_PROPS)
    except V8DbgError as e:
        return {"type": "other", "address": f"0x{v:x}", "v8_type": f"unreadable: {e}"}


def text(value: dict) -> str:
    """The one-line text form of a summary."""
    out = inspect.render(value)
    out = re.sub(r"\n\s*at [^\n]*", "", out)  # error stacks: keep the message line
    return " ".join(part.strip() for part in out.split("\n"))
