"""`v8dbg triage`: a small fleet of real cores grouped into buckets.

Three crash sites of tests/fixtures/triage.js (a thrown error through a
builtin, an assertion in node's own `assert`, a `process.abort()`), on two
node lines, on random data each run (two runs of two sites on one line), and
one site on each of the other pinned lines; plus cores that cannot be read: a
truncated one, one of a program that is not node, one whose node binary is
not on this machine, one whose path names another release's node, and a text
file.
The truth is what V8 said at each crash site (the fixture's expected.json:
the stack of an error made there); the buckets must be one per site across
releases and data, the same with one worker, two, a file:// URL and a real
Dask scheduler with two worker processes on 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pty
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import (CACHE, ROOT, built_once, make_core, stripped_binary, validate_output,
                     write_sparse)

LINES = ["20.20.2", "24.21.0"]
SITES = ["parse", "assert", "abort"]
# (line, site, run): every site on both lines, two sites once more (other
# data), and one site on each other pinned line.
FLEET = [(v, s, 1) for v in LINES for s in SITES] + [
    ("20.20.2", "parse", 2), ("24.21.0", "assert", 2),
    ("18.20.8", "assert", 1), ("22.23.3", "parse", 1), ("26.10.0", "abort", 1)]
FLAGS = ("--abort-on-uncaught-exception",)
MOVED_LINE = "20.20.2"  # the line whose core names a node binary that is not here


def _site_dir(version: str, site: str, run: int) -> Path:
    return make_core(version, "triage.js", FLAGS, env={"V8DBG_TRIAGE": site, "V8DBG_RUN": str(run)})


def _not_node_core() -> Path:
    """A core of `sleep` (not node), made once."""
    def build(d: Path) -> None:
        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
        proc = subprocess.Popen(["sleep", "30"], cwd=d, preexec_fn=limits)
        time.sleep(0.2)
        proc.send_signal(signal.SIGABRT)
        proc.wait()
        cands = sorted(d.glob("core*"))
        if not cands:
            raise RuntimeError("sleep left no core")
        cands[0].rename(d / "core")
    return built_once(CACHE / "cores" / "triage-not-node", build) / "core"


def _renamed(d: Path, old: bytes, new: bytes, name: str) -> Path:
    """A copy of d/core with its node binary's path changed (in the file list
    and in memory) from OLD to NEW, as a core from another machine."""
    out = d / name
    if not out.exists():
        data = (d / "core").read_bytes()
        assert old in data
        write_sparse(out, data.replace(old, new))
    return out


def _moved(d: Path) -> Path:
    """d/core naming a node binary that does not exist (`node` -> `nodX`)."""
    return _renamed(d, b"/bin/node\0", b"/bin/nodX\0", "core-nodX")


def _other_build(d: Path, version: str, other: str) -> Path:
    """d/core (of node VERSION) naming the path of node OTHER: a node is
    there, of another build (a core paired with the wrong binary)."""
    return _renamed(d, f"/{version}/bin/node\0".encode(), f"/{other}/bin/node\0".encode(),
                    f"core-as-{other}")


def _truncated(d: Path) -> Path:
    out = d / "core-cut"
    if not out.exists():
        data = (d / "core").read_bytes()
        write_sparse(out, data[:len(data) // 3])
    return out


def _truth(d: Path) -> tuple[str, list[tuple[str, str, int]], dict | None]:
    """The signature V8's own stack of the crash site gives (the program's
    frames: not node's modules, not builtins; recursion once; the top three),
    with each frame's (function, script, line), and what was thrown."""
    exp = json.loads((d / "expected.json").read_text())
    frames: list[tuple[str, str, int]] = []
    for ln in exp["stack"].splitlines()[1:]:
        m = re.match(r"\s*at (?:async )?(.*?) \((.*):(\d+):(\d+)\)$", ln.strip())
        if not m or m.group(2).startswith("node:"):
            continue
        name = re.sub(r" \[as [^]]*\]$", "", m.group(1)).split(".")[-1]
        f = (name, m.group(2), int(m.group(3)))
        if frames and frames[-1][:2] == f[:2]:
            continue
        frames.append(f)
    top = frames[:3]
    sig = " | ".join(f"{n} ({os.path.basename(s)})" for n, s, _ in top)
    return sig, top, exp["thrown"]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> dict:
    """A directory of the fleet's cores (links to the cached ones, the
    broken ones as sparse copies) and what each should come out as."""
    root = tmp_path_factory.mktemp("fleet")
    cores = root / "cores"
    cores.mkdir()
    truth: dict[str, tuple] = {}
    for v, site, run in FLEET:
        d = _site_dir(v, site, run)
        p = cores / f"core.{site}.{v}.{run}"
        p.symlink_to(d / "core")
        truth[str(p)] = (v, site) + _truth(d)
    moved_from = _site_dir(MOVED_LINE, "parse", 1)
    bad = {
        "core.truncated": _truncated(_site_dir("24.21.0", "abort", 1)),
        "core.not-node": _not_node_core(),
        "core.moved": _moved(moved_from),
        "core.wrong-binary": _other_build(moved_from, MOVED_LINE, "24.21.0"),
    }
    for name, src in bad.items():
        (cores / name).symlink_to(src)
    (cores / "README.txt").write_text("cores of the checkout service\n")
    return {"dir": cores, "truth": truth, "bad": {str(cores / n) for n in bad} |
            {str(cores / "README.txt")}, "moved": str(cores / "core.moved"),
            "moved_from": moved_from}


