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
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export TRUNK_OFFLINE=true
# Trunk's errors are readable without the backtraces this environment asks for.
export RUST_BACKTRACE=0
staging=target/web-dist
# Trunk keeps wasm-bindgen's output directory between builds and copies its
# snippets/ whole: a JS snippet the code no longer uses would stay in dist/.
rm -rf target/wasm-bindgen/release/snippets
trunk build --release --dist "$staging" "$@"
mkdir -p dist
changed=0
# Every file, subdirectories too (wasm-bindgen's JS snippets are in one).
while IFS= read -r -d '' rel; do
    if ! cmp -s "$staging/$rel" "dist/$rel"; then
        mkdir -p "dist/$(dirname "$rel")"
        cp "$staging/$rel" "dist/$rel"
        changed=$((changed + 1))
    fi
done < <(cd "$staging" && find . -type f -print0)
while IFS= read -r -d '' rel; do
    if [ ! -e "$staging/$rel" ]; then
        rm -f "dist/$rel"
        changed=$((changed + 1))
    fi
done < <(cd dist && find . -type f -print0)
find dist -mindepth 1 -type d -empty -delete
echo "build-web: $changed file(s) of dist/ changed"
find dist -type f | sort | xargs ls -l
