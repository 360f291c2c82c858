#!/usr/bin/env bash
# Installs the interop client's npm packages into interop/wsclient/node_modules,
# pinned by package-lock.json (npm ci), with a cache of its own
# ($ACPHOST_NPM_CACHE, default interop/wsclient/.npm-cache). Idempotent: when
# node_modules was installed from the current lock it does nothing and needs no
# network; otherwise --prefer-offline uses the cache before the registry.
set -euo pipefail
cd "$(dirname "$0")"
export npm_config_cache="${ACPHOST_NPM_CACHE:-$PWD/.npm-cache}"
installed() {
	for p in @agentclientprotocol/sdk ws zod; do
		[ -f "node_modules/$p/package.json" ] || return 1
	done
	[ -f package-lock.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]
}
if installed; then
	echo "interop/wsclient: already installed"
	exit 0
fi
if [ -f package-lock.json ]; then
	npm ci --no-audit --no-fund --prefer-offline
else
	npm install --no-audit --no-fund --prefer-offline
fi
