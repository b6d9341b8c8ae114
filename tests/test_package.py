"""pip install, then gdb and lldb: the package as a user gets it, and each front end's manners.

- The wheel, built from this checkout and installed into a fresh virtualenv
  outside it, runs `v8dbg jsstack` on a core, `v8dbg gdb ...`, `v8dbg lldb ...`
  and the ~/.gdbinit / ~/.lldbinit lines `v8dbg gdbinit` / `v8dbg lldbinit`
  print (in a temporary HOME): each prints the JS stack node itself wrote, and
  the debuggers load v8dbg from the virtualenv.
- gdb: a failing command is a gdb error (a script stops, -batch exits non-zero),
  `help v8dbg` lists the commands with their summaries, flags complete, and
  messages name no flag gdb's commands lack.
- gdb and lldb: Ctrl-C stops a heap scan within a second.
- CLI: exit codes 0/1/2/130, --help/--version/help CMD, plain errors for a
  directory or a compressed core, the binary taken from the core, no progress
  line in a redirected stderr.

Scans are made slow on purpose for the interruption tests: tests/fixtures/
slow_census.py, run inside the front end, makes each heap page read wait.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from support import (FIXTURES, GDB, LLDB, ROOT, json_line, make_core,
                     node_binary)

VERSION = "24.21.0"
LINE = re.compile(r"^\s*at (?:(?P<name>.*?) \((?P<loc>.*)\)|(?P<bare>.*))$")


@pytest.fixture(scope="module")
def stack_dir() -> Path:
    return make_core(VERSION, "stack.js", ("--allow-natives-syntax",),
                     {"V8DBG_TIER": "interpreted"})


def expected_js(d: Path) -> list[str]:
    """`NAME at FILE:LINE:COL` for the frames below the top one, as V8's Error().stack has them.

    (The top frame, die, is at its process.abort() call in the core, not where the
    Error was made.)"""
    out = []
    for line in (d / "expected-stack.txt").read_text().splitlines()[2:]:
        m = LINE.match(line)
        if m and m.group("name") and m.group("loc") and re.search(r":\d+:\d+$", m.group("loc")):
            if "." in m.group("name") or " " in m.group("name"):
                break
            out.append(f"{m.group('name')} at {m.group('loc')}")
        if len(out) == 4:
            break
    assert len(out) >= 3, (d / "expected-stack.txt").read_text()
    return out


def assert_js_stack(out: str, d: Path, where: str) -> None:
    want = expected_js(d)
    got = [l.split(" ", 1)[1].strip().rsplit(" [", 1)[0] for l in out.splitlines()
           if re.match(r"^#\d+\s", l) and " at " in l]
    got = [g.split(None, 1)[1] if g.startswith("0x") else g for g in got]
    pos = 0
    for w in want:
        assert w in got[pos:], f"{where}: JS frame `{w}` missing or out of order in:\n{out}"
        pos = got.index(w, pos) + 1


def clean_env(**extra: str) -> dict:
    """The environment of a user's shell: nothing pointing into this checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env.update(extra)
    return env


# -- the wheel in a fresh virtualenv ------------------------------------------

