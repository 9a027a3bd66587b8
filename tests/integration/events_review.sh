#!/usr/bin/env bash
# Review of issue 22's GET /v1/events (review22): defects shown against real
# PostgreSQL, a real cc-maintenance dispatcher and cc-testkit-api, with
# Debian's python3-websockets as the client.
#  1. a live-only stream (no ?after=) and a resync both start at the
#     sequence's last drawn value: an event the dispatcher had drawn a
#     position for but not yet committed is then dropped by the stream
#     (position <= last_sent) although it commits after the stream began.
#     The window is widened by a trigger that sleeps in the dispatcher's
#     transaction after nextval (the real dispatcher, the real stream);
#  2. a resume whose replay (at most 200 events) is over the 1 MiB send
#     backlog is closed 1013 slow_reader before the client could read a
#     byte, and every retry with the same ?after= is closed the same way:
#     the contract's "reconnect with after: the missed events are
#     replayed" never ends.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

PY=/usr/bin/python3
CLIENT="$TOP/tests/integration/events_client.py"
scratch_database events_review
start_api A --regions=eu-west
FLAGS=(--outbox-interval-ms=60000 --expiry-interval-ms=60000 --stalled-interval-ms=60000 --no-show-interval-ms=60000
	--server-silent-interval-ms=60000 --result-missing-interval-ms=60000 --season-interval-ms=60000
	--retention-interval-ms=600000 --log-level=info --db-timeout-ms=20000)
start_maint M
wait_http "$M_ADMIN/readyz" "$M_PID" 20

listen() {
	local name=$1 url=$2 tok=$3; shift 3
	start_bg "$T_DIR/$name.log" "$PY" "$CLIENT" listen "$url" "$tok" "$T_DIR/$name.ev" "$@"
	printf -v "${name}_PID" '%s' "$LAST_PID"
}
ready() { grep -q '"event":"stream\.\(ready\|resync\)"' "$T_DIR/$1.ev" 2>/dev/null; }
closed() { [[ -s "$T_DIR/$1.ev.close" ]]; }
await_ready() {
	wait_until "$1 stream.ready" 20 "ready $1 || closed $1"
	ready "$1" || fail "$1 ended before stream.ready: close $(cat "$T_DIR/$1.ev.close"); $(tail -3 "$T_DIR/$1.log")"
}
has_event() { [[ -f "$T_DIR/$1.ev" ]] && cut -f2 "$T_DIR/$1.ev" | jq -e --arg e "$2" 'select(.event == $e)' >/dev/null; }
wait_until "A listens on cc_events" 20 "grep -q '\"event\":\"events_listening\"' '$T_DIR/A.log'"
TOK=$(login "$A_URL" "rv-p0-$RANDOM$RANDOM")
P=$(sql "SELECT player_id FROM sessions ORDER BY created_at LIMIT 1")
# Each section reports its verdict and the script goes on; it fails at the end if any did.
FAILED=()
# soft_wait WHAT SECONDS CHECK: like wait_until, but records a failure instead of exiting.
soft_wait() {
	local deadline=$(($(date +%s%N) / 1000000 + $2 * 1000))
	while ! eval "$3"; do
		if (($(date +%s%N) / 1000000 >= deadline)); then
			echo "$T_NAME: FAIL: $1: not within $2 s ('$3' still false)"
			FAILED+=("$1")
			return 1
		fi
		sleep 0.05
	done
}
drawn() { sql "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM outbox_position"; }

# 1. An in-flight dispatch batch versus a stream that starts live / resyncs.
sql "CREATE FUNCTION review_slow() RETURNS trigger LANGUAGE plpgsql AS \$\$
     BEGIN PERFORM pg_sleep(5); RETURN NULL; END \$\$;
     CREATE TRIGGER review_slow AFTER UPDATE OF position ON outbox FOR EACH ROW
       WHEN (NEW.event = 'test.slow' AND OLD.position IS NULL AND NEW.position IS NOT NULL)
       EXECUTE FUNCTION review_slow()" >/dev/null
