"""v8dbg: see inside Node.js processes and core dumps from gdb, lldb or a shell."""

__version__ = "0.1.0"
