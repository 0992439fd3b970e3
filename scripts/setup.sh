#!/usr/bin/env bash
# Installs what building and running the product needs, pinned, from the
# package registries only (crates.io, npm, Debian): the wasm32 target,
# wasm-bindgen-cli, Trunk, Node and npm binaryen (wasm-opt). The test suite's
# extra tools (Chromium, playwright-core, etcd, a kube-apiserver) are
# scripts/setup-test.sh's. Idempotent: a tool already present at the right
# version is skipped, so a warm machine pays nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# The wasm32 target for the web client and the engine's wasm tests.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen-cli must be exactly the wasm-bindgen crate version in Cargo.lock.
wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$wb_version" ]; then
  echo "setup: no wasm-bindgen in Cargo.lock" >&2
  exit 1
fi
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$wb_version" ]; then
  log "cargo install wasm-bindgen-cli $wb_version"
  # Not --locked: its lockfile wants a webpki-roots the registry lacks.
  cargo install wasm-bindgen-cli --version "$wb_version"
fi

# Trunk builds web/; 0.22 needs a newer rustc than this machine has.
trunk_version=0.21.14
if [ "$(trunk --version 2>/dev/null | awk '{print $2}')" != "$trunk_version" ]; then
  log "cargo install trunk $trunk_version"
  cargo install --locked trunk --version "$trunk_version"
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "apt-get install nodejs npm"
  apt_install nodejs npm
fi

# wasm-opt: npm binaryen, pinned (Debian's wasm-opt breaks the app).
npm_ci_if_stale .
log "setup done"
