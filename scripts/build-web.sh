#!/usr/bin/env bash
# Builds the browser client (web/) into dist/ with Trunk, offline.
# Idempotent: installs the npm tools only when node_modules is missing.
# Needs: trunk 0.21.14 and wasm-bindgen-cli 0.2.130 on PATH (~/.cargo/bin),
# node/npm, and the wasm32-unknown-unknown target.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/wasm-opt ]; then
    npm ci --no-audit --no-fund
fi
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export TRUNK_OFFLINE=true
# Trunk's errors are readable without the backtraces this environment asks for.
export RUST_BACKTRACE=0
trunk build --release "$@"
ls -l dist/