def _triage(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "v8dbg", "triage", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def _doc(proc: subprocess.CompletedProcess) -> dict:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    doc = json.loads(lines[0])
    validate_output(doc, "triage")
    return doc


def _check_buckets(doc: dict, fleet: dict, strip: str = "") -> None:
    """One bucket per crash site, holding exactly that site's cores of both
    lines, with the signature, frames and thrown error V8 gives; every bad
    core an error entry and in no bucket."""
    truth = fleet["truth"]
    by_site: dict[str, list[str]] = {}
    for path, (v, site, *_rest) in truth.items():
        by_site.setdefault(site, []).append(path)
    buckets = doc["buckets"]
    assert len(buckets) == len(SITES), [b["signature"] for b in buckets]
    assert [b["count"] for b in buckets] == sorted((b["count"] for b in buckets), reverse=True)
    for b in buckets:
        paths = sorted(c["path"].removeprefix(strip) for c in b["cores"])
        sites = {truth[p][1] for p in paths}
        assert len(sites) == 1, (b["signature"], paths)
        site = sites.pop()
        assert paths == sorted(by_site[site]), (site, paths)
        assert b["count"] == len(paths)
        want_sig = {truth[p][2] for p in paths}
        assert want_sig == {b["signature"]}, (b["signature"], want_sig)
        assert b["node_versions"] == sorted({f"v{truth[p][0]}" for p in paths})
        for c in b["cores"]:
            assert c["node_version"] == f"v{truth[c['path'].removeprefix(strip)][0]}"
        first = truth[b["cores"][0]["path"].removeprefix(strip)]
        got = [(f["function"], f["script"], f["line"]) for f in b["frames"]]
        assert got == first[3], (got, first[3])
        thrown = [truth[p][4] for p in paths]
        if site == "abort":
            assert b["exception"] is None
        else:
            # One of the bucket's cores' own error (the messages differ with the data).
            assert b["exception"] in thrown, (b["exception"], thrown)
            assert len({t["message"] for t in thrown}) == len(thrown)  # data differs
    errors = {e["path"].removeprefix(strip): e["error"] for e in doc["errors"]}
    assert set(errors) == fleet["bad"], errors
    bad = {os.path.basename(p): e for p, e in errors.items()}
    assert "truncated" in bad["core.truncated"], bad
    assert "not-node" not in bad["core.not-node"] and "v8dbg_" in bad["core.not-node"] or \
        "node" in bad["core.not-node"], bad
    assert f"v{MOVED_LINE}" in bad["core.moved"] and "is missing" in bad["core.moved"], bad
    wrong = bad["core.wrong-binary"]
    assert f"provide node v{MOVED_LINE}" in wrong and "differs on this machine" in wrong, wrong
    assert "ELF" in bad["README.txt"], bad


def test_signature_rules() -> None:
    """node's modules, builtins and the abort machinery skipped; recursion once."""
    from v8dbg.triage.signature import SigFrame, signature
    frames = [SigFrame("abort", None, native=True), SigFrame("node::Abort(x)", None, native=True),
              SigFrame("innerOk", "node:internal/assert/utils", 77, 5),
              SigFrame("ok", "node:assert", 217, 3),
              SigFrame("check", "/srv/app/lib/bank.js", 3, 9),
              SigFrame("map", None), SigFrame("walk", "/srv/app/lib/tree.js", 8, 1),
              SigFrame("walk", "/srv/app/lib/tree.js", 9, 1),
              SigFrame("main", "/srv/app/index.js", 1, 1), SigFrame("late", "/srv/app/x.js", 1, 1)]
    assert signature(frames) == "check (bank.js) | walk (tree.js) | main (index.js)"
    native = [SigFrame("raise", None, native=True), SigFrame("abort", None, native=True),
              SigFrame("node::Abort()", None, native=True),
              SigFrame("addon::Parse(char const*)", None, native=True),
              SigFrame("uv_run", None, native=True)]
    assert signature(native) == "native: addon::Parse(char const*) | uv_run"


def test_fleet_buckets(fleet) -> None:
    """Two workers; then one worker on a file:// URL of the same directory
    (fsspec): the same buckets; the text output lists them the same."""
    t = time.monotonic()
    two = _triage(str(fleet["dir"]), "--workers", "2", "--json")
    took = time.monotonic() - t
    assert two.returncode == 0, two.stderr
    assert two.stderr == "", two.stderr  # no progress line when stderr is not a terminal
    doc = _doc(two)
    _check_buckets(doc, fleet)
    pytest.importorskip("fsspec")
    one = _triage(f"file://{fleet['dir']}", "--workers", "1", "--json")
    assert one.returncode == 0, one.stderr
    url_doc = _doc(one)
    _check_buckets(url_doc, fleet, strip="file://")
    assert [(b["signature"], b["count"]) for b in url_doc["buckets"]] == \
        [(b["signature"], b["count"]) for b in doc["buckets"]]
    text = _triage(str(fleet["dir"]), "--workers", "2")
    assert text.returncode == 0, text.stderr
    head = text.stdout.splitlines()[0]
    total = len(FLEET) + len(fleet["bad"])
    assert head == f"3 buckets from {len(FLEET)} of {total} cores; {len(fleet['bad'])} errors", head
    for b in doc["buckets"]:
        assert f"    {b['signature']}" in text.stdout.splitlines()
    print(f"triage of {total} files with 2 workers: {took:.2f} s")


def test_missing_binary_found_in_binary_dir(fleet) -> None:
    """The moved core's error names the release to provide; with
    --binary-dir holding node binaries of both lines (found by build-id), it
    is a core like the others, in its site's bucket."""
    alone = _triage(fleet["moved"], "--json")
    assert alone.returncode == 1
    doc = _doc(alone)
    assert doc["buckets"] == []
    err = doc["errors"][0]["error"]
    assert f"node v{MOVED_LINE}" in err and "nodX" in err and "build-id" in err, err
    bins = CACHE.resolve() / "node"
    with_dir = _triage(fleet["moved"], "--binary-dir", str(bins), "--json")
    assert with_dir.returncode == 0, with_dir.stderr
    doc = _doc(with_dir)
    assert doc["errors"] == []
    (b,) = doc["buckets"]
    sig, top, thrown = _truth(fleet["moved_from"])
    assert b["signature"] == sig
    assert b["node_versions"] == [f"v{MOVED_LINE}"]
    assert b["exception"] == thrown
    assert "warnings" not in b["cores"][0]
    # A stripped copy of that release (same build-id): the same bucket, and
    # the core's entry says what jsstack would warn of.
    stripped = stripped_binary(MOVED_LINE).parent
    r = _triage(fleet["moved"], "--binary-dir", str(stripped), "--json")
    assert r.returncode == 0, r.stderr
    (b,) = _doc(r)["buckets"]
    assert b["signature"] == sig and b["exception"] == thrown
    (w,) = [w for w in b["cores"][0]["warnings"] if "stripped" in w]
    assert w.startswith(f"warning: {stripped}/node is stripped"), w


def test_object_store_url(fleet, tmp_path, monkeypatch) -> None:
    """A core in a file system that is not local (fsspec's in-memory one,
    standing in for an object store none of which this machine reaches): it
    is listed from its directory URL, copied to the reading process and read
    there, and the copy removed. The copy goes to a temporary directory of
    this test's own, since tests run side by side (pip's, for one) put
    theirs in the shared one."""
    fsspec = pytest.importorskip("fsspec")
    sys.path.insert(0, str(ROOT))
    import tempfile
    from v8dbg.triage import sources
    from v8dbg.triage.crash import CoreCrash, crash_of
    path, (v, site, sig, top, thrown) = next(
        (p, t) for p, t in sorted(fleet["truth"].items()) if t[0] == "20.20.2")
    mem = fsspec.filesystem("memory")
    mem.mkdirs("/v8dbg-test/cores", exist_ok=True)
    try:
        mem.pipe_file("/v8dbg-test/cores/core.1", Path(path).read_bytes())
        found = sources.find(["memory://v8dbg-test/cores/", "memory://v8dbg-test/none"])
        assert found.cores == ["memory:///v8dbg-test/cores/core.1"], found
        assert found.problems == [("memory://v8dbg-test/none", "not found")]
        own = tmp_path / "tmp"
        own.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(own))
        made = []
        mkstemp = tempfile.mkstemp

        def counted(*a, **k):
            made.append(mkstemp(*a, **k))
            return made[-1]
        monkeypatch.setattr(tempfile, "mkstemp", counted)
        r = crash_of(found.cores[0])
        assert isinstance(r, CoreCrash), r
        assert r.signature == sig and r.node_version == f"v{v}"
        assert [(f.function, f.script, f.line) for f in r.frames] == top
        assert len(made) == 1 and Path(made[0][1]).parent == own, made
        assert os.listdir(own) == []
    finally:
        mem.rm("/v8dbg-test", recursive=True)


