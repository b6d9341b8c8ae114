"""Stacks: machine frames turned into native, V8-internal and JavaScript frames.

May import `v8`, `target` and `v8dbg.errors`.
"""
