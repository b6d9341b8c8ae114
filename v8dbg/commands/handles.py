"""jshandles: what keeps the event loop alive, as node itself would count it."""

from __future__ import annotations

import argparse
from collections import Counter

from ..heap.handles import EnvHandles, Timer, Wrap, env_handles
from .base import Result, Session, command, hexaddr
from .heap import _census, _isolate_args, _pick, _where


def _wrap_json(w: Wrap) -> dict:
    d = {"type": w.type, "address": hexaddr(w.address), "class": w.cpp_class,
         "provider": w.provider, "counted": w.counted,
         "object": hexaddr(w.object), "object_constructor": w.object_constructor,
         "owner": hexaddr(w.owner), "owner_constructor": w.owner_constructor}
    if w.kind == "handle":
        d.update({"uv_handle": hexaddr(w.uv_handle), "active": w.active, "refed": w.refed,
                  "closing": w.closing, "fd": w.fd})
    return d


def _timer_json(t: Timer) -> dict:
    d: dict = {"kind": t.kind, "address": hexaddr(t.address), "refed": t.refed,
               "callback": t.callback}
    if t.kind == "Timeout":
        d.update({"ms": t.ms, "start": t.start, "due": t.due, "repeat": t.repeat})
    return d


def _num(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(x)) if x == int(x) else f"{x:g}"


def _where_fn(cb: dict | None) -> str:
    if cb is None:
        return "(callback not decoded)"
    name = cb.get("name") or "(anonymous)"
    if cb.get("script") is None:
        return name
    return f"{name} at {cb['script']}:{cb.get('line')}:{cb.get('column')}"


def _owner_text(w: Wrap) -> str:
    parts = []
    if w.owner is not None:
        parts.append(f"{w.owner_constructor or '?'} {hexaddr(w.owner)}")
    if w.object is not None:
        parts.append(f"via {w.object_constructor or '?'} {hexaddr(w.object)}")
    else:
        parts.append("(no JS object)")
    return " ".join(parts)


def _summary(resources: list[str]) -> str:
    counts = Counter(resources)
    return ", ".join(f"{name} x{n}" if n > 1 else name for name, n in counts.items()) or "none"


def _text(r: EnvHandles) -> list[str]:
    lines = [f"{len(r.resources)} resources keep the event loop alive "
             f"(process.getActiveResourcesInfo()): {_summary(r.resources)}"]
    lines.append(f"handles ({len(r.handles)}):")
    if r.handles:
        lines.append(f"  {'TYPE':<15} {'ACTIVE':<6} {'REF':<4} {'FD':>4}  {'ADDRESS':<14}  OWNER")
    for w in r.handles:
        flags = ("yes" if w.active else "no", "yes" if w.refed else "no")
        note = "" if w.counted else "  (not counted)"
        lines.append(f"  {w.type:<15} {flags[0]:<6} {flags[1]:<4} "
                     f"{'-' if w.fd is None else w.fd:>4}  {hexaddr(w.address):<14}  "
                     f"{_owner_text(w)}{note}")
    lines.append(f"requests ({len(r.requests)}):")
    for w in r.requests:
        note = "" if w.counted else "  (not counted)"
        lines.append(f"  {w.type:<15} {hexaddr(w.address):<14}  {_owner_text(w)}{note}")
    lines.append(f"timers ({len(r.timers)}):")
    for t in r.timers:
        ref = "ref'd" if t.refed else "unref'd"
        if t.kind == "Timeout":
            every = f", every {_num(t.repeat)} ms" if t.repeat is not None else ""
            when = f"due at {_num(t.due)} ms (armed at {_num(t.start)} + {_num(t.ms)}{every})"
        else:
            when = "runs on the next turn of the loop"
        lines.append(f"  {t.kind:<9} {ref:<7} {hexaddr(t.address):<14}  {when}: "
                     f"{_where_fn(t.callback)}")
    for w in r.warnings:
        lines.append(f"warning: {w}")
    return lines


@command("jshandles", "what keeps the event loop alive: handles, requests and timers",
         "List the libuv handles and requests of node's Environment and node's "
         "timers, counted as process.getActiveResourcesInfo() counts them, each "
         "with its type, active/ref'd state, fd, the JS object that owns it, and "
         "(for timers) when it is due and where its callback is. Needs no JS "
         "frame on the stack: the Environment is found from V8's native contexts. "
         "Times are on node's event-loop clock (ms), as the Timeout objects keep them.")
def _jshandles(p: argparse.ArgumentParser):
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        iso = _pick(prog, args)
        _census(prog, iso.heap)
        r = env_handles(prog, iso.heap)
        data = {"resources": r.resources,
                "handles": [_wrap_json(w) for w in r.handles],
                "requests": [_wrap_json(w) for w in r.requests],
                "timers": [_timer_json(t) for t in r.timers],
                "environment": hexaddr(r.environment), "warnings": r.warnings,
                "isolate": iso.to_json()}
        lines = _text(r)
        lines.append(f"node Environment {hexaddr(r.environment)}, {_where(prog, iso)}")
        return Result(data, "\n".join(lines))

    return run
