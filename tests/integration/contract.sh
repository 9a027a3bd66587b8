#!/usr/bin/env bash
# The live REST contract: tests/contract/contract-test.js drives cc-api over
# HTTP and checks every answer against contracts/v1/openapi.json, coverage of
# every documented status and code, and routes.c against the doc's paths.
#
# Three servers, so every documented outcome that a request can cause is
# caused (the test's UNPROVOKABLE list names the rest, with reasons):
#   testkit       cc-testkit-api on the harness database: fake login, operator
#                 token, regions eu-west,us-east, --min-protocol-version=2;
#   steam+db-down cc-api with the fake Steam (tests/fakes/fake_steam) and a
#                 database address nobody listens on: Steam's refusals and
#                 outages, and 503 unavailable on every route;
#   unconfigured  cc-api without Steam or operator configuration (503
#                 not_configured), database unreachable as well; at most 3
#                 connections (503 server_busy).
# The testkit takes 8 connections per address (429 too_many_connections)
# and a head must arrive within 1.5 s (408 request_timeout).
# Fixtures the API cannot create (a rating, a penalty, an expired session or
# challenge, a proposal as cc-matcher's claim writes it) are written with psql
# on the harness database.
source "$(dirname "$0")/lib.sh"

for b in "$BIN/cc-testkit-api" "$BIN/cc-api" "$TOP/build/fakes/fake_steam"; do
	[[ -x $b ]] || fail "$b is not built (make tests-build)"
done
: "${CC_TEST_PG_DSN:?run inside tests/harness/with-services.sh}"
"$TOP/scripts/npm-tools.sh" || fail "could not install the pinned Node tools (ajv) into build/node"

# Each server gets exactly the configuration below, nothing ambient.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^COSMIC_CLASH_' || true)

operator_token="op-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
steam_key="key-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$steam_key" >"$T_DIR/steam.key"
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T_DIR/workload.secret"
# No server listens on this port: connections are refused at once.
dead_dsn="postgresql://cc@127.0.0.1:$(free_port)/cosmic_clash?connect_timeout=2"

start_bg "$T_DIR/fake_steam.log" "$TOP/build/fakes/fake_steam" --port=0 --app-id=480 --key-file="$T_DIR/steam.key"
steam_pid=$LAST_PID
deadline=$((SECONDS + 10))
steam_port=""
while [[ -z $steam_port ]]; do
	# The background shell may not have created the log yet.
	[[ -f $T_DIR/fake_steam.log ]] &&
		steam_port=$(sed -n 's/^listening \([0-9][0-9]*\)$/\1/p' "$T_DIR/fake_steam.log" | head -n 1)
	[[ -n $steam_port ]] && break
	kill -0 "$steam_pid" 2>/dev/null || fail "fake_steam exited before announcing its port"
	((SECONDS < deadline)) || fail "fake_steam did not announce its port within 10 s"
	sleep 0.05
done

api_port=$(free_port) api_admin=$(free_port)

