"""JavaScript values: tagged words decoded into the contract's VALUE dicts,
one module per family of values, and rendered like node's `util.inspect`.

May import `v8`, `inferior` and `v8dbg.errors`.
"""
