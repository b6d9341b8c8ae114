"""V8's own names of its instance types, read from the node binary.

The postmortem metadata (`v8dbg_type_*`) names only the types that have a
class of their own: contexts, hash tables, API objects and a few dozen more
go unnamed. V8 names every one of them in `ToString(InstanceType)` (inside
`operator<<(std::ostream&, InstanceType)` before V8 12): a switch over all
instance types, one string literal per case. A release build compiles it to
a jump table of absolute addresses, indexed by the instance type, whose
every case first loads the address of its literal into a register. Reading
that table names each type by V8's own spelling, on every line, without a
table of ours. A stripped binary has no symbol for the switch: the metadata
and `layouts.py` name what they can there.
"""

from __future__ import annotations

import re
import struct
from collections import Counter

from ..inferior.elf import ElfFile

# The switch's symbols, newest first: the string builder, then the stream operator.
SYMBOLS = ("_ZN2v88internal8ToStringB5cxx11ENS0_12InstanceTypeE",
           "_ZN2v88internallsERSoNS0_12InstanceTypeE")
SYMBOL_PATTERN = rb"_ZN2v88internal(?:8ToStringB5cxx11E|lsERSo)NS0_12InstanceTypeE"

_JUMP_SEARCH = 0x800   # bytes of the function searched for the indexed jump
_CASE_SPAN = 0x10000   # every case lies this close after the function's start
_MAX_TYPES = 1 << 12   # instance types are 16-bit, V8's stay below 4096
_CASE_HEAD = 24        # bytes of a case searched for its literal
_NAME = re.compile(rb"[A-Z][A-Z0-9_]{0,80}_TYPE\0")
# jmp *disp32(,%reg,8): FF /4 with a SIB of scale 8 and no base (optional REX).
_JUMP = re.compile(rb"\xff\x24[\xc5\xcd\xd5\xdd\xe5\xed\xf5\xfd](....)", re.DOTALL)
_STRING_KINDS = (("SLICED", "SlicedString"), ("CONS", "ConsString"), ("THIN", "ThinString"))


def class_of(type_name: str) -> str:
    """V8's class name for an instance type name: JS_BOUND_FUNCTION_TYPE ->
    JSBoundFunction, FUNCTION_CONTEXT_TYPE -> FunctionContext."""
    for tag, cls in _STRING_KINDS:
        if type_name.endswith("STRING_TYPE") and tag in type_name:
            return cls
    parts = type_name.removesuffix("_TYPE").split("_")
    out = ""
    for i, p in enumerate(parts):
        out += "JS" if (i == 0 and p == "JS") else p.capitalize()
    return out


def _literal(binary: ElfFile, case: int) -> str | None:
    """The `..._TYPE` literal whose address a case loads first."""
    code = binary.read(case, _CASE_HEAD) or b""
    i = 0
    while i < len(code) - 4:
        b = code[i]
        if 0xB8 <= b <= 0xBF:  # mov r32, imm32 (a non-PIE address)
            addr = struct.unpack_from("<I", code, i + 1)[0]
        elif b == 0x48 and i + 6 < len(code) and code[i + 1] == 0x8D and code[i + 2] & 0xC7 == 5:
            addr = case + i + 7 + struct.unpack_from("<i", code, i + 3)[0]  # lea r64, [rip+d]
        else:
            i += 1
            continue
        text = binary.read(addr, 84) or b""
        m = _NAME.match(text)
        if m:
            return m.group()[:-1].decode("ascii")
        i += 1
    return None


def _table(binary: ElfFile, func: int) -> list[int]:
    """The case addresses of the switch's jump table, indexed by instance type."""
    head = binary.read(func, _JUMP_SEARCH) or b""
    best: list[int] = []
    for m in _JUMP.finditer(head):
        table = struct.unpack("<i", m.group(1))[0] & 0xFFFFFFFF
        raw = binary.read(table, 8 * _MAX_TYPES) or b""
        cases: list[int] = []
        for (target,) in struct.iter_unpack("<Q", raw[:len(raw) - len(raw) % 8]):
            if not func <= target < func + _CASE_SPAN:
                break
            cases.append(target)
        if len(cases) > len(best):
            best = cases
    return best


def read(binary: ElfFile, syms: dict[str, int]) -> dict[int, str]:
    """Instance type -> V8's name, from the switch (empty if it is not found)."""
    for sym in SYMBOLS:
        func = syms.get(sym)
        if func is None or not binary.is_executable(func):
            continue
        cases = _table(binary, func)
        if not cases:
            continue
        # The default case (unknown numbers) is shared by most entries.
        default = Counter(cases).most_common(1)[0][0]
        out: dict[int, str] = {}
        literals: dict[int, str | None] = {}
        for itype, case in enumerate(cases):
            if case == default:
                continue
            if case not in literals:
                literals[case] = _literal(binary, case)
            name = literals[case]
            if name is not None:
                out[itype] = name
        if out:
            return out
    return {}
