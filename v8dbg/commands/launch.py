"""Starting gdb or lldb with v8dbg loaded from wherever this package is installed.

gdb and lldb embed their own Python (Debian's /usr/bin/python3), which does
not see a virtualenv or a user's site-packages. The startup commands below put
the directory holding this package first on the debugger's Python path just
long enough to import it, so the rest of that environment (other packages,
possibly built for another Python) stays out of the debugger.
"""

from __future__ import annotations

import os
import shutil
import sys

from ..errors import V8DbgError

# Newest first: a Debian machine may have several versioned lldb packages.
_LLDB_NAMES = ["lldb"] + [f"lldb-{n}" for n in range(30, 15, -1)]


def package_parent() -> str:
    """The directory that holds the `v8dbg` package (site-packages, or a checkout)."""
    top = sys.modules[(__package__ or "v8dbg").split(".")[0]]
    return os.path.dirname(os.path.dirname(os.path.abspath(top.__file__ or "")))


def gdb_lines() -> list[str]:
    """gdb commands that load v8dbg; one line, for ~/.gdbinit or `-iex`."""
    d = package_parent()
    return [f"python import sys; sys.path.insert(0, {d!r}); import v8dbg.gdb; "
            f"sys.path.remove({d!r})"]


def lldb_lines() -> list[str]:
    """lldb commands that load v8dbg, for ~/.lldbinit or `-O`."""
    d = package_parent()
    return [f"script import sys; sys.path.insert(0, {d!r})",
            "command script import v8dbg.lldb",
            f"script sys.path.remove({d!r})"]


def find_debugger(kind: str) -> str:
    """The gdb or lldb to run: $V8DBG_GDB / $V8DBG_LLDB, else the first on PATH."""
    env = os.environ.get(f"V8DBG_{kind.upper()}")
    if env:
        path = shutil.which(env)
        if path is None:
            raise V8DbgError(f"V8DBG_{kind.upper()}={env}: no such program")
        return path
    for name in ([kind] if kind == "gdb" else _LLDB_NAMES):
        path = shutil.which(name)
        if path:
            return path
    hint = "gdb" if kind == "gdb" else "lldb-16 python3-lldb-16"
    raise V8DbgError(f"{kind} not found on PATH: install it (Debian: apt install {hint}) "
                     f"or name it in V8DBG_{kind.upper()}")


def debugger_argv(kind: str, args: list[str]) -> list[str]:
    """The full command line: the debugger, v8dbg's startup commands, the user's arguments."""
    exe = find_debugger(kind)
    flag = "-iex" if kind == "gdb" else "-O"  # before any file on the command line is loaded
    out = [exe]
    for line in (gdb_lines() if kind == "gdb" else lldb_lines()):
        out += [flag, line]
    return out + list(args)


def run_debugger(kind: str, args: list[str]) -> int:
    """Replace this process with the debugger (its exit status is the user's)."""
    argv = debugger_argv(kind, args)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(argv[0], argv)
    except OSError as e:
        raise V8DbgError(f"cannot run {argv[0]}: {e.strerror}") from None
    return 1  # not reached
