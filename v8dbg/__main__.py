"""`python -m v8dbg`: the standalone command line."""

import sys

from .cli import main

sys.exit(main())
