#!/usr/bin/env bash
# cc-player on the event stream (issue 22), end to end with real binaries:
# cc-testkit-api, cc-maintenance dispatching the outbox every 100 ms, the
# two cc-matchers and cc-allocator's local provider (cc-supervisor ->
# cc-gameserver).
#  1. --events=stream --play: 8 players (one 3v3, one 1v1) match, fetch
#     their assignments, play and leave on their events alone. The safety
#     re-read is set to a minute and --ticket-poll-ms to 50 ms (which a
#     player polling would use), so every ticket read left is one an event
#     or a heartbeat's 409 asked for: the summary says events=stream:8
#     poll:0, no fallback, no safety read, at most one ticket read per
#     player on average, and exactly one assignment read per player (asked
#     when the assignment's event came, so never answered 409 pending);
#     cc-api's own request counters agree with the player's;
#  2. --events=auto against a cc-api whose stream is off (--events=false:
#     503 events_disabled) falls back to polling, says so, and still
#     matches; --events=stream against it is an error (exit 1);
#  3. --events=poll opens no stream (cc-api counts no upgrade);
#  4. resume: 2 ranked players stream from replica A (replica A2 beside it)
#     with no matcher running; A stops (its streams close 1001); the players
#     move to A2 and resume there with ?after=, and only then does a
#     matcher propose: they match on A2's events with no fallback.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"
scratch_database player_events
loop_secrets
mkdir -p "$T_DIR/state"
cat >"$T_DIR/gameserver.conf" <<CONF
match-seconds = 8
warmup-seconds = 1
goal-pause-seconds = 1
overtime-max-seconds = 4
connect-window-seconds = 20
CONF
start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret"
start_api OFF --regions=eu-west --events=false
# shellcheck disable=SC2034 # start_maint (lib_loop.sh) reads FLAGS
FLAGS=(--outbox-interval-ms=100 --expiry-interval-ms=60000 --stalled-interval-ms=60000 --no-show-interval-ms=60000
	--server-silent-interval-ms=60000 --result-missing-interval-ms=60000 --season-interval-ms=60000
	--retention-interval-ms=600000)
start_maint M
wait_http "$M_ADMIN/readyz" "$M_PID" 20
game_port=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/allocator.log" "$BIN/cc-allocator" \
	--workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" --join-key-id=k1 \
	--local-capacity=2 --local-port-min="$game_port" --local-port-max="$((game_port + 1))" --local-region=eu-west \
	--local-state-dir="$T_DIR/state" \
	--local-server-command="$BIN/cc-supervisor --join-keys-file=$T_DIR/join.json --gameserver-config=$T_DIR/gameserver.conf" \
	--api-url="$A_URL" --poll-interval-ms=100 --admin-port="$(free_port)"
T_LOGS+=("$T_DIR/state/local-$game_port.log" "$T_DIR/state/local-$((game_port + 1)).log")
for playlist in casual ranked; do
	madmin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-$playlist.log" "$BIN/cc-matcher" \
		--playlist=$playlist --admin-port="$madmin" --poll-interval-ms=100
	wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
	printf -v "MATCHER_$playlist" '%s' "$LAST_PID"
done