def test_file_cap_is_reported(fleet, monkeypatch) -> None:
    """Past the files one run takes, the rest are counted as left out."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.triage import sources
    monkeypatch.setattr(sources, "MAX_CORES", 3)
    found = sources.find([str(fleet["dir"]), str(fleet["dir"])])
    n = len(list(fleet["dir"].iterdir()))
    assert len(found.cores) == 3 and found.left_out == 2 * n - 3, found


def test_no_core_left_open(fleet) -> None:
    """A worker reads core after core: none stays open (a descriptor per core
    would run out at the process's limit, 1024 by default, in a big fleet)."""
    sys.path.insert(0, str(ROOT))
    from v8dbg.triage.crash import CoreCrash, crash_of
    files = sorted(str(p) for p in fleet["dir"].iterdir())
    cores = {os.path.realpath(p) for p in files}
    results = [crash_of(p) for p in files * 2]
    assert sum(isinstance(r, CoreCrash) for r in results) == 2 * len(FLEET)
    fd_dir = f"/proc/{os.getpid()}/fd"
    held = set()
    for fd in os.listdir(fd_dir):
        try:
            held.add(os.readlink(f"{fd_dir}/{fd}"))
        except OSError:
            pass
    assert not held & cores, held & cores


def test_bad_input(tmp_path, fleet) -> None:
    """An empty directory, a directory of non-cores, a path that is not
    there: error entries, exit 1; usage errors exit 2."""
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _triage(str(empty), "--json")
    assert r.returncode == 1
    assert _doc(r) == {"buckets": [], "errors": [{"path": str(empty),
                                                  "error": "no files in this directory"}]}
    r = _triage(str(empty))
    assert r.returncode == 1 and "no files in this directory" in r.stdout and "Traceback" not in r.stderr
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.log").write_text("not a core\n" * 100)
    (junk / "b.bin").write_bytes(b"\x7fELF" + bytes(200))
    (junk / "c.gz").write_bytes(b"\x1f\x8b" + bytes(200))
    r = _triage(str(junk), str(tmp_path / "absent"), "--json", "--workers", "2")
    assert r.returncode == 1, r.stderr
    doc = _doc(r)
    assert doc["buckets"] == []
    errs = {os.path.basename(e["path"]): e["error"] for e in doc["errors"]}
    assert set(errs) == {"a.log", "b.bin", "c.gz", "absent"}, errs
    assert "gzip-compressed" in errs["c.gz"] and errs["absent"] == "not found", errs
    for args in (["--workers", "0", str(junk)], [], ["--binary-dir", str(junk / "a.log"), str(junk)],
                 ["--workers", "2", "--dask", "tcp://127.0.0.1:1", str(junk)]):
        r = _triage(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("v8dbg: triage: "), r.stderr
        assert "Traceback" not in r.stderr
    r = _triage("--workers", "0", str(junk), "--json")
    assert r.returncode == 2 and _doc(r) == {
        "error": "triage: --workers takes a number of processes >= 1"}
    if importlib.util.find_spec("distributed"):
        r = _triage(str(junk), "--dask", "nonsense://x", "--json")
        assert r.returncode == 1, r.stderr
        err = _doc(r)["error"]
        assert err.startswith("triage: cannot reach the Dask scheduler at nonsense://x: "), err


def test_progress_on_a_terminal(fleet) -> None:
    """On a terminal, stderr shows `done/total` and the errors so far, and is
    cleared at the end; stdout has the buckets."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "v8dbg", "triage", str(fleet["dir"]),
                                 "--workers", "2", "--json"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=slave, text=True)
        os.close(slave)
        slave = -1
        out, _ = proc.communicate(timeout=300)
        seen = b""
        while select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    total = len(FLEET) + len(fleet["bad"])
    text = seen.decode()
    assert f"v8dbg: triage: {total}/{total} cores, {len(fleet['bad'])} errors" in text, text
    assert json.loads(out)["buckets"]


def test_interrupt(fleet, tmp_path) -> None:
    """Ctrl-C (to the whole process group, as a terminal sends it) stops a
    run with two workers at once: exit 130, one line, no traceback."""
    many = tmp_path / "many"
    many.mkdir()
    cores = sorted(p for p in fleet["truth"])
    for i in range(2000):
        (many / f"core.{i}").symlink_to(os.path.realpath(cores[i % len(cores)]))
    proc = subprocess.Popen([sys.executable, "-m", "v8dbg", "triage", str(many), "--workers", "2"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        time.sleep(3)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err)
    assert err == "v8dbg: interrupted\n" and out == "", (out, err)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dask_cluster(fleet, tmp_path) -> None:
    """A Dask scheduler and two worker processes on 127.0.0.1, started as a
    user starts them (`dask scheduler`, `dask worker`): the same buckets."""
    pytest.importorskip("distributed")
    # The `dask` command of the Python that runs the tests (where setup.sh installed
    # distributed), as a user runs the one of the environment v8dbg is in.
    beside = Path(sys.executable).parent / "dask"
    dask = str(beside) if beside.is_file() else shutil.which("dask")
    assert dask, "the dask command (pip install 'v8dbg[dask]')"
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs: list[subprocess.Popen] = []
    logs = []
    try:
        def start(args: list[str], name: str) -> None:
            log = open(tmp_path / f"{name}.log", "w")
            logs.append(log)
            procs.append(subprocess.Popen([dask, *args], cwd=tmp_path, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True))
        start(["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
              "scheduler")
        for i in range(2):
            start(["worker", addr, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                   "--name", f"w{i}", "--local-directory", str(tmp_path / f"w{i}")], f"w{i}")
        from distributed import Client
        deadline = time.monotonic() + 120
        while True:
            try:
                with Client(addr, timeout=5) as c:
                    c.wait_for_workers(2, timeout=60)
                    assert len(c.scheduler_info()["workers"]) == 2
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        t = time.monotonic()
        r = _triage(str(fleet["dir"]), "--dask", addr, "--json")
        took = time.monotonic() - t
        assert r.returncode == 0, r.stderr
        _check_buckets(_doc(r), fleet)
        # The tasks ran in the workers, not in the client.
        ran = " ".join((tmp_path / f"w{i}.log").read_text() for i in range(2))
        assert "Traceback" not in ran, ran[-3000:]
        print(f"triage on Dask (2 workers): {took:.2f} s")
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in logs:
            log.close()
