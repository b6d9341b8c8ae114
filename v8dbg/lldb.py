"""v8dbg in lldb: `command script import v8dbg.lldb` (or `v8dbg lldb`), then `v8dbg`.

A thin adapter: it gives the shared core lldb's memory, threads and mappings,
and prints what the core returns. It reads only; it never writes to the
process or runs expressions in it (ADDR arguments are evaluated without
running target code).
"""

from __future__ import annotations

import os
import shlex
import struct
import sys

import lldb  # type: ignore[import-not-found]

from . import lldb_bt, numpylib
from .commands import Session, load_all
from .commands.btframes import BtFrames
from .errors import TargetMemoryError, V8DbgError
from .interrupt import set_interrupt_check
from .inferior.backend import Registers, ThreadInfo, proc_maps
from .inferior.corefile import binary_named_by, core_mappings, core_process_name
from .inferior.disasm import Disassembly, Instruction
from .inferior.ptrace import vm_read


def _system_packages() -> None:
    """Let lldb's Python find the system's packages (Debian's python3-numpy,
    which the heap graph needs). lldb's embedded Python takes its home from
    the first python3 on PATH (pyenv's, a venv's), whose own site-packages
    it then leaves out as well; the system's, built for the libpython lldb
    runs, are added last."""
    try:
        numpylib.load()
    except ImportError:
        d = "/usr/lib/python3/dist-packages"
        if os.path.isdir(d) and d not in sys.path:
            sys.path.append(d)
        # Imported now, while the plugin loads: imported first inside a
        # command, it swallowed what that command's `script` line printed.
        try:
            numpylib.load()
        except ImportError:
            pass


_system_packages()


def _target():
    return lldb.debugger.GetSelectedTarget()


