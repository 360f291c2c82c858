#!/usr/bin/env bash
# down.sh - stop the test cluster up.sh started and leave nothing of it: no
# process, mount, network namespace, interface, nftables table, cgroup, path
# or changed sysctl. Safe to run after a failed or partial up.sh, and twice.
# Ends by comparing the host with the snapshot up.sh took before it started
# anything: prints what is left, one line each, and exits 1 if anything is.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
KUBE_STEP=down
t0=$(now)

[ "$(id -u)" = 0 ] || die "must run as root"
if [ ! -d "$KUBE_DIR" ]; then
	log "no cluster at $KUBE_DIR"
	exit 0
fi
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
have_base=0
if [ -f "$KUBE_DIR/baseline/paths" ]; then
	cp -a "$KUBE_DIR/baseline/." "$base/" && have_base=1
fi
bin=$(cat "$KUBE_DIR/bin-dir" 2>/dev/null || true)
in_base() { [ "$have_base" = 1 ] && grep -qxF -- "$2" "$base/$1"; }

# 1. Nothing may start new pods: agent-sandbox's controller first (it would
# refill warm pools), then the scheduler and the controller-manager; then the
# kubelet stops the pods there are (containers, sandboxes, their network
# namespaces) while it still can.
stop_component "$SANDBOX_NAME"
stop_component kube-scheduler
stop_component kube-controller-manager
if [ -n "$bin" ] && pidof_component kube-apiserver >/dev/null && pidof_component kubelet >/dev/null; then
	t=$(now)
	"$bin/kubectl" --kubeconfig "$KUBECONFIG_PATH" delete pods --all --all-namespaces \
		--grace-period=1 --wait=true --timeout=60s >/dev/null ||
		log "not every pod went away through the kubelet; removing what is left by force"
	log "pods deleted in $(since "$t") s"
fi
stop_component kubelet
stop_component kube-apiserver
stop_component etcd

# 2. containerd: kill and remove whatever tasks are left, then stop it.
if pidof_component containerd >/dev/null; then
	ctr_() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }
	for id in $(ctr_ tasks ls -q 2>/dev/null); do
		ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1
	done
	# The CRI plugin deletes a task once it exits; delete the rest ourselves.
	deadline=$(($(date +%s) + 10))
	while [ -n "$(ctr_ tasks ls -q 2>/dev/null)" ] && [ "$(date +%s)" -lt "$deadline" ]; do
		sleep 0.05
	done
	for id in $(ctr_ tasks ls -q 2>/dev/null); do
		ctr_ tasks rm -f "$id" >/dev/null 2>&1 || log "task $id would not go"
	done
	for id in $(ctr_ containers ls -q 2>/dev/null); do
		ctr_ containers rm "$id" >/dev/null 2>&1
	done
fi
stop_component containerd

# 3. Processes left behind anyway: shims (they outlive containerd) and
# anything in the kubelet's cgroups.
leftover() { left_processes | awk '{ print $1 }'; }
pids=$(leftover)
if [ -n "$pids" ]; then
	log "killing leftover processes: ${pids//$'\n'/ }"
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null
	for p in $pids; do wait_gone "$p" 5 || log "process $p survives SIGKILL"; done
fi

# 4. Mounts: containerd's rootfs and shm mounts and the kubelet's volumes
# under KUBE_DIR, network namespaces under /run/netns; deepest first.
awk '{ print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
	case "$m" in
	"$KUBE_DIR"/* | /var/lib/kubelet/* | /run/netns/cni-* | /run/containerd/*)
		in_base mounts "$m" && continue
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
		;;
	esac
done
for ns in /run/netns/cni-*; do
	[ -e "$ns" ] || continue
	in_base netns "$(basename "$ns")" && continue
	rm -f "$ns"
done

# 5. Network: the bridge and any veth still on it (pod network namespaces
# take their ends with them).
if ip link show "$BRIDGE" >/dev/null 2>&1 && ! in_base links "$BRIDGE"; then
	for l in $(ip -o link show master "$BRIDGE" | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
		ip link del "$l" 2>/dev/null
	done
	ip link del "$BRIDGE" || log "cannot delete interface $BRIDGE"
fi
# nftables tables that were not there before and hold Kubernetes chains.
if command -v nft >/dev/null; then
	nft list tables 2>/dev/null | while read -r _ fam name; do
		in_base nft "table $fam $name" && continue
		if nft list table "$fam" "$name" 2>/dev/null | grep -q 'KUBE-'; then
			nft delete table "$fam" "$name" || log "cannot delete nftables table $fam $name"
		fi
	done
fi

# 6. The kubelet's cgroups (kubepods, in every hierarchy), deepest first.
find /sys/fs/cgroup -mindepth 2 -depth -type d -regex '/sys/fs/cgroup/[^/]+/kubepods.*' 2>/dev/null |
	while read -r cg; do
		in_base cgroups "$cg" && continue
		rmdir "$cg" 2>/dev/null || log "cannot remove cgroup $cg"
	done

# 7. Sysctls back to what they were.
if [ "$have_base" = 1 ]; then
	while IFS= read -r line; do
		k=${line%% = *} v=${line#* = }
		[ "$v" = '?' ] && continue
		cur=$(sysctl -n "$k" 2>/dev/null) || continue
		if [ "$cur" != "$v" ]; then
			sysctl -qw "$k=$v" || log "cannot restore $k to $v"
		fi
	done <"$base/sysctl"
fi

# 8. Paths: the host paths that were not there before, then KUBE_DIR.
for p in "${HOST_PATHS[@]}"; do
	[ -e "$p" ] || continue
	in_base paths "$p" && continue
	[ "$have_base" = 1 ] || { log "no baseline: keeping $p"; continue; }
	rm -rf --one-file-system "$p" || log "cannot remove $p"
done
rm -rf --one-file-system "$KUBE_DIR" || log "cannot remove $KUBE_DIR"
log "torn down in $(since "$t0") s"

# 9. What is left, compared with the host before up.sh.
if [ "$have_base" = 0 ]; then
	log "no baseline snapshot (up.sh stopped before taking it): nothing to compare"
	left_processes | sed 's/^/process: /'
	exit 0
fi
if left=$(check_left "$base"); then
	log "nothing left"
else
	log "LEFT BEHIND:"
	printf '%s\n' "$left" >&2
	exit 1
fi
