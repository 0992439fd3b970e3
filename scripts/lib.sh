# Helpers the set-up scripts share; sourced, never run.
# shellcheck shell=bash

log() { printf '==> %s\n' "$*"; }

# cargo install puts tools in $CARGO_HOME/bin, which may not be on PATH yet.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

apt_ready=0
apt_install() {
  if [ "$apt_ready" = 0 ]; then
    apt-get update -qq
    apt_ready=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

# `npm ci` in DIR when its node_modules is missing or older than its lockfile.
npm_ci_if_stale() {
  local dir=$1
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "npm ci ($dir)"
    npm ci --prefix "$dir" --no-audit --no-fund
  fi
}
