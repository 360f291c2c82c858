#!/usr/bin/env bash
# smoke.sh - the cluster up.sh started runs a pod from the locally imported
# test image, `kubectl exec -i` into it carries stdin there and stdout and the
# exit status back, and the pod is deleted. Exits 1 on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
KUBE_STEP=smoke
[ -f "$ENV_FILE" ] || die "no $ENV_FILE: is the cluster up (up.sh)?"
# shellcheck disable=SC1090
. "$ENV_FILE"

pod="acphost-smoke-$$"
trap 'kubectl delete pod "$pod" --ignore-not-found --wait=false >/dev/null 2>&1 || true' EXIT

t=$(now)
kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  namespace: default
  labels:
    app.kubernetes.io/managed-by: acphost-smoke
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: main
    image: $ACPHOST_KUBE_TEST_IMAGE
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    securityContext:
      runAsNonRoot: true
      runAsUser: 65534
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
EOF
kubectl wait --for=condition=Ready "pod/$pod" --timeout=60s >/dev/null ||
	{ kubectl describe pod "$pod" >&2; die "pod $pod not Ready in 60 s"; }
log "pod Ready in $(since "$t") s (create to Ready, kubectl included)"

t=$(now)
want="stdin to the pod and back, $pod"
got=$(printf '%s\n' "$want" | kubectl exec -i "$pod" -- cat)
[ "$got" = "$want" ] || die "exec -i echoed '$got', want '$want'"
log "exec -i echoed stdin back in $(since "$t") s"

rc=0
kubectl exec "$pod" -- sh -c 'exit 7' 2>/dev/null || rc=$?
[ "$rc" = 7 ] || die "exit status $rc from the pod, want 7"
user=$(kubectl exec "$pod" -- id -u)
[ "$user" = 65534 ] || die "the pod runs as uid $user, want 65534"

t=$(now)
kubectl delete pod "$pod" --wait=true --timeout=60s >/dev/null
log "pod deleted (gone from the API) in $(since "$t") s"
trap - EXIT
log "ok"
