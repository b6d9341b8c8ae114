"""Stopping long scans when the user asks (Ctrl-C).

gdb and the standalone CLI turn Ctrl-C into KeyboardInterrupt inside Python.
lldb does not: it only sets its command interpreter's interrupt flag, which a
command has to look at. A front end registers how to look; every long loop
over target memory calls `check_interrupted()` now and then, and the command
ends with "interrupted" within a fraction of a second.
"""

from __future__ import annotations

import time
from typing import Callable

_check: Callable[[], bool] | None = None
_last = [0.0]
# Asking lldb is cheap but not free; loops may call check_interrupted() per
# page or per probe, so ask at most this often.
_EVERY = 0.05


def set_interrupt_check(check: Callable[[], bool] | None) -> None:
    """Register the front end's "did the user ask to stop?" (None: nothing to ask)."""
    global _check
    _check = check


def check_interrupted() -> None:
    """Raise KeyboardInterrupt if the user asked the front end to stop."""
    check = _check
    if check is None:
        return
    now = time.monotonic()
    if now - _last[0] < _EVERY:
        return
    _last[0] = now
    try:
        asked = check()
    except Exception:
        asked = False
    if asked:
        raise KeyboardInterrupt