class LldbBackend:
    """Memory, threads and mappings of lldb's selected process."""

    kind = "lldb"

    def __init__(self) -> None:
        self.target = _target()
        self.process = self.target.GetProcess()
        if not self.process.IsValid():
            _check_cores_named()
            raise V8DbgError("no process: attach to a node process or load a core first")
        self._maps = None
        self._kernel_reads: bool | None = None  # process_vm_readv works on this process

    @property
    def live(self) -> bool:
        return self.process.GetPluginName() != "elf-core"

    def identity(self):
        return (self.target.GetExecutable().fullpath, self.process.GetProcessID(),
                self.process.GetPluginName(), self.target.GetNumModules())

    def read(self, address: int, size: int) -> bytes:
        tried = self._kernel_reads is not False and self.live and self.running()
        if tried:
            # lldb reads a running process's memory by stopping it for every
            # packet: thousands of stops for one heap scan (minutes, and the
            # process barely runs). The kernel reads it without a stop; once
            # it has, an address it cannot read is mapped nowhere.
            data = vm_read(self.process.GetProcessID(), address, size)
            if data is not None:
                self._kernel_reads = True
                return data
            if self._kernel_reads:
                raise TargetMemoryError(address, size)
        err = lldb.SBError()
        try:
            data = self.process.ReadMemory(address, size, err)
        except (OverflowError, TypeError):
            raise TargetMemoryError(address, size) from None
        if tried and not err.Fail() and data is not None:
            self._kernel_reads = False  # not permitted here (another user, Yama): lldb's reads
        if err.Fail() or data is None or len(data) != size:
            # Pages a core leaves out (file-backed text and read-only data): read them
            # from the module files through the target.
            err = lldb.SBError()
            addr = self.target.ResolveLoadAddress(address)
            data = self.target.ReadMemory(addr, size, err) if addr.IsValid() else None
            if err.Fail() or data is None or len(data) != size:
                raise TargetMemoryError(address, size)
        return bytes(data)

    def threads(self) -> list[ThreadInfo]:
        out = []
        pid = self.process.GetProcessID()
        core = None if self.live else _find_core_file(self.process)
        for i in range(self.process.GetNumThreads()):
            t = self.process.GetThreadAtIndex(i)
            name = t.GetName()
            if name is None and core and t.GetThreadID() == pid:
                name = core_process_name(core)  # as the standalone reader names it
            out.append(ThreadInfo(t.GetThreadID(), name, loader=_registers_of(t)))
        return out

    def running(self) -> bool:
        """True when the process runs on (lldb in asynchronous mode)."""
        return self.process.GetState() in (lldb.eStateRunning, lldb.eStateStepping)

    def selected_thread(self) -> int | None:
        t = self.process.GetSelectedThread()
        return t.GetThreadID() if t.IsValid() else None

    def mappings(self):
        if self._maps is None:
            pid = self.process.GetProcessID()
            if self.live:
                self._maps = proc_maps(pid)
            else:
                path = _find_core_file(self.process)
                self._maps = core_mappings(path) if path else self._module_mappings()
        return self._maps

    def _module_mappings(self):
        """Loaded sections as mappings, when the core file cannot be found."""
        from .inferior.backend import Mapping
        out = []
        for i in range(self.target.GetNumModules()):
            m = self.target.GetModuleAtIndex(i)
            path = m.GetFileSpec().fullpath
            for j in range(m.GetNumSections()):
                s = m.GetSectionAtIndex(j)
                start = s.GetLoadAddress(self.target)
                if start == lldb.LLDB_INVALID_ADDRESS or not s.GetFileByteSize():
                    continue
                out.append(Mapping(start, start + s.GetFileByteSize(), s.GetFileOffset(), path))
        return out

    def core_file(self) -> str | None:
        """The core file lldb has open (the census reads whole pages from it)."""
        if self.live:
            return None
        return _find_core_file(self.process)

    def regions(self) -> list[tuple[int, int]]:
        """Readable memory regions as lldb reports them (core segments or live maps)."""
        out = []
        try:
            regs = self.process.GetMemoryRegions()
            info = lldb.SBMemoryRegionInfo()
            for i in range(regs.GetSize()):
                if regs.GetMemoryRegionAtIndex(i, info) and info.IsReadable():
                    out.append((info.GetRegionBase(), info.GetRegionEnd()))
        except Exception:
            out = []
        if not out:
            from .inferior.backend import proc_regions
            from .inferior.corefile import core_regions
            pid = self.process.GetProcessID()
            if self.live:
                return proc_regions(pid)
            path = _find_core_file(self.process)
            return core_regions(path) if path else []
        return out

    def executable(self) -> str | None:
        return self.target.GetExecutable().fullpath or self._core_binary()

    def _core_binary(self) -> str | None:
        """node as the core names it, found as the standalone reader finds it."""
        if self.live:
            return None
        core = _find_core_file(self.process)
        return binary_named_by(core) if core else None

    def binary_from_core(self) -> str | None:
        """The node file, when lldb took it from the core (`lldb -c core`) rather
        than from the command line."""
        exe = self.target.GetExecutable().fullpath
        if not exe:
            return self._core_binary()
        given = {os.path.realpath(a) for a in _cmdline()}
        if os.path.realpath(exe) in given or self.live:
            return None
        return exe

    def loaded_file(self, path: str, start: int, build_id: str | None) -> str | None:
        """The file of a module lldb has for a library of the target (`target
        modules add FILE` puts one there), matched by build-id or by address."""
        want = (build_id or "").lower()
        by_addr = self.target.ResolveLoadAddress(start).GetModule()
        for i in range(self.target.GetNumModules()):
            m = self.target.GetModuleAtIndex(i)
            fpath = m.GetFileSpec().fullpath
            if not fpath or not os.path.isfile(fpath):
                continue
            uuid = (m.GetUUIDString() or "").replace("-", "").lower()
            if want and uuid == want:
                return fpath
            if not want and by_addr.IsValid() and m == by_addr:
                return fpath
        return None

    def pid(self) -> int | None:
        return self.process.GetProcessID() or None

    def generation(self) -> int:
        return self.process.GetStopID()

    def disassemble(self, address: int, data: bytes) -> Disassembly:
        """lldb's own disassembler, on the bytes v8dbg read from `address`."""
        t = self.target
        insts = t.GetInstructionsWithFlavor(lldb.SBAddress(address, t), "att", data)
        out = []
        for i in range(insts.GetSize()):
            ins = insts.GetInstructionAtIndex(i)
            text = f"{ins.GetMnemonic(t)} {ins.GetOperands(t)}".strip()
            comment = ins.GetComment(t)
            if comment:
                text += f" ; {comment.strip()}"
            out.append(Instruction(ins.GetAddress().GetLoadAddress(t), ins.GetByteSize(), text))
        return Disassembly("lldb", out)


