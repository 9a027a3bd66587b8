#!/usr/bin/env bash
# demo.sh - the whole system on loopback with simulated players (`make demo`).
#
# Re-runs itself inside tests/harness/with-services.sh (a disposable
# PostgreSQL + Redis, migrations applied), starts cc-testkit-api and one
# cc-matcher per playlist (casual, ranked) on free ports, all using the
# harness Redis for the matchers' candidate index, runs cc-player
# --mode=demo (players queue, get proposals, accept or decline, end
# MATCHED) and prints its one-line summary as the LAST line of output. Everything else goes to the logs in build/demo/
# (kept after the run) or to stderr. Every process started here is stopped
# on exit, success or not; on failure the logs' tails are printed first.
#
# To add a service (matcher, allocator, game servers): write a start_<name>
# function that calls start_service and wait_http (scripts/lib/services.sh),
# and call it from main.
#
# Environment: DEMO_PLAYERS (60: 36 casual = 6 matches of 6, 24 ranked =
# 12 matches of 2), DEMO_THREADS (8), DEMO_REGIONS (eu-west,us-east),
# DEMO_SEED (1), DEMO_DECLINE_PERCENT (5), DEMO_DEADLINE_SECONDS (30).
set -Eeuo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ "${1:-}" != --inside ]]; then
	exec "$top/tests/harness/with-services.sh" "$0" --inside
fi

BIN="$top/build/bin"
LOGS="$top/build/demo"
PLAYERS=${DEMO_PLAYERS:-60}
THREADS=${DEMO_THREADS:-8}
REGIONS=${DEMO_REGIONS:-eu-west,us-east}
SEED=${DEMO_SEED:-1}
DECLINE_PERCENT=${DEMO_DECLINE_PERCENT:-5}
DEADLINE_SECONDS=${DEMO_DEADLINE_SECONDS:-30}
# The harness Redis: cc-api keeps the candidate index fresh, the matchers read it.
REDIS_FLAGS=(--redis-host="${CC_TEST_REDIS_HOST:-127.0.0.1}" --redis-port="$CC_TEST_REDIS_PORT")

say() { echo "demo: $*" >&2; }

# free_port: below the kernel's ephemeral range.
source "$top/scripts/lib/ports.sh"
# start_service, wait_http, stop_services, dump_logs.
source "$top/scripts/lib/services.sh"

trap_services_exit 30

# cc-testkit-api: the player API with the fake Steam login (any ticket).
start_api() {
	API_PORT=$(free_port)
	API_ADMIN_PORT=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_service api \
		"$BIN/cc-testkit-api" --port="$API_PORT" --admin-port="$API_ADMIN_PORT" \
		--regions="$REGIONS" --db-pool-size="$THREADS" "${REDIS_FLAGS[@]}"
	wait_http api "http://127.0.0.1:$API_ADMIN_PORT/readyz" 30
	API_URL="http://127.0.0.1:$API_PORT"
}

# cc-matcher PLAYLIST: forms that playlist's matches (casual 3v3, ranked 1v1)
# and opens proposals; a short poll interval keeps the demo brisk (NOTIFY
# wakes it sooner anyway). Ready once a pass has reached PostgreSQL.
start_matcher() {
	local playlist=$1 admin
	admin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_service "matcher-$playlist" \
		"$BIN/cc-matcher" --playlist="$playlist" --admin-port="$admin" --poll-interval-ms=200 \
		--matcher-id="demo-$playlist" "${REDIS_FLAGS[@]}"
	wait_http "matcher-$playlist" "http://127.0.0.1:$admin/readyz" 30
}

# The simulated players; their summary line is the demo's result.
run_players() {
	local rc=0
	say "running $PLAYERS players on $THREADS connections (log $LOGS/players.log)"
	"$BIN/cc-player" --mode=demo --api-url="$API_URL" --players="$PLAYERS" --threads="$THREADS" \
		--regions="$REGIONS" --seed="$SEED" --decline-percent="$DECLINE_PERCENT" \
		--match-deadline-seconds="$DEADLINE_SECONDS" --log-level=info \
		>"$LOGS/players.out" 2>"$LOGS/players.log" || rc=$?
	SUMMARY=$(tail -n 1 "$LOGS/players.out")
	if [[ $rc -ne 0 ]]; then
		say "cc-player exited $rc: ${SUMMARY:-no summary}"
		return 1
	fi
	[[ "$SUMMARY" == demo:* ]] || { say "cc-player printed no summary"; return 1; }
	# Players that never matched are no error to cc-player (they give up),
	# but a demo of matchmaking without a single match shows nothing.
	if [[ "$SUMMARY" =~ \ 0\ accepted\ matches ]]; then
		say "no match was formed: is a matcher stuck? (logs in $LOGS)"
		return 1
	fi
}

main() {
	for b in cc-testkit-api cc-matcher cc-player; do
		[[ -x "$BIN/$b" ]] || { say "$BIN/$b is missing (make all tools)"; return 1; }
	done
	rm -rf "$LOGS"
	mkdir -p "$LOGS"
	start_api
	start_matcher casual
	start_matcher ranked
	run_players
	stop_services
	echo "$SUMMARY"
}

main
