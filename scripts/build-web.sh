#!/usr/bin/env bash
# Builds the browser client (web/) into dist/ with Trunk, offline.
# Idempotent: installs the npm tools only when node_modules is missing.
# Trunk writes a fresh output directory every time, so it builds into a
# staging directory and only files whose bytes changed are copied into dist/
# (stale ones removed): the server embeds dist/ (server/build.rs), and an
# unchanged web build must not make cargo rebuild the server.
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
staging=target/web-dist
trunk build --release --dist "$staging" "$@"
mkdir -p dist
changed=0
for file in "$staging"/*; do
    name=$(basename "$file")
    if ! cmp -s "$file" "dist/$name"; then
        cp "$file" "dist/$name"
        changed=$((changed + 1))
    fi
done
for file in dist/*; do
    [ -e "$file" ] || continue
    name=$(basename "$file")
    if [ ! -e "$staging/$name" ]; then
        rm -rf "$file"
        changed=$((changed + 1))
    fi
done
echo "build-web: $changed file(s) of dist/ changed"
ls -l dist/
