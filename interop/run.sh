#!/usr/bin/env bash
# run.sh installs the six pinned ACP agent builds into interop/.cache/ (once;
# later runs reuse them) and runs the interop tests against them, offline,
# with a scripted mock LLM on 127.0.0.1.
#
#   interop/run.sh                 # install what is missing, then test
#   interop/run.sh -run 'Gemini'   # extra arguments go to go test
#
# Environment:
#   INTEROP_TIMEOUT   go test -timeout (default 25m)
#   INTEROP_NETNS     1 (default): run the tests in a fresh network namespace
#                     that has only loopback, when unshare allows it; 0: don't
#   INTEROP_REINSTALL 1: reinstall every agent
#   INTEROP_CACHE     install folder (default interop/.cache)
#   INTEROP_TRACE     a folder: record each agent's stdin/stdout there (debug)
#   INTEROP_STRACE    a folder: strace each agent's connect(2) calls (debug)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cache=${INTEROP_CACHE:-$here/.cache}
mkdir -p "$cache/agents"
export npm_config_cache=$cache/npm-cache
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# name|install specs (the first is the agent; the rest are companions)
agents=(
  "claude|@agentclientprotocol/claude-agent-acp@0.101.0"
  "claude-legacy|@zed-industries/claude-agent-acp@0.23.1"
  "codex-rs|@zed-industries/codex-acp@0.16.0 @zed-industries/codex-acp-linux-x64@0.16.0"
  "codex-ts|@agentclientprotocol/codex-acp@2.6.0"
  "opencode|opencode-ai@1.18.33"
  "gemini|@google/gemini-cli@0.61.0"
)

log() { printf '[run.sh %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
start=$(date +%s)

# Is the registry reachable? Only matters for agents not installed yet.
rm -f "$cache/registry-unreachable"
need_install=0
for entry in "${agents[@]}"; do
  name=${entry%%|*}; specs=${entry#*|}
  if [[ "${INTEROP_REINSTALL:-0}" == 1 || "$(cat "$cache/agents/$name/.installed" 2>/dev/null)" != "$specs" ]]; then
    need_install=1
  fi
done
if [[ $need_install == 1 ]]; then
  if ! out=$(timeout 60 npm ping --fetch-retries=1 --fetch-timeout=20000 2>&1); then
    cause=$(printf '%s\n' "$out" | grep -m1 -E 'FetchError|npm error [0-9]{3} ' || printf '%s\n' "$out" | grep -m1 'npm error')
    cause=${cause#npm error }
    reason="npm registry $(npm config get registry) unreachable: ${cause:-$(printf '%s' "$out" | tail -n 1)}"
    printf '%s\n' "$reason" >"$cache/registry-unreachable"
    log "$reason"
  fi
fi

install_one() { # name specs...
  local name=$1; shift
  local specs="$*" dir=$cache/agents/$name
  if [[ "${INTEROP_REINSTALL:-0}" != 1 && "$(cat "$dir/.installed" 2>/dev/null)" == "$specs" ]]; then
    log "$name: cached ($specs)"
    return 0
  fi
  if [[ -f "$cache/registry-unreachable" ]]; then
    return 0 # the tests skip, naming the cause
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  printf '{"name":"acphost-interop-%s","private":true}\n' "$name" >"$dir/package.json"
  local t0=$(date +%s)
  # --ignore-scripts: no install script may fetch anything; every agent here
  # runs without its scripts (npm 11 blocks them by default anyway).
  if (cd "$dir" && timeout 600 npm install --no-save --ignore-scripts --loglevel=error $specs) >"$dir/.install.log" 2>&1; then
    printf '%s\n' "$specs" >"$dir/.installed"
    rm -f "$dir/.install-error"
    log "$name: installed in $(( $(date +%s) - t0 ))s"
  else
    local rc=$?
    { echo "npm install $specs failed (exit $rc):"; tail -n 15 "$dir/.install.log"; } >"$dir/.install-error"
    rm -f "$dir/.installed"
    log "$name: INSTALL FAILED (see $dir/.install-error)"
  fi
}

pids=()
for entry in "${agents[@]}"; do
  name=${entry%%|*}; specs=${entry#*|}
  install_one "$name" $specs &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
installed=$(date +%s)
log "install step took $((installed - start))s"

# TestCLINamedAgentThroughNpx starts Claude as a user does, through npx;
# the tests run offline, so npx's own install is made here, outside the
# namespace (npx then takes it from the cache).
if [[ -f "$cache/agents/claude/.installed" ]]; then
  claude_spec=${agents[0]#claude|}
  if ! timeout 300 npm exec --yes --package="$claude_spec" -- true >"$cache/npx-warm.log" 2>&1; then
    log "npx $claude_spec could not be prepared (TestCLINamedAgentThroughNpx will fail): $(tail -n 1 "$cache/npx-warm.log")"
  fi
fi

cd "$root" || exit 1
export ACPHOST_INTEROP_CACHE=$cache
timeout_flag=${INTEROP_TIMEOUT:-25m}

# Build first, outside any namespace (this may fetch Go modules).
if ! go test -tags interop -race -count=1 -run '^$' ./interop/ >/dev/null; then
  go test -tags interop -race -count=1 -run '^$' ./interop/
  exit 1
fi

cmd=(go test -tags interop -race -count=1 -v -timeout "$timeout_flag" ./interop/ "$@")
netns=0
if [[ "${INTEROP_NETNS:-1}" == 1 ]] && unshare -n sh -c 'ip link set lo up' >/dev/null 2>&1; then
  netns=1
fi
if [[ $netns == 1 ]]; then
  log "running the tests in a network namespace with loopback only"
  export ACPHOST_INTEROP_NETNS=1
  GOPROXY=off unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${cmd[@]}"
else
  log "running the tests (no network namespace: agents are only configured for loopback)"
  "${cmd[@]}"
fi
rc=$?
log "tests took $(( $(date +%s) - installed ))s; whole run $(( $(date +%s) - start ))s; exit $rc"
exit $rc
