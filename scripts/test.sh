#!/usr/bin/env bash
# Set up a fresh machine (debuggers, node binaries) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec python3 -m pytest -q "$@"
