"""Where bytes come from: the memory and threads interface, ELF files, core
files, `.eh_frame` and native unwinding, loaded modules and symbols.

Knows nothing of V8. May import only `v8dbg.errors` and the standard library.
"""
