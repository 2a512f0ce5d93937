#!/usr/bin/env bash
# Measures a real `spine serve` under a flood of ingest requests (spine
# bench flood): the server's peak resident memory with the request limits
# off (as before they existed), with the in-flight budget at its default,
# and with the budget and GOMEMLIMIT=256MiB. Each run gets a fresh database
# and data directory, removed at the end. Quotas are off in every run: they
# bound each org's rate, not the process's memory, and many orgs at once
# meet only the budget.
#
#   scripts/bench-limits.sh [REQUESTS [CHUNK_KIB]]      (default 300 1024)
#
# SPINE_BIN is the binary that floods (default bin/spine, make build);
# SERVE_BIN the one that serves (default the same). Needs PostgreSQL on
# 127.0.0.1:5432 that the caller may create databases on (createdb).
set -euo pipefail

bin=${SPINE_BIN:-bin/spine}
serve_bin=${SERVE_BIN:-$bin}
requests=${1:-300}
chunk=${2:-1024}
addr=127.0.0.1:${SPINE_BENCH_PORT:-7391}
pid= db= dir=

cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ -n "$db" ]; then dropdb -h 127.0.0.1 --force "$db" || true; fi
	if [ -n "$dir" ]; then rm -rf "$dir"; fi
	pid= db= dir=
}
trap cleanup EXIT

run() { # run MODE EXTRA_ENV...
	local mode=$1 secret token
	shift
	dir=$(mktemp -d)
	db=spine_limits_$RANDOM$RANDOM
	createdb -h 127.0.0.1 "$db"
	secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
	local env=(SPINE_DATABASE_URL="postgres://$(id -un)@127.0.0.1:5432/$db" SPINE_DATA_DIR="$dir"
		SPINE_HTTP_ADDR="$addr" SPINE_NATS_LISTEN=off SPINE_TOKEN_SECRET="$secret"
		SPINE_ORG_INGEST_BYTES_PER_SEC=off SPINE_ORG_INGEST_ENVELOPES_PER_SEC=off "$@")
	env "${env[@]}" "$serve_bin" serve >"$dir/serve.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 300); do
		curl -fsS "http://$addr/healthz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	token=$(env "${env[@]}" "$bin" token mint --org flood --member m)
	printf '"%s": ' "$mode"
	"$bin" bench flood --url "http://$addr" --token "$token" --requests "$requests" --chunk-kib "$chunk" --pid "$pid"
	cleanup
}

echo "{"
run off SPINE_HTTP_INFLIGHT_BYTES=off
echo ","
run budget
echo ","
run budget_gomemlimit_256MiB GOMEMLIMIT=256MiB
echo "}"
