#!/usr/bin/env bash
# End-to-end tests in headless Chromium: builds the web UI (dist/) and the
# server (release, embedding dist/), then runs the Node tests in tests/e2e/
# (offline page, live dashboard against `dispatch-dash serve --demo`, the size
# budget). The timed budgets are a benchmark: scripts/bench-web.sh.
# Screenshots go to artifacts/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
# playwright-core (the driver) and Chromium: scripts/setup-test.sh installs both.
npm_ci_if_stale tests/e2e
./scripts/build-web.sh
RUST_BACKTRACE=0 cargo build -p dispatch-dash --release
node --test --test-concurrency=1 tests/e2e/ "$@"
