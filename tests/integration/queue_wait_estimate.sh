#!/usr/bin/env bash
# The estimated wait of every ticket answer (issue 26) through the real
# cc-api and cc-matcher on PostgreSQL:
#  - before any match: POST /v1/queue, GET and the heartbeat answer
#    no_history with a null number;
#  - once the matcher has formed ranked proposals, a new ticket of the same
#    playlist and region gets recent_matches with a number within the
#    range of those proposals' tickets' waits (the exact median is the unit
#    suite's), while one rated far outside the band still gets no_history;
#  - a proposed ticket and a cancelled one answer not_queued (null);
#  - a ticket that outwaits the whole history answers beyond_history on
#    its heartbeats (waited for, not slept for);
#  - the operator's player view carries the same two fields;
#  - eight players heartbeating at once through one cc-api (whose threads
#    share history reads) all get 200s with consistent fields.
# A lonely build keeps the tickets under estimate out of the matcher's
# proposals: the history is per playlist and region, not per build.
source "$(dirname "$0")/lib.sh"

# Its own database: the estimate reads every proposal of the last 15
# minutes, and the suite's shared database holds those of the tests before.
db="queue_wait_estimate_$$"
psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_ADMIN_DSN" -c "CREATE DATABASE $db" >/dev/null
drop_db() { psql -qAtX "$CC_TEST_PG_ADMIN_DSN" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; }
trap 'rc=$?; drop_db; t_cleanup $rc' EXIT
CC_TEST_PG_DSN="${CC_TEST_PG_DSN%/*}/$db"
export CC_TEST_PG_DSN
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" COSMIC_CLASH_MIGRATIONS_DIR="$TOP/migrations" "$BIN/cc-migrate" up \
	>"$T_DIR/migrate.log" 2>&1 || fail "cc-migrate up on the scratch database: $(cat "$T_DIR/migrate.log")"

OPTOK=optok-wait-estimate-fixture
RACERS=()
start_api A --regions=eu-west --operator-token-file=<(echo "$OPTOK")
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
	--playlist=ranked --team-size=1 --poll-interval-ms=100 --proposal-window-seconds=30 --admin-port="$(free_port)"
MATCHER_PID=$LAST_PID

# player NAME: a fresh player probed for eu-west; sets TOK and PLAYER.
player() {
	http POST "$A_URL/v1/session/steam" "" "{\"ticket\":\"$1-$RANDOM$RANDOM\"}"
	expect_http "login $1" 200
	TOK=$(jq -r .session_token <<<"$BODY")
	PLAYER=$(jq -r .player_id <<<"$BODY")
	probe "$A_URL" "$TOK" eu-west
}

# enqueue TOKEN BUILD KEY: queues for ranked; sets TICKET, REV.
enqueue() {
	http POST "$A_URL/v1/queue" "$1" "{\"playlist\":\"ranked\",\"protocol_version\":1,\"build\":\"$2\"}" \
		-H "Idempotency-Key: $3"
	expect_http "enqueue $3" 201
	TICKET=$(jq -r .id <<<"$BODY")
	REV=$(jq -r .revision <<<"$BODY")
}

# expect_estimate WHAT METHOD: the last answer's method, and a null number unless recent_matches.
expect_estimate() {
	expect_eq "$1: estimated_wait_method" "$2" "$(jq -r .estimated_wait_method <<<"$BODY")"
	local n; n=$(jq -r '.estimated_wait_seconds | type' <<<"$BODY")
	if [[ "$2" == recent_matches ]]; then
		expect_eq "$1: estimated_wait_seconds is a number" number "$n"
	else
		expect_eq "$1: estimated_wait_seconds is null" null "$n"
	fi
}

# 1. No history yet: every answer says no_history.
player lonely; LONELY_TOK=$TOK
enqueue "$LONELY_TOK" lonely lonely-1
LONELY=$TICKET
expect_estimate "enqueue before any match" no_history
http GET "$A_URL/v1/queue/$LONELY" "$LONELY_TOK" ""
expect_http "read before any match" 200
expect_estimate "read before any match" no_history
http POST "$A_URL/v1/queue/$LONELY/heartbeat" "$LONELY_TOK" "{\"revision\":$REV}"
expect_http "heartbeat before any match" 200
expect_estimate "heartbeat before any match" no_history
http POST "$A_URL/v1/queue/$LONELY/cancel" "$LONELY_TOK" "{\"revision\":$(jq -r .revision <<<"$BODY")}"
expect_http "cancel" 200
expect_estimate "a cancelled ticket" not_queued
pass "no history: no_history with null; cancelled: not_queued"

# 2. History: three pairs matched, the first of each waiting a little for its partner.
for k in 1 2 3; do
	player "a$k"; A_TOK=$TOK
	enqueue "$A_TOK" played "a$k"; A_TICKET=$TICKET
	sleep 1 # the first of the pair waits: a history with waits of about 1 s and 0 s
	player "b$k"
	enqueue "$TOK" played "b$k"
	deadline=$((SECONDS + 30))
	while :; do
		kill -0 "$MATCHER_PID" 2>/dev/null || fail "cc-matcher exited: $(tail -5 "$T_DIR/matcher.log")"
		http GET "$A_URL/v1/queue/$A_TICKET" "$A_TOK" ""
		[[ $(jq -r .state <<<"$BODY") == PROPOSED ]] && break
		((SECONDS < deadline)) || fail "pair $k: no proposal within 30 s: $BODY"
		sleep 0.1
	done
	expect_estimate "a proposed ticket" not_queued