before=$(drawn)
sql "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
     VALUES ('test.slow', 'test', gen_random_uuid(), 1, ARRAY['$P'::uuid], '{}'); SELECT pg_notify('outbox', '')" >/dev/null
wait_until "the dispatcher drew the row's position" 5 '(( $(drawn) > before ))'
listen live "$A_URL" "$TOK"
listen rsy "$A_URL" "$TOK" --after $((before + 1000000))
await_ready live
await_ready rsy
expect_eq "the row is still uncommitted when both streams are ready" 0 \
	"$(sql "SELECT count(*) FROM outbox WHERE event = 'test.slow' AND published_at IS NOT NULL")"
echo "$T_NAME: live's first message: $(head -1 "$T_DIR/live.ev" | cut -f2); rsy's: $(head -1 "$T_DIR/rsy.ev" | cut -f2)"
wait_until "the row is delivered" 15 '(( $(sql "SELECT count(*) FROM outbox WHERE event = '"'test.slow'"' AND published_at IS NOT NULL") == 1 ))'
pos=$(sql "SELECT position FROM outbox WHERE event = 'test.slow'")
ok1=1
soft_wait "test.slow (position $pos, committed after stream.ready) on the live-only stream" 3 'has_event live test.slow' || ok1=0
soft_wait "test.slow (position $pos, committed after stream.resync) on the resynced stream" 1 'has_event rsy test.slow' || ok1=0
((ok1)) && pass "an event drawn before the stream started and committed after it reached both streams"
kill -TERM "$live_PID" "$rsy_PID" 2>/dev/null || true

# 2. A resume whose replay passes the 1 MiB send backlog: 150 envelopes of ~8.1 kB.
from=$(drawn)
RID=$(sql "SELECT gen_random_uuid()")
sql "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload, published_at, position)
     SELECT 'test.bulk', 'test', '$RID', g, ARRAY['$P'::uuid], jsonb_build_object('blob', repeat('x', 8100)),
            now(), nextval('outbox_position') FROM generate_series(1, 150) g" >/dev/null
for k in 1 2; do
	listen big$k "$A_URL" "$TOK" --after "$from"
	wait_until "big$k ready or closed" 20 "ready big$k || closed big$k"
	ready big$k || { FAILED+=("big$k"); echo "$T_NAME: FAIL: resume $k from $from (150 missed events, 1.2 MB): closed '$(cat "$T_DIR/big$k.ev.close")' before stream.ready, after $(cat "$T_DIR/big$k.ev" 2>/dev/null | wc -l) messages; the client retries with the same after and is closed again"; }
	kill -TERM "$(eval echo "\$big${k}_PID")" 2>/dev/null || true
done
ready big1 && ready big2 && pass "a 150-event, 1.2 MB resume was answered (stream.ready or stream.resync), not 1013"

# 3. RFC 6455 11.3.4: Sec-WebSocket-Protocol "MAY appear multiple times in an
# HTTP request (in which case the various values are combined)".
http GET "$A_URL/v1/events" "" "" --max-time 3 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
	-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' \
	-H 'Sec-WebSocket-Protocol: cc.v1' -H "Sec-WebSocket-Protocol: cc.v1.bearer.$TOK" || true
if [[ "$STATUS" == 101 ]]; then
	pass "the browser login split over two Sec-WebSocket-Protocol lines upgrades"
else
	FAILED+=("two protocol lines")
	echo "$T_NAME: FAIL: cc.v1 and cc.v1.bearer.<token> on two Sec-WebSocket-Protocol lines: HTTP $STATUS $BODY (want 101)"
fi

