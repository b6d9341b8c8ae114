"""Async stacks against what V8 itself said in the same run, on every node
line and front end.

(a) jsstack: a crash inside a microtask, under one chain of awaiting async
functions through every combinator (Promise.any in an async generator,
Promise.allSettled in a method, Promise.all): the fixture writes V8's own
`new Error().stack` at the crash point, then aborts; jsstack's async frames
must equal V8's `at async` lines frame by frame (function, script, line,
column, combinator index), in text and JSON.

(b) jsasync: a process that waits, with chains suspended on a promise nobody
resolves in known numbers; each function recorded the line of its await
(Error().stack on that line), and a probe chain of the same functions that did
resume recorded V8's own `at async` frames for the outer awaits. jsasync must
place each function at its await and count the chains exactly.

(c) The release sweep (first, middle, last release of every line 18-26):
the crash's async frames through the CLI, as V8 printed them; node's patches
move the current-microtask root within a line.

Cores: the crash and the waiting fixture per pinned line (10), each front
end run once per core with every command; one crash core per sweep release
(22 more).
"""

from __future__ import annotations

import re

import pytest

from support import (FRONTENDS, SWEEP, VERSIONS, core_program, fetch_node, json_line, make_core,
                     read_json, run, run_cli, validate_output)

STACK = ["jsstack", "jsstack --json"]
ASYNC = ["jsasync", "jsasync --json"]


@pytest.fixture(scope="module")
def cores():
    out = {}
    for v in VERSIONS:
        out[(v, "crash")] = make_core(v, "async_crash.js")
        out[(v, "wait")] = make_core(v, "async_wait.js")
    return out


_results: dict = {}


def results(frontend: str, version: str, mode: str, cores) -> dict[str, str]:
    key = (frontend, version, mode)
    if key not in _results:
        cmds = ASYNC if mode == "wait" else STACK
        _results[key] = dict(zip(cmds, run(frontend, version, cores[(version, mode)] / "core",
                                           cmds)))
    return _results[key]


