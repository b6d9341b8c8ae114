"""Which node release a core or a binary is, without the heap walk nodeinfo does.

An official node binary carries its release's download address
(`.../download/release/vX.Y.Z/node-vX.Y.Z...`) in its read-only data. A core
whose binary is missing still holds `process.version` on the JS heap: a V8
one-byte string `vX.Y.Z` whose length field (4 bytes) comes right before its
characters; the value most often found so is taken.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections import Counter

_RELEASE = re.compile(rb"/release/(v\d{1,3}\.\d{1,3}\.\d{1,3})/node-v")
_HEAP_VERSION = re.compile(rb"v\d{1,3}\.\d{1,3}\.\d{1,3}")
MAX_CORE_SCAN = 2 << 30  # bytes of a core searched for the version string

_binary_versions: dict[tuple[str, int, int], str | None] = {}


def binary_node_version(path: str) -> str | None:
    """The node release an official binary is (`v24.21.0`), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    if key not in _binary_versions:
        found = None
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                hit = _RELEASE.search(m)
                found = hit.group(1).decode() if hit else None
        except (OSError, ValueError):
            found = None
        if len(_binary_versions) > 64:
            _binary_versions.clear()
        _binary_versions[key] = found
    return _binary_versions[key]


def core_node_version(path: str, regions: list[tuple[int, int]]) -> tuple[str | None, bool]:
    """The node release whose `process.version` string the core's memory holds;
    `regions` are (file offset, size) of the core's memory. Also whether the
    search stopped at MAX_CORE_SCAN bytes."""
    seen: Counter[bytes] = Counter()
    scanned = 0
    capped = False
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            for off, size in regions:
                size = min(size, len(m) - off, MAX_CORE_SCAN - scanned)
                if size <= 0:
                    capped = capped or scanned >= MAX_CORE_SCAN
                    continue
                scanned += size
                for hit in _HEAP_VERSION.finditer(m, max(off, 4), off + size):
                    text = hit.group(0)
                    if struct.unpack_from("<I", m, hit.start() - 4)[0] == len(text):
                        seen[text] += 1
    except (OSError, ValueError):
        return None, False
    if not seen:
        return None, capped
    return seen.most_common(1)[0][0].decode(), capped
