"""What V8 means by the target's bytes: the postmortem metadata and the one
per-version table (`layouts`), tagged values and maps (`tagged`), strings,
scope info, functions and scripts, code objects and their positions.

All V8-version knowledge lives in `layouts.py`. May import `inferior` and
`v8dbg.errors`.
"""
