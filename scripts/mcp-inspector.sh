#!/usr/bin/env bash
# Drives spine's /mcp with the MCP Inspector CLI (pinned), as an external
# client would: exactly two tools, then remoteSession.create → read through
# execute_capability. Needs bin/spine (make build), npx and PostgreSQL as
# `spine serve` finds it. Run it with `make mcp-inspector`.
set -euo pipefail

INSPECTOR="@modelcontextprotocol/inspector@${INSPECTOR_VERSION:-2.12.0}"
SPINE="${SPINE_BIN:-./bin/spine}"
PORT="${MCP_PORT:-$((20000 + RANDOM % 20000))}"
DATA="$(mktemp -d)"
chmod 755 "$DATA"
export SPINE_DATA_DIR="$DATA" SPINE_HTTP_ADDR="127.0.0.1:$PORT" SPINE_NATS_LISTEN=off
export SPINE_TOKEN_SECRET="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

# A database of its own: a fresh log (the temp data dir) needs fresh projections.
DB=""
if [ -z "${SPINE_DATABASE_URL:-}" ]; then
	DB="spine_inspector_$$"
	psql -qX -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE $DB" >/dev/null
	export SPINE_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
fi

"$SPINE" serve >"$DATA/serve.log" 2>&1 &
SERVE=$!
cleanup() {
	kill "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true; rm -rf "$DATA"
	[ -z "$DB" ] || psql -qX -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || true
}
trap cleanup EXIT

for _ in $(seq 1 300); do
	curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
	kill -0 "$SERVE" 2>/dev/null || { cat "$DATA/serve.log"; echo "spine serve exited" >&2; exit 1; }
	sleep 0.2
done
TOKEN="$("$SPINE" token mint --org inspector --member alice)"
URL="http://127.0.0.1:$PORT/mcp"

inspect() {
	npx -y "$INSPECTOR" --cli "$URL" --transport http --header "Authorization: Bearer $TOKEN" "$@"
}

tools="$(inspect --method tools/list)"
names="$(jq -r '[.tools[].name] | sort | join(",")' <<<"$tools")"
[ "$names" = "execute_capability,search_capabilities" ] || { echo "tools: $names (want exactly the two)" >&2; exit 1; }
echo "tools/list: $names"

deliver_by="$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
created="$(inspect --method tools/call --tool-name execute_capability --tool-arg name=remoteSession.create \
	"arguments={\"target\":\"desktop\",\"title\":\"inspector\",\"instructions\":\"say hello\",\"deliverBy\":\"$deliver_by\"}")"
session="$(jq -r '.structuredContent.session.sessionId' <<<"$created")"
[ -n "$session" ] && [ "$session" != null ] || { echo "create: $created" >&2; exit 1; }
echo "remoteSession.create: $session ($(jq -r '._meta.ui.resourceUri' <<<"$created"))"

read="$(inspect --method tools/call --tool-name execute_capability --tool-arg name=remoteSession.read \
	"arguments={\"sessionId\":\"$session\"}")"
state="$(jq -r '.structuredContent.session.state' <<<"$read")"
prompt="$(jq -r '.structuredContent.entries[0].text' <<<"$read")"
[ "$state" = queued ] && [ "$prompt" = "say hello" ] || { echo "read: $read" >&2; exit 1; }
echo "remoteSession.read: state $state, first entry \"$prompt\""

unknown="$(inspect --method tools/call --tool-name execute_capability --tool-arg name=nope || true)"
grep -q unknown_capability <<<"$unknown" || { echo "unknown capability: $unknown" >&2; exit 1; }
echo "unknown names: unknown_capability"
echo "ok"