# 4. cc-maintenance's wake-up listener lost: a row written while it is away
# waits for the next poll (--outbox-interval-ms, 60 s here) although the
# listener is back within a second.
M_WAKE=$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cc-maintenance-wake'")
expect_eq "cc-maintenance's wake-up connection" 1 "$M_WAKE"
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cc-maintenance-wake'" >/dev/null
sql "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
     VALUES ('test.wake', 'test', gen_random_uuid(), 1, ARRAY['$P'::uuid], '{}'); SELECT pg_notify('outbox', '')" >/dev/null
soft_wait "cc-maintenance listens on 'outbox' again" 5 \
	'(( $(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"'cc-maintenance-wake'"'") == 1 ))' || true
soft_wait "the row written while the wake-up listener was away is dispatched" 4 \
	'(( $(sql "SELECT count(*) FROM outbox WHERE event = '"'test.wake'"' AND published_at IS NOT NULL") == 1 ))' &&
	pass "a row written while cc-maintenance's wake-up listener was away was dispatched within 4 s"
# 5. The stream cap (--events-max-connections) is checked against open
# streams only, before the replay is read: upgrades that race past it get a
# 101 and are then dropped by the hub without a close frame (the client sees
# 1006: "reconnect at once") instead of 503 over_capacity ("poll").
CC_TESTKIT_EVENTS_REPLAY_DELAY_MS=300 start_api C --regions=eu-west --events-max-connections=2
wait_until "C listens on cc_events" 20 "grep -q '\"event\":\"events_listening\"' '$T_DIR/C.log'"
got=$("$PY" "$TOP/tests/integration/events_capacity.py" "$C_URL" "$TOK" 8)
echo "$T_NAME: 8 concurrent upgrades against a cap of 2: $got"
dropped=$(jq '."101-dropped" // 0' <<<"$got")
if ((dropped == 0)); then
	pass "8 upgrades at once against a cap of 2: none upgraded and dropped ($got)"
else
	FAILED+=("over capacity after the 101")
	echo "$T_NAME: FAIL: $dropped of 8 concurrent upgrades got a 101 and were dropped without a close frame (want 503 over_capacity): $got"
fi

# 6. Shutdown with a stream open (api_events_close before cc_http_server_stop):
# the stream hears 1001 shutdown and cc-api exits promptly.
start_api E --regions=eu-west
wait_until "E listens on cc_events" 20 "grep -q '\"event\":\"events_listening\"' '$T_DIR/E.log'"
listen sd "$E_URL" "$TOK"
await_ready sd
t0=$(date +%s%N)
kill -TERM "$E_PID"
wait_until "cc-api E exits" 10 '! running "$E_PID"'
took=$((($(date +%s%N) - t0) / 1000000))
wait_until "sd closed" 5 "closed sd"
expect_eq "the stream's close at shutdown" "1001	shutdown" "$(cat "$T_DIR/sd.ev.close")"
pass "SIGTERM with a stream open: 1001 shutdown, cc-api gone in $took ms"

# 7. (Not covered by events_stream.sh: its mutation stayed green.) The
# listener loses its connection: every open stream is closed 1011
# events_lost, and a resume from the last position replays what was missed.
listen ll "$A_URL" "$TOK"
await_ready ll
last_ll=$(head -1 "$T_DIR/ll.ev" | cut -f2 | jq .position)
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cc-api-events'" >/dev/null
wait_until "ll closed" 5 "closed ll"
expect_eq "the stream's close when the listener is lost" "1011	events_lost" "$(cat "$T_DIR/ll.ev.close")"
wait_until "A listens again" 10 "(( \$(grep -c '\"event\":\"events_listening\"' '$T_DIR/A.log') >= 2 ))"
listen ll2 "$A_URL" "$TOK" --after "$last_ll"
await_ready ll2
expect_eq "replayed after the loss" "stream.ready" "$(tail -1 "$T_DIR/ll2.ev" | cut -f2 | jq -r .event)"
pass "a lost listener closed the stream 1011 events_lost; the resume from $last_ll was served"

((${#FAILED[@]} == 0)) || fail "${#FAILED[@]} check(s) failed: ${FAILED[*]}"
