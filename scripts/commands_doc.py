"""Write docs/commands.md, the command reference, from the commands' own help.

Run after changing a command or flag: python3 scripts/commands_doc.py
(tests/test_package.py fails while the page and the code differ).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "commands.md"

HEAD = """\
# Command reference

The same commands, flags and output in gdb, lldb and the standalone CLI.
In gdb and lldb a command takes an address as any debugger expression
(`jsprint $rdi`); in the CLI as a hex number. The standalone CLI adds the
`target` options (`--core` or `--pid` for a running process, `--binary`,
`--debug`); every command takes `-h`.
This page is the CLI's own help (`v8dbg help COMMAND`), written by
`python3 scripts/commands_doc.py`; `tests/test_package.py` checks that it
matches the code.

Exit status of the CLI: 0 done, 1 failed, 2 usage error, 130 interrupted.
JSON output of every `--json` flag: [`v8dbg-output.schema.json`](v8dbg-output.schema.json).
"""


def render() -> str:
    os.environ["COLUMNS"] = "80"  # argparse wraps help to the terminal's width
    sys.path.insert(0, str(ROOT))
    from v8dbg.commands import load_all
    from v8dbg.commands.cli import LAUNCHERS, OWN_PARSERS, build_parser
    cmds = load_all()
    _, subs = build_parser(cmds, "v8dbg")
    own = OWN_PARSERS  # commands with parsers of their own
    names = [n for n in sorted(cmds) if n != "v8dbg"] + list(own) + list(LAUNCHERS)
    out = [HEAD, "## Contents", ""]
    for n in names:
        summary = cmds[n].summary if n in cmds else \
            f"{own[n].SUMMARY} (standalone only)" if n in own else LAUNCHERS[n][0]
        out.append(f"- [`{n}`](#{n}): {summary}")
    out.append("")
    for n in names:
        text = own[n].parser().format_help() if n in own else subs[n].format_help()
        out += [f"## {n}", "", "```", text.rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    DOC.write_text(render())
    print(f"wrote {DOC.relative_to(ROOT)}")
