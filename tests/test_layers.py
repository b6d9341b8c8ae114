"""The package's layers: imports point down only, and no module imports in a circle.

inferior -> v8 -> stack / values / heap -> commands (and `program`, which hands
out the decoders, sits above the decoder layers; `triage`, which reads many
cores through it, beside it). Imports made only for type
checking (under `if TYPE_CHECKING:`) do not count: they run nowhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "v8dbg"

# Each layer and the layers it may import from (errors, interrupt and
# numpylib are shared by all).
RANK = {"errors": 0, "interrupt": 0, "numpylib": 0, "inferior": 1, "v8": 2, "stack": 3, "values": 3, "heap": 4,
        "program": 5, "triage": 5, "tracing": 3, "commands": 6, "__main__": 7, "gdb": 7, "lldb": 7, "gdb_bt": 7, "lldb_bt": 7, "__init__": 0}
# Same-rank layers that may use each other, one way only.
SIDEWAYS = {("heap", "values"), ("triage", "program"), ("gdb", "gdb_bt"), ("lldb", "lldb_bt")}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Modules of the package this file imports at run time."""
    tree = ast.parse(path.read_text())
    me = _module_name(path).split(".")
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                skip.add(id(sub))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = me if is_pkg else me[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("v8dbg"):
                continue
            for alias in node.names:
                cand = f"{mod}.{alias.name}"
                out.add(cand if (PKG.parent / (cand.replace(".", "/") + ".py")).exists()
                        or (PKG.parent / cand.replace(".", "/")).is_dir() else mod)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("v8dbg"))
    out.discard(".".join(me))
    return out


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in PKG.rglob("*.py")}


def _layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_imports_point_down() -> None:
    bad = []
    for mod, deps in _graph().items():
        a = _layer(mod)
        for dep in deps:
            b = _layer(dep)
            if a == b or b == "__init__":
                continue
            if RANK[b] < RANK[a] or (a, b) in SIDEWAYS:
                continue
            bad.append(f"{mod} -> {dep}")
    assert not bad, "imports that point up or sideways:\n" + "\n".join(sorted(bad))


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if d not in graph:
                continue
            if state.get(d) == 1:
                cycles.append(path[path.index(d):] + [d] if d in path else [m, d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_version_knowledge_in_one_place() -> None:
    """Only the version table compares V8 versions."""
    offenders = []
    for p in PKG.rglob("*.py"):
        if p.name in ("layouts.py", "metadata.py"):
            continue
        text = p.read_text()
        for needle in ("md.version >", "md.version <", "md.version[", "v8_version >", "v8_version <"):
            if needle in text:
                offenders.append(f"{p.relative_to(ROOT)}: {needle}")
    assert not offenders, offenders


def test_every_import_resolves() -> None:
    """Imports inside functions run only on some paths: each must name a real
    module and real names, wherever it sits."""
    import importlib
    import sys
    sys.path.insert(0, str(ROOT))
    bad = []
    for path in PKG.rglob("*.py"):
        if path.name in ("gdb.py", "lldb.py") and path.parent == PKG:
            continue  # they import the debugger's own module
        me = _module_name(path).split(".")
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = me if is_pkg else me[:-1]
            base = base[:len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
            try:
                m = importlib.import_module(mod)
            except ImportError as e:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {mod}: {e}")
                continue
            for alias in node.names:
                if not hasattr(m, alias.name):
                    try:
                        importlib.import_module(f"{mod}.{alias.name}")
                    except ImportError:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                                   f"{mod} has no {alias.name}")
    assert not bad, "\n".join(bad)


def test_no_folder_named_like_build_output():
    """A package folder named `target`, `build`, `dist` or `out` is build output to
    Rust's and Java's ignore files, many global gitignores and code-search tools:
    a contributor with such an ignore would silently lose new files there."""
    named = sorted(str(p.relative_to(ROOT)) for p in PKG.rglob("*")
                   if p.is_dir() and p.name in {"target", "build", "dist", "out"})
    assert named == []