@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A virtualenv outside the checkout with the wheel built from it installed."""
    base = Path(tempfile.mkdtemp(prefix="v8dbg-venv-"))
    try:
        wheels = base / "wheels"
        # A copy of the checkout's files, so the build leaves nothing in it.
        src = base / "src"
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
            ".cache", ".git", "__pycache__", "build", "*.egg-info", ".pytest_cache", "core"))
        p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(wheels), str(src)], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
        (wheel,) = wheels.glob("v8dbg-*.whl")
        env = base / "env"
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=300)
        p = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q",
                            "--no-deps", "--no-index", str(wheel)],
                           capture_output=True, text=True, timeout=600, cwd=base)
        assert p.returncode == 0, p.stdout + p.stderr
        (base / "wheel").write_text(str(wheel))
        yield env
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_wheel_contents(venv: Path) -> None:
    """The wheel carries the adapters, the licence, the README and the project URLs."""
    wheel = Path((venv.parent / "wheel").read_text())
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for mod in ("v8dbg/gdb.py", "v8dbg/lldb.py", "v8dbg/commands/cli.py",
                "v8dbg/commands/launch.py"):
        assert mod in names, names
    assert any(n.endswith("LICENSE") and ".dist-info/" in n for n in names), names
    assert "License: MIT" in meta or "License-Expression: MIT" in meta, meta[:2000]
    assert "Project-URL: Source" in meta, meta[:2000]
    assert "Provides-Extra: fast" in meta, meta[:2000]
    assert "Provides-Extra: dask" in meta and "extra == \"dask\"" in meta, meta[:2000]
    assert "Description-Content-Type: text/markdown" in meta and "## Troubleshooting" in meta
    # Every package of the source tree is in the wheel (subpackages included).
    for init in (ROOT / "v8dbg").rglob("__init__.py"):
        rel = init.relative_to(ROOT).as_posix()
        assert rel in names, f"{rel} is not in the wheel"


def test_installed_cli_gdb_lldb_and_init_files(venv: Path, stack_dir: Path) -> None:
    """From the virtualenv, outside the checkout: every way in prints the JS stack."""
    core, node = stack_dir / "core", node_binary(VERSION)
    v8dbg = str(venv / "bin" / "v8dbg")
    work = venv.parent / "work"
    home = venv.parent / "home"
    work.mkdir()
    home.mkdir()
    env = clean_env(HOME=str(home))

    def run(args: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=work,
                              env=kw.pop("env", env), **kw)

    p = run([v8dbg, "--version"])
    assert p.returncode == 0 and p.stdout.strip() == "v8dbg 0.1.0", p.stdout + p.stderr
    p = run([v8dbg, "help", "jsstack"])
    assert p.returncode == 0 and p.stdout.startswith("usage: v8dbg jsstack "), p.stdout

    # The standalone CLI, node taken from the core (and named).
    p = run([v8dbg, "jsstack", "--core", str(core), "--binary", str(node)])
    assert p.returncode == 0, p.stderr
    assert_js_stack(p.stdout, stack_dir, "installed CLI")

    # gdb, through the launcher; the v8dbg it loaded is the virtualenv's.
    where = "python import v8dbg; print('V8DBG-FROM', v8dbg.__file__)"
    p = run([v8dbg, "gdb", "-nx", "-q", "-batch", "-ex", where, "-ex", "jsstack",
             str(node), str(core)])
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"V8DBG-FROM {venv}/lib/" in p.stdout, p.stdout
    assert_js_stack(p.stdout, stack_dir, "v8dbg gdb")

    # lldb, through the launcher.
    p = run([v8dbg, "lldb", "--no-lldbinit", "-b", "-o",
             "script import v8dbg; print('V8DBG-FROM', v8dbg.__file__)", "-o", "jsstack",
             "-c", str(core), str(node)])
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"V8DBG-FROM {venv}/lib/" in p.stdout, p.stdout
    assert_js_stack(p.stdout, stack_dir, "v8dbg lldb")

    # The ~/.gdbinit line: a plain gdb then has the commands.
    p = run([v8dbg, "gdbinit"])
    assert p.returncode == 0 and p.stdout.count("\n") == 1, p.stdout
    (home / ".gdbinit").write_text(p.stdout)
    p = run([GDB, "-q", "-batch", "-ex", where, "-ex", "jsstack", str(node), str(core)])
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"V8DBG-FROM {venv}/lib/" in p.stdout, p.stdout
    assert_js_stack(p.stdout, stack_dir, "gdb with the ~/.gdbinit line")

    # The ~/.lldbinit lines.
    p = run([v8dbg, "lldbinit"])
    assert p.returncode == 0, p.stdout
    (home / ".lldbinit").write_text(p.stdout)
    p = run([LLDB, "-b", "-o", "jsstack", "-c", str(core), str(node)])
    assert p.returncode == 0, p.stdout + p.stderr
    assert_js_stack(p.stdout, stack_dir, "lldb with the ~/.lldbinit lines")


def test_debuggers_embed_a_python_the_package_supports() -> None:
    """What the README claims: gdb's and lldb's Python is 3.11 or later, and an older
    Python gets one clear line instead of a SyntaxError."""
    p = subprocess.run([GDB, "-nx", "-q", "-batch", "-ex",
                        "python import sys; print('PY', *sys.version_info[:2])"],
                       capture_output=True, text=True, timeout=120)
    major, minor = map(int, re.search(r"PY (\d+) (\d+)", p.stdout).groups())
    assert (major, minor) >= (3, 11), p.stdout
    p = subprocess.run([LLDB, "--no-lldbinit", "-b", "-o",
                        "script import sys; print('PY', *sys.version_info[:2])"],
                       capture_output=True, text=True, timeout=120)
    major, minor = map(int, re.search(r"PY (\d+) (\d+)", p.stdout).groups())
    assert (major, minor) >= (3, 11), p.stdout
    # An older Python, where the machine has one (pyenv's, on the CI image).
    cands = [shutil.which(f"python3.{n}") for n in (10, 9, 8)]
    cands += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.[0-9].*/bin/python3"))
    cands += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.10.*/bin/python3"))
    for py in [c for c in cands if c]:
        ok = subprocess.run([py, "-c", "import sys; sys.exit(sys.version_info[:2] >= (3, 11))"],
                            capture_output=True, timeout=60)
        if ok.returncode != 0:
            continue  # not runnable here, or not older
        p = subprocess.run([py, "-c", "import v8dbg"], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
        assert p.returncode != 0, p.stderr
        assert p.stderr.strip().splitlines()[-1].startswith(
            "ImportError: v8dbg needs Python 3.11 or later, and this Python is 3."), p.stderr
        break


# -- gdb manners --------------------------------------------------------------

def test_gdb_failure_is_a_gdb_error(stack_dir: Path) -> None:
    core, node = stack_dir / "core", node_binary(VERSION)
    load = f"source {ROOT}/plugins/gdb/v8dbg.py"
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "cmds.gdb"
        script.write_text("jsstack -n 1\necho BEFORE\\n\njsprint 0x11\necho AFTER\\n\n")
        p = subprocess.run([GDB, "-nx", "-q", "-batch", "-ex", load, "-x", str(script),
                            str(node), str(core)], capture_output=True, text=True, timeout=300)
    assert "BEFORE" in p.stdout and "AFTER" not in p.stdout, p.stdout
    assert p.returncode != 0
    assert "v8dbg: jsprint: 0x11" in p.stderr and "Traceback" not in p.stderr, p.stderr

    # -batch: the exit status is the last command's.
    p = subprocess.run([GDB, "-nx", "-q", "-batch", "-ex", load, "-ex", "jsprint --json 0x11",
                        str(node), str(core)], capture_output=True, text=True, timeout=300)
    assert p.returncode != 0, p.stdout + p.stderr
    assert json_line(p.stderr, "jsprint")["error"], p.stderr
    p = subprocess.run([GDB, "-nx", "-q", "-batch", "-ex", load, "-ex", "jsstack -n 1",
                        str(node), str(core)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def test_gdb_help_completion_and_messages() -> None:
    from v8dbg.commands import load_all
    cmds = {n: c for n, c in load_all().items() if n != "v8dbg"}
    load = f"source {ROOT}/plugins/gdb/v8dbg.py"
    p = subprocess.run([GDB, "-nx", "-q", "-batch", "-ex", load, "-ex", "help v8dbg",
                        "-ex", "echo @@\\n", "-ex", "help user-defined", "-ex", "echo @@\\n",
                        "-ex", "help data", "-ex", "echo @@\\n",
                        "-ex", "complete jsstack --j", "-ex", "complete v8dbg findjsobjects -",
                        "-ex", "complete jsprint -", "-ex", "echo @@\\n", "-ex", "jsstack"],
                       capture_output=True, text=True, timeout=120)
    helps, user, data, completions, _ = p.stdout.split("@@\n")
    for name, c in cmds.items():
        summary = c.summary[:1].upper() + c.summary[1:]
        assert re.search(rf"^v8dbg {name}, {name} -- {re.escape(summary)}\.$", helps, re.M), \
            f"`help v8dbg` lacks {name}:\n{helps}"
        assert name not in data.split(), f"{name} is listed by `help data`"
        assert "usage:" not in helps
    assert "v8dbg -- JavaScript stacks" in user, user
    lines = completions.split()
    assert "--json" in lines, completions
    assert {"-c", "-p", "--json", "--isolate", "--thread"} <= set(lines), completions
    assert {"-a", "-d", "-N", "--json"} <= set(lines), completions
    # No target at all: the advice is gdb's way to load one, not a CLI flag.
    assert "v8dbg: no node binary" in p.stderr, p.stderr
    assert "--binary" not in p.stderr and "--core" not in p.stderr, p.stderr


# -- interruption -------------------------------------------------------------

SLOW = FIXTURES / "slow_census.py"
PAGE_WAIT = "0.2"  # seconds per heap page: the census core's scan then takes many seconds


def _interrupt(argv: list[str], mark: Path, env: dict) -> tuple[subprocess.CompletedProcess,
                                                                  float, float]:
    """Start argv, wait until its scan reads pages, send SIGINT; (result, signal time, exit time)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 300
        while not mark.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the scan never started"
            time.sleep(0.02)
        time.sleep(0.5)
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        ended = time.time()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), sent, ended


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_debugger_stops_a_scan_on_interrupt(debugger: str) -> None:
    """Ctrl-C (SIGINT to the debugger) ends findjsobjects within a second, as `interrupted`.

    gdb turns it into KeyboardInterrupt in Python; lldb only sets a flag, which
    the scan asks for."""
    d = make_core(VERSION, "census.js")
    with tempfile.TemporaryDirectory() as tmp:
        mark, end = Path(tmp) / "started", Path(tmp) / "ended"
        env = clean_env(V8DBG_TEST_MARK=str(mark), V8DBG_TEST_PAGE_WAIT=PAGE_WAIT)
        # Run the command from the debugger's Python, which then notes when it ended.
        if debugger == "gdb":
            run = ("try:\n    out = gdb.execute('findjsobjects', to_string=True)\n"
                   "except gdb.error as e:\n    out = str(e)\n")
        else:
            run = ("r = lldb.SBCommandReturnObject()\n"
                   "lldb.debugger.GetCommandInterpreter().HandleCommand('findjsobjects', r)\n"
                   "out = (r.GetOutput() or '') + (r.GetError() or '')\n")
        code = (f"import time\n{run}"
                f"open({str(end)!r}, 'w').write(repr(time.time()) + '\\n' + out)\n")
        core, node = str(d / "core"), str(node_binary(VERSION))
        if debugger == "gdb":
            argv = [GDB, "-nx", "-q", "-batch", "-ex", f"source {ROOT}/plugins/gdb/v8dbg.py",
                    "-ex", f"python exec(open({str(SLOW)!r}).read())",
                    "-ex", f"python exec({code!r})", node, core]
        else:
            argv = [LLDB, "--no-lldbinit", "-b", "-c", core, node,
                    "-o", f"command script import {ROOT}/plugins/lldb/v8dbg.py",
                    "-o", f"script exec(open({str(SLOW)!r}).read())",
                    "-o", f"script exec({code!r})"]
        p, sent, _ = _interrupt(argv, mark, env)
        assert end.exists(), p.stdout + p.stderr
        stopped, _, text = end.read_text().partition("\n")
    assert "v8dbg: interrupted" in text, text
    assert "REPRESENTATIVE" not in text, text
    assert 0 <= float(stopped) - sent < 1.0, f"the scan stopped {float(stopped) - sent:.2f} s " \
                                             "after Ctrl-C"


