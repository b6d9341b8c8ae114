import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# A suite started in the background by a shell without job control (a CI
# script, `cmd &` in a script) inherits SIGINT ignored, and every process it
# starts would too: the tests that stop v8dbg or a debugger with Ctrl-C need
# it delivered. A handler here becomes the default again in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
