"""v8dbg: see inside Node.js processes and core dumps from gdb, lldb or a shell."""

import sys as _sys

__version__ = "0.1.0"

# gdb and lldb run v8dbg in the Python they were built with, which may be older
# than the one pip installed it for; say so plainly instead of a SyntaxError.
# (This file must stay readable by old Pythons: no newer syntax above here.)
if _sys.version_info < (3, 11):
    raise ImportError("v8dbg needs Python 3.11 or later, and this Python is %d.%d "
                      "(gdb and lldb use the Python they were built with: see "
                      "`python import sys; print(sys.version)` in gdb)" % _sys.version_info[:2])
