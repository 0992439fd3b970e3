#!/usr/bin/env bash
# The size of the engine alone compiled to wasm, as a browser would load it:
# its JS boundary's cdylib (bindings/wasm) in the small-and-slow profile, through wasm-bindgen, then
# wasm-opt -Oz (npm binaryen, the version Trunk uses). Goal: under 400 KB.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build -p classify-wasm-bindings --lib --target wasm32-unknown-unknown --profile wasm-release
out=target/wasm-size
rm -rf "$out" && mkdir -p "$out"
wasm-bindgen --target web --out-dir "$out" target/wasm32-unknown-unknown/wasm-release/classify_wasm_bindings.wasm
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
  -o "$out/classify_wasm_bindings_bg.opt.wasm" "$out/classify_wasm_bindings_bg.wasm"
raw=$(stat -c %s "$out/classify_wasm_bindings_bg.wasm")
opt=$(stat -c %s "$out/classify_wasm_bindings_bg.opt.wasm")
gz=$(gzip -9 -c "$out/classify_wasm_bindings_bg.opt.wasm" | wc -c)
js=$(stat -c %s "$out/classify_wasm_bindings.js")
printf 'engine wasm: %d bytes after wasm-bindgen, %d bytes after wasm-opt -Oz (%d gzipped); JS glue %d bytes\n' "$raw" "$opt" "$gz" "$js"