# ---- issue 20 item 10 (docs branch): where a region's probe is answered ----------------
# The testkit answers eu-west itself (answer_url relative) and names an absolute
# probe endpoint for us-east (itself again, by its base URL: there is one
# database here); contract-test.js follows answer_url and checks both forms.
probe_urls="us-east=http://127.0.0.1:$api_port"
# A malformed --probe-urls stops cc-api at start-up (exit 2) with a precise message.
probe_url_refusals=(
	"nowhere=http://a|cc-api: --probe-urls: region nowhere is not one of --regions"
	"eu-west=ftp://a|cc-api: --probe-urls: eu-west: the URL must start with http:// or https:// and be at most 200 bytes"
	"eu-west=http://a/x?y=1|cc-api: --probe-urls: eu-west: the URL must be http(s)://HOST[:PORT][/PATH] with a host of [A-Za-z0-9.-] and a path of [A-Za-z0-9._~/-] (no query, no fragment)"
	"eu-west|cc-api: --probe-urls: entry eu-west is not region=URL"
	"eu-west=http://a,eu-west=http://b|cc-api: --probe-urls: region eu-west is given twice"
)
for c in "${probe_url_refusals[@]}"; do
	v=${c%%|*} want=${c#*|} st=0
	env COSMIC_CLASH_DATABASE_URL="$dead_dsn" "$BIN/cc-api" --port=0 --admin-port=0 --regions=eu-west,us-east \
		--probe-urls="$v" >"$T_DIR/probe-urls.out" 2>"$T_DIR/probe-urls.err" || st=$?
	[[ $st -eq 2 ]] || fail "cc-api --probe-urls='$v' exited $st, not 2; stderr: $(cat "$T_DIR/probe-urls.err")"
	grep -qxF -- "$want" "$T_DIR/probe-urls.err" || fail "cc-api --probe-urls='$v': want the line '$want' on stderr, got: $(cat "$T_DIR/probe-urls.err")"
done
pass "a malformed --probe-urls stops cc-api with exit 2 and a precise message (${#probe_url_refusals[@]} cases)"
# ---- end of the item 10 block -----------------------------------------------------------

start_bg "$T_DIR/testkit-api.log" env COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" \
	COSMIC_CLASH_OPERATOR_TOKEN="$operator_token" \
	"$BIN/cc-testkit-api" --port="$api_port" --admin-port="$api_admin" \
	--regions=eu-west,us-east --min-protocol-version=2 --workload-secret-file="$T_DIR/workload.secret" \
	--max-connections-per-address=8 --http-header-timeout-ms=1500 --probe-urls="$probe_urls"
api_pid=$LAST_PID

steam_api_port=$(free_port) steam_api_admin=$(free_port)
start_bg "$T_DIR/steam-api.log" env COSMIC_CLASH_DATABASE_URL="$dead_dsn" \
	COSMIC_CLASH_OPERATOR_TOKEN="$operator_token" COSMIC_CLASH_STEAM_PUBLISHER_KEY="$steam_key" \
	"$BIN/cc-api" --port="$steam_api_port" --admin-port="$steam_api_admin" \
	--regions=eu-west,us-east --min-protocol-version=2 --db-timeout-ms=1000 \
	--workload-secret-file="$T_DIR/workload.secret" --steam-api-url="http://127.0.0.1:$steam_port" --steam-app-id=480 --steam-timeout-ms=2000
steam_api_pid=$LAST_PID

bare_port=$(free_port) bare_admin=$(free_port)
start_bg "$T_DIR/bare-api.log" env COSMIC_CLASH_DATABASE_URL="$dead_dsn" \
	"$BIN/cc-api" --port="$bare_port" --admin-port="$bare_admin" --db-timeout-ms=1000 \
	--max-connections=3 --max-connections-per-address=100
bare_pid=$LAST_PID

wait_http "http://127.0.0.1:$api_admin/healthz" "$api_pid" 20
wait_http "http://127.0.0.1:$steam_api_admin/healthz" "$steam_api_pid" 20
wait_http "http://127.0.0.1:$bare_admin/healthz" "$bare_pid" 20

rc=0
CC_CONTRACT_API="http://127.0.0.1:$api_port" \
	CC_CONTRACT_STEAM_API="http://127.0.0.1:$steam_api_port" \
	CC_CONTRACT_BARE_API="http://127.0.0.1:$bare_port" \
	CC_CONTRACT_OPERATOR_TOKEN="$operator_token" \
	CC_CONTRACT_PG_DSN="$CC_TEST_PG_DSN" \
	CC_CONTRACT_PSQL="${CC_TEST_PG_BIN:+$CC_TEST_PG_BIN/}psql" \
	CC_CONTRACT_REGIONS=eu-west,us-east CC_CONTRACT_MIN_PROTOCOL=2 \
	CC_CONTRACT_WORKLOAD_SECRET="$T_DIR/workload.secret" \
	CC_CONTRACT_PROBE_URLS="$probe_urls" \
	node "$TOP/tests/contract/contract-test.js" || rc=$?
[[ $rc -eq 0 ]] || fail "the live API breaks contracts/v1/openapi.json (FAIL lines above)"
pass "every answer matches contracts/v1/openapi.json"
