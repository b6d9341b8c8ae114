"""The CLI as a new user meets it: usage errors, mistyped commands, the binary note.

- Every usage error exits 2 and shows the sub-command's own usage line after
  one `v8dbg: COMMAND: ...` line: an unknown or abbreviated flag (flags are
  taken only whole, as in gdb and lldb, and the one meant is suggested), a
  value of the wrong kind, a count below 0, an address that is no number;
  with --json the error is also the JSON document.
- A mistyped command is answered with the commands it is close to; the
  debuggers' `v8dbg` (their list of commands) is no command of the CLI.
- The note naming the node binary taken from the core: in the CLI only when
  that file is not where the core says (found under --sysroot); in gdb and
  lldb once per session.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, VERSIONS, json_line, make_core, node_binary, run_gdb, run_lldb

VERSION = "24.21.0"
NOTE = re.compile(r"^v8dbg: note: node binary (\S+), as the core names it$", re.M)


@pytest.fixture(scope="module")
def core() -> Path:
    return make_core(VERSION, "stack.js", ("--allow-natives-syntax",),
                     {"V8DBG_TIER": "interpreted"}) / "core"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "v8dbg", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def usage_error(p: subprocess.CompletedProcess, command: str | None) -> str:
    """The error line of a usage error, checked: exit 2, the command's own usage."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    usage = f"usage: python -m v8dbg {command} " if command else "usage: python -m v8dbg [-h]"
    if command in ("profile", "triage", "trace", "catch"):  # standalone commands with parsers of their own
        usage = f"usage: v8dbg {command} "
    assert any(line.startswith(usage) for line in lines), (usage, p.stderr)
    errors = [line for line in lines if line.startswith("v8dbg: ")]
    assert len(errors) == 1, p.stderr
    return errors[0]


def test_unknown_and_abbreviated_flags(core: Path) -> None:
    node = str(node_binary(VERSION))
    line = usage_error(cli("jsstack", "--cor", str(core)), "jsstack")
    assert line.startswith("v8dbg: jsstack: unrecognized arguments: --cor"), line
    assert line.endswith("(did you mean --core?)"), line
    line = usage_error(cli("jsstack", "--bogus", "--core", str(core)), "jsstack")
    assert line == "v8dbg: jsstack: unrecognized arguments: --bogus", line
    line = usage_error(cli("jsstack", "--jso", "--core", str(core), "--binary", node), "jsstack")
    assert line.endswith("(did you mean --json?)"), line
    # Every sub-command answers a flag it lacks with its own usage.
    from v8dbg.commands import load_all
    from v8dbg.commands.cli import cli_commands
    for name in cli_commands(load_all()):
        if name in ("gdb", "lldb"):
            continue  # every argument is the debugger's
        # (argparse names a missing argument first, where the command takes one.)
        line = usage_error(cli(name, "--no-such-flag"), name)
        assert line.startswith(f"v8dbg: {name}: "), line


def test_bad_values(core: Path) -> None:
    target = ("--core", str(core), "--binary", str(node_binary(VERSION)))
    for args, want in [
            (["jsstack", "-n", "three"], "v8dbg: jsstack: argument -n: invalid int value: 'three'"),
            (["jsstack", "-n", "-1"], "v8dbg: jsstack: -n takes a number of frames >= 0"),
            (["jsframe"], "v8dbg: jsframe: the following arguments are required: N"),
            (["jsstack", "--all", "--thread", "1"],
             "v8dbg: jsstack: argument --thread: not allowed with argument --all"),
            (["findjsinstances", "-n", "-1", "Widget"],
             "v8dbg: findjsinstances: -n takes a number of addresses >= 0"),
            (["jsprint", "-d", "-1", "0x11"], "v8dbg: jsprint: -d and -N take numbers >= 0"),
            (["jssource", "-n", "-1", "0x11"], "v8dbg: jssource: -n takes a number of lines >= 0"),
            (["jsprint", "zzz"], "v8dbg: jsprint: 'zzz' is not an address")]:
        line = usage_error(cli(*args, *target), args[0])
        assert line.startswith(want), (args, line)
    # No --core: the command's usage, not the top level's.
    line = usage_error(cli("jsstack"), "jsstack")
    assert line.startswith("v8dbg: jsstack: --core CORE or --pid PID is required"), line
    # --json: the error is also the one JSON document on stdout.
    for args in (["jsstack", "--json", "--bogus"], ["jsprint", "--json", "zzz", *target]):
        p = cli(*args)
        assert p.returncode == 2 and f"usage: python -m v8dbg {args[0]} " in p.stderr, p.stderr
        assert json_line(p.stdout)["error"].startswith(f"{args[0]}: "), p.stdout
    # A well-formed address that is no JS value is a failure, not a usage error.
    p = cli("jsprint", "0x11", *target)
    assert p.returncode == 1 and "usage:" not in p.stderr, p.stderr