def test_cli_exit_codes(stack_dir: Path, tmp_path: Path) -> None:
    core, node = str(stack_dir / "core"), str(node_binary(VERSION))

    def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "v8dbg", *args], capture_output=True,
                              text=True, timeout=300, cwd=ROOT, env=env)

    p = cli("jsstack", "-n", "3", "--core", core, "--binary", node)
    assert p.returncode == 0 and p.stdout.startswith("thread "), p.stdout + p.stderr
    p = cli("jsprint", "0x11", "--core", core, "--binary", node)
    assert p.returncode == 1 and p.stderr.strip().startswith("v8dbg: jsprint: "), p.stderr
    assert p.stderr.count("\n") == 1, p.stderr
    p = cli("jsprint", "--json", "0x11", "--core", core, "--binary", node)
    assert p.returncode == 1 and json_line(p.stdout, "jsprint")["error"], p.stdout

    # Usage errors: 2, with argparse's usage line.
    for args in (["jsstack", "--no-such-flag", "--core", core], ["jsstack"],
                 ["nosuchcommand"], ["jsstack", "-n", "three", "--core", core], []):
        p = cli(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert "usage:" in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)

    # Help: the commands listed, --core/--binary in each command's help, the version.
    p = cli("--help")
    assert p.returncode == 0
    from v8dbg.commands import load_all
    for name in [n for n in load_all() if n != "v8dbg"] + ["gdb", "lldb", "gdbinit", "lldbinit"]:
        assert re.search(rf"^\s+{name}\b", p.stdout, re.M), f"--help lacks {name}:\n{p.stdout}"
    for name in ("jsstack", "findjsobjects", "jsprint"):
        for h in (cli("help", name), cli(name, "--help")):
            assert h.returncode == 0 and "--core CORE" in h.stdout and "--binary NODE" in h.stdout
            assert f"usage: python -m v8dbg {name}" in h.stdout, h.stdout
    p = cli("--version")
    import v8dbg
    assert p.returncode == 0 and p.stdout.strip() == f"v8dbg {v8dbg.__version__}"

    # Plain errors for what is not a core.
    p = cli("jsstack", "--core", str(tmp_path))
    assert p.returncode == 1 and p.stderr == f"v8dbg: {tmp_path} is a directory, not a core file\n"
    gz = tmp_path / "core.gz"
    with open(core, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
        dst.write(src.read(1 << 20))
    p = cli("jsstack", "--core", str(gz))
    assert p.returncode == 1 and "is gzip-compressed: decompress it first" in p.stderr, p.stderr
    zst = tmp_path / "core.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 64)
    p = cli("jsstack", "--core", str(zst))
    assert p.returncode == 1 and "zstd-compressed" in p.stderr and "coredumpctl" in p.stderr
    assert p.stderr.count("\n") == 1, p.stderr

    # Without --binary: node is the file the core names (tests/test_cli_usage.py
    # checks when a note names it).
    p = cli("jsstack", "-n", "3", "--core", core)
    assert p.returncode == 0 and p.stdout.startswith("thread "), p.stderr

    # A scan with stderr redirected: no progress line (no \r) in the log.
    census = make_core(VERSION, "census.js")
    mark = tmp_path / "started"
    env = clean_env(V8DBG_TEST_MARK=str(mark), V8DBG_TEST_PAGE_WAIT="0.02")
    code = (f"exec(open({str(SLOW)!r}).read()); import sys; from v8dbg.commands.cli import main; "
            "sys.exit(main())")
    p = subprocess.run([sys.executable, "-c", code, "findjsobjects", "-c", "Widget", "--core",
                        str(census / "core"), "--binary", node], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=600)
    assert p.returncode == 0 and "Widget" in p.stdout, p.stdout + p.stderr
    assert "\r" not in p.stderr and "%" not in p.stderr, repr(p.stderr)

    # Ctrl-C during a scan: 130.
    mark.unlink()
    env["V8DBG_TEST_PAGE_WAIT"] = PAGE_WAIT
    p, sent, ended = _interrupt([sys.executable, "-c", code, "findjsobjects", "--core",
                                 str(census / "core"), "--binary", node], mark, env)
    assert p.returncode == 130, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.strip().endswith("v8dbg: interrupted") and "Traceback" not in p.stderr, \
        p.stderr
    assert ended - sent < 5, f"the CLI exited {ended - sent:.1f} s after Ctrl-C"


def test_command_reference_is_current() -> None:
    """docs/commands.md is what the commands' own help says now."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("commands_doc", ROOT / "scripts" / "commands_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    old = os.environ.get("COLUMNS")
    try:
        want = mod.render()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    assert (ROOT / "docs" / "commands.md").read_text() == want, \
        "docs/commands.md is out of date: run python3 scripts/commands_doc.py"
