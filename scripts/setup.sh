#!/usr/bin/env bash
# Installs everything the build and the tests need, pinned, from the package
# registries only (crates.io, npm, Debian). Idempotent: a tool already present
# at the right version is skipped, so a warm machine pays nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*"; }
export PATH="$HOME/.cargo/bin:$PATH"

# The wasm32 target for the engine's wasm tests and the web client.
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

apt_ready=0
apt_install() {
  if [ "$apt_ready" = 0 ]; then
    apt-get update -qq
    apt_ready=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

# Node runs the wasm tests (wasm-bindgen-test-runner) and the browser tests.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "apt-get install nodejs npm"
  apt_install nodejs npm
fi

# Debian's Chromium for the end-to-end tests; Playwright never downloads one.
if [ ! -x /usr/bin/chromium ]; then
  log "apt-get install chromium"
  apt_install chromium
fi

# wasm-opt (npm binaryen, pinned; Debian's breaks the app) and playwright-core.
if [ -f package-lock.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "npm ci"
    npm ci --no-audit --no-fund
  fi
fi
# The real kube-apiserver test tier (server/tests/real_apiserver.rs): etcd,
# and a kube-apiserver built from Debian's source package, cached outside the
# work tree (about 12 min cold on a busy 2-core machine, under a second warm).
./scripts/setup-kube-apiserver.sh
log "setup done"
