#!/usr/bin/env bash
# up.sh - start a throwaway one-node Kubernetes v1.37.2 on this machine (root,
# Debian 12, cgroup v1 hybrid, no registry): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd and a kubelet, all bound
# to loopback, all state under KUBE_DIR (lib.sh). Returns once the node is
# Ready and the default service account exists, with the test image
# (TEST_IMAGE, a static busybox) and the pause image imported into containerd.
#
#   .ci/kube/up.sh && . /var/lib/acphost-kube/env && kubectl get nodes
#   .ci/kube/down.sh     # always, also after a failed up.sh
#
# Knobs: ACPHOST_KUBE_DIR (state), ACPHOST_KUBE_CACHE (binaries, build.sh),
# ACPHOST_KUBE_TIMEOUT (seconds for each wait, default 120).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"
KUBE_STEP=up
timeout_s="${ACPHOST_KUBE_TIMEOUT:-120}"
t0=$(now)

[ "$(id -u)" = 0 ] || die "must run as root"
if [ -d "$KUBE_DIR" ]; then
	die "$KUBE_DIR exists: a cluster is up or was not torn down; run $here/down.sh first"
fi

# --- packages -----------------------------------------------------------
# shellcheck source-path=SCRIPTDIR source=../lib/apt.sh
. "$here/../lib/apt.sh"
t=$(now)
apt_install "${PACKAGES[@]}" || die "apt-get install ${PACKAGES[*]} failed"
log "packages present after $(since "$t") s"
for c in containerd ctr runc nft busybox openssl gcc curl; do
	command -v "$c" >/dev/null || die "$c not on PATH after installing ${PACKAGES[*]}"
done
for c in bridge host-local loopback; do
	[ -x "/usr/lib/cni/$c" ] || die "CNI plugin /usr/lib/cni/$c missing (containernetworking-plugins)"
done

bin="$("$here/build.sh")"
export PATH="$bin:$PATH"

# --- the host as it is, before anything starts (down.sh compares) ------
mkdir -p "$KUBE_DIR"/{pki,etcd,log,run,kubelet,pod-logs,images,cni/net.d,cni/ipam,containerd}
chmod 700 "$KUBE_DIR" "$KUBE_DIR/etcd"
echo "$bin" >"$KUBE_DIR/bin-dir" # for down.sh and smoke.sh
snapshot "$KUBE_DIR/baseline"

