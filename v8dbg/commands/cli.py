"""The standalone front end: `v8dbg COMMAND [ARGS] --core CORE [--binary NODE]`,
or `--pid PID` for a running process (commands/held.py).

Also `v8dbg gdb ...` / `v8dbg lldb ...` (the debugger with v8dbg loaded) and
`v8dbg gdbinit` / `v8dbg lldbinit` (the lines that load it from ~/.gdbinit or
~/.lldbinit). Exit status: 0 done, 1 failed, 2 usage error, 130 interrupted,
143 terminated (SIGTERM while a process was held: it is let go first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn

from .. import __version__
from ..errors import V8DbgError
from ..heap import release
from . import Command, Session, catch, held, launch, load_all, profile, trace, triage
from ..inferior.corefile import core_file_problem
from .base import did_you_mean, explain_usage, truncation_first

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143

DESCRIPTION = """\
See inside Node.js core dumps: JavaScript stacks, values and the heap, from
the official node binary's own postmortem metadata. The same commands work
inside gdb and lldb (`v8dbg gdb`, `v8dbg lldb`)."""

EPILOG = """\
examples:
  {prog} jsstack --core core.1234
  {prog} jsstack --pid 1234          a running process, paused while it is read
  {prog} jsprint 0x3a5f0c2c1d41 --core core --binary /usr/bin/node
  {prog} gdb -p PID                  gdb with v8dbg loaded
  {prog} help findjsobjects          one command's flags

exit status: 0 done, 1 failed, 2 usage error, 130 interrupted (Ctrl-C)"""

LAUNCHERS = {
    "gdb": ("start gdb with v8dbg loaded: v8dbg gdb [GDB ARGS]",
            "Run gdb with the given arguments, v8dbg's commands loaded from this installation "
            "(gdb's own Python need not see it). For example `v8dbg gdb /usr/bin/node core` "
            "or `v8dbg gdb -p PID`. $V8DBG_GDB names another gdb."),
    "lldb": ("start lldb with v8dbg loaded: v8dbg lldb [LLDB ARGS]",
             "Run lldb with the given arguments, v8dbg's commands loaded from this "
             "installation. For example `v8dbg lldb -c core /usr/bin/node` or "
             "`v8dbg lldb -p PID`. $V8DBG_LLDB names another lldb."),
    "gdbinit": ("print the line that loads v8dbg into every gdb (for ~/.gdbinit)",
                "Print the gdb command that loads v8dbg from this installation: "
                "`v8dbg gdbinit >> ~/.gdbinit`."),
    "lldbinit": ("print the lines that load v8dbg into every lldb (for ~/.lldbinit)",
                 "Print the lldb commands that load v8dbg from this installation: "
                 "`v8dbg lldbinit >> ~/.lldbinit`."),
}

# The standalone commands with parsers of their own: each reads no single core
# (a running process, or many cores) and is dispatched before the core options.
OWN_PARSERS = {"profile": profile, "triage": triage, "trace": trace, "catch": catch}


def _prog_name() -> str:
    arg0 = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m v8dbg" if arg0 in ("__main__.py", "-m", "-c", "") else "v8dbg"


class _CliParser(argparse.ArgumentParser):
    """A parser of the standalone CLI: flags only whole (as in gdb and lldb),
    and a usage error is `v8dbg: COMMAND: message`, the flags a mistyped one
    may have meant, and this parser's own usage line; exit status 2. With
    --json on the command line the message is also the JSON error document."""

    json = False

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        name = self.prog.split()[-1] if " " in self.prog else ""
        usage_error(f"{name}: " if name and name != "v8dbg" else "",
                    explain_usage(self, message), self.format_usage(), self.json)


def usage_error(where: str, message: str, usage: str, as_json: bool = False) -> NoReturn:
    """Print a usage error the CLI's way and exit 2."""
    if as_json:
        print(json.dumps({"error": f"{where}{message}"}))
    else:
        sys.stderr.write(f"v8dbg: {where}{message}\n")
    sys.stderr.write(usage)
    sys.exit(EXIT_USAGE)


def _target_options() -> argparse.ArgumentParser:
    """Options every command takes in the standalone CLI (a parent parser)."""
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    g = p.add_argument_group("target")
    g.add_argument("--core", metavar="CORE",
                   help="the core file to read (from the kernel or from gcore)")
    g.add_argument("--pid", metavar="PID",
                   help="a running node process instead: its threads are stopped only while "
                        "its memory is read (the pause is reported), then run on")
    g.add_argument("--binary", metavar="NODE",
                   help="the node binary that ran (default: the file the core names; "
                        "a note says which when it was found elsewhere)")
    g.add_argument("--sysroot", metavar="DIR",
                   help="look for the libraries the core names under DIR, as gdb's `set "
                        "sysroot` (a core from another machine)")
    g.add_argument("--solib-path", metavar="DIR[:DIR...]",
                   help="also look for those libraries, by file name and build-id, in "
                        "these directories (gdb's solib-search-path)")
    g.add_argument("--debug", action="store_true",
                   help="say where in v8dbg each undecodable frame or value was found "
                        "out (also V8DBG_DEBUG=1)")
    return p


