"""`python -m v8dbg`: the standalone command line."""

import sys

from .commands.cli import main

sys.exit(main())
