"""v8dbg in gdb, from a clone: `source plugins/gdb/v8dbg.py`.

Puts this checkout first on gdb's Python path and imports `v8dbg.gdb`, the
adapter that registers the commands. (Installed with pip, `v8dbg gdb` or the
line `v8dbg gdbinit` prints do the same for the installed package.)
"""

import os
import sys

# This file's own path: gdb leaves __file__ naming an outer script when one
# script sources another, but a code object always knows its file.
_root = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath((lambda: None).__code__.co_filename))))
if _root not in sys.path:
    sys.path.insert(0, _root)
_pkg = sys.modules.get("v8dbg")
if _pkg is not None and os.path.dirname(os.path.dirname(os.path.abspath(
        getattr(_pkg, "__file__", "") or ""))) != _root:
    raise ImportError(f"another v8dbg is loaded already, from {_pkg.__file__}")
import v8dbg.gdb  # noqa: E402,F401
