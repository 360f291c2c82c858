# apt.sh - apt_install, shared by .ci/run, .ci/podman-setup.sh and
# .ci/kube/up.sh (sourced).
# shellcheck shell=bash

# apt_install PKG...: install those of the Debian packages that are not
# installed yet, all in one apt transaction, without recommends; the package
# lists are refreshed only if the first attempt fails. Callers may run at
# the same time (CI installs in the background): they take turns on a lock,
# and dpkg's own lock is waited for, not failed on. Quiet unless it fails;
# returns apt-get's status.
apt_install() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ "${#missing[@]}" -gt 0 ] || return 0
	(
		flock 9
		# Another caller may have installed them while this one waited.
		local still=()
		for p in "${missing[@]}"; do
			dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || still+=("$p")
		done
		[ "${#still[@]}" -gt 0 ] || exit 0
		export DEBIAN_FRONTEND=noninteractive
		local apt=(apt-get -q -o DPkg::Lock::Timeout=300)
		local out
		out=$(mktemp)
		echo "apt_install: ${still[*]}" >&2
		if ! "${apt[@]}" install -y --no-install-recommends "${still[@]}" >"$out" 2>&1; then
			if ! { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "${still[@]}"; } >"$out" 2>&1; then
				cat "$out" >&2
				rm -f "$out"
				echo "apt_install: installing ${still[*]} failed" >&2
				exit 1
			fi
		fi
		rm -f "$out"
	) 9>/run/lock/acphost-ci-apt.lock
}
