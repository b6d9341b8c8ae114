"""The heap as a whole: the census walk over V8's pages, isolates, how objects
are named and grouped by shape, and the search for references.

May import `values`, `v8`, `inferior` and `v8dbg.errors`.
"""
