#!/usr/bin/env bash
# Benchmark of the web client's timed budgets (first useful paint and change
# to repaint with 1,000 TrainJobs, or 10,000 with --scale 10) in headless
# Chromium, each with a ratio
# against a plain-JS baseline measured in the same run; see
# tests/e2e/bench/budgets.mjs. Not part of CI: it exits non-zero only when
# something is broken, never for a missed goal.
# Builds the web UI (dist/) and the server (release), like test-e2e.sh.
#   ./scripts/bench-web.sh [--rounds N] [--scale K]
#   ./scripts/bench-web.sh --offline [--rounds N]
# --offline: the offline page instead, a 68 MB dump picked against the
# native CLI on the same file (tests/e2e/bench/offline.mjs); the dump is
# written by the CLI bench's generator and removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
# playwright-core (the driver) and Chromium: scripts/setup-test.sh installs both.
npm_ci_if_stale tests/e2e
./scripts/build-web.sh >/dev/null
RUST_BACKTRACE=0 cargo build -p dispatch-dash --release
if [[ "${1:-}" == "--offline" ]]; then
  shift
  dump="$(mktemp -d)/dump.json"
  trap 'rm -rf "$(dirname "$dump")"' EXIT
  CLI_BENCH_WRITE_ONLY="$dump" cargo bench -p dispatch-dash --bench cli
  node tests/e2e/bench/offline.mjs "$dump" "$@"
else
  node tests/e2e/bench/budgets.mjs "$@"
fi
