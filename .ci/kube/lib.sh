# lib.sh - settings and helpers shared by up.sh, down.sh and smoke.sh (sourced).
# shellcheck shell=bash disable=SC2034 # the settings are read by the scripts that source this

# Everything the cluster writes lives here, except the few host paths below
# that no setting moves. ACPHOST_KUBE_DIR moves it.
KUBE_DIR="${ACPHOST_KUBE_DIR:-/var/lib/acphost-kube}"
KUBECONFIG_PATH="$KUBE_DIR/kubeconfig" # the admin kubeconfig (system:masters)
ENV_FILE="$KUBE_DIR/env"               # sourceable: KUBECONFIG, PATH, CONTAINERD_ADDRESS
CONTAINERD_SOCK="$KUBE_DIR/containerd/containerd.sock"

# Loopback ports away from the usual ones, so that a cluster of the host's own
# (or a second copy on other ports) does not collide.
ETCD_PORT="${ACPHOST_KUBE_ETCD_PORT:-12379}"
ETCD_PEER_PORT=$((ETCD_PORT + 1))
API_PORT="${ACPHOST_KUBE_API_PORT:-16443}"
KUBELET_PORT=20250
KUBELET_HEALTHZ_PORT=20248
CM_PORT=20257
SCHED_PORT=20259

NODE=localhost # the apiserver reaches the kubelet by this name
SERVICE_RANGE=10.96.0.0/24
SERVICE_IP=10.96.0.1
POD_SUBNET="${ACPHOST_KUBE_POD_SUBNET:-10.244.0.0/24}"
CNI_NET=acphost-kube
BRIDGE=acphkube0
TEST_IMAGE=localhost/acphost-kube/busybox:1
PAUSE_IMAGE=localhost/acphost-kube/pause:1

# agent-sandbox's controller (sandbox.sh), beside the cluster: its health
# probe on loopback, its metrics off.
SANDBOX_MODULE=sigs.k8s.io/agent-sandbox
SANDBOX_VERSION=v1.0.1
SANDBOX_PROBE_PORT="${ACPHOST_KUBE_SANDBOX_PROBE_PORT:-20281}"
SANDBOX_NAME=agent-sandbox-controller # its pid file, log and binary

# Binaries built by build.sh and sandbox.sh are kept here between runs.
KUBE_CACHE="${ACPHOST_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/acphost-kube}"

# What the cluster may change on the host that lives outside KUBE_DIR: the
# sysctls the kubelet (and the bridge plugin) set, and the paths that
# kubelet, containerd and CNI use whatever they are told.
CHANGED_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
	kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
	net.ipv6.conf.all.forwarding)
HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/netns
	/run/containerd /opt/containerd /var/lib/containerd /etc/kubernetes /var/run/kubernetes
	/etc/cni/net.d)

PACKAGES=(containerd runc containernetworking-plugins iptables nftables busybox-static
	openssl gcc curl)

