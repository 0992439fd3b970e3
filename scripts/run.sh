#!/usr/bin/env bash
# Runs the product: builds the web client and starts `dispatch-dash serve`.
# With no cluster (no kubeconfig, not in a pod) it runs on the embedded
# Kubernetes API emulator with simulated jobs. Extra arguments go to `serve`
# (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
./scripts/build-web.sh
exec cargo run --release -p dispatch-dash -- serve "$@"
