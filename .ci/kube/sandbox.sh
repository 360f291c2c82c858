#!/usr/bin/env bash
# sandbox.sh - agent-sandbox (kubernetes-sigs, v1.0.1) on the cluster up.sh
# started: its CRDs applied server-side (Sandbox, and the extensions
# SandboxTemplate, SandboxWarmPool, SandboxClaim), its controller running
# beside the cluster with the extensions on, and ready. Idempotent: if the
# controller recorded in KUBE_DIR/run runs and answers, it does nothing.
#
#   .ci/kube/up.sh && .ci/kube/sandbox.sh
#   .ci/kube/down.sh          # stops the controller with the rest
#   .ci/kube/sandbox.sh --build   # only build (or find cached) the controller
#                                 # and its CRDs; prints their directory
#
# The controller is `go install`ed from the Go module proxy (the module's own
# go.mod and go.sum pin its dependencies) into the cache build.sh uses, keyed
# on the version, the Go version and the flags; its CRDs are copied from the
# module next to it, so a cached run needs neither the network nor the module
# cache. Log: KUBE_DIR/log/agent-sandbox-controller.log. Knobs: ACPHOST_KUBE_DIR,
# ACPHOST_KUBE_CACHE, ACPHOST_KUBE_SANDBOX_PROBE_PORT (loopback health port,
# default 20281), ACPHOST_KUBE_TIMEOUT (seconds for each wait, default 120).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
KUBE_STEP=sandbox
timeout_s="${ACPHOST_KUBE_TIMEOUT:-120}"
t0=$(now)

# build: the controller and its CRDs, built or cached; sets out.
build() {
	command -v go >/dev/null || die "go not on PATH"
	local pkg="$SANDBOX_MODULE/cmd/$SANDBOX_NAME" ldflags key t tmp mod
	ldflags="-s -w -X $SANDBOX_MODULE/internal/version.gitVersion=$SANDBOX_VERSION"
	key="$({ echo "$pkg@$SANDBOX_VERSION"; go version; echo "$ldflags"; } | sha256sum | cut -c1-16)"
	out="$KUBE_CACHE/sandbox-$key"
	if [ -x "$out/$SANDBOX_NAME" ] && [ -d "$out/crds" ]; then
		log "cached: $out"
		return
	fi
	t=$(now)
	mkdir -p "$KUBE_CACHE"
	tmp="$(mktemp -d "$KUBE_CACHE/.sandbox-XXXXXX")"
	# shellcheck disable=SC2064 # tmp is fixed now
	trap "rm -rf '$tmp'" EXIT
	log "go install $pkg@$SANDBOX_VERSION (cold: about 3 CPU-minutes, warm: a relink)"
	# Outside any module and workspace, so that this repository plays no
	# part: pkg@version builds with the module's own go.mod and go.sum.
	(cd "$tmp" && GOWORK=off GOFLAGS=-buildvcs=false GOBIN="$tmp" CGO_ENABLED=0 \
		go install -trimpath -ldflags "$ldflags" "$pkg@$SANDBOX_VERSION") ||
		die "go install $pkg@$SANDBOX_VERSION failed"
	mod=$(cd "$tmp" && GOWORK=off GOFLAGS="" go mod download -json "$SANDBOX_MODULE@$SANDBOX_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[ -d "$mod/k8s/crds" ] || die "no k8s/crds in $SANDBOX_MODULE@$SANDBOX_VERSION (at '$mod')"
	mkdir "$tmp/crds"
	cp "$mod"/k8s/crds/*.yaml "$tmp/crds/"
	chmod -R u+w,go+rX "$tmp"
	find "$KUBE_CACHE" -maxdepth 1 -name 'sandbox-*' -type d ! -name "sandbox-$key" -exec rm -rf {} +
	rm -rf "$out"
	mv "$tmp" "$out"
	trap - EXIT
	log "built $out in $(since "$t") s ($(du -sh "$out/$SANDBOX_NAME" | cut -f1))"
}

if [ "${1:-}" = --build ]; then
	build
	echo "$out"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "must run as root"
[ -f "$ENV_FILE" ] || die "no $ENV_FILE: is the cluster up (up.sh)?"
# shellcheck disable=SC1090
. "$ENV_FILE"
probe="http://127.0.0.1:$SANDBOX_PROBE_PORT"
ready() { curl -fsS --max-time 2 "$probe/readyz" >/dev/null 2>&1; }

if pid=$(pidof_component "$SANDBOX_NAME"); then
	ready || die "$SANDBOX_NAME ($pid) runs but $probe/readyz does not answer; see $KUBE_DIR/log/$SANDBOX_NAME.log"
	log "$SANDBOX_NAME already runs ($pid) and is ready"
	exit 0
fi
build

# --- CRDs -------------------------------------------------------------------
t=$(now)
kubectl apply --server-side --force-conflicts --field-manager=acphost-ci -f "$out/crds" >/dev/null ||
	die "applying the CRDs in $out/crds failed"
crds=()
for f in "$out"/crds/*.yaml; do
	n=$(basename "$f" .yaml)
	crds+=("crd/${n#*_}.${n%%_*}")
done
kubectl wait --for=condition=Established --timeout="${timeout_s}s" "${crds[@]}" >/dev/null ||
	die "CRDs not Established: ${crds[*]}"
log "CRDs applied and Established in $(since "$t") s: ${crds[*]#crd/}"

# --- the controller ---------------------------------------------------------
t=$(now)
! ready || die "something else answers on $probe/readyz: the port is taken (ACPHOST_KUBE_SANDBOX_PROBE_PORT)"
mkdir -p "$KUBE_DIR/log" "$KUBE_DIR/run"
setsid "$out/$SANDBOX_NAME" --kubeconfig "$KUBECONFIG_PATH" --extensions --leader-elect=false \
	--health-probe-bind-address "127.0.0.1:$SANDBOX_PROBE_PORT" --metrics-bind-address 0 \
	>"$KUBE_DIR/log/$SANDBOX_NAME.log" 2>&1 </dev/null &
echo $! >"$KUBE_DIR/run/$SANDBOX_NAME.pid"
deadline=$(($(date +%s) + timeout_s))
until ready; do
	pidof_component "$SANDBOX_NAME" >/dev/null || {
		tail -n 20 "$KUBE_DIR/log/$SANDBOX_NAME.log" >&2
		die "$SANDBOX_NAME exited before it was ready"
	}
	[ "$(date +%s)" -lt "$deadline" ] || die "$SANDBOX_NAME not ready after ${timeout_s} s"
	sleep 0.1
done
# /readyz is a ping; the four controllers (sandbox, and the extensions'
# sandboxtemplate, sandboxwarmpool, sandboxclaim) start their workers once
# their caches are synced.
workers() { grep -c '"msg":"Starting workers"' "$KUBE_DIR/log/$SANDBOX_NAME.log" || true; }
until [ "$(workers)" -ge 4 ]; do
	pidof_component "$SANDBOX_NAME" >/dev/null || {
		tail -n 20 "$KUBE_DIR/log/$SANDBOX_NAME.log" >&2
		die "$SANDBOX_NAME exited before its controllers started"
	}
	[ "$(date +%s)" -lt "$deadline" ] || die "$SANDBOX_NAME: $(workers) of 4 controllers started after ${timeout_s} s"
	sleep 0.1
done
log "$SANDBOX_NAME ready in $(since "$t") s ($probe/readyz, 4 controllers started); all in $(since "$t0") s"
