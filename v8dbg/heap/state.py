"""What the heap commands have found out about a target, kept between commands.

One `HeapState` per program (`prog.heap_state`), dropped with the other
decoders when a live target runs: the readable regions and V8 pages found,
each heap's census, and what commands derived from a census.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class HeapState:
    bulk: Any = None  # the census's bulk reader of the target's regions
    heaps: dict[int, list] | None = None  # Heap address -> its pages
    read_only: list | None = None  # the read-only space's pages (no Heap's own)
    walker: Any = None  # the page walker, reused across heaps
    isolates: list | None = None
    census: dict[int, Any] = field(default_factory=dict)  # Heap address -> Census
    groups: dict[int, list] = field(default_factory=dict)  # Heap address -> shape groups
    functions: dict[int, list] = field(default_factory=dict)  # Heap address -> function rows
    graphs: dict[int, Any] = field(default_factory=dict)  # Heap address -> its Graph
    reachable: dict[int, Any] = field(default_factory=dict)  # Heap address -> Reachable
    # Heap address -> why its graph was not built (too big for the memory left)
    refused: dict[int, str] = field(default_factory=dict)
    live: dict[int, list] = field(default_factory=dict)  # Heap address -> its live maps
    dispatch: Any = False  # the JS dispatch table (V8 13.6+): False not looked for, None not found
