"""ScopeInfo: names of a function and of its context-allocated variables."""

from __future__ import annotations


class ScopeInfo:
    def __init__(self, heap, strings, addr: int) -> None:
        self.h = heap
        self.s = strings
        self.addr = addr

    def function_name(self) -> str | None:
        return None

    def inferred_name(self) -> str | None:
        return None

    def position_info(self):
        return None
