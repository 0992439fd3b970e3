#!/usr/bin/env bash
# Remakes docs/screenshots/{dashboard,explanation}.png, the README's two
# pictures, from the real page: the release binary on a still demo cluster,
# photographed by headless Chromium (tests/e2e/screenshots.mjs). Needs what
# scripts/setup-test.sh installs (Chromium, playwright-core).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
npm_ci_if_stale tests/e2e
./scripts/build-web.sh >/dev/null
RUST_BACKTRACE=0 cargo build -p dispatch-dash --release
node tests/e2e/screenshots.mjs
