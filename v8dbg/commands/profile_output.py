"""Profile writers: folded stacks, speedscope JSON, and an SVG flame graph.

All three merge frames by what a reader compares -- function, file and
executing line (not column) -- and root each thread's stacks at the thread.

- Folded stacks (Brendan Gregg's format, as flamegraph.pl, inferno and
  speedscope read it): one line per distinct stack, frames root first
  separated by ';', then a space and the number of samples.
- speedscope's file format: `shared.frames` [{name, file, line, col}] and
  one `sampled` profile per thread, each sample a list of frame indices
  root first, weighted by the sampling period.
- A self-contained SVG flame graph: hovering a frame shows it and its share
  of the samples, clicking zooms to it; plain SVG and a few lines of inline
  script, nothing fetched from the network.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from html import escape

from .. import __version__
from ..stack.sampler import Profile, ProfileFrame

FORMATS = ("folded", "speedscope", "svg")


def format_for(path: str | None) -> str:
    """The format a file name asks for: .svg, .speedscope.json/.json, else folded."""
    if not path:
        return "folded"
    low = path.lower()
    if low.endswith(".svg"):
        return "svg"
    if low.endswith(".json"):
        return "speedscope"
    return "folded"


def label(f: ProfileFrame) -> str:
    """How a frame reads in folded stacks and the flame graph (as jsstack writes it)."""
    if f.kind == "native":
        text = f"{f.name} ({f.file})" if f.file else f.name
    elif f.kind == "js":
        if f.file is None:
            text = f"{f.name} (<builtin>)" if f.name != "<unknown>" else f.name
        elif f.line is not None:
            text = f"{f.name} ({f.file}:{f.line})"
        else:
            text = f"{f.name} ({f.file})"
    else:
        text = f.name
    # ';' separates frames and a newline ends a stack: neither may appear inside one.
    return text.replace(";", ",").replace("\n", " ").replace("\r", " ")


def _thread_stacks(prof: Profile) -> list[tuple[str, Counter]]:
    """Per thread: its root label and a count of each stack of labels (root first)."""
    labels = [label(f) for f in prof.frames]
    out = []
    for t in prof.threads:
        c: Counter = Counter()
        for st in t.stacks:
            c[tuple(labels[i] for i in st)] += 1
        out.append((t.name, c))
    return out


def folded(prof: Profile) -> str:
    lines = []
    for root, stacks in _thread_stacks(prof):
        for st, n in sorted(stacks.items()):
            lines.append(";".join((root,) + st) + f" {n}")
    return "\n".join(lines) + ("\n" if lines else "")


def speedscope(prof: Profile) -> str:
    frames: list[dict] = []
    index: dict[tuple, int] = {}
    remap: dict[int, int] = {}
    for i, f in enumerate(prof.frames):
        key = (f.kind, f.name, f.file, f.line)
        j = index.get(key)
        if j is None:
            j = index[key] = len(frames)
            d: dict = {"name": label(f) if f.kind == "native" else f.name}
            if f.file is not None and f.kind == "js":
                d["file"] = f.file
            if f.line is not None:
                d["line"] = f.line
            if f.column is not None:
                d["col"] = f.column
            frames.append(d)
        remap[i] = j
    period_ms = 1000.0 * prof.elapsed / prof.ticks if prof.ticks else 1000.0 / prof.rate
    profiles = []
    for t in prof.threads:
        profiles.append({
            "type": "sampled",
            "name": t.name,
            "unit": "milliseconds",
            "startValue": 0,
            "endValue": round(prof.elapsed * 1000.0, 3),
            "samples": [[remap[i] for i in st] for st in t.stacks],
            "weights": [round(period_ms, 6)] * len(t.stacks),
        })
    doc = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": f"node process {prof.pid}",
        "activeProfileIndex": 0,
        "exporter": f"v8dbg {__version__}",
    }
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"


# -- SVG flame graph ----------------------------------------------------------

WIDTH = 1200
ROW = 17
PAD_TOP = 50
PAD_BOTTOM = 40
MIN_WIDTH = 0.1  # pixels: narrower frames are left out
CHAR = 7.0  # approximate width of one character at the font size used


class _Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.children: dict[str, _Node] = {}


def _tree(prof: Profile) -> _Node:
    root = _Node("all")
    for thread, stacks in _thread_stacks(prof):
        for st, n in stacks.items():
            node = root
            node.count += n
            for name in (thread,) + st:
                child = node.children.get(name)
                if child is None:
                    child = node.children[name] = _Node(name)
                child.count += n
                node = child
    return root


def _color(name: str, kind: str) -> str:
    """Warm hues for JavaScript, cool for native code, grey for the rest."""
    h = 0
    for ch in name.split(" (")[0]:
        h = (h * 31 + ord(ch)) & 0xFFFFFF
    v = (h % 1000) / 1000.0
    if kind == "js":
        return f"rgb({215 + int(40 * v)},{90 + int(130 * v)},{40 + int(30 * v)})"
    if kind == "native":
        return f"rgb({70 + int(50 * v)},{150 + int(50 * v)},{205 + int(40 * v)})"
    if kind == "idle":
        return "rgb(180,210,180)"
    return f"rgb({190 + int(20 * v)},{190 + int(20 * v)},{190 + int(20 * v)})"


def svg(prof: Profile, title: str | None = None) -> str:
    root = _tree(prof)
    kinds = {label(f): f.kind for f in prof.frames}
    total = max(root.count, 1)
    rects: list[tuple[int, float, float, _Node]] = []  # depth, x, width (fractions), node

    def place(node: _Node, depth: int, x: float) -> int:
        rects.append((depth, x, node.count / total, node))
        deepest = depth
        for child in sorted(node.children.values(), key=lambda c: c.name):
            if child.count / total * (WIDTH - 20) >= MIN_WIDTH:
                deepest = max(deepest, place(child, depth + 1, x))
            x += child.count / total
        return deepest

    depth = place(root, 0, 0.0) + 1
    height = PAD_TOP + depth * ROW + PAD_BOTTOM
    title = title or f"v8dbg profile of process {prof.pid}"
    sub = (f"{prof.samples} samples, {prof.elapsed:.2f} s at {prof.rate:g} Hz; "
           "hover for details, click to zoom")
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" onload="init(evt)">',
        "<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
        " .f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}"
        " #title{font-size:17px;text-anchor:middle} #sub,#details{font-size:12px}"
        " #reset{cursor:pointer;fill:#06c}</style>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fdfdf5"/>',
        f'<text id="title" x="{WIDTH / 2}" y="22">{escape(title)}</text>',
        f'<text id="sub" x="10" y="40">{escape(sub)}</text>',
        f'<text id="reset" x="{WIDTH - 10}" y="40" text-anchor="end" '
        'visibility="hidden">reset zoom</text>',
        f'<text id="details" x="10" y="{height - 14}"> </text>',
        '<g id="frames">',
    ]
    inner = WIDTH - 20
    for d, x, w, node in rects:
        y = height - PAD_BOTTOM - (d + 1) * ROW
        px, pw = 10 + x * inner, w * inner
        pct = 100.0 * node.count / total
        name = node.name
        info = f"{name} ({node.count} sample{'s' if node.count != 1 else ''}, {pct:.2f}%)"
        fits = int((pw - 6) / CHAR)
        shown = name if len(name) <= fits else (name[:fits - 2] + ".." if fits > 3 else "")
        out.append(
            f'<g class="f" data-x="{x:.6f}" data-w="{w:.6f}" data-d="{d}">'
            f"<title>{escape(info)}</title>"
            f'<rect x="{px:.2f}" y="{y}" width="{pw:.2f}" height="{ROW - 1}" '
            f'fill="{_color(name, kinds.get(name, "thread") if d > 1 else "thread")}" '
            'rx="2" ry="2"/>'
            f'<text x="{px + 3:.2f}" y="{y + ROW - 5}">{escape(shown)}</text></g>')
    out.append("</g>")
    out.append(_SCRIPT.replace("@INNER@", str(inner)).replace("@CHAR@", str(CHAR)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


_SCRIPT = """<script type="text/ecmascript"><![CDATA[
var frames, details, reset, inner = @INNER@, charw = @CHAR@;
function init(evt) {
  frames = document.getElementById("frames").getElementsByTagName("g");
  details = document.getElementById("details");
  reset = document.getElementById("reset");
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i];
    g.addEventListener("mouseover", function (e) {
      details.textContent = this.getElementsByTagName("title")[0].textContent;
    });
    g.addEventListener("mouseout", function () { details.textContent = " "; });
    g.addEventListener("click", function () { zoom(this); });
  }
  reset.addEventListener("click", function () { zoom(frames[0]); });
}
function fit(g, px, pw) {
  var r = g.getElementsByTagName("rect")[0], t = g.getElementsByTagName("text")[0];
  var name = g.getElementsByTagName("title")[0].textContent.replace(/ \\([0-9]+ samples?, [0-9.]+%\\)$/, "");
  r.setAttribute("x", px); r.setAttribute("width", pw);
  t.setAttribute("x", px + 3);
  var n = Math.floor((pw - 6) / charw);
  t.textContent = name.length <= n ? name : (n > 3 ? name.substring(0, n - 2) + ".." : "");
}
function zoom(target) {
  var x0 = parseFloat(target.getAttribute("data-x")), w0 = parseFloat(target.getAttribute("data-w"));
  var d0 = parseInt(target.getAttribute("data-d"));
  var eps = 1e-9;
  for (var i = 0; i < frames.length; i++) {
    var g = frames[i];
    var x = parseFloat(g.getAttribute("data-x")), w = parseFloat(g.getAttribute("data-w"));
    var d = parseInt(g.getAttribute("data-d"));
    if (d < d0 && x <= x0 + eps && x + w >= x0 + w0 - eps) {
      g.style.display = ""; g.style.opacity = "0.6"; fit(g, 10, inner);
    } else if (d >= d0 && x >= x0 - eps && x + w <= x0 + w0 + eps) {
      g.style.display = ""; g.style.opacity = "";
      fit(g, 10 + (x - x0) / w0 * inner, w / w0 * inner);
    } else {
      g.style.display = "none";
    }
  }
  reset.setAttribute("visibility", d0 > 0 ? "visible" : "hidden");
}
]]></script>"""


def render(prof: Profile, fmt: str, title: str | None = None) -> str:
    if fmt == "speedscope":
        return speedscope(prof)
    if fmt == "svg":
        return svg(prof, title)
    return folded(prof)


def write(text: str, path: str) -> None:
    """Write atomically enough that a reader never sees half a profile
    (a regular file is replaced whole; a pipe or device is written to)."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