def cli_commands(commands: dict[str, Command]) -> list[str]:
    """The CLI's sub-commands: every v8dbg command but `v8dbg` itself (the
    debuggers' list of commands; here `--help` lists them), the launchers,
    profile, triage, trace, catch and help."""
    return [n for n in sorted(commands) if n != "v8dbg"] + list(LAUNCHERS) + list(OWN_PARSERS) + ["help"]


def build_parser(commands: dict[str, Command], prog: str) -> tuple[argparse.ArgumentParser,
                                                                  dict[str, argparse.ArgumentParser]]:
    """The CLI's parser, with one sub-command per v8dbg command; also each sub-parser."""
    top = _CliParser(prog=prog, description=DESCRIPTION, epilog=EPILOG.format(prog=prog),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"v8dbg {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                             parser_class=_CliParser)
    target = _target_options()
    subs: dict[str, argparse.ArgumentParser] = {}
    for name in sorted(commands):
        if name == "v8dbg":
            continue
        cmd = commands[name]
        subs[name] = sub.add_parser(name, help=cmd.summary, description=cmd.parser.description,
                                    parents=[cmd.parser, target], add_help=False)
    for name, (summary, description) in LAUNCHERS.items():
        subs[name] = sub.add_parser(name, help=summary, description=description)
    for own, module in OWN_PARSERS.items():
        subs[own] = sub.add_parser(own, help=f"{module.SUMMARY} (standalone only)", add_help=False)
    subs["help"] = sub.add_parser("help", help="help for one command: help COMMAND",
                                  description="Show the help of COMMAND (or of v8dbg).")
    subs["help"].add_argument("topic", nargs="?", metavar="COMMAND")
    return top, subs


def no_command(top: argparse.ArgumentParser, name: str, names: list[str], prog: str) -> NoReturn:
    usage_error("", f"no command '{name}'{did_you_mean(name, names)}; `{prog} --help` lists "
                    "them", top.format_usage())


def _take(argv: list[str], flag: str) -> tuple[str | None, list[str]]:
    """Remove `flag VALUE` (or flag=VALUE) from argv."""
    out = []
    value = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out.extend(argv[i:])
            break
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


_TARGET_FLAGS = ("--core", "--pid", "--binary", "--sysroot", "--solib-path")


def _hoist_target_options(argv: list[str]) -> list[str]:
    """`v8dbg --core CORE jsstack` means `v8dbg jsstack --core CORE`."""
    lead: list[str] = []
    i = 0
    while i < len(argv) and argv[i] in _TARGET_FLAGS and i + 1 < len(argv):
        lead += argv[i:i + 2]
        i += 2
    while i < len(argv) and argv[i].split("=", 1)[0] in _TARGET_FLAGS and "=" in argv[i]:
        lead.append(argv[i])
        i += 1
    return argv[i:] + lead if lead else argv


def _found_elsewhere(backend, taken: str) -> bool:
    """Whether the node file taken from the core is not the file the core
    names (found under --sysroot, or by build-id along --solib-path): each run
    of the CLI is a session of its own, and a note on every run would only
    repeat the path the core holds."""
    return taken not in {m.path for m in getattr(backend, "mappings_raw", ())}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv, _prog_name())
    except KeyboardInterrupt:
        print("v8dbg: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except V8DbgError as e:
        # Found before the command ran (no such core, no node binary): said as
        # the command would say it, with --json the JSON error document.
        if "--json" in argv:
            print(json.dumps({"error": str(e)}))
        else:
            print(f"v8dbg: {e}", file=sys.stderr)
        return EXIT_FAILED


def _keep_freed_memory() -> None:
    """Let this one-shot process keep the memory it frees for its next arrays.

    The heap commands make and drop NumPy arrays of tens of MB in turn; by
    default glibc maps each anew and unmaps it when freed, so every reuse
    faults its pages in again (a third of a heap snapshot's system time).
    Kept in the malloc heap instead (released when the process ends), up to
    the 32 MB glibc allows for the mapping threshold. Not done inside gdb or
    lldb, whose process lives on after a command.
    """
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return  # not glibc
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, (1 << 31) - 1)
    mallopt(m_top_pad, 256 << 20)
    release.one_shot()  # (and the heap passes need not trim where the next reuses)


