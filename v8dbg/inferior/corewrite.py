"""Writing a core of a running process: gdb's gcore, then its all-zero
blocks given back to the file system as holes (a core of node is mostly
zeros: reserved heap that was never touched)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

from ..errors import V8DbgError

BLOCK = 1 << 20
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2
GCORE_TIMEOUT = 300


def gcore(pid: int, path: str) -> None:
    """A core of `pid` at `path`, written by gdb (which leaves the process
    as it found it), then made sparse."""
    gdb = os.environ.get("V8DBG_GDB") or shutil.which("gdb")
    if not gdb:
        raise V8DbgError("writing a core needs gdb (its gcore); it is not on PATH")
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    r = subprocess.run([gdb, "-nx", "-q", "-batch", "-p", str(pid), "-ex", f"gcore {path}"],
                       capture_output=True, text=True, timeout=GCORE_TIMEOUT)
    if not os.path.exists(path):
        why = (r.stderr or r.stdout).strip().splitlines()
        raise V8DbgError(f"gcore of process {pid} wrote no core: {why[-1] if why else r.returncode}")
    punch_zero_blocks(path)


def punch_zero_blocks(path: str) -> int:
    """Turn each all-zero 1 MiB block of `path` into a hole; returns the bytes freed."""
    libc = ctypes.CDLL(None, use_errno=True)
    fallocate = libc.fallocate
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    zero = bytes(BLOCK)
    freed = 0
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        off = 0
        while off < size:
            chunk = os.pread(fd, BLOCK, off)
            if not chunk:
                break
            if chunk == zero[:len(chunk)]:
                if fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, off, len(chunk)) != 0:
                    break  # a file system without holes: the core stays whole
                freed += len(chunk)
            off += len(chunk)
    finally:
        os.close(fd)
    return freed
