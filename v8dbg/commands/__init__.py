"""Commands: argument parsing, one module per command family, the session and the CLI.

The only layer that prints (through the text a command returns to its front
end). May import everything below it: stack, values, heap, v8, target.
"""

from __future__ import annotations

from .base import COMMANDS, Command, Result, Session


def load_all() -> dict[str, Command]:
    """Import every module that declares commands; returns them by name."""
    from . import asyncs, code, handles, heap, stack, values  # noqa: F401
    return COMMANDS


__all__ = ["COMMANDS", "Command", "Result", "Session", "load_all"]
