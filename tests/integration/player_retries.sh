#!/usr/bin/env bash
# cc-player retries like a game client (issue 14): a PostgreSQL restart
# shorter than its retry horizon costs retries, not errors; a replica
# killed under it is failed over to the other; a player whose outage
# outlasts the horizon gives up, and cancels its ticket on the way out.
# No matcher runs: the players stay QUEUED (heartbeating, polling) until
# their match deadline, then cancel ("gave up"), so every outcome is exact.
source "$(dirname "$0")/lib.sh"

H="$TOP/tests/harness"
run=$((RANDOM * 32768 + RANDOM))
start_api A --regions=r-one --ticket-ttl-seconds=600
start_api B --regions=r-one --ticket-ttl-seconds=600
n='([0-9]+)'

# players NAME URLS FLAGS...: starts 6 fresh casual players in the background (PLAYERS_PID).
seed=$run
players() {
	local name=$1 urls=$2; shift 2
	seed=$((seed + 1))
	T_LOGS+=("$T_DIR/$name.err")
	"$BIN/cc-player" --mode=demo --api-url="$urls" --players=6 --threads=6 --regions=r-one --ranked-percent=0 \
		--seed="$seed" --build="$name-$run" --decline-percent=0 --heartbeat-interval-ms=300 --ticket-poll-ms=100 \
		"$@" >"$T_DIR/$name.out" 2>"$T_DIR/$name.err" &
	PLAYERS_PID=$!
	T_PIDS+=("$PLAYERS_PID")
}
# all_queued BUILD: waits until its 6 tickets are QUEUED.
all_queued() {
	local deadline=$((SECONDS + 30))
	until [[ $(sql "SELECT count(*) FROM tickets WHERE build = '$1' AND state = 'QUEUED'") == 6 ]]; do
		((SECONDS < deadline)) || fail "$1: 6 QUEUED tickets not seen within 30 s: $(sql "SELECT state, count(*) FROM tickets WHERE build = '$1' GROUP BY 1")"
		sleep 0.1
	done
}
# summary NAME EXPECTED_RC: waits for the players, parses errors/retries/gave up.
summary() {
	local rc=0
	wait "$PLAYERS_PID" || rc=$?
	SUMMARY=$(cat "$T_DIR/$1.out")
	[[ "$SUMMARY" =~ \ $n\ gave\ up,\ $n\ heartbeats,\ $n\ errors,\ $n\ retries, ]] || fail "$1: no summary: '$SUMMARY'"
	GAVE_UP=${BASH_REMATCH[1]} ERRORS=${BASH_REMATCH[3]} RETRIES=${BASH_REMATCH[4]}
	expect_eq "$1: cc-player exit status ($SUMMARY)" "$2" "$rc"
}

# 1. PostgreSQL restarts (pg_ctl, fast) while 6 players heartbeat and poll:
# every call that met the outage was retried; none failed.
players restart "$A_URL" --match-deadline-seconds=6
all_queued "restart-$run"
before=$(sql "SELECT count(*) FROM pg_stat_activity")
"$H/pg-ctl.sh" restart || fail "pg-ctl.sh restart failed"
summary restart 0
expect_eq "restart: errors" 0 "$ERRORS"
((RETRIES > 0)) || fail "restart: no retries, so the restart met no call and proved nothing: $SUMMARY"
expect_eq "restart: all gave up at the deadline" 6 "$GAVE_UP"
expect_eq "restart: tickets" "CANCELLED|6" "$(sql "SELECT state, count(*) FROM tickets WHERE build = 'restart-$run' GROUP BY 1")"
pass "PostgreSQL restart under 6 players: 0 errors, $RETRIES retries ($SUMMARY)"

# 2. Two replicas, one SIGKILLed: players on it fail over to the other.
players failover "$A_URL,$B_URL" --match-deadline-seconds=6
all_queued "failover-$run"
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null || true
summary failover 0
expect_eq "failover: errors" 0 "$ERRORS"
((RETRIES > 0)) || fail "failover: no retries, so the kill met no call: $SUMMARY"
expect_eq "failover: tickets" "CANCELLED|6" "$(sql "SELECT state, count(*) FROM tickets WHERE build = 'failover-$run' GROUP BY 1")"
pass "replica A SIGKILLed under 6 players on A,B: 0 errors, $RETRIES retries"

# 3. An outage longer than the horizon: PostgreSQL stays stopped until
# every player has given up, and 4 s more, past the 3 s a way-out cancel
# would have if it shared the call horizon (it ran out here under load, when
# it did: one ticket left QUEUED). Each player gives up, and cancels its
# ticket once the database is back, within the horizon of its way out
# (--abandon-horizon-ms).
players outage "$B_URL" --match-deadline-seconds=60 --retry-horizon-ms=3000 --abandon-horizon-ms=60000
all_queued "outage-$run"
"$H/pg-ctl.sh" stop || fail "pg-ctl.sh stop failed"
deadline=$((SECONDS + 30))
until [[ $(grep -c '"demo_step_failed"' "$T_DIR/outage.err") == 6 ]]; do
	((SECONDS < deadline)) || { "$H/pg-ctl.sh" start; fail "not all 6 players gave up within 30 s of stopping PostgreSQL"; }
	kill -0 "$PLAYERS_PID" 2>/dev/null || { "$H/pg-ctl.sh" start; fail "cc-player exited before giving up"; }
	sleep 0.05
done
sleep 4 # the outage's length past the last give-up, not a wait for a state
"$H/pg-ctl.sh" start || fail "pg-ctl.sh start failed"
summary outage 1
expect_eq "outage: every player failed once (errors)" 6 "$ERRORS"
expect_eq "outage: tickets cancelled by the players that gave up" "CANCELLED|6" \
	"$(sql "SELECT state, count(*) FROM tickets WHERE build = 'outage-$run' GROUP BY 1")"
expect_eq "outage: demo_abandoned lines with the ticket cancelled" 6 \
	"$(grep '"demo_abandoned"' "$T_DIR/outage.err" | grep -c '"state":"CANCELLED"')"
pass "PostgreSQL down past the 3 s horizon: 6 errors, each player cancelled its ticket when it gave up ($SUMMARY)"
