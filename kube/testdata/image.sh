#!/usr/bin/env bash
# image.sh - build the kube package's test agent image and import it into
# the cluster's containerd (namespace k8s.io), no registry involved:
#
#   kube/testdata/image.sh
#
# The image holds the static test agent (kube/internal/testagent, CGO off)
# as /bin/acphost-testagent and a static busybox giving sh, tr, grep,
# sleep, kill and cat (what the transport's keeper and watchdog run).
# Needs go, tar, sha256sum, ctr, and CONTAINERD_ADDRESS (the socket of the
# cluster's containerd); BUSYBOX names a static busybox (default
# /bin/busybox, Debian's busybox-static). Idempotent: the same sources give
# the same image. Prints the image's name.
set -euo pipefail
name=localhost/acphost-kube/agent:test
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kube="$(dirname "$here")"
root="$(dirname "$kube")"
busybox=${BUSYBOX:-/bin/busybox}
: "${CONTAINERD_ADDRESS:?set CONTAINERD_ADDRESS to the cluster containerd socket}"
[ -x "$busybox" ] || { echo "image.sh: no static busybox at $busybox (apt-get install busybox-static)" >&2; exit 1; }
if ldd "$busybox" >/dev/null 2>&1; then echo "image.sh: $busybox is not static" >&2; exit 1; fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs/bin" "$work/rootfs/tmp" "$work/rootfs/work"
chmod 1777 "$work/rootfs/tmp"
chmod 0777 "$work/rootfs/work"
(cd "$kube" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/rootfs/bin/acphost-testagent" ./internal/testagent)
cp "$busybox" "$work/rootfs/bin/busybox"
for a in sh tr grep sleep kill cat ls ps env true; do ln -s busybox "$work/rootfs/bin/$a"; done
"$root/.ci/kube/image.sh" "$work/image.tar" "$name" "$work/rootfs" /bin/acphost-testagent >/dev/null
ctr --address "$CONTAINERD_ADDRESS" -n k8s.io images import "$work/image.tar" >/dev/null
echo "$name"