log() { printf '[kube/%s] %s\n' "${KUBE_STEP:-lib}" "$*" >&2; }
die() {
	log "FAIL: $*"
	exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# alive PID: the process exists and is not a zombie (the daemons outlive
# up.sh; whoever inherits them may be slow to reap).
alive() {
	local st
	st=$(sed 's/.*) //; s/ .*//' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# pidof_component NAME: the pid up.sh recorded, if that process still runs.
pidof_component() {
	local f="$KUBE_DIR/run/$1.pid" pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && alive "$pid" || return 1
	echo "$pid"
}

# wait_gone PID SECONDS: poll until the process is gone; 1 if it is not.
wait_gone() {
	local deadline=$(($(date +%s) + $2))
	while alive "$1"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# stop_component NAME: SIGTERM to the pid recorded in KUBE_DIR/run/NAME.pid,
# SIGKILL after 15 s; the pid file goes either way.
stop_component() {
	local pid
	pid=$(pidof_component "$1") || { rm -f "$KUBE_DIR/run/$1.pid"; return 0; }
	kill -TERM "$pid" 2>/dev/null
	if ! wait_gone "$pid" 15; then
		log "$1 ($pid) ignored SIGTERM for 15 s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null
		wait_gone "$pid" 5 || log "$1 ($pid) survives SIGKILL"
	fi
	rm -f "$KUBE_DIR/run/$1.pid"
}

# curl_api PATH: a GET on the apiserver as the admin, compact JSON.
curl_api() {
	curl -fsS -A acphost-kube --max-time 5 --cacert "$KUBE_DIR/pki/ca.crt" \
		--cert "$KUBE_DIR/pki/admin.crt" --key "$KUBE_DIR/pki/admin.key" \
		"https://127.0.0.1:$API_PORT$1"
}

# snapshot DIR: what of the host the cluster could change, one file per kind,
# each sorted, so that down.sh can undo and report the difference.
snapshot() {
	local d=$1 k
	mkdir -p "$d"
	for k in "${CHANGED_SYSCTLS[@]}"; do
		printf '%s = %s\n' "$k" "$(sysctl -n "$k" 2>/dev/null || echo '?')"
	done >"$d/sysctl"
	# Every sysctl but the volatile counters and the per-interface ones
	# (the interfaces are compared themselves).
	sysctl -a 2>/dev/null | grep -Ev '^(kernel\.random\.|kernel\.ns_last_pid|kernel\.pty\.nr|fs\.(dentry-state|inode-nr|inode-state|file-nr|aio-nr|quota\.)|net\.netfilter\.nf_conntrack_count|kernel\.perf_event_max_sample_rate|net\.ipv[46]\.(conf|neigh)\.|vm\.stat_refresh|fs\.binfmt_misc)' |
		sort >"$d/sysctl-all"
	awk '{ print $5 }' /proc/self/mountinfo | sort -u >"$d/mounts"
	{ ls -1 /run/netns 2>/dev/null || true; } | sort >"$d/netns"
	ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort >"$d/links"
	nft_objects | sort >"$d/nft"
	find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d 2>/dev/null | sort >"$d/cgroups"
	for k in "${HOST_PATHS[@]}"; do [ -e "$k" ] && echo "$k"; done | sort >"$d/paths"
	true
}

# nft_objects: "table FAMILY NAME" and "chain FAMILY TABLE NAME" lines (what
# iptables-nft makes; Debian's iptables-save does not show all of it).
nft_objects() {
	command -v nft >/dev/null || return 0
	nft list ruleset 2>/dev/null | awk '
		$1 == "table" { fam = $2; tab = $3; print "table " fam " " tab }
		$1 == "chain" { print "chain " fam " " tab " " $2 }'
}

# left_processes: processes of the cluster: in a kubepods cgroup, or with
# KUBE_DIR in their command line (the components, containerd, its shims).
left_processes() {
	local p cmd
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		alive "${p#/proc/}" || continue # a zombie holds nothing; its reaper is not ours
		cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		if grep -q kubepods "$p/cgroup" 2>/dev/null || [[ "$cmd" == *"$KUBE_DIR/"* ]]; then
			case "$cmd" in *left_processes* | *down.sh* | *up.sh*) continue ;; esac
			printf '%s %s\n' "${p#/proc/}" "${cmd:0:160}"
		fi
	done
}

# check_left BASELINE: what of the cluster is still on the host, compared with
# the snapshot up.sh took before it started anything. Prints one line per
# thing left and returns 1 if there is any. Changes that are not the
# cluster's kind (another job's mounts, a sysctl nobody here sets) are
# printed as "note:" and do not count.
check_left() {
	local base=$1 cur rc=0
	cur=$(mktemp -d)
	snapshot "$cur"
	{
		left_processes | sed 's/^/process: /'
		comm -13 "$base/mounts" "$cur/mounts" | grep -E "^$KUBE_DIR|/netns/|kubelet|containerd|/cni" | sed 's/^/mount: /'
		comm -13 "$base/netns" "$cur/netns" | sed 's/^/netns: /'
		comm -13 "$base/links" "$cur/links" | sed 's/^/interface: /'
		comm -13 "$base/nft" "$cur/nft" | sed 's/^/nftables: /'
		comm -13 "$base/cgroups" "$cur/cgroups" | sed 's/^/cgroup: /'
		comm -13 "$base/paths" "$cur/paths" | sed 's/^/path: /'
		diff "$base/sysctl" "$cur/sysctl" | sed -n 's/^> /sysctl: /p'
	} >"$cur/left"
	{
		comm -13 "$base/mounts" "$cur/mounts" | grep -vE "^$KUBE_DIR|/netns/|kubelet|containerd|/cni" | sed 's/^/note: another mount: /'
		comm -13 "$base/sysctl-all" "$cur/sysctl-all" | grep -vF -f <(printf '%s =\n' "${CHANGED_SYSCTLS[@]}") |
			sed 's/^/note: sysctl now: /'
	} >&2
	if [ -s "$cur/left" ]; then
		cat "$cur/left"
		rc=1
	fi
	rm -rf "$cur"
	return $rc
}