# requests ADMIN ROUTE METHOD [STATUS]: cc-api's count of ROUTE (pattern) requests, all statuses or one.
requests() {
	curl -s "$1/metrics" | awk -v r="route=\"$2\"" -v m="method=\"$3\"" -v s="status=\"${4:-}\"" '
		$1 ~ /^cosmic_clash_http_requests_total\{/ && index($1, r) && index($1, m) && (s == "status=\"\"" || index($1, s)) { n += $2 }
		END { printf "%d\n", n }'
}
# field NAME SUMMARY: the number after "NAME=" in the summary.
field() { sed -nE "s/.* $1=([0-9]+).*/\\1/p" <<<"$2"; }

# ---- 1. the stream alone ---------------------------------------------------------
run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/stream.err")
reads_before=$(requests "$A_ADMIN" "/v1/queue/{ticket_id}" GET)
rc=0
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=8 --threads=4 --regions=eu-west --ranked-percent=25 \
	--decline-percent=0 --seed="$run" --build="itest-$run" --match-deadline-seconds=30 --play \
	--assignment-timeout-seconds=60 --game-deadline-seconds=60 --summary-timeout-seconds=30 --log-level=info \
	--events=stream --events-reread-ms=60000 --ticket-poll-ms=50 >"$T_DIR/stream.out" 2>"$T_DIR/stream.err" || rc=$?
summary=$(cat "$T_DIR/stream.out")
expect_eq "cc-player --events=stream exit status ($summary)" 0 "$rc"
[[ $summary =~ \ 8\ players\ matched, ]] || fail "not every player matched: $summary"
[[ $summary =~ \;\ play:\ played=8\ ok=8\ failed=0\ score_mismatch=0\ matches=2\  ]] ||
	fail "not every player played its match to a checked end: $summary"
[[ $summary =~ \;\ events=stream:8\ poll:0\ \(--events=stream\)\  ]] || fail "the summary does not say events=stream:8 poll:0: $summary"
expect_eq "fallbacks (--events=stream)" 0 "$(field fallbacks "$summary")"
expect_eq "safety re-reads (every minute, none due)" 0 "$(field safety_reads "$summary")"
messages=$(field messages "$summary")
# at least, per player: stream.ready, ticket.proposed, ticket.matched, ticket.assigned
((messages >= 32)) || fail "only $messages messages on 8 streams: $summary"
ticket_reads=$(field ticket_reads "$summary")
((ticket_reads <= 8)) || fail "$ticket_reads ticket reads by 8 players on the stream (polling every 50 ms makes dozens): $summary"
# The player counted all it sent; the summaries (GET /v1/matches/{id}) come after and read no ticket.
expect_eq "GET /v1/queue/{ticket_id} as cc-api counted them vs the player's ticket_reads" "$ticket_reads" \
	"$(($(requests "$A_ADMIN" "/v1/queue/{ticket_id}" GET) - reads_before))"
expect_eq "assignment reads (one per player, when its event came)" 8 "$(field assignment_reads "$summary")"
expect_eq "GET /v1/matches/{match_id}/assignment answered 409 (asked before ready)" 0 \
	"$(requests "$A_ADMIN" "/v1/matches/{match_id}/assignment" GET 409)"
expect_eq "GET /v1/matches/{match_id}/assignment answered 200" 8 \
	"$(requests "$A_ADMIN" "/v1/matches/{match_id}/assignment" GET 200)"
upgrades=$(requests "$A_ADMIN" "/v1/events" GET 101)
expect_eq "upgrades cc-api answered 101 (one stream per player, no reconnect)" \
	"$((8 + $(field reconnects "$summary")))" "$upgrades"
expect_eq "matches of the run COMPLETED" 2 \
	"$(sql "SELECT count(*) FROM matches m WHERE m.build = 'itest-$run' AND m.state = 'COMPLETED'")"
pass "stream: 8 players played 2 matches with $messages events, $ticket_reads ticket reads, 8 assignment reads, 0 safety reads: ${summary##*; events=}"

# ---- 2. a cc-api with the stream off: auto polls, stream fails ---------------------
run2=$((run + 1))
T_LOGS+=("$T_DIR/auto.err")
rc=0
"$BIN/cc-player" --mode=demo --api-url="$OFF_URL" --players=2 --threads=2 --regions=eu-west --ranked-percent=100 \
	--decline-percent=0 --seed="$run2" --build="itest-$run2" --match-deadline-seconds=20 --log-level=info \
	--events=auto >"$T_DIR/auto.out" 2>"$T_DIR/auto.err" || rc=$?
summary=$(cat "$T_DIR/auto.out")
expect_eq "cc-player --events=auto against --events=false: exit status ($summary)" 0 "$rc"
[[ $summary =~ \ 2\ players\ matched, ]] || fail "auto: the players did not match by polling: $summary"
[[ $summary =~ \;\ events=stream:0\ poll:2\ \(--events=auto\)\  ]] || fail "auto: the summary does not say poll:2: $summary"
expect_eq "auto: fallbacks" 2 "$(field fallbacks "$summary")"
grep -q '"event":"events_fallback".*"status":503' "$T_DIR/auto.err" ||
	fail "auto: no events_fallback with status 503 logged: $(grep -m3 events_ "$T_DIR/auto.err")"
expect_eq "the refusals cc-api answered (503 events_disabled)" 2 "$(requests "$OFF_ADMIN" "/v1/events" GET 503)"
(($(field ticket_reads "$summary") >= 2)) || fail "auto: the polling players read no ticket: $summary"
rc=0
"$BIN/cc-player" --mode=demo --api-url="$OFF_URL" --players=2 --threads=1 --regions=eu-west --ranked-percent=100 \
	--seed="$((run + 2))" --match-deadline-seconds=5 --events=stream >"$T_DIR/strict.out" 2>"$T_DIR/strict.err" || rc=$?
expect_eq "cc-player --events=stream against --events=false: exit status" 1 "$rc"
grep -q 'GET /v1/events was refused and --events=stream' "$T_DIR/strict.err" ||
	fail "--events=stream: no error naming the refused stream: $(grep -m3 warn "$T_DIR/strict.err")"
pass "auto: the refused stream (503) fell back to polling and matched; --events=stream refused fails"

# ---- 3. poll opens no stream ----------------------------------------------------
before=$(requests "$A_ADMIN" "/v1/events" GET)
rc=0
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=2 --threads=2 --regions=eu-west --ranked-percent=100 \
	--decline-percent=0 --seed="$((run + 3))" --build="itest-$((run + 3))" --match-deadline-seconds=20 \
	--events=poll >"$T_DIR/poll.out" 2>"$T_DIR/poll.err" || rc=$?
summary=$(cat "$T_DIR/poll.out")
expect_eq "cc-player --events=poll exit status ($summary)" 0 "$rc"
[[ $summary =~ \;\ events=stream:0\ poll:2\ \(--events=poll\)\ messages=0\  ]] || fail "poll: $summary"
expect_eq "upgrades asked of cc-api by --events=poll" "$before" "$(requests "$A_ADMIN" "/v1/events" GET)"
pass "poll: no stream opened; ${summary##*; events=}"

# ---- 4. a replica goes away: the streams resume on the other one -------------------
# shellcheck disable=SC2154 # set by printf -v above
kill "$MATCHER_ranked"
wait "$MATCHER_ranked" 2>/dev/null || true
start_api A2 --regions=eu-west
wait_http "$A2_ADMIN/readyz" "$A2_PID" 20
run4=$((run + 4))
T_LOGS+=("$T_DIR/resume.err")
start_bg "$T_DIR/resume.err" "$BIN/cc-player" --mode=demo --api-url="$A_URL,$A2_URL" --players=2 --threads=1 \
	--regions=eu-west --ranked-percent=100 --decline-percent=0 --seed="$run4" --build="itest-$run4" \
	--match-deadline-seconds=40 --events=stream --events-reread-ms=60000 --log-level=info
player=$LAST_PID
wait_until "both tickets QUEUED" 20 '(( $(sql "SELECT count(*) FROM tickets WHERE build = '"'itest-$run4'"' AND state = '"'QUEUED'"'") == 2 ))'
# (a player on the stream queues only once its stream is open and ready)
kill "$A_PID"
wait "$A_PID" 2>/dev/null || true
wait_until "both players resumed on A2" 20 '(( $(grep -c "\"event\":\"events_resumed\"" "$T_DIR/resume.err") >= 2 ))'
grep '"event":"events_closed"' "$T_DIR/resume.err" | grep -q '"code":1001' ||
	fail "resume: no stream was seen closed 1001 by the stopping replica: $(grep -m4 '"events_' "$T_DIR/resume.err")"
madmin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-ranked-2.log" "$BIN/cc-matcher" \
	--playlist=ranked --admin-port="$madmin" --poll-interval-ms=100
rc=0
wait "$player" || rc=$?
summary=$(grep '^demo: ' "$T_DIR/resume.err" | tail -n 1)
expect_eq "cc-player across the replica's stop: exit status ($summary)" 0 "$rc"
[[ $summary =~ \ 2\ players\ matched, ]] || fail "resume: the players did not match: $summary"
[[ $summary =~ \;\ events=stream:2\ poll:0\ \(--events=stream\)\  ]] || fail "resume: not both on the stream: $summary"
(($(field reconnects "$summary") >= 2)) || fail "resume: fewer than 2 reconnects: $summary"
expect_eq "resume: safety re-reads" 0 "$(field safety_reads "$summary")"
(($(requests "$A2_ADMIN" "/v1/events" GET 101) >= 2)) || fail "resume: A2 answered fewer than 2 upgrades"
resumes=$(curl -s "$A2_ADMIN/metrics" | awk '$1 == "cosmic_clash_api_events_resumes_total" { print $2 }')
((${resumes:-0} >= 2)) || fail "resume: A2 counted ${resumes:-no} resumes (streams opened with ?after=), expected 2"

pass "resume: A stopped, both streams closed 1001 and resumed on A2, then matched on its events: ${summary##*; events=}"
