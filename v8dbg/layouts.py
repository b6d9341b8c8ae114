"""Per-version V8 facts the binary's metadata lacks (filled below)."""
def apply(md):
    pass