def v8_async_frames(stack: str) -> list[dict]:
    """V8's `at async` lines as frames: function, script, line, column, or a
    combinator's function and index."""
    out = []
    for line in stack.splitlines():
        m = re.match(r"\s+at async (\S+) \(index (\d+)\)$", line)
        if m:
            out.append({"function": m.group(1), "index": int(m.group(2))})
            continue
        m = re.match(r"\s+at async (\S+) \((.*):(\d+):(\d+)\)$", line)
        if m:
            out.append({"function": m.group(1), "script": m.group(2),
                        "line": int(m.group(3)), "column": int(m.group(4))})
    return out


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_async_frames_as_v8(version, frontend, cores):
    d = cores[(version, "crash")]
    want = v8_async_frames((d / "expected-stack.txt").read_text())
    assert [w["function"] for w in want] == [
        "Promise.any", "rows", "gen", "Promise.allSettled", "Service.settle", "Promise.all",
        "middle", "outer", "main"], want
    out = results(frontend, version, "crash", cores)
    doc = json_line(out["jsstack --json"], "jsstack")
    validate_output(doc, "jsstack")
    got = [{k: f.get(k) for k in w} for f, w in
           zip([f for f in doc["frames"] if f.get("async")], want)]
    assert [f for f in doc["frames"] if f.get("async")] and got == want and \
        len([f for f in doc["frames"] if f.get("async")]) == len(want), (doc["frames"][-8:], want)
    # They come after every frame of the machine stack.
    kinds = [bool(f.get("async")) for f in doc["frames"]]
    assert kinds == sorted(kinds), kinds
    # The text lists them in the same order, where V8 places them.
    text = [ln.split("<async> ", 1)[1] for ln in out["jsstack"].splitlines() if "<async> " in ln]
    said = [f"{w['function']} (index {w['index']})" if "index" in w else
            f"{w['function']} at {w['script']}:{w['line']}:{w['column']}" for w in want]
    assert text == said, (text, said)


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("version", VERSIONS)
def test_jsasync_waiting_chains(version, frontend, cores):
    d = cores[(version, "wait")]
    want = read_json(d, "expected-async.json")
    counts = want["counts"]
    # Where V8 placed each function's await line (Error().stack on that line).
    lines = {name: int(re.search(r":(\d+):\d+\)$", at).group(1))
             for name, at in want["lines"].items()}
    # V8's own async frames for the outer functions' awaits (the probe resumed).
    probe = {f["function"]: (f["line"], f["column"]) for f in v8_async_frames(want["probe"])}
    assert set(probe) == {"fetchUser", "handler"}, want["probe"]
    out = results(frontend, version, "wait", cores)
    doc = json_line(out["jsasync --json"], "jsasync")
    validate_output(doc, "jsasync")
    script = doc["functions"][0]["script"] if doc["functions"] else None
    assert script and script.endswith("async_wait.js"), doc["functions"][:2]
    # Each suspended function at its await: the line of its Error().stack, and
    # for the outer ones exactly the line:column V8's async frames give.
    per_fn: dict[str, set] = {}
    for f in doc["functions"]:
        per_fn.setdefault(f["function"], set()).add((f["line"], f["column"]))
    assert set(per_fn) == {"query", "fetchUser", "handler", "idle", "rows", "consume"}, per_fn
    for name, places in per_fn.items():
        assert len(places) == 1 and next(iter(places))[0] == lines[name], (name, places, lines)
        if name in probe:
            assert places == {probe[name]}, (name, places, probe[name])
    # How many of each are suspended.
    n = {name: sum(1 for f in doc["functions"] if f["function"] == name) for name in per_fn}
    assert n == {"handler": counts["handler"],
                 "fetchUser": counts["handler"] + counts["fetchUser"],
                 "query": counts["handler"] + counts["fetchUser"],
                 "idle": counts["idle"], "consume": counts["consume"],
                 "rows": counts["consume"]}, n
    assert doc["total"] == sum(n.values())
    # The chains, innermost first, counted.
    groups = {tuple(f["function"] for f in g["chain"]): g["count"] for g in doc["groups"]}
    assert groups == {("query", "fetchUser", "handler"): counts["handler"],
                      ("query", "fetchUser"): counts["fetchUser"],
                      ("idle",): counts["idle"], ("rows", "consume"): counts["consume"]}, groups
    assert [g["count"] for g in doc["groups"]] == sorted(groups.values(), reverse=True)
    assert len(doc["chains"]) == sum(groups.values())
    # Who awaits whom: each handler's fetchUser is awaited by that handler.
    by_addr = {f["address"]: f for f in doc["functions"]}
    for f in doc["functions"]:
        for a in f["awaited_by"]:
            assert a in by_addr
        if f["function"] == "handler":
            assert f["awaited_by"] == []
        if f["function"] == "query":
            assert [by_addr[a]["function"] for a in f["awaited_by"]] == ["fetchUser"]
        if f["function"] in ("query", "idle", "rows"):
            assert f["awaits"]["type"] == "promise" and f["awaits"]["state"] == "pending"
    # The text: one line per group, outermost <- ... <- innermost at its await.
    text = out["jsasync"]
    q = next(f for f in doc["functions"] if f["function"] == "query")
    head = f"{counts['handler']} x handler <- fetchUser <- query at {q['script']}:{q['line']}:{q['column']}"
    counted = [ln for ln in text.splitlines() if re.match(r"\d+ x ", ln)]
    assert counted and counted[0] == head, text[:2000]
    assert len(counted) == len(groups), counted
    assert "reachable or not" in text


@pytest.mark.parametrize("version", SWEEP)
def test_sweep_async_frames(version):
    fetch_node(version)
    d = make_core(version, "async_crash.js")
    want = v8_async_frames((d / "expected-stack.txt").read_text())
    doc = json_line(run_cli(version, d / "core", ["jsstack --json"])[0], "jsstack")
    got = [f for f in doc["frames"] if f.get("async")]
    assert [{k: f.get(k) for k in w} for f, w in zip(got, want)] == want and \
        len(got) == len(want) >= 3, (got, want)


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[-1]])
def test_async_frames_unmeasured_release(version, cores, monkeypatch):
    """A release whose current-microtask offset the table lacks: the one place
    in the Isolate that fits is found, and the frames are V8's still."""
    from v8dbg.stack import asyncframes, segments
    from v8dbg.v8 import layouts
    d = cores[(version, "crash")]
    want = v8_async_frames((d / "expected-stack.txt").read_text())
    monkeypatch.setattr(layouts, "current_microtask_slots", lambda md: [])
    prog, backend = core_program(d / "core", version)
    top = segments.top_for(prog, backend.threads()[0].regs)
    st = asyncframes.async_frames(prog, top.isolate)
    assert st.note is None
    got = [f.to_json() for f in st.frames]
    assert [{k: f.get(k) for k in w} for f, w in zip(got, want)] == want and len(got) == len(want)
