"""What v8dbg finds by scanning a whole node binary is kept on disk beside its
symbol index, so the next command does not scan again: here the builtins'
names (a third of a `jsstack` from the command line). The cached names are
V8's own: every `Builtins_*` symbol of the official binary, in the table's
order; a cache file that is damaged (not what the scan would accept) is
scanned again, never trusted."""

from __future__ import annotations

import json
import subprocess

import pytest

from support import node_binary

LINES = ["18.20.8", "24.21.0"]


def _fresh(path):
    from v8dbg.inferior.elf import ElfFile
    return ElfFile(str(path))


@pytest.mark.parametrize("version", LINES)
def test_builtin_names_kept_and_read_back(version: str, tmp_path, monkeypatch) -> None:
    from v8dbg.v8 import embedded
    monkeypatch.setenv("V8DBG_CACHE", str(tmp_path))
    binary = node_binary(version)
    syms = [ln.split()[-1][len("Builtins_"):] for ln in
            subprocess.run(["nm", str(binary)], capture_output=True, text=True,
                           check=True).stdout.splitlines() if " Builtins_" in ln]
    size = 24  # BuiltinMetadataSize on every pinned line
    names = embedded.builtin_names(_fresh(binary), size)
    assert names and sorted(names) == sorted(syms), (len(names or []), len(syms))
    kept = list(tmp_path.glob(f"builtins1-{size}-*.json"))
    assert len(kept) == 1, list(tmp_path.iterdir())
    assert json.loads(kept[0].read_text()) == {"names": names}

    # Read back without scanning.
    def no_scan(*_a):
        raise AssertionError("scanned again")
    with monkeypatch.context() as m:
        m.setattr(embedded, "_scan_builtin_names", no_scan)
        assert embedded.builtin_names(_fresh(binary), size) == names

    # Damaged: scanned again and rewritten.
    for bad in ("{not json", json.dumps({"names": [1, 2]}), json.dumps({"names": []}),
                json.dumps([]), json.dumps({"names": names + names[:1]}),
                json.dumps({"names": [n for n in names if n != "InterpreterEntryTrampoline"]}),
                json.dumps({"names": names[:-1] + ["not a name"]})):
        kept[0].write_text(bad)
        assert embedded.builtin_names(_fresh(binary), size) == names, bad
        assert json.loads(kept[0].read_text()) == {"names": names}


def test_unwritable_cache_is_no_error(tmp_path, monkeypatch) -> None:
    from v8dbg.v8 import embedded
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache directory should be
    monkeypatch.setenv("V8DBG_CACHE", str(blocked / "v8dbg"))
    binary = node_binary(LINES[-1])
    assert embedded.builtin_names(_fresh(binary), 24)
