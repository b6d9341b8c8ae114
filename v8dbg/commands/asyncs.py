"""The `jsasync` command: suspended async functions and their await chains."""

from __future__ import annotations

import argparse

from ..heap.awaits import Suspended, suspended
from ..stack.asyncframes import AsyncFrame
from ..values import preview
from .base import Result, Session, command, hexaddr
from .heap import _census, _isolate_args, _pick, _where

REACHABILITY = ("suspended functions are those in the heap, reachable or not (a chain "
                "no root holds any more is listed too)")


def _frame_json(f: AsyncFrame) -> dict:
    d = f.to_json()
    d.pop("kind", None)
    d.pop("async", None)
    if f.generator is not None:
        d["address"] = d.pop("generator")
    return d


def _where_text(f: AsyncFrame) -> str:
    if f.generator is None:
        return f"{f.function} (index {f.index})"
    at = f"{f.script}:{f.line}:{f.column}" if f.line else (f.script or "<unknown>")
    return f"{f.function} at {at}"


@command("jsasync", "suspended async functions and their await chains",
         "List every suspended async function and async generator in the heap "
         "(reachable or not: no garbage is told apart yet): where "
         "it awaits (script:line:column of the await), what it awaits, and who awaits "
         "it; then the await chains, innermost function first as V8 prints `at async` "
         "frames, equal chains counted together (most numerous first).")
def _jsasync(p: argparse.ArgumentParser):
    p.add_argument("--json", action="store_true", help="print one line of JSON")
    p.add_argument("-v", action="store_true",
                   help="also list each suspended function on its own line")
    _isolate_args(p)

    def run(sess: Session, args: argparse.Namespace) -> Result:
        prog = sess.program()
        iso = _pick(prog, args)
        _census(prog, iso.heap)
        ac = suspended(prog, iso.heap)
        vals = prog.values

        previews: dict[int, dict] = {}

        def awaits(s: Suspended) -> dict | None:
            """What it awaits, in short (each promise summarized once)."""
            if s.awaits is None:
                return None
            if s.awaits not in previews:
                previews[s.awaits] = preview.summarize(vals, s.awaits)
            return previews[s.awaits]

        fns = []
        for s in ac.functions:
            d = _frame_json(s.frame)
            d.update({"generator": s.generator, "awaits": awaits(s),
                      "awaited_by": [hexaddr(g) for g in s.awaited_by]})
            fns.append(d)
        data = {"functions": fns,
                "chains": [[_frame_json(f) for f in ch] for ch in ac.chains],
                "groups": [{"count": n, "chain": [_frame_json(f) for f in ch]}
                           for n, ch in ac.groups],
                "total": ac.total, "undecodable": ac.undecodable, "cut_chains": ac.cut_chains,
                "reachable_only": False, "isolate": iso.to_json()}
        lines: list[str] = []
        by_gen = {s.frame.generator: s for s in ac.functions}
        for n, ch in ac.groups:
            head = " <- ".join(f.function for f in reversed(ch))
            inner = ch[0]
            lines.append(f"{n} x {head} at " + _where_text(inner).split(" at ", 1)[-1])
            s = by_gen.get(inner.generator)
            what = awaits(s) if s is not None else None
            lines.append(f"    {_where_text(inner)}"
                         + (f" awaits {preview.text(what)}" if what is not None else ""))
            for f in ch[1:]:
                lines.append(f"    async {_where_text(f)}")
        if args.v:
            lines.append("")
            for s in ac.functions:
                who = ", ".join(hexaddr(g) or "" for g in s.awaited_by)
                lines.append(f"{hexaddr(s.frame.generator)} {_where_text(s.frame)}"
                             + (f" awaits {preview.text(awaits(s) or {})}" if s.awaits else "")
                             + (f", awaited by {who}" if who else ""))
        lines.append(f"{ac.total} suspended async functions in {len(ac.chains)} chains "
                     f"({len(ac.groups)} distinct); {REACHABILITY}")
        if ac.total > len(ac.functions) + ac.undecodable:
            lines.append(f"warning: only the first {len(ac.functions)} suspended functions "
                         "are shown")
        if ac.undecodable:
            lines.append(f"warning: {ac.undecodable} suspended functions could not be decoded")
        if ac.cut_chains:
            lines.append(f"warning: {ac.cut_chains} chains were cut at their length cap")
        lines.append(_where(prog, iso))
        return Result(data, "\n".join(lines))

    return run
