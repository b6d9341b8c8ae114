"""`v8dbg profile`: sampling a running node process, checked against V8's own profiler.

tests/fixtures/profile_hot.js spins in three hot functions, each on one
known source line, under node's own `--cpu-prof`. While it runs, `v8dbg
profile` samples it for a few seconds; then the fixture is told to stop and
node writes its .cpuprofile. Each hot line's share of the samples (self
time: the innermost frame is on that line) must be within 5 percentage
points of the share V8's profiler gives it over the same seconds (its
positionTicks, by line: V8 files inlined code under its caller but keeps
the line). The sample count
must be near rate x duration, and the target must run on, untraced, after
the profiler lets go.

Also: a perf sample's stack copy, which starts inside a page, is read for
every byte it holds; the three output formats parse (speedscope JSON structure, SVG as
XML, its hover and zoom script run by node against a stand-in for the DOM),
--native, --idle and --threads all on a fixture whose main thread
idles while a worker spins, and bad input (a pid that is not node, no such
pid, a process another tracer holds, a process that exits mid-profile,
Ctrl-C).
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from v8dbg.inferior.backend import PAGE, Memory, Registers
from v8dbg.inferior.ptrace import PtraceBackend, Snapshot
from support import FIXTURES, ROOT, VERSIONS, LiveNode, node_binary, tracer_of

RATE = 399
DURATION = 4.0
V8_INTERVAL_US = 500  # V8's own sampling, twice its default rate: less noise to compare with
TOLERANCE = 5.0  # percentage points
HOT = ("hotAlpha", "hotBeta", "hotGamma")
SUMMARY = re.compile(
    r"^v8dbg: profile: (\d+) samples(?: of \d+ threads)? in ([\d.]+) s "
    r"\(([\d.]+) Hz achieved, ([\d.]+) Hz asked\); "
    r"(?:target held per sample: median (\d+) µs, p99 (\d+) µs|no sample held the target)",
    re.M)


def hot_lines(fixture: str = "profile_hot.js", names=HOT) -> dict[str, int]:
    """Source line (1-based) of each hot function: each sits on one line."""
    text = (FIXTURES / fixture).read_text().splitlines()
    return {n: i + 1 for i, line in enumerate(text) for n in names
            if line.startswith(f"function {n}(")}


def profile(pid: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "v8dbg", "profile", "--pid", str(pid), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def summary(stderr: str) -> dict:
    m = SUMMARY.search(stderr)
    assert m, f"no summary line on stderr:\n{stderr}"
    return {"samples": int(m.group(1)), "seconds": float(m.group(2)),
            "achieved": float(m.group(3)), "asked": float(m.group(4)),
            "median_us": int(m.group(5) or 0), "p99_us": int(m.group(6) or 0)}


def runs_on_untraced(node: LiveNode) -> None:
    """Alive, not traced by anyone, and its CPU time still grows."""
    assert node.alive(), "the process died while or after being profiled"
    assert tracer_of(node.pid) == 0, "the profiler left the process traced"
    t1 = t2 = node.cpu_time()
    deadline = time.monotonic() + 5
    while t2 <= t1 and time.monotonic() < deadline:
        time.sleep(0.2)
        t2 = node.cpu_time()
    assert t2 > t1, "the process stopped running after the profiler let go"


def speedscope_ok(doc: dict) -> None:
    """The speedscope file format: shared frames, one sampled profile per thread."""
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert frames, doc
    for f in frames:
        assert isinstance(f["name"], str) and f["name"], f
        assert set(f) <= {"name", "file", "line", "col"}, f
        if "file" in f:
            assert isinstance(f["file"], str)
        for k in ("line", "col"):
            if k in f:
                assert isinstance(f[k], int) and f[k] >= 1, f
    assert doc["profiles"], doc
    for p in doc["profiles"]:
        assert p["type"] == "sampled" and p["unit"] == "milliseconds", p["type"]
        assert isinstance(p["name"], str)
        assert p["startValue"] == 0 and p["endValue"] > 0
        assert len(p["samples"]) == len(p["weights"])
        assert all(w > 0 for w in p["weights"])
        for st in p["samples"]:
            assert st and all(isinstance(i, int) and 0 <= i < len(frames) for i in st)


def leaf_counts(doc: dict, file_suffix: str, key: str) -> tuple[collections.Counter, int]:
    """Samples per `key` ("name" or "line") of the innermost frame when it is
    in `file_suffix`, and the number of samples."""
    frames = doc["shared"]["frames"]
    c: collections.Counter = collections.Counter()
    total = 0
    for p in doc["profiles"]:
        for st in p["samples"]:
            total += 1
            leaf = frames[st[-1]]  # root first: the leaf is last
            if leaf.get("file", "").endswith(file_suffix):
                c[leaf.get(key)] += 1
    return c, total


def v8_lines(cpuprofile: dict, file_suffix: str, start: float,
             end: float) -> tuple[collections.Counter, float]:
    """V8's self ticks per line of `file_suffix` between monotonic times start
    and end (seconds), and its number of samples then.

    A .cpuprofile times each sample (CLOCK_MONOTONIC, µs) but counts lines
    only per node for the whole run (positionTicks): each node's line counts
    are scaled by the share of its samples that fall in the window. Warm-up
    and tier changes before the window so do not count.
    """
    t = cpuprofile["startTime"]
    inside: collections.Counter = collections.Counter()
    every: collections.Counter = collections.Counter()
    for node, dt in zip(cpuprofile["samples"], cpuprofile["timeDeltas"]):
        t += dt
        every[node] += 1
        if start * 1e6 <= t <= end * 1e6:
            inside[node] += 1
    c: collections.Counter = collections.Counter()
    for n in cpuprofile["nodes"]:
        if n["callFrame"]["url"].endswith(file_suffix) and every[n["id"]]:
            share = inside[n["id"]] / every[n["id"]]
            for pt in n.get("positionTicks", []):
                c[pt["line"]] += pt["ticks"] * share
    return c, float(sum(inside.values()))


def throughput(progress: Path, a: float, b: float) -> tuple[float, float]:
    """The fixture's own rounds per wall-clock second and per second of its
    CPU time between monotonic times a and b (its `progress` lines nearest
    to them)."""
    pts = [(int(t) / 1e9, int(n), int(c) / 1e6) for t, n, c in
           (ln.split() for ln in progress.read_text().splitlines() if ln.count(" ") == 2)]
    lo = min(pts, key=lambda p: abs(p[0] - a))
    hi = min(pts, key=lambda p: abs(p[0] - b))
    assert hi[0] - lo[0] > 0.5 * (b - a), (a, b, lo, hi)
    return (hi[1] - lo[1]) / (hi[0] - lo[0]), (hi[1] - lo[1]) / (hi[2] - lo[2])


class Stopped:
    """How often and how long a thread that never blocks was stopped, from the
    kernel's accounts: its voluntary context switches (a ptrace stop is one;
    the fixture's own work makes none) and the share of wall-clock time it
    was neither on a CPU nor waiting for one (/proc/.../schedstat). Unlike
    its throughput, neither is blurred by how busy the machine is."""

    def __init__(self, pid: int) -> None:
        self.dir = Path(f"/proc/{pid}/task/{pid}")
        self.start = self._now()

    def _now(self) -> tuple[float, int, int, int]:
        run, wait, _ = (self.dir / "schedstat").read_text().split()
        switches = next(int(ln.split()[1]) for ln in (self.dir / "status").read_text()
                        .splitlines() if ln.startswith("voluntary_ctxt_switches:"))
        return time.monotonic(), int(run) + int(wait), switches, int(run)

    def share(self) -> float:
        t1, busy1, _, _ = self._now()
        t0, busy0, _, _ = self.start
        return 100.0 * (1 - (busy1 - busy0) / 1e9 / (t1 - t0))

    def stops(self) -> int:
        return self._now()[2] - self.start[2]

    def cpu_seconds(self) -> float:
        return (self._now()[3] - self.start[3]) / 1e9


# Twice the default rate: ~1600 samples in the same time, so a share near
# half has noise of ~1.25 points and the 5-point tolerance is 4 of them (at
# 99 Hz, ~1.8 points: by that noise alone about one suite run in twenty would
# fail a comparison).
RATE_SHARES = 199
CPU_SHARES = 8.0  # seconds of the target's CPU time sampled
WALL_CAP_SHARES = 60.0  # seconds at most, however busy the machine
MAX_LOSS = 10.0  # percent of the fixture's throughput per CPU second
# Points of the wall-clock time stopped, above the share before sampling: 3
# at the default 99 Hz, so the same bound per sample at this rate (a ptrace
# sample holds the thread some 40 us idle, more on a busy machine).
MAX_STOPPED = 3.0 * RATE_SHARES / 99
MAX_LINELESS = 2.0  # percent of the samples with an innermost frame in the fixture but no line


@pytest.mark.parametrize("version,sampler",
                         [(v, "perf") for v in VERSIONS] + [(VERSIONS[-1], "ptrace")])
def test_shares_match_cpu_prof(version: str, sampler: str) -> None:
    """The target runs V8's --cpu-prof (SIGPROF at 2 kHz) while v8dbg samples
    it at 199 Hz: self-time shares by function, and by line, within 5 points
    of V8's, and the target's own
    throughput while sampled (what the fixture counts) within MAX_LOSS of
    that before and after. Through perf events the process never stops;
    through ptrace (forced) it is let go between samples, so SIGPROF does
    not stop it either."""
    lines = hot_lines()
    assert len(lines) == 3
    flags = ("--cpu-prof", "--cpu-prof-dir=.", f"--cpu-prof-interval={V8_INTERVAL_US}")
    with LiveNode(version, "profile_hot.js", flags=flags) as node:
        time.sleep(0.5)
        a = time.monotonic()
        stopped = Stopped(node.pid)
        time.sleep(2.0)
        before = throughput(node.dir / "progress", a, time.monotonic())
        stopped_before = stopped.share()
        out = node.dir / "p.speedscope.json"
        # Until the target has had CPU_SHARES seconds of CPU (a busy machine gives
        # it less than the wall-clock seconds), then Ctrl-C: the same number
        # of samples, and so the same noise, however loaded the machine is.
        prof = subprocess.Popen([sys.executable, "-m", "v8dbg", "profile", "--pid",
                                 str(node.pid), "--rate", str(RATE_SHARES), "--sampler", sampler,
                                 "-o", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            first = wait_sampling(prof)
            stopped = Stopped(node.pid)
            deadline = time.monotonic() + WALL_CAP_SHARES
            while stopped.cpu_seconds() < CPU_SHARES and time.monotonic() < deadline:
                time.sleep(0.1)
            prof.send_signal(signal.SIGINT)
            _, err = prof.communicate(timeout=60)
        finally:
            if prof.poll() is None:
                prof.kill()
                prof.wait()
        p = subprocess.CompletedProcess(prof.args, prof.returncode, "", first + err)
        done = time.monotonic()
        stopped_during, stops, cpu = stopped.share(), stopped.stops(), stopped.cpu_seconds()
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr, p.stderr
        time.sleep(2.0)
        after = throughput(node.dir / "progress", done, time.monotonic())
        runs_on_untraced(node)
        s = summary(p.stderr)
        during = throughput(node.dir / "progress", done - 0.1 - s["seconds"], done - 0.1)
        (node.dir / "stop").write_text("stop")
        node.proc.wait(timeout=60)
        profiles = list(node.dir.glob("*.cpuprofile"))
        assert profiles, "node wrote no .cpuprofile"
        cpuprofile = json.loads(profiles[0].read_text())
        doc = json.loads(out.read_text())
    assert f"through {sampler}" in p.stderr.splitlines()[0], p.stderr
    speedscope_ok(doc)
    assert [pr["name"] for pr in doc["profiles"]] == [f"main thread {node.pid}"]
    ours, total = leaf_counts(doc, "profile_hot.js", "name")
    assert total == s["samples"]
    # Sampling ended just before the profile was written and the profiler
    # exited. V8 files inlined code under its caller (round), but by the
    # callee's line: its function is the one on that line.
    by_line_v8, v8_total = v8_lines(cpuprofile, "profile_hot.js",
                                    done - 0.1 - s["seconds"], done - 0.1)
    theirs = {name: by_line_v8[line] for name, line in lines.items()}
    assert v8_total > 500, v8_total
    wall_loss = 100.0 * (1 - during[0] / ((before[0] + after[0]) / 2))
    loss = 100.0 * (1 - during[1] / ((before[1] + after[1]) / 2))
    report = [f"{sampler}: {total} samples; throughput lost per CPU second {loss:.1f}%, "
              f"per wall-clock second {wall_loss:.1f}% ({during[0]:.0f} rounds/s against "
              f"{before[0]:.0f} before, {after[0]:.0f} after); stopped {stops} times, "
              f"{stopped_during:.1f}% of the time while sampled, {stopped_before:.1f}% before; "
              f"{cpu:.2f} s on a CPU"]
    for name in HOT:
        a = 100.0 * ours[name] / total
        b = 100.0 * theirs[name] / v8_total
        report.append(f"{name}: v8dbg {a:.1f}%, V8 {b:.1f}%")
    by_line, _ = leaf_counts(doc, "profile_hot.js", "line")
    lineless = 100.0 * by_line[None] / total
    report.append(f"in the fixture without a line {lineless:.1f}%")
    print("; ".join(report))
    for name in HOT:
        a = 100.0 * ours[name] / total
        b = 100.0 * theirs[name] / v8_total
        assert b > 10.0, f"V8 saw little of {name}: " + "; ".join(report)
        assert abs(a - b) <= TOLERANCE, f"{version}: " + "; ".join(report)
    assert loss < MAX_LOSS, f"{version}: " + "; ".join(report)
    assert stopped_during - stopped_before < MAX_STOPPED, f"{version}: " + "; ".join(report)
    assert cpu >= 0.9 * CPU_SHARES or s["seconds"] >= WALL_CAP_SHARES - 1, (cpu, s)
    if sampler == "ptrace":
        # One stop per sample (and one per signal that comes while it is
        # held), not one per SIGPROF as when the process stayed seized.
        assert stops <= 1.2 * total + 20, f"{version}: " + "; ".join(report)
        assert s["median_us"] > 0 and s["p99_us"] >= s["median_us"], s
        # A wall-clock tick; a busy 2-core machine delays the sampler.
        expected = RATE_SHARES * s["seconds"]
        assert 0.4 * expected <= total <= 1.05 * expected, (total, expected, p.stderr)
    else:
        # Never by the sampler: what the process does itself (a lock V8's
        # profiler thread holds, a GC helper joined) is far from one per sample.
        assert stops < 0.2 * total, f"{version}: the process was stopped: " + "; ".join(report)
        assert "no sample held the target (perf events)" in p.stderr, p.stderr
        # A clock of the thread's own CPU time (which a busy machine gives it
        # less of than the wall-clock seconds): RATE samples per CPU second.
        expected = RATE_SHARES * cpu
        assert 0.8 * expected <= total <= 1.1 * expected, (total, expected, p.stderr)
    # By line, as V8 files its ticks (positionTicks).
    off = {name: (100.0 * by_line[line] / total, 100.0 * by_line_v8[line] / v8_total)
           for name, line in lines.items()}
    bad = {n: ab for n, ab in off.items() if abs(ab[0] - ab[1]) > TOLERANCE}
    assert not bad, f"{version}: by line (v8dbg, V8): {off}"
    # V8 gives every one of its ticks in the fixture a line; a sample whose
    # innermost frame there has none was decoded from a frame the thread had
    # left (e.g. read from the process after the sample, not from its copy).
    assert lineless <= MAX_LINELESS, \
        f"{version}: {lineless:.1f}% of the samples without a line; " + "; ".join(report)


def test_stack_copy_wins_over_the_running_thread() -> None:
    """A perf sample's stack copy starts at its sp, inside a page, and the
    memory layer reads whole pages: every byte the copy holds is read from the
    copy (the innermost frames as they were at the sample), the rest of those
    pages from the process. Here the process is this one: its live bytes are
    "L", the copy's "C"."""
    live = ctypes.create_string_buffer(b"L" * 4 * PAGE, 4 * PAGE)
    start = (ctypes.addressof(live) + PAGE - 1) // PAGE * PAGE + PAGE + 104
    copy = b"C" * (PAGE + 200)
    end = start + len(copy)

    class _Tracer:
        pid = os.getpid()

    backend = PtraceBackend(_Tracer())
    backend.use(Snapshot(os.getpid(), Registers(start, start, start + 64), start, copy, 0,
                         time.monotonic()))
    mem = Memory(backend)
    assert mem.read(start, 8) == b"C" * 8
    assert mem.read(start - 8, 16) == b"L" * 8 + b"C" * 8
    assert mem.read(start - PAGE // 2, PAGE) == b"L" * (PAGE // 2) + b"C" * (PAGE // 2)
    assert mem.read(end - 8, 16) == b"C" * 8 + b"L" * 8
    assert mem.read(start + PAGE, 8) == b"C" * 8
    backend.use(None)
    assert Memory(backend).read(start, 8) == b"L" * 8


def test_output_formats(tmp_path: Path) -> None:
    """SVG (well-formed, self-contained, interactive), folded (JS-only and
    --native) and speedscope (--format overriding the file's extension)."""
    version = VERSIONS[-1]
    lines = hot_lines()
    with LiveNode(version, "profile_hot.js") as node:
        svg_path = node.dir / "flame.svg"
        p_svg = profile(node.pid, "--duration", "1.5", "-o", str(svg_path))
        folded_path = node.dir / "stacks.folded"
        p_folded = profile(node.pid, "--duration", "1", "--rate", "199", "-o", str(folded_path))
        p_native = profile(node.pid, "--duration", "1", "--native")
        txt_path = node.dir / "named.txt"
        p_ss = profile(node.pid, "--duration", "1", "--format", "speedscope", "-o", str(txt_path))
        runs_on_untraced(node)
        svg_text = svg_path.read_text()
        folded_text = folded_path.read_text()
        ss = json.loads(txt_path.read_text())
    for p in (p_svg, p_folded, p_native, p_ss):
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert summary(p.stderr)["samples"] > 0, p.stderr

    # SVG: well-formed XML, nothing fetched from elsewhere, hover text and zoom script.
    root = ET.fromstring(svg_text)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg"
    assert "href" not in svg_text and "@import" not in svg_text
    assert re.sub(r'xmlns="http://www\.w3\.org/2000/svg"|https?://www\.speedscope[^"]*', "",
                  svg_text).count("http") == 0
    script = root.find(f"{ns}script")
    assert script is not None and "function zoom" in (script.text or "")
    titles = [t.text or "" for t in root.iter(f"{ns}title")]
    n_svg = summary(p_svg.stderr)["samples"]
    assert any(t.startswith(f"all ({n_svg} samples, 100.00%)") for t in titles), titles[:3]
    for name, line in lines.items():
        want = re.compile(rf"^{name} \(.*profile_hot\.js:{line}\) \(\d+ samples?, [\d.]+%\)$")
        assert any(want.match(t) for t in titles), (name, titles)
    # Its script, run against a stand-in for the DOM: hover names the frame and
    # its share, a click zooms the frame to the full width, reset undoes it.
    kept = tmp_path / "flame.svg"
    kept.write_text(svg_text)
    dom = subprocess.run([str(node_binary(version)), str(FIXTURES / "flamegraph_dom.js"),
                          str(kept), "hotAlpha ("], capture_output=True, text=True, timeout=60)
    assert dom.returncode == 0, dom.stderr
    js = json.loads(dom.stdout)
    assert js["found"] and js["frames"] == len(titles), js
    assert re.match(rf"^hotAlpha \(.*profile_hot\.js:{lines['hotAlpha']}\) "
                    r"\(\d+ samples?, [\d.]+%\)$", js["hover"]), js
    assert js["zoomed"]["x"] == 10 and js["zoomed"]["width"] == 1180, js
    assert js["zoomed"]["text"].startswith("hotAlpha ("), js
    assert js["hidden"] > 0 and js["reset_visible"] == "visible", js
    assert js["after_reset"]["hidden"] == 0 and js["after_reset"]["width"] < 1180, js

    # Folded: `frames;... count`, rooted at the thread; JS frames only by default.
    def parse_folded(text: str) -> list[tuple[list[str], int]]:
        rows = []
        for ln in text.splitlines():
            m = re.match(r"^(.+) (\d+)$", ln)
            assert m, ln
            rows.append((m.group(1).split(";"), int(m.group(2))))
        return rows

    rows = parse_folded(folded_text)
    assert sum(n for _, n in rows) == summary(p_folded.stderr)["samples"]
    assert all(st[0] == f"main thread {node.pid}" for st, _ in rows)
    assert not any(f.endswith(("(node)", "(libc.so.6)")) for st, _ in rows for f in st), rows[:2]
    leafs = collections.Counter(st[-1].split(" (")[0] for st, n in rows for _ in range(n))
    assert sum(leafs[h] for h in HOT) > 0.8 * sum(leafs.values()), leafs
    native = parse_folded(p_native.stdout)
    assert sum(n for _, n in native) == summary(p_native.stderr)["samples"]
    assert any(f.endswith("(node)") and "node::" in f for st, _ in native for f in st), native[:1]
    assert any(st[-1].startswith(HOT) for st, _ in native)

    # speedscope: the structure, and stacks root first.
    speedscope_ok(ss)
    frames = ss["shared"]["frames"]
    samples = ss["profiles"][0]["samples"]
    assert sum(frames[st[-1]]["name"] in HOT for st in samples) > 0.8 * len(samples)
    assert not any(frames[st[0]]["name"] in HOT for st in samples if len(st) > 1)
    hot = [f for f in frames if f["name"] in HOT]
    assert all(f["file"].endswith("profile_hot.js") and f["line"] == lines[f["name"]]
               for f in hot), hot


@pytest.mark.parametrize("version", VERSIONS)
def test_threads_and_idle(version: str) -> None:
    """Main thread idle in its event loop, a worker spinning: on-CPU sampling of
    the main thread finds (almost) nothing, --idle finds it idle, and
    --threads all finds the worker's hot line under the worker's own root."""
    (line,) = hot_lines("profile_threads.js", ("workerSpin",)).values()
    with LiveNode(version, "profile_threads.js") as node:
        p_main = profile(node.pid, "--duration", "1.5")
        p_idle = profile(node.pid, "--duration", "1.5", "--idle")
        p_all = profile(node.pid, "--duration", "2", "--threads", "all")
        runs_on_untraced(node)
    for p in (p_main, p_idle, p_all):
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    # On CPU only: the main thread sleeps but for a timer every 200 ms.
    s_main = summary(p_main.stderr)
    assert s_main["samples"] < 0.2 * s_main["asked"] * s_main["seconds"] + 2, p_main.stderr
    assert "off-CPU samples skipped" in p_main.stderr
    assert "through perf events" in p_main.stderr.splitlines()[0], p_main.stderr
    # --idle: only ptrace stops a blocked thread to sample it; the line says so.
    assert "through ptrace (--idle samples blocked threads" in p_idle.stderr.splitlines()[0]
    # --idle: the blocked main thread is sampled, and mostly idle.
    # (A thread waiting for a CPU is sampled once it gets one: on a busy
    # machine, not at every tick.)
    s_idle = summary(p_idle.stderr)
    assert s_idle["samples"] >= 0.4 * s_idle["achieved"] * s_idle["seconds"], p_idle.stderr
    rows = [ln.rsplit(" ", 1) for ln in p_idle.stdout.splitlines()]
    idle = sum(int(n) for st, n in rows if st.endswith(";(idle)"))
    assert idle > 0.6 * s_idle["samples"], p_idle.stdout
    # --threads all: the worker, rooted at itself, in its hot function.
    rows = [ln.rsplit(" ", 1) for ln in p_all.stdout.splitlines()]
    worker = [(st.split(";"), int(n)) for st, n in rows if st.startswith("worker thread ")]
    assert worker, p_all.stdout
    assert all(not st.startswith(f"main thread {node.pid};") or "workerSpin" not in st
               for st, _ in rows)
    in_hot = sum(n for st, n in worker if st[-1].startswith(f"workerSpin (") and
                 st[-1].endswith(f"profile_threads.js:{line})"))
    total_worker = sum(n for _, n in worker)
    assert in_hot > 0.8 * total_worker, p_all.stdout
    s_all = summary(p_all.stderr)  # the worker is on a CPU at (nearly) every tick
    assert total_worker >= 0.4 * s_all["achieved"] * s_all["seconds"], p_all.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_stub_samples_keep_the_callers_line(version: str) -> None:
    """stub_call.js's TurboFan `step` calls through V8's call stubs, which run
    on its frame: a sample in a stub shows it above `step` at the line of
    the call, as a sample in step itself does (where the return address the
    stub was called with is found; before, step had no line there)."""
    text = (FIXTURES / "stub_call.js").read_text().splitlines()
    call = next(i + 1 for i, ln in enumerate(text) if "fs8[i & 7](s)" in ln)
    with LiveNode(version, "stub_call.js", ("--allow-natives-syntax",)) as node:
        p = profile(node.pid, "--duration", "2", "--rate", "499")
        runs_on_untraced(node)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    rows = [(st.split(";"), int(n)) for st, n in (ln.rsplit(" ", 1) for ln in p.stdout.splitlines())]
    stub = re.compile(r"^Call(Function)?_Receiver\w* \(<builtin>\)$")
    under = [(st[-2], n) for st, n in rows if len(st) > 1 and stub.match(st[-1])]
    total = sum(n for _, n in rows)
    # Call stubs take a good share of this loop's time (a fifth to a half).
    assert sum(n for _, n in under) > 0.05 * total, p.stdout
    # Each caller with its line: step at the call (main's call of step, now
    # and then, at its own).
    assert all(re.search(r"stub_call\.js:\d+\)$", f) for f, _ in under), under
    assert all(f.endswith(f"stub_call.js:{call})") for f, _ in under if f.startswith("step (")), under
    assert sum(n for f, n in under if f.startswith("step (")) > 0.9 * sum(n for _, n in under), under


def test_not_node_and_no_such_process() -> None:
    sleeper = subprocess.Popen(["/bin/sleep", "60"])
    try:
        p = profile(sleeper.pid, "--duration", "1")
        assert p.returncode == 1, p
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "is not a node process" in lines[0], p.stderr
        assert sleeper.poll() is None and tracer_of(sleeper.pid) == 0
    finally:
        sleeper.kill()
        sleeper.wait()
    p = profile(sleeper.pid, "--duration", "1")
    assert p.returncode == 1 and p.stderr.strip() == f"v8dbg: no process {sleeper.pid}", p.stderr
    p = profile(1, "--rate", "0")
    assert p.returncode == 2 and p.stderr.startswith("v8dbg: profile: --rate"), p.stderr


_HOLD = r"""
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
assert libc.ptrace(0x4206, int(sys.argv[1]), None, None) == 0  # PTRACE_SEIZE: traced, not stopped
print("held", flush=True)
time.sleep(120)
"""


def test_process_already_traced() -> None:
    """A process another tracer holds: perf events sample it all the same;
    forced to ptrace, one line names that tracer. It runs on."""
    with LiveNode(VERSIONS[-1], "profile_hot.js") as node:
        holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(node.pid)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            p = profile(node.pid, "--duration", "1")
            assert p.returncode == 0 and "through perf events" in p.stderr, p.stderr
            assert summary(p.stderr)["samples"] > 0, p.stderr
            p = profile(node.pid, "--duration", "1", "--sampler", "ptrace")
            assert p.returncode == 1, p
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1, p.stderr
            assert f"already traced by process {holder.pid}" in lines[0], p.stderr
        finally:
            holder.kill()
            holder.wait()
        runs_on_untraced(node)


def wait_sampling(prof: subprocess.Popen) -> str:
    """Until the profiler says it samples (it loads the binary's tables
    first); returns that line, which names the mechanism."""
    assert prof.stderr is not None
    line = prof.stderr.readline()
    assert line.startswith("v8dbg: profile: sampling process "), (line, prof.communicate())
    return line


@pytest.mark.parametrize("sampler", ("perf", "ptrace"))
def test_process_exits_mid_profile(sampler: str) -> None:
    """The samples taken before the exit are written; one line says what happened."""
    with LiveNode(VERSIONS[-1], "profile_hot.js") as node:
        out = node.dir / "p.folded"
        prof = subprocess.Popen([sys.executable, "-m", "v8dbg", "profile", "--pid", str(node.pid),
                                 "--duration", "30", "--sampler", sampler, "-o", str(out)],
                                cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert f"through {sampler}" in wait_sampling(prof)
        time.sleep(1.5)
        (node.dir / "stop").write_text("stop")
        node.proc.wait(timeout=30)
        t0 = time.monotonic()
        _, err = prof.communicate(timeout=30)
        waited = time.monotonic() - t0
        text = out.read_text() if out.exists() else ""
    assert prof.returncode == 1, err
    assert waited < 5, f"the profiler took {waited:.1f} s to notice the exit"
    assert "Traceback" not in err, err
    exited = [ln for ln in err.splitlines() if "exited" in ln]
    assert len(exited) == 1 and exited[0].startswith(f"v8dbg: process {node.pid} exited"), err
    s = summary(err)
    assert s["samples"] > 0
    assert sum(int(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()) == s["samples"], text[:500]


@pytest.mark.parametrize("sampler", ("perf", "ptrace"))
def test_ctrl_c_writes_the_profile(sampler: str) -> None:
    """Without --duration, Ctrl-C ends sampling: the profile is written, the target let go."""
    with LiveNode(VERSIONS[-1], "profile_hot.js") as node:
        out = node.dir / "p.svg"
        prof = subprocess.Popen([sys.executable, "-m", "v8dbg", "profile", "--pid", str(node.pid),
                                 "--sampler", sampler, "-o", str(out)], cwd=ROOT,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert f"through {sampler}" in wait_sampling(prof)
        time.sleep(1.5)
        prof.send_signal(signal.SIGINT)
        _, err = prof.communicate(timeout=30)
        assert prof.returncode == 0, err
        assert summary(err)["samples"] > 0, err
        ET.fromstring(out.read_text())
        runs_on_untraced(node)


# What a container's seccomp profile does: perf_event_open fails with EACCES
# (a filter on that one system call, then v8dbg runs as usual).
_NO_PERF = r"""
import ctypes, runpy, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
code = b"".join(struct.pack("<HBBI", *i) for i in (
    (0x20, 0, 0, 0),                  # load the system call number
    (0x15, 0, 1, 298),                # perf_event_open?
    (0x06, 0, 0, 0x00050000 | 13),    # then fail with EACCES
    (0x06, 0, 0, 0x7FFF0000)))        # else allow
buf = ctypes.create_string_buffer(code)
prog = struct.pack("<HxxxxxxQ", 4, ctypes.addressof(buf))
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.c_char_p(prog), 0, 0) == 0  # PR_SET_SECCOMP, a filter
sys.argv = ["v8dbg", *sys.argv[1:]]
runpy.run_module("v8dbg", run_name="__main__")
"""


def test_fallback_where_perf_events_are_refused() -> None:
    """perf_event_open refused (as by a container's seccomp profile): ptrace
    samples instead, and the first line says so and why; forced to perf,
    one line says it cannot."""
    with LiveNode(VERSIONS[-1], "profile_hot.js") as node:
        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-c", _NO_PERF, "profile", "--pid",
                                   str(node.pid), "--duration", "1", *args], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
        auto = run()
        forced = run("--sampler", "perf")
        runs_on_untraced(node)
    assert auto.returncode == 0, auto.stderr
    first = auto.stderr.splitlines()[0]
    assert first.startswith(f"v8dbg: profile: sampling process {node.pid} through ptrace "
                            "(perf events not allowed: perf_event_open was refused: "
                            "Permission denied (in a container"), auto.stderr
    s = summary(auto.stderr)
    assert s["samples"] > 0 and s["median_us"] > 0, auto.stderr
    assert sum(int(ln.rsplit(" ", 1)[1]) for ln in auto.stdout.splitlines()) == s["samples"]
    assert forced.returncode == 1, forced
    assert forced.stderr.strip().splitlines() == [
        f"v8dbg: cannot sample process {node.pid} through perf events: perf_event_open "
        f"was refused: {forced.stderr.split('was refused: ', 1)[1].strip()}"], forced.stderr
    assert "seccomp" in forced.stderr, forced.stderr
