#!/usr/bin/env bash
# Demo: crash a sample node app, then show its JavaScript stack and objects
# from the core, with no debugger, then in gdb and lldb.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
V=${NODE_VERSION:-24.21.0}
NODE=$PWD/.cache/node/$V/bin/node
DIR=$PWD/.cache/demo/$V
rm -rf "$DIR" && mkdir -p "$DIR"
echo "== node $V runs examples/crash.js and aborts on the uncaught exception"
(cd "$DIR" && ulimit -c unlimited && "$NODE" --abort-on-uncaught-exception "$OLDPWD/examples/crash.js") \
  >/dev/null 2>&1 || true
[ -f "$DIR/core" ] || { echo "demo: no core was written (core_pattern: $(cat /proc/sys/kernel/core_pattern))"; exit 1; }
v8() { echo; echo "\$ python -m v8dbg $* --core core --binary node"; python3 -m v8dbg "$@" --core "$DIR/core" --binary "$NODE" || true; }
v8 nodeinfo 2>/dev/null || true
v8 jsstack -v
v8 findjsobjects -c Order 2>/dev/null || true
echo; echo "== the same in gdb"
gdb -q -batch -ex "source plugins/gdb/v8dbg.py" -ex "jsstack -n 12" "$NODE" "$DIR/core" 2>/dev/null
echo; echo "== the same in lldb"
lldb-16 --no-lldbinit -b -c "$DIR/core" "$NODE" -o "command script import plugins/lldb/v8dbg.py" \
  -o "jsstack -n 12" 2>/dev/null | grep -v '^(lldb)' || true
