"""v8dbg in gdb: `python import v8dbg.gdb` (or `v8dbg gdb`), then `v8dbg` lists the commands.

A thin adapter: gdb's memory, threads and mappings in, the core's text out.
It only reads: it never writes to the inferior or calls functions in it.
"""

from __future__ import annotations

import os

import gdb  # type: ignore[import-not-found]

from .commands import COMMANDS, Command, Session, load_all
from .commands.base import did_you_mean
from .commands.btframes import BtFrames
from .errors import TargetMemoryError, V8DbgError
from .gdb_bt import Hooks
from .inferior.backend import Registers, ThreadInfo, parse_gdb_mappings, proc_maps
from .inferior.corefile import binary_named_by, core_process_name, readable_regions
from .inferior.disasm import Disassembly, Instruction

_generation = [0]


def _bump(_event=None) -> None:
    _generation[0] += 1


gdb.events.stop.connect(_bump)
gdb.events.cont.connect(_bump)
gdb.events.new_objfile.connect(_bump)


class GdbBackend:
    """Memory, threads and mappings of gdb's selected inferior."""

    kind = "gdb"

    def __init__(self) -> None:
        self.inferior = gdb.selected_inferior()
        self._maps = None

    @property
    def live(self) -> bool:
        try:
            return self.inferior.pid > 0 and os.path.exists(f"/proc/{self.inferior.pid}") \
                and not _is_core()
        except gdb.error:
            return False

    def identity(self):
        """Which target this is: the session builds a new Program when it changes.
        That the same target ran since is not identity but `generation()`, on
        which the Program forgets what it read (`Program.refresh`)."""
        return (self.inferior.num, self.inferior.pid, _core_name())

    def read(self, address: int, size: int) -> bytes:
        try:
            return self.inferior.read_memory(address, size).tobytes()
        except (gdb.MemoryError, gdb.error, OverflowError, ValueError):
            raise TargetMemoryError(address, size) from None

    def threads(self) -> list[ThreadInfo]:
        out = []
        core = _core_name()
        for t in self.inferior.threads():
            tid = t.ptid[1] or t.ptid[0]
            name = t.name
            if name is None and core and tid == self.inferior.pid:
                name = core_process_name(core)  # as the standalone reader names it
            out.append(ThreadInfo(tid, name, loader=_registers_of(t)))
        return out

    def running(self) -> bool:
        """True when some thread runs on (non-stop mode, or `continue &`)."""
        try:
            return any(t.is_running() for t in self.inferior.threads())
        except gdb.error:
            return False

    def selected_thread(self) -> int | None:
        t = gdb.selected_thread()
        return (t.ptid[1] or t.ptid[0]) if t is not None else None

    def mappings(self):
        if self._maps is None:
            if self.live:
                self._maps = proc_maps(self.inferior.pid)
            else:
                try:
                    text = gdb.execute("info proc mappings", to_string=True)
                except gdb.error:
                    text = ""
                self._maps = parse_gdb_mappings(text)
        return self._maps

    def core_file(self) -> str | None:
        """The core file gdb has open (the census reads whole pages from it)."""
        return _core_path()

    def regions(self) -> list[tuple[int, int]]:
        """Readable memory: the core's segments, or /proc/PID/maps when live."""
        return readable_regions(_core_path(), self.inferior.pid)

    def executable(self) -> str | None:
        name = gdb.current_progspace().filename
        if name:
            return name
        return self.binary_from_core()

    def binary_from_core(self) -> str | None:
        """`gdb -c core` with no program: node as the core names it, found as the
        standalone reader finds it (by build-id, along gdb's sysroot)."""
        if gdb.current_progspace().filename:
            return None
        core = _core_path()
        return binary_named_by(core, self.search_path()) if core else None

    def search_path(self):
        """gdb's own `sysroot` and `solib-search-path`."""
        from .inferior.solibs import SearchPath
        try:
            return SearchPath.parse(gdb.parameter("sysroot"), gdb.parameter("solib-search-path"))
        except (gdb.error, RuntimeError):
            return SearchPath()

    def loaded_file(self, path: str, start: int, build_id: str | None) -> str | None:
        """The file gdb loaded for a library of the target (after its sysroot
        and solib-search-path), matched by build-id or by address."""
        name = None
        try:
            name = gdb.solib_name(start)
        except (gdb.error, RuntimeError):
            pass
        for obj in gdb.objfiles():
            try:
                fname = obj.filename
                if not fname or not os.path.isfile(fname) or obj.owner is not None:
                    continue  # a separate debug file holds no unwind tables
                if build_id and obj.build_id == build_id:
                    return fname
                if name and obj.username == name:
                    return fname
            except (gdb.error, RuntimeError):
                continue
        return None

    def pid(self) -> int | None:
        return self.inferior.pid or None

    def generation(self) -> int:
        return _generation[0]

    def disassemble(self, address: int, data: bytes) -> Disassembly:
        """gdb's own disassembler (it reads the same bytes from the inferior)."""
        try:
            rows = self.inferior.architecture().disassemble(address, address + len(data) - 1)
        except (gdb.error, gdb.MemoryError) as e:
            raise V8DbgError(f"gdb could not disassemble at {address:#x}: {e}") from None
        return Disassembly("gdb", [Instruction(r["addr"], r["length"], r["asm"])
                                   for r in rows if r["addr"] < address + len(data)])


