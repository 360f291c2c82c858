#!/usr/bin/env bash
# podman-setup.sh - install and configure rootful podman on this VM kind
# (Debian 12, root, hybrid cgroups, no image registry) so that
#   podman run -d --init --name X --rootfs /:O sleep infinity
#   podman exec -i X <cmd>
# work. Idempotent; exits non-zero if the engine does not work afterwards.
#
# Env knobs:
#   CONTAINER_RUNTIME=runc (default) | crun
#       crun 1.8.1 refuses this machine's hybrid cgroups ("cgroups in hybrid
#       mode not supported, drop all controllers from cgroupv2") because
#       hugetlb is bound to cgroup2.  With crun this script moves hugetlb to
#       its own v1 hierarchy (/sys/fs/cgroup/hugetlb) first; that also allows
#       --cgroups=disabled, which keeps containers in the caller's cgroups.
#   IMPORT_BUSYBOX=1   also build the image localhost/busybox:latest from
#                      Debian's busybox-static (no registry involved).
#   SKIP_SMOKE=1       skip the smoke test.
#
#   .ci/podman-setup.sh --packages   prints the Debian packages it needs
#                                    (so that CI installs them with others)
set -euo pipefail

RUNTIME="${CONTAINER_RUNTIME:-runc}"
log() { printf '[podman-setup] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

case "$RUNTIME" in runc|crun) ;; *) die "CONTAINER_RUNTIME must be runc or crun";; esac
pkgs=(podman catatonit "$RUNTIME")
[ "${IMPORT_BUSYBOX:-0}" = 1 ] && pkgs+=(busybox-static)
if [ "${1:-}" = --packages ]; then echo "${pkgs[*]}"; exit 0; fi
[ "$(id -u)" = 0 ] || die "must run as root"

# --- 1. packages ---------------------------------------------------------
# shellcheck source-path=SCRIPTDIR source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
apt_install "${pkgs[@]}" || die "apt-get install ${pkgs[*]} failed"
command -v podman >/dev/null || die "podman not on PATH after install"

# --- 2. containers.conf ----------------------------------------------------
# Why each line (SPEC.md, Transports):
#  * default_ulimits: root here lacks CAP_SYS_RESOURCE and has a hard
#    RLIMIT_NOFILE of 20000; podman's defaults (nofile=1048576, nproc=32768)
#    make the runtime fail with "setrlimit RLIMIT_NOFILE: Operation not
#    permitted".
#  * netns=none: no bridge, so netavark never touches iptables/ip_forward.
#  * runtime: runc works with cgroupfs on hybrid cgroups; crun needs hugetlb moved.
conf=/etc/containers/containers.conf
want="$(cat <<EOF
# Written by podman-setup.sh (container-exec transport tests).
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
netns = "none"

[engine]
runtime = "$RUNTIME"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
)"
mkdir -p /etc/containers
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
  [ -f "$conf" ] && cp -p "$conf" "$conf.bak.$(date +%s)"
  printf '%s\n' "$want" > "$conf"
  log "wrote $conf (runtime=$RUNTIME)"
fi

# --- 3. crun only: take hugetlb off cgroup2 --------------------------------
if [ "$RUNTIME" = crun ] && grep -qw hugetlb /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null; then
  mkdir -p /sys/fs/cgroup/hugetlb
  mountpoint -q /sys/fs/cgroup/hugetlb \
    || mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb \
    || die "could not mount a v1 hugetlb hierarchy (needed by crun here)"
  log "moved hugetlb controller to /sys/fs/cgroup/hugetlb for crun"
fi

# --- 4. busybox image (optional) ------------------------------------------
if [ "${IMPORT_BUSYBOX:-0}" = 1 ] && ! podman image exists localhost/busybox:latest; then
  root="$(mktemp -d)"
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root"
  cp /bin/busybox "$root/bin/busybox"
  for a in $("$root/bin/busybox" --list); do [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
  echo 'root:x:0:' > "$root/etc/group"
  tar -C "$root" -c . | podman import -q --change 'CMD ["/bin/sh"]' - localhost/busybox:latest >/dev/null \
    || die "podman import failed"
  rm -rf "$root"
  log "imported localhost/busybox:latest"
fi

# --- 5. smoke test -----------------------------------------------------------
if [ "${SKIP_SMOKE:-0}" != 1 ]; then
  name="podman-setup-smoke-$$"
  cleanup() { podman rm -f -t 0 "$name" >/dev/null 2>&1 || true; }
  trap cleanup EXIT
  run_flags=(--init)
  [ "$RUNTIME" = crun ] && run_flags+=(--cgroups=disabled)
  podman run --rm "${run_flags[@]}" --rootfs /:O true || die "podman run --rootfs /:O true failed"
  podman run -d "${run_flags[@]}" --name "$name" --rootfs /:O sleep infinity >/dev/null \
    || die "podman run -d failed"
  # stdin -> stdout byte-exact (CR, NUL, 0xff kept), stderr separate, exit code kept
  in="$(mktemp)"; out="$(mktemp)"; err="$(mktemp)"
  printf 'line1\nline2\r\n\000\001\377 end\n' > "$in"
  set +e
  podman exec -i "$name" sh -c 'cat; echo to-stderr >&2; exit 3' < "$in" > "$out" 2> "$err"
  rc=$?
  set -e
  [ "$rc" = 3 ] || die "exec exit code: want 3, got $rc"
  cmp -s "$in" "$out" || die "exec stdout differs from stdin"
  [ "$(cat "$err")" = to-stderr ] || die "exec stderr: $(cat "$err")"
  rm -f "$in" "$out" "$err"
  cleanup
  trap - EXIT
  log "smoke test passed"
fi

log "ready: $(podman --version), runtime $("$RUNTIME" --version | head -1)"
