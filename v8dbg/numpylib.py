"""NumPy, imported in one place for the whole package.

v8dbg does no linear algebra, but NumPy's OpenBLAS starts a thread per core
as it loads, and those threads spin for a while waiting for work that never
comes: some 0.1 s of CPU. While NumPy loads, OpenBLAS is asked for one
thread unless the environment already says how many (any of the variables
OpenBLAS reads); the environment is restored at once, so that nothing the
debugger starts later inherits it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

# What OpenBLAS reads for its number of threads, its own first.
_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def load() -> Any:
    """The numpy module; ImportError where it cannot be imported."""
    got = sys.modules.get("numpy")
    if got is not None:
        return got
    added = [] if any(k in os.environ for k in _THREADS) else [_THREADS[0]]
    for k in added:
        os.environ[k] = "1"
    try:
        import numpy
    finally:
        for k in added:
            os.environ.pop(k, None)
    return numpy