def _registers_of(thread):
    """Read a thread's frame-0 registers, keeping the user's selection."""

    def load() -> Registers | None:
        try:
            selected = gdb.selected_thread()
            frame = gdb.selected_frame() if selected is not None else None
        except gdb.error:
            selected, frame = None, None
        try:
            thread.switch()
            f = gdb.newest_frame()
            return Registers(int(f.read_register("rip")), int(f.read_register("rsp")),
                             int(f.read_register("rbp")))
        except gdb.error:
            return None
        finally:
            if selected is not None:
                try:
                    selected.switch()
                    if frame is not None:
                        frame.select()
                except gdb.error:
                    pass

    return load


def _is_core() -> bool:
    return _core_name() is not None


def _core_name() -> str | None:
    """The core file gdb has open, as `info target` names it (gdb 13 prints it
    on the line after the heading)."""
    try:
        text = gdb.execute("info target", to_string=True)
    except gdb.error:
        return None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "core dump file" in line:
            for cand in lines[i:i + 2]:
                if "`" in cand:
                    return cand.split("`", 1)[1].split("'", 1)[0]
    return None


def _core_path() -> str | None:
    name = _core_name()
    return name if name and os.path.isfile(name) else None


def _evaluate(expr: str) -> int:
    try:
        v = gdb.parse_and_eval(expr)
        return int(v.cast(gdb.lookup_type("unsigned long"))) if v.type.code != gdb.TYPE_CODE_INT \
            else int(v) & 0xFFFFFFFFFFFFFFFF
    except gdb.error as e:
        raise V8DbgError(f"cannot evaluate '{expr}': {e}") from None


_backend: list = []


def _factory():
    inf = gdb.selected_inferior()
    key = (inf.num, inf.pid, _generation[0])
    if not _backend or _backend[0][0] != key:
        _backend[:] = [(key, GdbBackend())]
    return _backend[0][1]


SESSION = Session(_factory, evaluate=_evaluate,
                  no_binary="no node binary: load it first (`file /path/to/node`, or start "
                            "gdb as `gdb /path/to/node CORE` or `gdb -p PID`)")

_ADDRESS_COMMANDS = {"jsprint", "jsclosure", "jssource", "jsconstructor", "findjsrefs", "jsretainers",
                    "jscode"}


def _doc(cmd: Command) -> str:
    """gdb shows a command's first line as its summary in `help v8dbg`."""
    return f"{cmd.summary[:1].upper()}{cmd.summary[1:]}.\n\n{cmd.help.rstrip()}"