def _registers_of(thread):
    def load() -> Registers | None:
        f = thread.GetFrameAtIndex(0)
        if not f.IsValid():
            return None
        return Registers(*[f.FindRegister(r).GetValueAsUnsigned() for r in ("rip", "rsp", "rbp")])

    return load


_core_files: dict[int, str | None] = {}  # lldb's unique id of a process -> its core


def _find_core_file(process) -> str | None:
    """The core file this lldb has open for `process` (lldb 16 cannot name it),
    looked for once per process."""
    key = process.GetUniqueID()
    if key not in _core_files:
        _core_files[key] = _search_core_file(process)
    return _core_files[key]


def _search_core_file(process) -> str | None:
    """Among the files this lldb has open or was given, the core of `process`:
    the one of its pid; of several of one pid (containers), the one whose
    first thread is where lldb's first thread is, and none if that is not
    exactly one (a wrong core would be read as if it were the right one)."""
    from .inferior.corefile import CoreBackend
    pid = process.GetProcessID()
    cands: list[str] = []
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                cands.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
    except OSError:
        pass
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    cands.append(parts[5].strip())
    except OSError:
        pass
    for arg in _cmdline():
        cands.append(os.path.abspath(arg))
    found: list[tuple[str, tuple[int, int, int] | None]] = []
    seen = set()
    for path in cands:
        if path in seen or not path.startswith("/") or not os.path.isfile(path):
            continue
        seen.add(path)
        try:
            with open(path, "rb") as fh:
                head = fh.read(64)
        except OSError:
            continue
        if head[:4] != b"\x7fELF" or struct.unpack_from("<H", head, 16)[0] != 4:
            continue
        core = None
        try:
            core = CoreBackend(path)
            if core.pid() == pid:
                threads = core.threads()
                regs = threads[0].regs if threads else None
                found.append((path, (threads[0].tid, regs.rip, regs.rsp) if regs else None))
        except V8DbgError:
            continue
        finally:
            if core is not None:
                core.close()
    if len(found) <= 1:
        return found[0][0] if found else None
    first = process.GetThreadAtIndex(0)
    frame = first.GetFrameAtIndex(0)
    where = (first.GetThreadID(), frame.GetPC(), frame.GetSP())
    same = [path for path, at in found if at == where]
    return same[0] if len(same) == 1 else None


def _check_cores_named() -> None:
    """lldb refuses a core of another architecture without saying why: name it."""
    from .inferior.elf import check_architecture
    for arg in _cmdline()[1:] + _history_words():
        path = os.path.abspath(arg)
        try:
            with open(path, "rb") as fh:
                head = fh.read(18)
        except OSError:
            continue
        if head[:4] == b"\x7fELF" and len(head) == 18 and head[16] == 4:  # ET_CORE
            check_architecture(path)


def _history_words() -> list[str]:
    """Words of the commands typed in this session (a `target create --core`
    that lldb refused leaves no target to ask)."""
    try:
        res = lldb.SBCommandReturnObject()
        lldb.debugger.GetCommandInterpreter().HandleCommand("session history", res)
        text = res.GetOutput() or ""
    except Exception:
        return []
    words: list[str] = []
    for line in text.splitlines()[-200:]:
        try:
            words.extend(shlex.split(line.split(":", 1)[-1]))
        except ValueError:
            continue
    return words


def _cmdline() -> list[str]:
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []


