"""ScopeInfo: the names V8 keeps for a function and its context variables.

Layout (verified on each supported line): a flags word, parameter and
context-local counts, then -- from V8 13.6 -- the start/end positions, then
a variable part whose members depend on the flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DecodeError, TargetMemoryError
from .strings import Strings
from .tagged import Heap

FUNCTION_VARIABLE_SHIFT = 12
HAS_SAVED_CLASS_VARIABLE = 1 << 10
HAS_INFERRED_NAME = 1 << 14
HAS_OUTER_SCOPE_INFO = 1 << 22
HAS_CONTEXT_EXTENSION_SLOT = 1 << 26
MAX_LOCALS = 100000


@dataclass
class ContextLocal:
    name: str
    slot: int  # index into the Context


class ScopeInfo:
    def __init__(self, heap: Heap, strings: Strings, addr: int) -> None:
        self.h = heap
        self.s = strings
        self.addr = addr
        md = heap.md
        self.md = md
        raw = heap.mem.u64(addr - 1 + md.const("ScopeInfoFlagsOffset"))
        self.flags = heap.smi(raw) if heap.is_smi(raw) and md.const("ScopeInfoPositionsFirst") == 0 \
            else raw & 0xFFFFFFFF
        # A module scope's variable part starts with its module variable count.
        self.base = 1 if (self.flags & 0xF) == md.const("ScopeTypeModule") and \
            md.const("ScopeInfoModuleCountFirst") else 0
        self.params = self._smi_at(md.const("ScopeInfoParamsOffset"))
        self.nlocals = self._smi_at(md.const("ScopeInfoLocalsOffset"))
        if not 0 <= self.nlocals <= MAX_LOCALS:
            raise DecodeError(f"ScopeInfo 0x{addr:x} has an implausible local count")

    def _smi_at(self, off: int) -> int:
        v = self.h.mem.u64(self.addr - 1 + off)
        if not self.h.is_smi(v):
            raise DecodeError(f"ScopeInfo 0x{self.addr:x} is malformed")
        return self.h.smi(v)

    def _slot(self, index: int) -> int:
        return self.h.mem.u64(self.addr - 1 + self.md.const("ScopeInfoVarsOffset")
                              + 8 * (index + self.base))

    # Indexes into the variable part, in V8's order.
    def _names_inline(self) -> bool:
        return self.nlocals < self.md.const("ScopeInfoMaxInlinedLocals")

    def _after_locals(self) -> int:
        names = self.nlocals if self._names_inline() else 1
        return names + self.nlocals

    def _function_var_index(self) -> int:
        i = self._after_locals()
        if self.flags & HAS_SAVED_CLASS_VARIABLE:
            i += 1
        return i

    def _inferred_index(self) -> int:
        i = self._function_var_index()
        if (self.flags >> FUNCTION_VARIABLE_SHIFT) & 3:
            i += 2
        return i

    def _string(self, v: int, limit: int = 512) -> str | None:
        if self.h.is_heap(v) and self.s.is_string(v):
            return self.s.text(v, limit)
        return None

    def function_name(self) -> str | None:
        if not (self.flags >> FUNCTION_VARIABLE_SHIFT) & 3:
            return None
        return self._string(self._slot(self._function_var_index()))

    def function_variable_slot(self) -> int | None:
        """Context slot of a named function expression's own name, if it has one."""
        if not (self.flags >> FUNCTION_VARIABLE_SHIFT) & 3:
            return None
        v = self._slot(self._function_var_index() + 1)
        if self.h.is_smi(v) and self.h.smi(v) >= 0:
            return self.h.smi(v)
        return None

    def inferred_name(self) -> str | None:
        if not self.flags & HAS_INFERRED_NAME:
            return None
        return self._string(self._slot(self._inferred_index()))

    def position_info(self) -> tuple[int, int] | None:
        """(start, end) script offsets of the scope, when recorded."""
        h = self.h
        if self.md.const("ScopeInfoPositionsFirst"):
            a = h.mem.u64(self.addr - 1 + self.md.const("ScopeInfoVarsOffset") - 16)
            b = h.mem.u64(self.addr - 1 + self.md.const("ScopeInfoVarsOffset") - 8)
        else:
            i = self._inferred_index()
            if self.flags & HAS_INFERRED_NAME:
                i += 1
            a, b = self._slot(i), self._slot(i + 1)
        if h.is_smi(a) and h.is_smi(b):
            return h.smi(a), h.smi(b)
        return None

    def context_locals(self) -> list[ContextLocal]:
        """Names of the variables kept in this scope's Context, with their slots."""
        first = 3 if self.flags & HAS_CONTEXT_EXTENSION_SLOT else 2
        out: list[ContextLocal] = []
        if self._names_inline():
            for i in range(self.nlocals):
                name = self._string(self._slot(i)) or f"<local {i}>"
                out.append(ContextLocal(name, first + i))
        else:
            table = self._slot(0)
            out.extend(self._names_from_table(table, first))
        fslot = self.function_variable_slot()
        if fslot is not None:
            name = self.function_name()
            if name and all(l.slot != fslot for l in out):
                out.append(ContextLocal(name, fslot))
        return out

    def _names_from_table(self, table: int, first: int) -> list[ContextLocal]:
        """NameToIndexHashTable: (name, Smi index) entries after a 3-slot prefix."""
        h = self.h
        try:
            items = h.array_items(table, 4 * MAX_LOCALS)
        except (DecodeError, TargetMemoryError):
            return []
        out = []
        for k in range(3, len(items) - 1, 2):
            name, idx = items[k], items[k + 1]
            if h.is_smi(idx) and self._string(name) is not None:
                out.append(ContextLocal(self._string(name) or "", first + h.smi(idx)))
        out.sort(key=lambda l: l.slot)
        return out