# If anything below fails: say where to look. down.sh cleans up.
trap 'rc=$?; if [ $rc != 0 ]; then
	for f in "$KUBE_DIR"/log/*.log; do [ -f "$f" ] && { echo "--- tail $f"; tail -n 15 "$f"; }; done >&2
	log "FAIL (exit $rc) after $(since "$t0") s; logs in $KUBE_DIR/log; run $here/down.sh"
fi' EXIT

# start NAME CMD ARGS...: run a daemon in its own session, log and pid in KUBE_DIR.
start() {
	local name=$1
	shift
	setsid "$@" >"$KUBE_DIR/log/$name.log" 2>&1 </dev/null &
	echo $! >"$KUBE_DIR/run/$name.pid"
}

# wait_for DESC CMD...: poll CMD until it succeeds; fail at the deadline or
# as soon as one of the started daemons has exited.
wait_for() {
	local desc=$1 deadline f
	shift
	deadline=$(($(date +%s) + timeout_s))
	until "$@" >/dev/null 2>&1; do
		for f in "$KUBE_DIR"/run/*.pid; do
			[ -f "$f" ] || continue
			pidof_component "$(basename "$f" .pid)" >/dev/null ||
				die "$(basename "$f" .pid) exited while waiting for $desc"
		done
		[ "$(date +%s)" -lt "$deadline" ] || die "no $desc after ${timeout_s} s"
		sleep 0.1
	done
}

# --- PKI (EC P-256, valid a week) ----------------------------------------
t=$(now)
pki="$KUBE_DIR/pki"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/$1.key" 2>/dev/null; }
# cert NAME SUBJECT EKU [SAN]: a certificate signed by the cluster CA.
cert() {
	local name=$1 subj=$2 eku=$3 san=${4:-}
	key "$name"
	openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr"
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		if [ -n "$san" ]; then echo "subjectAltName=$san"; fi
	} >"$pki/$name.ext"
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
		-set_serial "0x$(openssl rand -hex 16)" -days 7 -extfile "$pki/$name.ext" \
		-out "$pki/$name.crt" 2>/dev/null
	rm -f "$pki/$name.csr" "$pki/$name.ext"
}
key ca
openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=acphost-kube-ca" -days 7 \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
	-out "$pki/ca.crt"
local_san="DNS:localhost,IP:127.0.0.1"
cert etcd "/CN=etcd" serverAuth,clientAuth "$local_san"
cert etcd-client "/CN=kube-apiserver-etcd-client" clientAuth
cert apiserver "/CN=kube-apiserver" serverAuth \
	"$local_san,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:$SERVICE_IP"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin "/O=system:masters/CN=acphost-kube-admin" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert kubelet-client "/O=system:nodes/CN=system:node:$NODE" clientAuth
cert kubelet "/CN=$NODE" serverAuth "$local_san"
key sa
openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

# kubeconfig FILE USER: credentials embedded, so the file can be copied.
kubeconfig() {
	local b64='base64 -w0'
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: acphost-kube
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $($b64 <"$pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $($b64 <"$pki/$2.crt")
    client-key-data: $($b64 <"$pki/$2.key")
contexts:
- name: acphost-kube
  context:
    cluster: acphost-kube
    user: $2
current-context: acphost-kube
EOF
	chmod 600 "$1"
}
kubeconfig "$KUBECONFIG_PATH" admin
for u in controller-manager scheduler kubelet-client; do kubeconfig "$KUBE_DIR/$u.kubeconfig" "$u"; done
log "PKI and kubeconfigs in $(since "$t") s"

# --- images: pause and a static busybox, as docker archives -------------
img="$KUBE_DIR/images"
mkdir -p "$img/pause-root" "$img/busybox-root/bin" "$img/busybox-root/etc" "$img/busybox-root/tmp"
cp "$bin/pause" "$img/pause-root/pause"
"$here/image.sh" "$img/pause.tar" "$PAUSE_IMAGE" "$img/pause-root" /pause
cp "$(command -v busybox)" "$img/busybox-root/bin/busybox"
for a in $("$img/busybox-root/bin/busybox" --list); do
	[ "$a" = busybox ] || ln -s busybox "$img/busybox-root/bin/$a"
done
chmod 1777 "$img/busybox-root/tmp"
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$img/busybox-root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$img/busybox-root/etc/group"
"$here/image.sh" "$img/busybox.tar" "$TEST_IMAGE" "$img/busybox-root" /bin/sh
rm -rf "$img/pause-root" "$img/busybox-root"

# --- etcd ------------------------------------------------------------------
t=$(now)
start etcd "$bin/etcd" --name acphost-kube --data-dir "$KUBE_DIR/etcd" \
	--listen-client-urls "https://127.0.0.1:$ETCD_PORT" --advertise-client-urls "https://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "acphost-kube=http://127.0.0.1:$ETCD_PEER_PORT" \
	--cert-file "$pki/etcd.crt" --key-file "$pki/etcd.key" --client-cert-auth --trusted-ca-file "$pki/ca.crt" \
	--unsafe-no-fsync --log-level warn
wait_for "etcd health" curl -fsS --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/etcd-client.crt" \
	--key "$pki/etcd-client.key" "https://127.0.0.1:$ETCD_PORT/health"
log "etcd healthy in $(since "$t") s"

# --- kube-apiserver --------------------------------------------------------
# The node is called localhost and reached by that name (loopback only);
# with no endpoint reconciler the loopback advertise address is accepted.
t=$(now)
start kube-apiserver "$bin/kube-apiserver" \
	--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
	--etcd-servers "https://127.0.0.1:$ETCD_PORT" --etcd-cafile "$pki/ca.crt" \
	--etcd-certfile "$pki/etcd-client.crt" --etcd-keyfile "$pki/etcd-client.key" \
	--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
	--client-ca-file "$pki/ca.crt" --anonymous-auth=false \
	--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
	--service-cluster-ip-range "$SERVICE_RANGE" \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
	--kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
	--kubelet-client-key "$pki/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types Hostname \
	--endpoint-reconciler-type none --cert-dir "$KUBE_DIR/pki/apiserver-generated" --profiling=false
wait_for "apiserver /readyz" curl_api /readyz
log "apiserver ready in $(since "$t") s"

# --- controller-manager and scheduler -----------------------------------
start kube-controller-manager "$bin/kube-controller-manager" \
	--kubeconfig "$KUBE_DIR/controller-manager.kubeconfig" \
	--authentication-kubeconfig "$KUBE_DIR/controller-manager.kubeconfig" \
	--authorization-kubeconfig "$KUBE_DIR/controller-manager.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$CM_PORT" --leader-elect=false \
	--use-service-account-credentials --service-account-private-key-file "$pki/sa.key" \
	--root-ca-file "$pki/ca.crt" --cluster-signing-cert-file "$pki/ca.crt" \
	--cluster-signing-key-file "$pki/ca.key" --profiling=false
start kube-scheduler "$bin/kube-scheduler" \
	--kubeconfig "$KUBE_DIR/scheduler.kubeconfig" \
	--authentication-kubeconfig "$KUBE_DIR/scheduler.kubeconfig" \
	--authorization-kubeconfig "$KUBE_DIR/scheduler.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false

# --- containerd ------------------------------------------------------------
# Its own root, state, socket and runc root; CRI with a local pause image,
# exec streams on loopback, no OOM score below the caller's (root here lacks
# CAP_SYS_RESOURCE), cgroupfs, and a CNI bridge without gateway or
# masquerade: pods have no network beyond their bridge, exec needs none.
cd_dir="$KUBE_DIR/containerd"
cat >"$cd_dir/config.toml" <<EOF
version = 2
root = "$cd_dir/root"
state = "$cd_dir/state"
oom_score = 0

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$cd_dir/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$cd_dir/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$KUBE_DIR/cni/net.d"
    max_conf_num = 1
EOF
cat >"$KUBE_DIR/cni/net.d/10-$CNI_NET.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NET",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_SUBNET" }]],
        "dataDir": "$KUBE_DIR/cni/ipam"
      }
    }
  ]
}
EOF
t=$(now)
start containerd containerd --config "$cd_dir/config.toml"
ctr_() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }
wait_for "containerd" ctr_ version
log "containerd up in $(since "$t") s"
t=$(now)
ctr_ images import "$img/pause.tar" >/dev/null
ctr_ images import "$img/busybox.tar" >/dev/null
log "images imported in $(since "$t") s: $PAUSE_IMAGE $TEST_IMAGE"

# --- kubelet -------------------------------------------------------------
cat >"$KUBE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $pki/kubelet.crt
tlsPrivateKeyFile: $pki/kubelet.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
# cgroup v1 hybrid, no systemd.
cgroupDriver: cgroupfs
failCgroupV1: false
# Root without CAP_SYS_RESOURCE may not lower OOM scores.
oomScoreAdj: 0
failSwapOn: false
resolvConf: ""
podLogsDir: $KUBE_DIR/pod-logs
# No iptables chains on the host: there is no kube-proxy to use them.
makeIPTablesUtilChains: false
# Imported images cannot be pulled back: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  imagefs.available: "1%"
  nodefs.available: "1%"
  memory.available: "100Mi"
EOF
t=$(now)
start kubelet "$bin/kubelet" --config "$KUBE_DIR/kubelet.yaml" \
	--kubeconfig "$KUBE_DIR/kubelet-client.kubeconfig" \
	--root-dir "$KUBE_DIR/kubelet" --hostname-override "$NODE"
node_ready() {
	local j
	j=$(curl_api "/api/v1/nodes/$NODE") && [[ $j == *'"type":"Ready","status":"True"'* ]]
}
wait_for "Ready node $NODE" node_ready
log "node Ready in $(since "$t") s (kubelet start to Ready)"
# Pods cannot be created before the controller-manager has made this.
wait_for "default service account" curl_api /api/v1/namespaces/default/serviceaccounts/default
log "default service account after $(since "$t0") s"

cat >"$ENV_FILE" <<EOF
# Written by up.sh: the one-node test cluster.
export KUBECONFIG=$KUBECONFIG_PATH
export PATH=$bin:\$PATH
export CONTAINERD_ADDRESS=$CONTAINERD_SOCK
export ACPHOST_KUBE_TEST_IMAGE=$TEST_IMAGE
EOF
log "cluster up in $(since "$t0") s: KUBECONFIG=$KUBECONFIG_PATH (or . $ENV_FILE)"
