#!/usr/bin/env bash
# Set up a fresh machine (debuggers, node binaries) and run the whole suite,
# one test module per worker on each core (modules batch their debugger runs);
# the slowest tests are listed at the end, to keep the suite in its budget.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
exec python3 -m pytest -q -n "$jobs" --dist loadfile --durations=30 "$@"
