"""C++ symbol names made readable, through the C++ runtime of this machine."""

from __future__ import annotations

import ctypes
import ctypes.util

_demangler = None
_demangle_cache: dict[str, str] = {}


def demangle(name: str) -> str:
    """C++ demangling through the C++ runtime, if this machine has one."""
    global _demangler
    if not name.startswith("_Z"):
        return name
    if name in _demangle_cache:
        return _demangle_cache[name]
    if _demangler is None:
        try:
            try:
                lib = ctypes.CDLL("libstdc++.so.6")
            except OSError:
                lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so")
            fn = lib.__cxa_demangle
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_int)]
            libc = ctypes.CDLL(None)
            free = libc.free
            free.argtypes = [ctypes.c_void_p]
            _demangler = (fn, free)
        except (OSError, AttributeError):
            _demangler = False
    out = name
    if _demangler:
        fn, free = _demangler
        status = ctypes.c_int(0)
        ptr = fn(name.encode(), None, None, ctypes.byref(status))
        if ptr and status.value == 0:
            out = ctypes.string_at(ptr).decode("utf-8", "replace")
            free(ptr)
    if len(_demangle_cache) > 50000:
        _demangle_cache.clear()
    _demangle_cache[name] = out
    return out
