"""Stacks: machine frames turned into native, V8-internal and JavaScript frames.

May import `v8`, `inferior` and `v8dbg.errors`.
"""