def _evaluate(expr: str) -> int:
    frame = _target().GetProcess().GetSelectedThread().GetSelectedFrame()
    opts = lldb.SBExpressionOptions()
    opts.SetTryAllThreads(False)
    opts.SetAllowJIT(False)  # never run code in the target
    v = frame.EvaluateExpression(expr, opts) if frame.IsValid() else \
        _target().EvaluateExpression(expr, opts)
    if not v.GetError().Success():
        try:
            return int(expr, 0)
        except ValueError:
            raise V8DbgError(f"cannot evaluate '{expr}': {v.GetError().GetCString()}") from None
    return v.GetValueAsUnsigned()


_backend: list = []


def _factory():
    key = _target_key()
    if not _backend or _backend[0][0] != key:
        _backend[:] = [(key, LldbBackend())]
    return _backend[0][1]


SESSION = Session(_factory, evaluate=_evaluate,
                  no_binary="no node binary: load it first (`target create /path/to/node "
                            "--core CORE`, or `lldb -p PID`)")


def _target_key():
    """What names the target's state: a second core of the same node (in a
    container its pid is often the same, 1) is another process to lldb;
    `target modules add` changes which library files v8dbg should read."""
    t = _target()
    p = t.GetProcess()
    return (t.GetExecutable().fullpath, p.GetUniqueID(), p.GetProcessID(), p.GetStopID(),
            t.GetNumModules())


lldb_bt.use(BtFrames(SESSION, _target_key))


def _bt(debugger, argv: list[str], result) -> None:
    """`v8dbg bt [on|off]`: JavaScript names in lldb's own backtrace."""
    word = argv[0] if argv else ""
    if word == "on":
        msg = lldb_bt.install(debugger)
        if msg:
            result.SetError(msg)
            return
    elif word == "off":
        lldb_bt.remove(debugger)
    elif word:
        result.SetError(f"v8dbg: bt takes on or off, not '{word}'")
        return
    state = "on" if lldb_bt.installed(debugger) else "off"
    result.AppendMessage(f"JavaScript frames in lldb's bt: {state}")


def _interrupt_check(debugger):
    """Ctrl-C in lldb sets a flag on the command interpreter (lldb 17 and later
    also on the debugger); Python code is not interrupted, so scans ask."""
    interp = debugger.GetCommandInterpreter()
    requested = getattr(debugger, "InterruptRequested", None)

    def asked() -> bool:
        if interp.WasInterrupted():
            return True
        return bool(requested()) if requested is not None else False

    return asked


class _Command:
    """Base of every v8dbg command class registered with lldb."""

    name = ""

    def __init__(self, debugger, internal_dict) -> None:
        pass

    def __call__(self, debugger, command, exe_ctx, result) -> None:
        try:
            argv = shlex.split(command)
        except ValueError:
            argv = command.split()
        if self.name == "v8dbg" and argv[:1] == ["bt"]:
            _bt(debugger, argv[1:], result)
            return
        set_interrupt_check(_interrupt_check(debugger))
        try:
            text, ok = SESSION.run(self.name, argv)
        finally:
            set_interrupt_check(None)
        if ok:
            result.AppendMessage(text)
        elif text.startswith("{"):
            # A --json error stays one JSON line a script can find, and fails.
            result.AppendMessage(text)
            result.SetStatus(lldb.eReturnStatusFailed)
        else:
            result.SetError(text)

    def get_short_help(self) -> str:
        return COMMANDS[self.name].summary

    def get_long_help(self) -> str:
        return COMMANDS[self.name].help


COMMANDS = load_all()


def __lldb_init_module(debugger, internal_dict) -> None:
    mod = __name__
    for name in COMMANDS:
        cls = type(f"Cmd_{name}", (_Command,), {"name": name})
        globals()[cls.__name__] = cls
        debugger.HandleCommand(f"command script add -o -c {mod}.{cls.__name__} {name}")
    msg = lldb_bt.install(debugger)
    if msg:
        print(msg)
