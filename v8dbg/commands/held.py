"""`COMMAND --pid PID`: any read command on a running process, which is
held still only while its memory is read, then runs on.

The node binary, its symbols and V8's metadata are loaded first, with the
process running; then every thread is stopped, the command reads (a heap
walk reads a copy taken at its start, and the process goes on at once),
and every thread is let go. The pause is said on stderr, and in --json as
`paused_ms`. SIGTERM and Ctrl-C let the process go before v8dbg exits.
"""

from __future__ import annotations

import json
import signal
import sys

from ..errors import V8DbgError
from ..inferior.hold import HeldBackend, check_pid
from .base import Session

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class _Terminated(KeyboardInterrupt):
    """SIGTERM while the process is held: end as Ctrl-C does, letting it go first."""


_terminated: list[bool] = [False]


def _on_term(signum, frame) -> None:
    _terminated[0] = True
    raise _Terminated()


def terminated(sess: Session) -> bool:
    """Whether the command was ended by SIGTERM (exit status 143)."""
    return _terminated[0]


def run(name: str, argv: list[str], pid: int, binary: str | None) -> tuple[Session, str, bool]:
    """Run one command on process `pid`; (session, text, succeeded), as Session.run."""
    check_pid(pid)
    backend = HeldBackend(pid)
    sess = Session(lambda: backend, binary,
                   no_binary=f"process {pid} has no executable file: pass --binary NODE")
    try:
        prog = sess.program()  # everything that needs no target memory, the process running
    except V8DbgError as e:
        raise V8DbgError(f"process {pid} ({backend.executable()}) is not a node process v8dbg "
                         f"can read: {e}") from None
    warm(prog, name)
    old = signal.signal(signal.SIGTERM, _on_term)
    text, ok = "", False
    try:
        backend.stop()
        text, ok = sess.run(name, argv)
    except _Terminated:
        pass
    finally:
        # Nothing may interrupt the letting go.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            backend.resume()
        finally:
            signal.signal(signal.SIGTERM, old)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    paused = backend.hold.paused_ns / 1e6
    for limit in backend.limits:
        print(f"v8dbg: warning: {limit}", file=sys.stderr)
    print(pause_line(backend, paused), file=sys.stderr)
    if _terminated[0]:
        print(f"v8dbg: terminated; process {pid} let go", file=sys.stderr)
    return sess, with_pause(text, paused), ok


# Commands that read a few objects and never walk the heap: NumPy (a tenth of
# a second to import) is not loaded for them.
_FEW_READS = {"jsstack", "jsframe", "jsprint", "jsclosure", "jssource", "jsconstructor",
              "jscode"}


def warm(prog, name: str) -> None:
    """Load, before the process is stopped, what a command would otherwise
    load while it is held: v8dbg's decoders, NumPy and the copy's buffers
    for a heap walk, the symbols of every file mapped into the process."""
    import importlib
    import pkgutil

    from .. import heap, stack, v8, values
    for pkg in (v8, stack, values, heap):
        for mod in pkgutil.iter_modules(pkg.__path__):
            if mod.name != "sampler":
                importlib.import_module(f"{pkg.__name__}.{mod.name}")
    if name not in _FEW_READS:
        from ..v8.pages import _numpy
        np = _numpy()
        if np is not None:
            import numpy.ma  # noqa: F401 (NumPy loads it on a first np.unique)
        prog.backend.prepare_copy()
    prog.bytecode_names  # noqa: B018 (tables read from the binary, kept)
    from ..inferior.symbols import demangle
    demangle("_Z1fv")  # loads the C++ runtime's demangler
    seen = set()
    for lm in prog.modules():
        if lm.elf is not None and id(lm.elf) not in seen:
            seen.add(id(lm.elf))
            try:
                lm.elf.symbolize(0)
                lm.cfi  # noqa: B018
            except Exception:  # a file we cannot read whole: symbolized later, if at all
                pass


def pause_line(backend: HeldBackend, paused_ms: float) -> str:
    line = f"v8dbg: process {backend.pid()} paused {paused_ms:.1f} ms"
    if backend.copied_bytes:
        line += (f" (to copy {backend.copied_bytes / (1 << 20):.0f} MB of its memory, "
                 "which the heap walk read)")
    stuck = backend.hold.not_stopped
    if stuck:
        line += (f"; {len(stuck)} thread(s) in the kernel did not stop "
                 f"({', '.join(map(str, stuck[:8]))}), and ran no code meanwhile")
    return line


def with_pause(text: str, paused_ms: float) -> str:
    """A --json document with `paused_ms` added (an error document stays as it is)."""
    if not text.startswith("{"):
        return text
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if not isinstance(doc, dict) or "error" in doc and len(doc) == 1:
        return text
    doc["paused_ms"] = round(paused_ms, 3)
    return json.dumps(doc, separators=(", ", ": "), ensure_ascii=False)
