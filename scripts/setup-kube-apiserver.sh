#!/usr/bin/env bash
# Installs what the real-kube-apiserver test tier (server/tests/real_apiserver.rs)
# needs: etcd, kubectl, openssl, and a kube-apiserver v1.20.2 built offline from
# Debian bookworm's `kubernetes` source package (no Debian binary package ships
# an apiserver, and the Go module proxy is unreachable; the orig tarball holds
# the full upstream tree with vendor/, so the build downloads nothing). Recipe
# and measurements: ../shared/notes/real-kube-apiserver.md.
#
# The built binary is cached outside the work tree, in
#   $DISPATCH_DASH_KUBE_APISERVER_DIR (default /var/cache/dispatch-dash/kube-apiserver-v1.20.2)
# so a warm machine only checks that it runs (about 2 s); a cold one pays the
# build (about 6 min of 2 cores, 1.3 GB memory, 1.8 GB disk, all removed after).
# Idempotent. The system's apt configuration is never modified: the source
# package is fetched through a private apt directory.
set -euo pipefail

log() { printf '==> %s\n' "$*"; }
die() {
  printf 'setup-kube-apiserver: %s\n' "$*" >&2
  exit 1
}

kube_version=v1.20.2
# Pinned: bookworm's kubernetes source (with its security update); upstream v1.20.2.
debian_source_version=1.20.5+really1.20.2-1.1+deb12u1
# Go >= 1.24 cannot build this tree; 1.19 is what bookworm ships for it.
go_package=golang-1.19-go
go_bin=/usr/lib/go-1.19/bin
cache_dir=${DISPATCH_DASH_KUBE_APISERVER_DIR:-/var/cache/dispatch-dash/kube-apiserver-$kube_version}
binary=$cache_dir/kube-apiserver

apt_ready=0
apt_install() {
  if [ "$apt_ready" = 0 ]; then
    apt-get update -qq || die "apt-get update failed"
    apt_ready=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" || die "apt-get install $* failed"
}

missing_packages() {
  local package
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
      printf '%s\n' "$package"
    fi
  done
}

# What the tests run besides the apiserver: etcd, openssl (service-account keys),
# and kubectl (handy for debugging a failed run; the tests use the kube client).
runtime_missing=$(missing_packages etcd-server openssl)
if ! command -v kubectl >/dev/null; then
  runtime_missing="$runtime_missing kubernetes-client"
fi
if [ -n "${runtime_missing// /}" ]; then
  # shellcheck disable=SC2086 # one word per package
  log "apt-get install" $runtime_missing
  # shellcheck disable=SC2086
  apt_install $runtime_missing
fi

cached_version() {
  "$binary" --version 2>/dev/null | awk '{print $2}'
}

if [ -x "$binary" ] && [ "$(cached_version)" = "$kube_version" ]; then
  log "kube-apiserver $kube_version cached at $binary"
  exit 0
fi

log "building kube-apiserver $kube_version from Debian's kubernetes $debian_source_version source (takes minutes)"
started=$(date +%s)

build_missing=$(missing_packages "$go_package" golang-github-modern-go-reflect2-dev rsync jq dpkg-dev curl make)
if [ -n "$build_missing" ]; then
  # shellcheck disable=SC2086
  log "apt-get install" $build_missing
  # shellcheck disable=SC2086
  apt_install $build_missing
fi

work=$(mktemp -d /var/tmp/kube-apiserver-build.XXXXXX)
# The build tree is 1.8 GB: never leave it behind, whatever happens.
trap 'rm -rf "$work"' EXIT

# A private apt directory whose sources are the system's with deb-src, so the
# system's sources, lists and cache stay exactly as they were.
system_sources=/etc/apt/sources.list.d/debian.sources
[ -f "$system_sources" ] || die "no $system_sources to derive deb-src sources from"
mkdir -p "$work/apt/parts" "$work/apt/lists/partial" "$work/apt/archives/partial"
sed 's/^Types: deb$/Types: deb-src/' "$system_sources" >"$work/apt/parts/debian-src.sources"
: >"$work/apt/sources.list"
private_apt=(
  -o "Dir::Etc::SourceList=$work/apt/sources.list"
  -o "Dir::Etc::SourceParts=$work/apt/parts"
  -o "Dir::State::Lists=$work/apt/lists"
  -o "Dir::Cache::Archives=$work/apt/archives"
  # The private dirs belong to root; apt's _apt sandbox user could not write them.
  -o "APT::Sandbox::User=root"
)
log "apt-get update (private deb-src lists)"
apt-get "${private_apt[@]}" update -qq || die "could not update the private deb-src lists"
(
  cd "$work"
  log "apt-get source kubernetes=$debian_source_version"
  apt-get "${private_apt[@]}" source --download-only "kubernetes=$debian_source_version" ||
    die "could not download the kubernetes $debian_source_version source package (if bookworm has a newer one, check it is still upstream $kube_version and update debian_source_version in $0)"
  dpkg-source -x "kubernetes_${debian_source_version#*:}.dsc" src >/dev/null ||
    die "dpkg-source -x failed"
)
src=$work/src

# The vendored reflect2 1.0.1 crashes on Go >= 1.18; Debian's copy does not.
debian_reflect2=/usr/share/gocode/src/github.com/modern-go/reflect2
[ -d "$debian_reflect2" ] || die "no $debian_reflect2 (golang-github-modern-go-reflect2-dev)"
rm -rf "$src/vendor/github.com/modern-go/reflect2"
cp -r "$debian_reflect2" "$src/vendor/github.com/modern-go/reflect2"
rm -f "$src/vendor/github.com/modern-go/reflect2/go.mod"
find "$src/vendor/github.com/modern-go/reflect2" -name '*_test.go' -delete

# No .git in a source package: the version comes from a file.
cat >"$work/version" <<EOF
KUBE_GIT_VERSION='$kube_version'
KUBE_GIT_MAJOR='1'
KUBE_GIT_MINOR='20'
KUBE_GIT_TREE_STATE='clean'
EOF

log "make WHAT=cmd/kube-apiserver"
(
  cd "$src"
  # A module-mode `go build` fails here; upstream make runs the code generators.
  PATH="$go_bin:$PATH" CGO_ENABLED=0 KUBE_GIT_VERSION_FILE="$work/version" GOLDFLAGS="-s -w" \
    GOCACHE="$work/gocache" \
    make WHAT=cmd/kube-apiserver
) || die "make WHAT=cmd/kube-apiserver failed (see the output above)"

built=$(find "$src/_output" -type f -name kube-apiserver -perm -u+x | head -n 1)
[ -n "$built" ] || die "the build produced no kube-apiserver binary"
mkdir -p "$cache_dir"
# Copy then rename, so a concurrent or interrupted run never sees half a binary.
cp "$built" "$binary.tmp.$$"
mv "$binary.tmp.$$" "$binary"
[ "$(cached_version)" = "$kube_version" ] ||
  die "the built $binary does not report $kube_version: $("$binary" --version 2>&1 || true)"
log "kube-apiserver $kube_version built and cached at $binary in $(($(date +%s) - started)) s"
