#!/usr/bin/env bash
# Installs what the whole test suite needs (scripts/test.sh runs it): first
# everything the product needs (scripts/setup.sh), then the test-only tools,
# pinned, from the package registries only: Debian's Chromium and
# playwright-core for the browser tests, cargo-deny for the supply chain,
# Debian's prometheus (promtool) and prometheus-alertmanager for the
# monitoring tier, and etcd with a kube-apiserver built
# from Debian's source for the real-apiserver tier. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# Debian's Chromium for the browser tests; Playwright never downloads one.
if [ ! -x /usr/bin/chromium ]; then
  log "apt-get install chromium"
  apt_install chromium
fi
npm_ci_if_stale tests/e2e

# The monitoring tier: promtool checks and unit-tests the shipped alert
# rules (tests/tests/monitoring_rules.rs); a real Prometheus scrapes the
# server and a real Alertmanager routes its alerts (server/tests/monitoring.rs).
# Only the binaries are used: no service is started.
if [ ! -x /usr/bin/promtool ] || [ ! -x /usr/bin/prometheus ] || [ ! -x /usr/bin/prometheus-alertmanager ]; then
  log "apt-get install prometheus prometheus-alertmanager"
  apt_install prometheus prometheus-alertmanager
fi

# cargo-deny checks licenses, bans and sources against deny.toml.
deny_version=0.20.2
if [ "$(cargo deny --version 2>/dev/null | awk '{print $2}')" != "$deny_version" ]; then
  log "cargo install cargo-deny $deny_version"
  cargo install --locked cargo-deny --version "$deny_version"
fi

# The real kube-apiserver test tier (server/tests/real_apiserver*.rs): etcd,
# and a kube-apiserver built from Debian's source package, cached outside the
# work tree (minutes cold, about 2 s warm).
./scripts/setup-kube-apiserver.sh
log "test setup done"
