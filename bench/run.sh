#!/usr/bin/env bash
# Runs the acphost benchmarks (issue 8) and prints one markdown table.
#
# Builds bench/floodagent and bench/cmd/benchtable, then runs every workload
# with every client (acphost, the Go SDK v0.13.0, the raw limit) RUNS times,
# rotating the clients' order, each measurement in a fresh process.
#
#   bench/run.sh                 # full run, 5 runs per client
#   RUNS=3 bench/run.sh          # fewer runs
#   bench/run.sh -quick -runs 1  # smoke run (flags go to benchtable)
#   PROFILE=1 bench/run.sh       # also CPU/alloc profiles of acphost's first run
#
# The table goes to stdout and to $OUT/table.md; every run's raw metrics to
# $OUT/results.json (OUT defaults to a new temporary directory).
set -euo pipefail
cd "$(dirname "$0")"
out=${OUT:-$(mktemp -d -t acphost-bench.XXXXXX)}
mkdir -p "$out"
go build -o "$out/floodagent" ./floodagent
go build -o "$out/benchtable" ./cmd/benchtable
args=(-agent "$out/floodagent" -runs "${RUNS:-5}" -json "$out/results.json")
if [[ -n "${PROFILE:-}" ]]; then
	args+=(-profile "$out/profiles")
fi
start=$SECONDS
"$out/benchtable" "${args[@]}" "$@" | tee "$out/table.md"
echo >&2 "bench/run.sh: $((SECONDS - start)) s; results in $out"
