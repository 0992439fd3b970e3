#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this script): installs
# what it needs first (scripts/setup-test.sh), then lints, builds the web client,
# and runs the native, wasm and browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup-test.sh
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
# Trunk's and the tests' errors are long enough without backtraces.
export RUST_BACKTRACE=0

step() { printf '\n==> %s\n' "$*"; }

step "format"
cargo fmt --all -- --check

step "supply chain: licenses, bans and sources (deny.toml; advisories need a network)"
# cargo deny reads the metadata of every platform's crates (windows-sys
# too), which a build on this one never downloads: fetch them first, from
# the registry, then check without touching the network.
cargo fetch --locked
cargo deny --offline check licenses bans sources

step "clippy (native)"
cargo clippy --all-targets -- -D warnings

step "clippy (wasm32: the engine, its JS boundary and the web client)"
cargo clippy -p classify-wasm --lib --tests --target wasm32-unknown-unknown -- -D warnings
cargo clippy -p classify-wasm-bindings --lib --tests --target wasm32-unknown-unknown -- -D warnings
cargo clippy -p web --all-targets --target wasm32-unknown-unknown -- -D warnings

step "rustdoc: every intra-doc link resolves (the docs name real items)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "web client (Trunk, release); the server embeds it"
./scripts/build-web.sh

step "native tests: engine, CLI, server (emulator and real kube-apiserver), emulator, workspace"
cargo test

step "web client state tests (natively)"
cargo test -p web

step "wasm tests: the engine in Node, every case through the JS boundary"
cargo test -p classify-wasm-bindings --target wasm32-unknown-unknown

step "browser tests: headless Chromium against the real server"
./scripts/test-e2e.sh