done
expect_eq "proposals formed" 3 "$(sql "SELECT count(*) FROM proposals WHERE build = 'played'")"
pass "a proposed ticket: not_queued"

# 3. A new ticket of the same playlist and region: recent_matches, the history's median.
player late; LATE_TOK=$TOK
enqueue "$LATE_TOK" lonely late-1
LATE=$TICKET
expect_estimate "enqueue after matches" recent_matches
est=$(jq -r .estimated_wait_seconds <<<"$BODY")
# Which samples count depends on the few ms the new ticket had waited (the
# exact median is the unit suite's): it must lie within the history's range.
read -r lo hi < <(sql "SELECT floor(min(w)), ceil(max(w)) FROM (SELECT extract(epoch FROM p.created_at - t.queued_at) AS w
	FROM proposals p JOIN proposal_participants pp ON pp.proposal_id = p.id JOIN tickets t ON t.id = pp.ticket_id
	WHERE p.build = 'played') s" | tr '|' ' ')
((est >= lo && est <= hi)) || fail "estimate $est s is outside the history's waits [$lo, $hi] s"
http GET "$A_URL/v1/queue/$LATE" "$LATE_TOK" ""
expect_estimate "read after matches" recent_matches
http GET "$A_URL/v1/admin/players/$(jq -r .player_id <<<"$BODY")" "$OPTOK" ""
expect_http "operator view" 200
expect_eq "operator view: active ticket" "$LATE" "$(jq -r .active_ticket.id <<<"$BODY")"
BODY=$(jq -c .active_ticket <<<"$BODY") expect_estimate "operator view" recent_matches
pass "after matches: recent_matches, $est s (history's waits $lo-$hi s), also in the operator view"

# 4. Rated far outside the band of the history: no_history all the same.
player outlier
sql "INSERT INTO ratings (player_id, playlist, rating, deviation) VALUES ('$PLAYER', 'ranked', 2600, 80)" >/dev/null
enqueue "$TOK" lonely outlier-1
expect_estimate "a rating 1100 points from the history" no_history
pass "outside the rating band: no_history"

# 5. The late ticket outwaits the whole history (waits of about 1 s): beyond_history, on its heartbeats.
http GET "$A_URL/v1/queue/$LATE" "$LATE_TOK" ""
REV=$(jq -r .revision <<<"$BODY")
deadline=$((SECONDS + 60))
while :; do
	http POST "$A_URL/v1/queue/$LATE/heartbeat" "$LATE_TOK" "{\"revision\":$REV}"
	expect_http "heartbeat of the late ticket" 200
	REV=$(jq -r .revision <<<"$BODY")
	[[ $(jq -r .estimated_wait_method <<<"$BODY") == beyond_history ]] && break
	expect_estimate "heartbeat before outwaiting the history" recent_matches
	((SECONDS < deadline)) || fail "never beyond_history within 60 s: $BODY"
	sleep 0.2
done
expect_estimate "heartbeat after outwaiting the history" beyond_history
pass "a ticket that outwaited the history: beyond_history"

# 6. Eight players heartbeat at once, 25 times each, through one cc-api whose
#    threads share the history reads: every answer is a 200 whose two fields agree.
for i in $(seq 8); do
	player "racer$i"
	enqueue "$TOK" "racer-$i" "racer-$i" # a build of its own: nobody matches it
	(
		rev=$REV
		for k in $(seq 25); do
			code=$(curl -s -o "$T_DIR/race.$i.$k" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOK" \
				-H 'Content-Type: application/json' --data-binary "{\"revision\":$rev}" \
				"$A_URL/v1/queue/$TICKET/heartbeat")
			[[ $code == 200 ]] || { echo "racer $i heartbeat $k: HTTP $code $(cat "$T_DIR/race.$i.$k")"; exit 1; }
			rev=$(jq -r .revision "$T_DIR/race.$i.$k")
		done
	) >"$T_DIR/race.$i.err" 2>&1 &
	RACERS+=("$!")
done
for pid in "${RACERS[@]}"; do wait "$pid" || fail "a racer failed: $(cat "$T_DIR"/race.*.err)"; done
bad=$(cat "$T_DIR"/race.*.*[0-9] | jq -s '[.[] | select(
	(.estimated_wait_method == "recent_matches" and (.estimated_wait_seconds | type) != "number") or
	(.estimated_wait_method != "recent_matches" and .estimated_wait_seconds != null) or
	(.estimated_wait_method | IN("recent_matches", "beyond_history") | not))] | length')
expect_eq "racing heartbeats whose estimate is inconsistent" 0 "$bad"
pass "8 x 25 racing heartbeats: all 200, every estimate consistent"
