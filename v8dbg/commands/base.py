"""Commands: argument parsing, dispatch and error handling for every front end.

A front end builds a `Session` around its backend once, then hands each
command line to `Session.run`, which returns the text to print. Commands
return a `Result` (a JSON document plus its text rendering); they never print.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import json
import os
import shlex
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from .. import errors
from ..errors import V8DbgError
from ..interrupt import check_interrupted, set_interrupt_check  # noqa: F401 (front ends)
from ..program import Program
from ..inferior.backend import Backend


@dataclass
class Result:
    data: dict
    text: str


class ArgumentError(V8DbgError):
    """A usage error: a flag or argument the command does not take (the CLI
    exits 2 for it and shows the command's usage)."""


def did_you_mean(word: str, choices: list[str]) -> str:
    """` (did you mean X?)` for the choices close to a mistyped word, else ''."""
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def explain_usage(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's message, with the flags meant by mistyped ones."""
    _, sep, rest = message.partition("unrecognized arguments: ")
    if not sep:
        return message
    flags = [o for a in parser._actions for o in a.option_strings]
    hints = [did_you_mean(w.split("=", 1)[0], flags) for w in rest.split() if w.startswith("-")]
    return message + "".join(h for h in hints if h)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting the debugger. Flags are taken
    only whole (no abbreviations), the same in every front end."""

    def __init__(self, **kwargs) -> None:
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgumentError(f"{self.prog}: {explain_usage(self, message)}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        raise _HelpShown(message or "")

    def print_help(self, file=None) -> None:  # type: ignore[override]
        """Help is returned as the command's text, for the front end to print."""


class _HelpShown(Exception):
    pass


@dataclass
class Command:
    name: str
    summary: str
    parser: _Parser
    func: Callable[["Session", argparse.Namespace], Result]
    needs_program: bool = True

    @property
    def help(self) -> str:
        return self.parser.format_help()

    def flags(self) -> list[str]:
        """Every option string the command takes (for completion)."""
        return [o for a in self.parser._actions for o in a.option_strings]


COMMANDS: dict[str, Command] = {}


def command(name: str, summary: str, description: str = "",
            needs_program: bool = True) -> Callable:
    """Declare a command; the decorated function receives (session, args)."""

    def wrap(build: Callable[[_Parser], Callable]) -> Callable:
        parser = _Parser(prog=name, description=description or summary, add_help=True)
        func = build(parser)
        COMMANDS[name] = Command(name, summary, parser, func, needs_program)
        return func

    return wrap


def parse_address(text: str) -> int:
    """A hex or decimal address as typed in the standalone CLI."""
    t = text.strip()
    try:
        v = int(t, 16) if t.lower().startswith("0x") else int(t, 0)
    except ValueError:
        try:
            v = int(t, 16)
        except ValueError:
            raise ArgumentError(f"'{text}' is not an address (use a hex number like 0x1f2e3d4c5b61)") \
                from None
    if v < 0 or v >= 1 << 64:
        raise ArgumentError(f"'{text}' is out of the address range")
    return v


class Session:
    """One target seen by one front end: caches the program between commands."""

    def __init__(self, backend_factory: Callable[[], Backend], binary: str | None = None,
                 evaluate: Callable[[str], int] | None = None,
                 no_binary: str = "no node binary: pass --binary NODE",
                 binary_note: Callable[[Backend, str], bool] | None = None) -> None:
        self._factory = backend_factory
        self._binary = binary
        # Whether to name the node file taken from the core (default: yes, once
        # per session, as the note is printed once per process).
        self._binary_note = binary_note
        # What to tell the user when there is no node binary, in the front end's own terms.
        self.no_binary = no_binary
        self.interrupted = False
        # The last command failed on its arguments (the CLI exits 2 then).
        self.usage_error = False
        self._prog: Program | None = None
        self._key: object = None
        self.evaluate = evaluate or parse_address
        self.debug = bool(os.environ.get("V8DBG_DEBUG"))
        # A core mostly missing (truncated): commands print what they can, and fail.
        self.degraded = False

    def target_running(self) -> bool:
        """Whether the target is a live process whose threads are running now."""
        backend = self._factory()
        return bool(getattr(backend, "live", False) and _running(backend))

    def program(self) -> Program:
        backend = self._factory()
        key = (id(backend), getattr(backend, "identity", lambda: None)())
        if self._prog is None or self._key != key:
            _check_core(backend)
            if not self._binary and not backend.executable():
                raise V8DbgError(truncation_first(backend, self.no_binary))
            prog = Program(backend, self._binary)
            prog.check_binary()
            from ..v8.metadata import note_once, warn_once
            taken = _binary_from_core(backend) if not self._binary else None
            if taken and (self._binary_note is None or self._binary_note(backend, taken)):
                note_once(f"node binary {taken}, as the core names it")
            if prog.md.unsupported:
                warn_once(prog.md.unsupported)
            for w in prog.binary_warnings():
                warn_once(w)
            cut = _truncation(backend)
            if cut:
                warn_once(cut)
            for limit in getattr(backend, "limits", []):
                warn_once(limit)
            self.degraded = mostly_missing(backend)
            self._prog = prog
            self._key = key
        else:
            self._prog.backend = backend
            self._prog.refresh()
        if getattr(backend, "live", False) and _running(backend):
            # Nothing read before can be trusted now: every command reads afresh.
            self._prog.mem.clear()
            self._prog.forget()
            from ..v8.metadata import warn_once
            warn_once("the process is running, not stopped: its memory changes while v8dbg "
                      "reads it, so what follows may be inconsistent or fail; interrupt it "
                      "first (gdb: `interrupt -a`, lldb: `process interrupt`)", again=True)
        return self._prog

    def run(self, name: str, argv: list[str] | str) -> tuple[str, bool]:
        """Run one command; returns (text to print, succeeded)."""
        if isinstance(argv, str):
            try:
                argv = shlex.split(argv)
            except ValueError as e:
                return f"v8dbg: {name}: {e}", False
        want_json = "--json" in argv
        debug = self.debug or bool(os.environ.get("V8DBG_DEBUG"))
        if "--debug" in argv:
            argv = [a for a in argv if a != "--debug"]
            debug = True
        cmd = COMMANDS.get(name)
        if cmd is None:
            self.usage_error = True
            return f"v8dbg: unknown command '{name}'{did_you_mean(name, list(COMMANDS))}", False
        errors.DEBUG = debug
        self.interrupted = False
        self.usage_error = False
        try:
            return self._run(cmd, name, argv, want_json, debug)
        finally:
            errors.DEBUG = False

    @staticmethod
    def _internal(name: str, e: BaseException, want_json: bool, debug: bool) -> tuple[str, bool]:
        """A bug of v8dbg's: one line (the traceback with --debug)."""
        msg = f"internal error in {name}: {type(e).__name__}: {e}"
        if debug:
            msg += "\n" + traceback.format_exc()
        return _error(msg, want_json), False

    def _run(self, cmd: Command, name: str, argv: list[str], want_json: bool,
             debug: bool) -> tuple[str, bool]:
        try:
            args = cmd.parser.parse_args(argv)
            res = cmd.func(self, args)
        except _HelpShown:
            return cmd.help.rstrip(), True
        except ArgumentError as e:
            self.usage_error = True
            msg = str(e)
            if name == "v8dbg":  # (the message's own `v8dbg: ` says which)
                msg = msg.removeprefix("v8dbg: ")
            elif not msg.startswith(f"{name}: "):
                msg = f"{name}: {msg}"
            return _error(msg, want_json), False
        except V8DbgError as e:
            return _error(str(e), want_json), False
        except KeyboardInterrupt:
            self.interrupted = True
            return _error("interrupted", want_json), False
        except RecursionError:
            return _error("the data is nested too deeply to decode", want_json), False
        except (MemoryError, OSError) as e:
            if isinstance(e, OSError) and e.errno != errno.ENOMEM:
                return self._internal(name, e, want_json, debug)
            # (What it holds is let go with the exception: the session lives on.)
            return _error(f"{name}: out of memory: this process could not take the memory "
                          f"it needed ({e or 'no detail'}); the heap commands' graph takes "
                          "some 60 bytes an object and 20 a reference at its peak", want_json), \
                False
        except Exception as e:  # last line of defence: never a traceback in the debugger
            return self._internal(name, e, want_json, debug)
        if want_json:
            return json.dumps(res.data, separators=(", ", ": "), ensure_ascii=False), True
        return printable(res.text), True


def _check_core(backend: Backend) -> None:
    """A debugger may load a core of another architecture as if it were x86-64."""
    fn = getattr(backend, "core_file", None)
    if fn is None or getattr(backend, "kind", "") == "core":
        return
    try:
        path = fn()
    except Exception:
        path = None
    if path:
        from ..inferior.elf import check_architecture
        check_architecture(path)


def _binary_from_core(backend: Backend) -> str | None:
    fn = getattr(backend, "binary_from_core", None)
    try:
        return fn() if fn is not None else None
    except Exception:
        return None


def _running(backend: Backend) -> bool:
    fn = getattr(backend, "running", None)
    try:
        return bool(fn()) if fn is not None else False
    except Exception:
        return False


def _truncated_core(backend: Backend):
    """The CoreBackend of the core file the target is read from, when that core
    is cut short (a full disk, a core size limit); else None."""
    core = backend if getattr(backend, "kind", "") == "core" else None
    if core is None and not getattr(backend, "live", True) and hasattr(backend, "core_file"):
        # gdb and lldb read the core themselves; look at the file they opened.
        try:
            path = backend.core_file()  # type: ignore[attr-defined]
            if path:
                from ..inferior.corefile import CoreBackend
                core = CoreBackend(path)
        except Exception:
            core = None
    if core is None or not getattr(core, "truncated", False):
        return None
    return core


def mostly_missing(backend: Backend) -> bool:
    """True when less than half of a truncated core is there: then whatever a
    command can still print is far from the whole story (exit status 1)."""
    core = _truncated_core(backend)
    if core is None:
        return False
    have = getattr(getattr(core, "elf", None), "size", 0)
    return have * 2 < getattr(core, "expected_size", 0) or getattr(core, "headers_lost", False)


def _truncation(backend: Backend, exit_note: bool = True) -> str | None:
    """A warning if the target is a core file cut short (a full disk, a core size limit)."""
    core = _truncated_core(backend)
    if core is None:
        return None
    have = getattr(getattr(core, "elf", None), "size", 0)
    want = getattr(core, "expected_size", 0)
    least = "at least " if getattr(core, "headers_lost", False) else ""
    most = ("; most of the core is missing, so the exit status is 1 whatever is shown"
            if exit_note and mostly_missing(backend) else "")
    return (f"{getattr(core, 'path', 'the core')} is truncated ({have} of {least}{want} bytes): "
            "memory past its end is missing, so some frames and objects cannot be decoded"
            f"{most}")


def truncation_first(backend: Backend, message: str) -> str:
    """An error about a core, with its truncation first when it is cut short:
    that is the cause of what else is missing (threads, the program's name)."""
    cut = _truncation(backend, exit_note=False)
    return f"{cut}; {message}" if cut else message


def _error(msg: str, want_json: bool) -> str:
    if want_json:
        return json.dumps({"error": msg})
    return printable(f"v8dbg: {msg}")


# Control characters other than tab and newline, as text from a target (a
# damaged source, a string holding NUL) may carry them: gdb refuses to print
# a NUL, and escape sequences would drive the user's terminal.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f)}


def printable(text: str) -> str:
    """Text output with control characters shown as \\xNN escapes (CRLF line
    ends, as in a script saved on Windows, become plain newlines)."""
    return text.replace("\r\n", "\n").translate(_CONTROL)


def hexaddr(v: int | None) -> str | None:
    return None if v is None else f"0x{v:x}"


def _stderr_is_terminal() -> bool:
    try:
        return os.isatty(2)
    except OSError:
        return False


class Progress:
    """A progress line on stderr for scans longer than a second, when stderr
    is a terminal (a `\\r` line is noise in a log). Each update also checks
    for interruption, so every scan that reports progress can be stopped."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = time.monotonic()
        self.last = self.start
        self.shown = False
        self.terminal = _stderr_is_terminal()

    def update(self, done: int, total: int) -> None:
        check_interrupted()
        now = time.monotonic()
        if not self.terminal or now - self.start < 1.0 or now - self.last < 0.5:
            return
        self.last = now
        self.shown = True
        pct = 100.0 * done / total if total else 0.0
        sys.stderr.write(f"\rv8dbg: {self.what}: {pct:5.1f}%")
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()
