#!/usr/bin/env bash
# as-user.sh runs the README's test command and the interop suite as an
# unprivileged user, in a fresh clone of this checkout, with HOME not the
# user's passwd home: the way a developer without root runs them. No test
# may fail for want of root (one that truly needs it skips, saying why),
# and afterwards no process of that user may be left (checked, not
# assumed). Run by .ci/run as root, after the root run (whose Go module
# cache and installed interop agents it copies, so nothing is fetched
# twice).
#
#   .ci/as-user.sh            # go test -race ./... and interop/run.sh
#   ACPHOST_AS_USER_INTEROP=0 .ci/as-user.sh   # the Go tests only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ "$(id -u)" -ne 0 ]; then echo "as-user: run it as root (it makes the user)"; exit 1; fi
user=${ACPHOST_CI_USER:-acphostci}
if ! id "$user" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/bash "$user"
fi
uid=$(id -u "$user")
if [ "$uid" -eq 0 ]; then echo "as-user: $user is root"; exit 1; fi

# A fresh clone the user owns, a HOME that is not its passwd home, and Go
# caches it may write.
work=$(mktemp -d /tmp/acphost-as-user.XXXXXX)
chmod 755 "$work"
# The user's own temporary directory, short as a user's usually is (the
# CLI tests put control sockets under their t.TempDir(); a path over a
# unix socket's 107 bytes is bound through the directory's descriptor).
utmp=$(mktemp -d /tmp/aXXX)
git clone -q --no-local "$root" "$work/acphost"
mkdir -p "$work/home" "$work/go/pkg"
modcache=$(go env GOMODCACHE)
if [ -d "$modcache" ]; then cp -a "$modcache" "$work/go/pkg/mod"; fi
if [ -d interop/.cache/agents ] && [ "${ACPHOST_AS_USER_INTEROP:-1}" = 1 ]; then
	mkdir -p "$work/acphost/interop/.cache"
	cp -a interop/.cache/agents "$work/acphost/interop/.cache/"
fi
chown -R "$user:" "$work" "$utmp"

# as runs a command as the user, in the clone, with a clean environment.
as() {
	runuser -u "$user" -- env -i \
		HOME="$work/home" USER="$user" LOGNAME="$user" PATH="$(dirname "$(command -v go)"):/usr/local/bin:/usr/bin:/bin" \
		GOPATH="$work/go" GOFLAGS="-modcacherw -buildvcs=false" GOPROXY="$(go env GOPROXY)" GOTOOLCHAIN=local \
		TMPDIR="$utmp" \
		ACPHOST_REQUIRE_SSHD="${ACPHOST_REQUIRE_SSHD:-}" ACPHOST_REQUIRE_TMUX="${ACPHOST_REQUIRE_TMUX:-}" \
		ACPHOST_REQUIRE_CHROMIUM="${ACPHOST_REQUIRE_CHROMIUM:-}" \
		bash -c 'cd "$0" && exec "$@"' "$work/acphost" "$@"
}

# leftovers lists the user's processes that are not zombies (a zombie is
# dead; it waits only for an init that reaps lazily), polling up to 10 s
# for those still dying.
leftovers() {
	local left deadline=$((SECONDS + 10))
	while :; do
		left=$(ps -u "$user" -o pid=,stat=,args= | awk '$2 !~ /^Z/')
		if [ -z "$left" ] || [ $SECONDS -ge $deadline ]; then
			printf '%s' "$left"
			return
		fi
		sleep 0.2
	done
}

# check fails the run if a process of the user outlived step, killing it
# (by pid) so the next step starts clean.
check() {
	local left
	left=$(leftovers)
	if [ -n "$left" ]; then
		echo "as-user: processes of $user outlived $1:"
		echo "$left"
		echo "$left" | awk '{print $1}' | xargs -r kill -KILL 2>/dev/null || true
		return 1
	fi
	echo "as-user: no process of $user is left after $1"
}

echo "== as $user (uid $uid), HOME=$work/home, in a fresh clone: id $(as id -u):$(as id -g)"
status=0
if ! as go test -race -count=1 ./... ./cmd/acphost/...; then status=1; fi
check "go test -race ./... ./cmd/acphost/..." || status=1
if [ "${ACPHOST_AS_USER_INTEROP:-1}" = 1 ]; then
	echo "== as $user: interop (six real agents)"
	if ! as interop/run.sh; then status=1; fi
	check "interop/run.sh" || status=1
fi
if [ $status -eq 0 ]; then rm -rf "$work" "$utmp"; fi
exit $status