def _complete_flags(cmd: Command, text: str, word: str | None):
    """Complete a flag; otherwise an expression where the command takes an address."""
    token = "" if not text or text[-1:].isspace() else text.split()[-1]
    if token.startswith("-"):
        # gdb breaks words at '-': it replaces only `word`, the end of the token.
        cut = len(token) - len(word or "")
        return sorted(f[cut:] for f in cmd.flags() if f.startswith(token))
    return gdb.COMPLETE_EXPRESSION if cmd.name in _ADDRESS_COMMANDS else []


def _run(name: str, argument: str) -> None:
    """Run one command; a failure is a gdb error, so a script stops and -batch fails."""
    try:
        argv = gdb.string_to_argv(argument)
    except Exception:
        argv = argument.split()
    text, ok = SESSION.run(name, argv)
    if not ok:
        raise gdb.GdbError(text)
    if text:
        gdb.write(text + "\n")


class _Prefix(gdb.Command):
    """JavaScript stacks, values and heap of a Node.js process or core.

v8dbg's commands, each also under its own name (jsstack = v8dbg jsstack).
`v8dbg` alone lists them; `help COMMAND` or `COMMAND -h` explains one.
"""

    def __init__(self) -> None:
        super().__init__("v8dbg", gdb.COMMAND_USER, gdb.COMPLETE_COMMAND, prefix=True)

    def invoke(self, argument: str, from_tty: bool) -> None:
        if argument.strip():
            word = argument.split()[0]
            names = [n for n in COMMANDS if n != "v8dbg"]
            raise gdb.GdbError(f"v8dbg: unknown command '{word}'{did_you_mean(word, names)}; "
                               "`v8dbg` lists them")
        _run("v8dbg", "")


def _make(cmd: Command) -> gdb.Command:
    class _Cmd(gdb.Command):
        __doc__ = _doc(cmd)

        def __init__(self) -> None:
            super().__init__(f"v8dbg {cmd.name}", gdb.COMMAND_USER)

        def invoke(self, argument: str, from_tty: bool) -> None:
            _run(cmd.name, argument)

        def complete(self, text: str, word: str | None):
            return _complete_flags(cmd, text, word)

    _Cmd.__name__ = f"Cmd_{cmd.name}"
    made = _Cmd()
    try:
        # The short name users type; `help v8dbg` lists both names.
        gdb.execute(f"alias {cmd.name} = v8dbg {cmd.name}", to_string=True)
    except gdb.error:
        pass  # already there (the plugin loaded twice) or taken by another command
    return made


def _target_key():
    inf = gdb.selected_inferior()
    return (inf.num, inf.pid, _generation[0])


BT = Hooks(BtFrames(SESSION, _target_key))


class _Bt(gdb.Command):
    """Whether gdb's own `bt` shows JavaScript frames: v8dbg bt on|off.

With v8dbg loaded (on), gdb unwinds through V8's frames as jsstack does and
`bt` names each JS frame `function (script:line:column) [tier]`; off removes
v8dbg's unwinder and frame filter, leaving gdb's own backtrace."""

    def __init__(self) -> None:
        super().__init__("v8dbg bt", gdb.COMMAND_STACK)

    def invoke(self, argument: str, from_tty: bool) -> None:
        word = argument.strip()
        if word == "on":
            BT.install()
        elif word == "off":
            BT.remove()
        elif word:
            raise gdb.GdbError(f"v8dbg: bt takes on or off, not '{word}'")
        gdb.write(f"JavaScript frames in gdb's bt: {'on' if BT.installed else 'off'}\n")

    def complete(self, text: str, word: str | None):
        return [w for w in ("on", "off") if w.startswith(text.strip())]


_Prefix()
for _c in load_all().values():
    if _c.name != "v8dbg":
        _make(_c)
_Bt()
BT.install()
