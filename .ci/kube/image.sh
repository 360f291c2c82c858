#!/usr/bin/env bash
# image.sh - write a container image as a docker-archive tar (what `docker
# save` writes) from a directory, with nothing but tar and sha256sum, so that
# it can be imported into containerd without any registry:
#
#   .ci/kube/image.sh OUT.tar NAME ROOTFS_DIR ENTRYPOINT [ARG...]
#
# NAME must be the normalised name the pods will use (localhost/x:1 stays as
# it is; x:1 would be docker.io/library/x:1). One layer, owned by root,
# entries sorted and dated 0: the same directory gives the same image.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 OUT.tar NAME ROOTFS_DIR ENTRYPOINT [ARG...]" >&2; exit 2; }
out=$1 name=$2 rootfs=$3
shift 3
[ -d "$rootfs" ] || { echo "image.sh: no directory $rootfs" >&2; exit 1; }

json_str() { # a JSON string for $1 (names and paths: no control characters)
	local s=${1//\\/\\\\}
	printf '"%s"' "${s//\"/\\\"}"
}
entry="" sep=""
for a in "$@"; do entry+="$sep$(json_str "$a")"; sep=","; done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
det=(--sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu)

# Top-level entries by name, not ".": no "./" prefixes, no entry for the root.
mapfile -d '' top < <(find "$rootfs" -mindepth 1 -maxdepth 1 -printf '%P\0')
tar "${det[@]}" -C "$rootfs" -cf "$work/layer.tar" -- "${top[@]}"
diff_id="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
mkdir "$work/out" "$work/out/$diff_id"
mv "$work/layer.tar" "$work/out/$diff_id/layer.tar"

arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/bin:/sbin:/usr/bin:/usr/sbin"],"Entrypoint":[%s],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
	"$arch" "$entry" "$diff_id" >"$work/config.json"
config_id="$(sha256sum "$work/config.json" | cut -d' ' -f1)"
mv "$work/config.json" "$work/out/$config_id.json"
printf '[{"Config":"%s.json","RepoTags":[%s],"Layers":["%s/layer.tar"]}]' \
	"$config_id" "$(json_str "$name")" "$diff_id" >"$work/out/manifest.json"

tar "${det[@]}" -C "$work/out" -cf "$out.tmp" manifest.json "$config_id.json" "$diff_id"
mv "$out.tmp" "$out"
