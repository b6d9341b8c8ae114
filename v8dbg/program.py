"""The program: one node process or core, with V8's metadata and the decoders.

Like drgn's `Program`, it hands back typed decoders as attributes --
`prog.heap`, `prog.strings`, `prog.functions`, `prog.codes`, `prog.stack`,
`prog.values`, `prog.shapes` -- each built once, on first use, and dropped
when a live target has run since (`refresh`). Decoders take the program as
their one argument and reach each other through it.
"""

from __future__ import annotations

from functools import cached_property

from .heap.shapes import Shapes
from .heap.state import HeapState
from .stack.frames import StackDecoder
from .inferior.backend import Backend
from .inferior.process import LoadedModule, Symbol, Target
from .v8 import baseline, builtins, metadata
from .v8.codes import Codes
from .v8.functions import Functions
from .v8.strings import Strings
from .v8.tagged import Heap
from .values.decoder import Values

__all__ = ["Program", "LoadedModule", "Symbol"]

# The cached_property names below, dropped together when the target runs
# (not bytecode_sizes and bytecode_names: they are read from the binary).
_DECODERS = ("heap", "strings", "functions", "codes", "stack", "values", "shapes",
             "heap_state")


class Program(Target):
    """A node target as v8dbg sees it."""

    def __init__(self, backend: Backend, binary: str | None = None) -> None:
        super().__init__(backend, binary)
        self.md = metadata.load(self.binary)

    def binary_warnings(self) -> list[str]:
        """What the node binary lacks that the user should know of (a
        stripped binary), in words."""
        if self.binary.section(".symtab") is not None:
            return []
        builtins = ("V8's builtins are named from V8's own builtins table"
                    if self.md.builtins is not None else
                    "V8's builtins show as <builtin> (V8's own builtins table "
                    "was not found)")
        return [f"{self.binary.path} is stripped (it has no .symtab): node's and "
                "V8's C++ function names are lost (native frames are named from "
                f".dynsym only, else ??); {builtins}; JavaScript frames are "
                "unaffected"]

    def builtin_at(self, pc: int) -> str | None:
        """The embedded builtin holding pc, kept per pc: the code does not move."""
        try:
            return self._builtin_cache[pc]
        except KeyError:
            pass
        name = builtins.builtin_at(self, pc)
        if len(self._builtin_cache) > 100000:
            self._builtin_cache.clear()
        self._builtin_cache[pc] = name
        return name

    def refresh(self) -> bool:
        """Forget memory and everything decoded from it if a live target ran."""
        ran = super().refresh()
        if ran:
            self.forget()
        return ran

    def forget(self) -> None:
        """Drop every decoder (and what it cached); they are rebuilt on use."""
        self.mem.clear()
        for name in _DECODERS:
            self.__dict__.pop(name, None)

    # -- decoders -------------------------------------------------------

    @cached_property
    def heap(self) -> Heap:
        """Tagged words, maps and instance types."""
        return Heap(self)

    @cached_property
    def strings(self) -> Strings:
        return Strings(self.heap)

    @cached_property
    def functions(self) -> Functions:
        """JSFunctions, SharedFunctionInfos, scripts and positions."""
        return Functions(self.heap, self.strings)

    @cached_property
    def codes(self) -> Codes:
        """JIT code objects for a pc."""
        return Codes(self, self.heap, self.functions)

    @cached_property
    def stack(self) -> StackDecoder:
        return StackDecoder(self)

    @cached_property
    def values(self) -> Values:
        return Values(self)

    @cached_property
    def shapes(self) -> Shapes:
        """How the census names and groups objects."""
        return Shapes(self)

    @cached_property
    def heap_state(self) -> HeapState:
        """What the heap commands found out about the heaps (pages, census, groups)."""
        return HeapState()

    @cached_property
    def bytecode_sizes(self) -> list[bytes] | None:
        """V8's table of bytecode operand sizes, read from the binary."""
        return baseline.tables(self.binary)[0]

    @cached_property
    def bytecode_names(self) -> list[str] | None:
        """V8's bytecode names, read from the binary (None where not found)."""
        return baseline.tables(self.binary)[1]
