"""V8's blocks of global handles, followed as V8 links them from the Isolate.

The Isolate points to its GlobalHandles, whose first word points back to
the Isolate; the GlobalHandles points to its NodeSpace of regular nodes
(and, on 10.2, of traced nodes), each pointing back to it first, then
holding its first block. A NodeBlock is 256 nodes, then its next block
(the list of every block the space made, never shortened before the
isolate dies), its GlobalHandles and its NodeSpace. The back-pointers
tell the chain from any other pointer; the node size and where the
spaces sit in the GlobalHandles are in layouts.py.

Reading the chain costs a few reads per block, where finding the blocks by
their shape means reading all of native memory."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Protocol

from . import layouts

MAX_BLOCKS = 1 << 20  # blocks followed in one space: 256 M handles, far above a real process
_TAIL = 3  # words after a block's nodes read: next_, global_handles_, space_


class Reader(Protocol):
    def read(self, address: int, size: int) -> bytes: ...


@dataclass
class GlobalHandleBlocks:
    """The blocks of one isolate's global handles, as [start, end) of their
    nodes; `error` says why the chain could not be followed (then `blocks`
    is not to be trusted), `notes` what was seen on the way."""

    global_handles: int = 0
    node_size: int = 0
    blocks: list[tuple[int, int]] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def _ptr(w: int) -> bool:
    return not w & 7 and 0x10000 <= w < 1 << 47


def _words(mem: Reader, addr: int, n: int) -> tuple[int, ...] | None:
    try:
        data = mem.read(addr, 8 * n)
    except Exception:  # unmapped, or a debugger API's own error type
        return None
    if len(data) != 8 * n:
        return None
    return struct.unpack(f"<{n}Q", data)


def find(mem: Reader, version: tuple[int, ...], isolate: int,
         words: tuple[int, ...]) -> GlobalHandleBlocks:
    """The global handle blocks of the Isolate at `isolate`, whose words are
    `words`: its GlobalHandles is the one object it points to that points
    back to it first and whose node space, at the offset layouts.py gives,
    points back to the GlobalHandles."""
    got = layouts.global_handles(version)
    if got is None:
        return GlobalHandleBlocks(error=f"no layout of V8's global handles for V8 "
                                        f"{'.'.join(map(str, version[:2]))}")
    node_size, spaces = got
    found = set()
    for p in set(words):
        if not _ptr(p) or isolate <= p < isolate + 8 * len(words):
            continue
        g = _words(mem, p, spaces[0] // 8 + 1)
        if g is None or g[0] != isolate:
            continue
        s = g[spaces[0] // 8]
        if not _ptr(s):
            continue
        back = _words(mem, s, 1)
        if back is not None and back[0] == p:
            found.add(p)
    if len(found) != 1:
        return GlobalHandleBlocks(node_size=node_size, error=(
            "the Isolate's GlobalHandles was not found" if not found else
            f"{len(found)} objects look like the Isolate's GlobalHandles"))
    gh = found.pop()
    out = GlobalHandleBlocks(global_handles=gh, node_size=node_size)
    g = _words(mem, gh, max(spaces) // 8 + 1)
    if g is None:
        out.error = f"the GlobalHandles at {gh:#x} cannot be read"
        return out
    for off in spaces:
        err = _space(mem, gh, g[off // 8], node_size, out)
        if err is not None:
            out.error = err
            return out
    return out


def _space(mem: Reader, gh: int, space: int, node_size: int, out: GlobalHandleBlocks) -> str | None:
    """Add the blocks of the NodeSpace at `space` to out; why not, if the chain breaks."""
    head = _words(mem, space, 2) if _ptr(space) else None
    if head is None or head[0] != gh:
        return f"the node space at {space:#x} does not point back to the GlobalHandles at {gh:#x}"
    span = layouts.GLOBAL_HANDLE_BLOCK * node_size
    block = head[1]
    seen: set[int] = set()
    while block:
        if len(seen) >= MAX_BLOCKS:
            out.notes.append(f"a space of over {MAX_BLOCKS} blocks of global handles: "
                             "the blocks past them were not read")
            return None
        if block in seen:
            return f"the global handle blocks from {space:#x} run in a circle at {block:#x}"
        seen.add(block)
        tail = _words(mem, block + span, _TAIL) if _ptr(block) else None
        if tail is None:
            return f"the global handle block at {block:#x} cannot be read"
        nxt, owner, sp = tail
        if owner != gh or sp != space:
            return (f"the global handle block at {block:#x} does not point back to its "
                    f"GlobalHandles and node space")
        out.blocks.append((block, block + span))
        block = nxt
    return None
