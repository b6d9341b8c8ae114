"""The standalone front end: `python -m v8dbg COMMAND [ARGS] --core CORE --binary NODE`."""

from __future__ import annotations

import os
import sys

from .commands import Session, load_all
from .errors import V8DbgError

USAGE = """usage: python -m v8dbg COMMAND [ARGS] --core CORE --binary NODE
       python -m v8dbg COMMAND -h      help for one command
       python -m v8dbg v8dbg           list the commands
       python -m v8dbg profile --pid PID [-o FILE]   sample a running node process
"""


def _take(argv: list[str], flag: str) -> tuple[str | None, list[str]]:
    """Remove `flag VALUE` (or flag=VALUE) from argv."""
    out = []
    value = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
            i += 2
            continue
        if a.startswith(flag + "="):
            value = a.split("=", 1)[1]
            i += 1
            continue
        out.append(a)
        i += 1
    return value, out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    core, argv = _take(argv, "--core")
    binary, argv = _take(argv, "--binary")
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name == "profile":  # a running process, not a core: a command of its own
        from .profilecmd import main as profile
        return profile(rest)
    commands = load_all()
    cmd = commands.get(name)
    if cmd is None:
        print(f"v8dbg: unknown command '{name}'; `python -m v8dbg v8dbg` lists them", file=sys.stderr)
        return 2
    wants_help = any(a in ("-h", "--help") for a in rest)
    if cmd.needs_program and not wants_help:
        if not core:
            print("v8dbg: --core CORE is required (and --binary NODE)", file=sys.stderr)
            return 2
        if not os.path.exists(core):
            print(f"v8dbg: core file {core} not found", file=sys.stderr)
            return 2

    backend_box: list = []

    def factory():
        if not backend_box:
            from .corefile import CoreBackend
            backend_box.append(CoreBackend(core, binary))  # type: ignore[arg-type]
        return backend_box[0]

    sess = Session(factory, binary)
    try:
        text, ok = sess.run(name, rest)
    except V8DbgError as e:  # raised while opening the target
        print(f"v8dbg: {e}", file=sys.stderr)
        return 1
    if name == "v8dbg" and ok and not text.startswith("{"):
        from .profilecmd import SUMMARY
        text += f"\n  {'profile':16} {SUMMARY} (standalone only)"
    out = sys.stdout if ok else (sys.stdout if text.startswith("{") else sys.stderr)
    if text:
        try:
            print(text, file=out)
            out.flush()
        except BrokenPipeError:
            # The reader went away (`v8dbg jsstack ... | head`): not an error of ours.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
            return 0 if ok else 1
    return 0 if ok else 1