def test_mistyped_and_stray_commands(core: Path) -> None:
    line = usage_error(cli("jstack", "--core", str(core)), None)
    assert line.startswith("v8dbg: no command 'jstack' (did you mean jsstack"), line
    line = usage_error(cli("findjsobject"), None)
    assert "did you mean findjsobjects" in line, line
    line = usage_error(cli("help", "jstack"), None)
    assert "did you mean jsstack" in line, line
    # `v8dbg` lists the commands inside gdb and lldb; in the CLI it is no command.
    line = usage_error(cli("v8dbg", "--core", str(core)), None)
    assert line.startswith("v8dbg: no command 'v8dbg'"), line
    top = cli("--help")
    assert top.returncode == 0
    listed = re.findall(r"^    (\w+)", top.stdout, re.M)
    assert "jsstack" in listed and "v8dbg" not in listed, top.stdout


def test_debuggers_suggest_flags_and_commands(core: Path) -> None:
    gdb = run_gdb(VERSION, ["jsstack --jso", "v8dbg jstack", "jsstack -n -1"], core=core)
    assert "v8dbg: jsstack: unrecognized arguments: --jso (did you mean --json?)" in gdb[0]
    assert "v8dbg: unknown command 'jstack' (did you mean jsstack" in gdb[1], gdb[1]
    assert "v8dbg: jsstack: -n takes a number of frames >= 0" in gdb[2], gdb[2]
    lldb = run_lldb(VERSION, ["jsstack --jso", "jsstack -n -1", "v8dbg jstack"], core=core)
    assert "v8dbg: jsstack: unrecognized arguments: --jso (did you mean --json?)" in lldb[0]
    assert "v8dbg: jsstack: -n takes a number of frames >= 0" in lldb[1], lldb[1]
    # lldb's commands have no sub-commands: `v8dbg NAME` is answered as a name.
    assert "v8dbg: unknown command 'jstack' (did you mean jsstack" in lldb[2], lldb[2]


@pytest.mark.parametrize("version", VERSIONS)
def test_binary_note(version: str, tmp_path: Path) -> None:
    core = make_core(version, "stack.js", ("--allow-natives-syntax",),
                     {"V8DBG_TIER": "interpreted"}) / "core"
    # The core names the node file that ran, and it is there: nothing to say.
    p = cli("jsstack", "-n", "1", "--core", str(core))
    assert p.returncode == 0 and p.stdout.startswith("thread "), p.stdout + p.stderr
    assert "note" not in p.stderr, p.stderr
    # Found under --sysroot: the note names the file used.
    from v8dbg.inferior.corefile import CoreBackend
    named = CoreBackend(str(core)).executable()
    assert named and os.path.samefile(named, node_binary(version)), named
    copy = tmp_path / named.lstrip("/")
    copy.parent.mkdir(parents=True)
    copy.symlink_to(node_binary(version))
    p = cli("jsstack", "-n", "1", "--core", str(core), "--sysroot", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert NOTE.findall(p.stderr) == [str(copy)], p.stderr
    # gdb and lldb without the binary: once per session, however many commands.
    cmds = ["jsstack -n 1", "jsstack -n 1", "nodeinfo"]
    for out in (run_gdb(version, cmds, core=core, no_binary=True, merged=True),
                run_lldb(version, cmds, core=core, no_binary=True, merged=True)):
        whole = "\n".join(out)
        assert len(NOTE.findall(whole)) == 1, whole
        assert all("thread " in o for o in out[:2]), whole


def test_json_errors_before_the_command_runs() -> None:
    """A failure found before the command runs (no such core, no such
    process) is, with --json, the JSON error document on stdout, as any
    failure of the command itself."""
    for args in (["jsstack", "--json", "--core", "/nonexistent/core"],
                 ["nodeinfo", "--json", "--pid", "999999999"]):
        p = cli(*args)
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        docs = [line for line in p.stdout.splitlines() if line.startswith("{")]
        assert len(docs) == 1, (args, p.stdout)
        doc = json.loads(docs[0])
        assert set(doc) == {"error"} and doc["error"] and "\n" not in doc["error"], doc
        assert "Traceback" not in p.stderr and not p.stderr.startswith("v8dbg: "), p.stderr
    p = cli("jsstack", "--core", "/nonexistent/core")
    assert p.returncode == 1 and p.stderr.startswith("v8dbg: core file"), p.stderr
