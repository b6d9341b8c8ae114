"""The cores a triage run covers: files, directories of them, and with fsspec
installed, URLs (`s3://bucket/cores/`, `file:///srv/cores`) of either."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import V8DbgError

MAX_CORES = 100000  # files one run takes; past it, the rest are said to be left out


@dataclass
class Sources:
    """Every core location found, and the PATHs that held none (with why)."""

    cores: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    left_out: int = 0  # files past MAX_CORES


def url_fs(url: str) -> tuple[Any, str]:
    """(fsspec file system, path in it) for a URL; a V8DbgError without fsspec."""
    try:
        import fsspec
    except ImportError:
        raise V8DbgError(f"{url}: reading URLs needs fsspec (pip install fsspec, and the "
                         "package of that store, e.g. s3fs)") from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as e:
        raise V8DbgError(f"{url}: {e}") from None


def find(paths: list[str]) -> Sources:
    """The files under PATHs (sorted per PATH), as locations crash_of reads."""
    out = Sources()
    for p in paths:
        found = _remote(p, out) if "://" in p else _local(p, out)
        if found is not None:
            take = found[:max(0, MAX_CORES - len(out.cores))]
            out.left_out += len(found) - len(take)
            out.cores += take
    return out


def _local(p: str, out: Sources) -> list[str] | None:
    if not os.path.exists(p):
        out.problems.append((p, "not found"))
        return None
    if not os.path.isdir(p):
        return [p]
    files: list[str] = []
    # Links to directories are not followed (no loops); links to files are taken.
    for dirpath, dirnames, filenames in os.walk(p):
        dirnames.sort()
        files += [os.path.join(dirpath, f) for f in sorted(filenames)
                  if os.path.isfile(os.path.join(dirpath, f))]
        if len(files) > MAX_CORES:
            break  # (find() reports how many were left out: one past the cap is enough)
    if not files:
        out.problems.append((p, "no files in this directory"))
        return None
    return files


def _remote(url: str, out: Sources) -> list[str] | None:
    fs, path = url_fs(url)
    proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    try:
        if not fs.exists(path):
            out.problems.append((url, "not found"))
            return None
        if not fs.isdir(path):
            return [url]
        files = sorted(fs.find(path))
    except (OSError, ValueError) as e:
        out.problems.append((url, f"cannot list it: {e}"))
        return None
    if not files:
        out.problems.append((url, "no files in this directory"))
        return None
    return [f"{proto}://{f}" if "://" not in f else f for f in files]
