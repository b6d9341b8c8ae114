"""One-line summaries of JS values, for stack listings (`jsstack -v`).

A thin layer over the value decoder: depth 0 (an object's own members, with
nested objects shown by constructor only), short strings, few properties.
"""

from __future__ import annotations

import re

from ..errors import V8DbgError
from . import inspect
from .decoder import Values

PREVIEW_STRLEN = 40
PREVIEW_PROPS = 12


def summarize(vals: Values, v: int, strlen: int = PREVIEW_STRLEN) -> dict:
    """A depth-0 VALUE for a frame's receiver or argument."""
    try:
        return vals.decode(v, 0, strlen, PREVIEW_PROPS)
    except V8DbgError as e:
        return {"type": "other", "address": f"0x{v:x}", "v8_type": f"unreadable: {e}"}


def text(value: dict) -> str:
    """The one-line text form of a summary."""
    out = inspect.render(value)
    out = re.sub(r"\n\s*at [^\n]*", "", out)  # error stacks: keep the message line
    return " ".join(part.strip() for part in out.split("\n"))