def _main(argv: list[str], prog: str) -> int:
    if argv and argv[0] in ("gdb", "lldb"):
        # Everything after the name is the debugger's, `--help` included.
        return launch.run_debugger(argv[0], argv[1:])
    if argv and argv[0] in OWN_PARSERS:
        # A running process or many cores, not one core: options of its own.
        return OWN_PARSERS[argv[0]].main(argv[1:])
    argv = _hoist_target_options(argv)
    commands = load_all()
    top, subs = build_parser(commands, prog)
    if not argv:
        top.print_help(sys.stderr)
        return EXIT_USAGE
    name = argv[0]
    if name.startswith("-"):
        top.parse_args(argv)  # --help, --version; else a usage error
        top.error("name a command first: `v8dbg COMMAND [ARGS]`")
    names = cli_commands(commands)
    if name not in subs:
        no_command(top, name, names, prog)
    # The command's own parser, so a usage error shows the command's usage.
    parser = subs[name]
    parser.json = "--json" in argv[1:]  # type: ignore[attr-defined]
    args = parser.parse_args(argv[1:])  # exits 2 on a usage error, 0 after --help
    if name == "help":
        if args.topic is None or args.topic == "v8dbg":
            top.print_help()
        elif args.topic in OWN_PARSERS:
            OWN_PARSERS[args.topic].main(["--help"])
        elif args.topic in subs:
            subs[args.topic].print_help()
        else:
            no_command(top, args.topic, names, prog)
        return EXIT_OK
    if name in ("gdbinit", "lldbinit"):
        print("\n".join(launch.gdb_lines() if name == "gdbinit" else launch.lldb_lines()))
        return EXIT_OK
    cmd = commands[name]
    if cmd.needs_program:
        _keep_freed_memory()
    core = getattr(args, "core", None)
    pid = getattr(args, "pid", None)
    binary = getattr(args, "binary", None)
    sysroot = getattr(args, "sysroot", None)
    solib_path = getattr(args, "solib_path", None)
    if cmd.needs_program and pid is not None:
        if core:
            parser.error("--core and --pid name two targets: give one")
        if sysroot or solib_path:
            parser.error("--sysroot and --solib-path are for a core from another machine, "
                         "not a running process")
        if not pid.isdigit() or int(pid) <= 0:
            parser.error(f"--pid: '{pid}' is not a process id")
        if binary and not os.path.isfile(binary):
            raise V8DbgError(f"node binary {binary} not found"
                             + (" (it is a directory)" if os.path.isdir(binary) else ""))
        rest = argv[1:]
        for flag in _TARGET_FLAGS:
            _, rest = _take(rest, flag)
        sess, text, ok = held.run(name, rest, int(pid), binary)
        if held.terminated(sess):
            return EXIT_TERMINATED
        return finish(sess, text, ok, parser.format_usage())
    if cmd.needs_program:
        if not core:
            parser.error("--core CORE or --pid PID is required (and --binary NODE, unless "
                         "the core names a node binary on this machine)")
        problem = core_file_problem(core)
        if problem:
            raise V8DbgError(problem)
        for flag, value in (("--sysroot", sysroot), ("--solib-path", solib_path)):
            for d in (value or "").split(":") if flag == "--solib-path" else [value]:
                if d and not os.path.isdir(d):
                    parser.error(f"{flag}: {d} is not a directory")
        if binary and not os.path.isfile(binary):
            raise V8DbgError(f"node binary {binary} not found"
                             + (" (it is a directory)" if os.path.isdir(binary) else ""))
    rest = argv[1:]
    for flag in _TARGET_FLAGS:
        _, rest = _take(rest, flag)

    backend_box: list = []

    def factory():
        if not backend_box:
            from ..inferior.corefile import CoreBackend
            from ..inferior.solibs import SearchPath
            backend = CoreBackend(core, binary, SearchPath.parse(sysroot, solib_path))  # type: ignore[arg-type]
            if not binary and not backend.binary_from_core():
                exe = backend.executable()
                if exe:
                    raise V8DbgError(truncation_first(
                        backend, f"the core names {exe} as the program that ran, and no "
                        "such node (by build-id) is on this machine or under "
                        "--sysroot / --solib-path: pass --binary NODE"))
            backend_box.append(backend)
        return backend_box[0]

    sess = Session(factory, binary, binary_note=_found_elsewhere)
    text, ok = sess.run(name, rest)
    return finish(sess, text, ok, parser.format_usage())


def finish(sess: Session, text: str, ok: bool, usage: str) -> int:
    """Print what a command gave, where it belongs; its exit status."""
    if sess.usage_error:
        # Found by the command itself (an address that is no number, a count below 0).
        print(text, file=sys.stdout if text.startswith("{") else sys.stderr)
        sys.stderr.write(usage)
        return EXIT_USAGE
    if sess.interrupted:
        if text:
            print(text, file=sys.stdout if text.startswith("{") else sys.stderr)
        return EXIT_INTERRUPTED
    out = sys.stdout if ok or text.startswith("{") else sys.stderr
    if text:
        try:
            print(text, file=out)
            out.flush()
        except BrokenPipeError:
            # The reader went away (`v8dbg jsstack ... | head`): not an error of ours.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
    return EXIT_OK if ok and not sess.degraded else EXIT_FAILED
