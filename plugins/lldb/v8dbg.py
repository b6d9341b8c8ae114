"""v8dbg in lldb, from a clone: `command script import plugins/lldb/v8dbg.py`.

lldb imports this file as the module `v8dbg`, the package's own name. So it
puts this checkout first on lldb's Python path, hands the name `v8dbg` over to
the package, and registers the commands of `v8dbg.lldb` itself. (Installed
with pip, `v8dbg lldb` or the lines `v8dbg lldbinit` prints do the same with
`command script import v8dbg.lldb`.)
"""

import os
import sys

_root = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath((lambda: None).__code__.co_filename))))
if _root not in sys.path:
    sys.path.insert(0, _root)
if sys.modules.get("v8dbg") is sys.modules.get(__name__):
    del sys.modules["v8dbg"]  # this file, imported under the package's name
import v8dbg.lldb  # noqa: E402

# lldb then calls __lldb_init_module on what `import v8dbg` gave it (the
# package now), once that name is bound where lldb resolves command classes.
sys.modules["v8dbg"].__lldb_init_module = v8dbg.lldb.__lldb_init_module
