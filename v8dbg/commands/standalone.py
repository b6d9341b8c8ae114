"""The standalone commands with parsers of their own (`profile`, `triage`,
`trace`, `catch`): each reads no single core, so the CLI hands it its
arguments whole. One way to parse, check and run them, and to say a failure:
a usage problem exits 2 with the command's usage, any other failure 1, with
`--json` as the JSON error document, as every command does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from ..errors import V8DbgError
from .base import explain_usage


class UsageError(Exception):
    """A problem with the command line; the message names the command."""


class Parser(argparse.ArgumentParser):
    """A standalone command's parser: its errors are `UsageError`s."""

    def __init__(self, name: str, usage: str, **kwargs) -> None:
        super().__init__(prog=f"v8dbg {name}", usage=f"v8dbg {usage}", allow_abbrev=False,
                         **kwargs)
        self.command = name

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.command}: {explain_usage(self, message)}")

    def problem(self, message: str) -> UsageError:
        """A problem the command's own checks found, to raise."""
        return UsageError(f"{self.command}: {message}")


def say(message: str, as_json: bool) -> None:
    """One failure: `v8dbg: ...` on stderr, or the JSON error document."""
    if as_json:
        print(json.dumps({"error": message}))
    else:
        print(f"v8dbg: {message}", file=sys.stderr)


def run(p: Parser, argv: list[str], body: Callable[[argparse.Namespace], int],
        check: Callable[[argparse.Namespace], None] | None = None,
        prefix_failures: bool = False) -> int:
    """Parse ARGV with P, CHECK the arguments (raising `p.problem(...)`), run
    BODY; returns the exit status. PREFIX_FAILURES names the command before
    a failure's message."""
    if any(a in ("-h", "--help") for a in argv):
        sys.stdout.write(p.format_help())
        return 0
    as_json = "--json" in argv
    try:
        args = p.parse_args(argv)
        if check is not None:
            check(args)
    except UsageError as e:
        say(str(e), as_json)
        print(p.format_usage().rstrip(), file=sys.stderr)
        return 2
    try:
        return body(args)
    except V8DbgError as e:
        say(f"{p.command}: {e}" if prefix_failures else str(e), as_json)
        return 1
    except KeyboardInterrupt:
        print("v8dbg: interrupted", file=sys.stderr)
        return 130
