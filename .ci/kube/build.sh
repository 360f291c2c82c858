#!/usr/bin/env bash
# build.sh - build the test cluster's binaries, or reuse them from the cache.
#
#   .ci/kube/build.sh        prints the directory holding them:
#     kube   the multi-call binary (this directory's main.go), with the symlinks
#            kube-apiserver kube-controller-manager kube-scheduler kubelet
#            kubectl etcd pointing at it
#     pause  the static pause binary, from k8s.io/kubernetes's build/pause
#
# The result is kept under ${ACPHOST_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acphost-kube}
# keyed on go.mod, go.sum, main.go, the Go version and the linker flags; the
# Go build cache does the rest (a cold build is 10 minutes of CPU, a warm one
# a relink). Progress goes to stderr, the directory alone to stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
log() { printf '[kube/build] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
# A module of its own, outside the repository's go.work (which joins the
# library's modules only).
export GOWORK=off

K8S_VERSION=v1.37.2
cache="${ACPHOST_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acphost-kube}"

# Without these every component says v0.0.0-master and the node has no version.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
	ldflags+=" -X $pkg.gitTreeState=clean"
done

command -v go >/dev/null || die "go not on PATH"
key="$(cd "$here" && { cat go.mod go.sum main.go; go version; echo "$ldflags"; } | sha256sum | cut -c1-16)"
out="$cache/bin-$key"
if [ -x "$out/kube" ] && [ -x "$out/pause" ]; then
	log "cached: $out"
	echo "$out"
	exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.build-XXXXXX")"
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
cd "$here"
log "go build (k8s.io/kubernetes $K8S_VERSION; cold: about 10 CPU-minutes, warm: a relink)"
# -mod=readonly: go.sum is committed; a drift is an error, not a rewrite.
GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/kube" .
log "go build done in $(($(date +%s) - start)) s"

src="$(GOFLAGS="-mod=readonly -buildvcs=false" go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
[ -f "$src" ] || die "no pause.c at $src"
command -v gcc >/dev/null || die "gcc not on PATH (Debian: gcc)"
gcc -Os -static -Wall -DVERSION="$K8S_VERSION" -o "$tmp/pause" "$src"
strip "$tmp/pause" 2>/dev/null || true

for n in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd; do
	ln -s kube "$tmp/$n"
done
"$tmp/kubectl" version --client >/dev/null || die "the built kubectl does not run"

# Keep one result: drop older keys, then move the new one in place.
find "$cache" -maxdepth 1 -name 'bin-*' -type d ! -name "bin-$key" -exec rm -rf {} +
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "built $out in $(($(date +%s) - start)) s ($(du -sh "$out/kube" | cut -f1) kube)"
echo "$out"
