#!/usr/bin/env bash
# GET /v1/events end to end (issue 22): two cc-testkit-api replicas, a real
# cc-maintenance dispatching the outbox (woken by the writers' NOTIFY, its
# poll interval 60 s so that only the wake-up can deliver in time), a real
# cc-matcher, and Debian's python3-websockets as the client
# (tests/integration/events_client.py; raw frames only for the hostile ones).
#  1. fan-out: a player streaming from replica B receives, within 1 s, the
#     ticket.queued of a ticket it queued through replica A;
#  2. resume: the client leaves while its proposal is open; during its 5 s
#     away the player accepts and the other declines; reconnecting to A with
#     ?after=<last position> replays exactly the player's delivered rows
#     after it (from SQL), once each, in position order, before
#     stream.ready{replayed}; a later change (the cancel) arrives live;
#  3. a payload over the NOTIFY limit travels as a reference and arrives whole;
#  4. resync: an `after` above every position, and one below the purge floor;
#     the browser subprotocol login answers cc.v1;
#  5. hostile input closes only its own connection, each with its code
#     (1009, 1002, 1007, 1002, 1003, 1008), no or a forged session is 401
#     before the upgrade, and a bystander stream stays open throughout;
#  6. 1,000 upgrades from one address: the per-address cap admits at most 32
#     and refuses the rest with 429 while another address still connects;
#  7. a ban revokes the session and the open stream is closed 1008
#     session_revoked; cc-api's metrics counted it all;
#  8. every message received is valid against contracts/v1/events.json.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

PY=/usr/bin/python3
CLIENT="$TOP/tests/integration/events_client.py"
OPTOKEN=optok-events-stream-fixture
scratch_database events_stream
start_api A --regions=eu-west --operator-token-file=<(echo "$OPTOKEN") --events-session-check-ms=300
start_api B --regions=eu-west
FLAGS=(--outbox-interval-ms=60000 --expiry-interval-ms=60000 --stalled-interval-ms=60000 --no-show-interval-ms=60000
	--server-silent-interval-ms=60000 --result-missing-interval-ms=60000 --season-interval-ms=60000
	--retention-interval-ms=600000 --log-level=info)
start_maint M
wait_http "$M_ADMIN/readyz" "$M_PID" 20
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
	--playlist=ranked --team-size=1 --poll-interval-ms=100 --proposal-window-seconds=30 --admin-port="$(free_port)"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# listen NAME URL TOKEN [ARGS...]: a background stream client; its messages in $T_DIR/NAME.ev.
listen() {
	local name=$1 url=$2 tok=$3; shift 3
	start_bg "$T_DIR/$name.log" "$PY" "$CLIENT" listen "$url" "$tok" "$T_DIR/$name.ev" "$@"
	printf -v "${name}_PID" '%s' "$LAST_PID"
}
ready() { grep -q '"event":"stream\.\(ready\|resync\)"' "$T_DIR/$1.ev" 2>/dev/null; }
# await_ready NAME: its stream.ready or stream.resync came; fails at once if it ended first.
await_ready() {
	wait_until "$1 stream.ready" 20 "ready $1 || closed $1"
	ready "$1" || fail "$1 ended before stream.ready: close $(cat "$T_DIR/$1.ev.close"); $(tail -3 "$T_DIR/$1.log")"
}
# listening NAME: that replica's cc_events listener is in place (it refuses streams until then).
listening() { wait_until "$1 listens on cc_events" 20 "grep -q '\"event\":\"events_listening\"' '$T_DIR/$1.log'"; }
closed() { [[ -s "$T_DIR/$1.ev.close" ]]; }
# event_line NAME EVENT RESOURCE_ID: the first "<ms>\t<json>" line of that event.
event_line() {
	[[ -f "$T_DIR/$1.ev" ]] || return 0
	jq -R -r --arg e "$2" --arg r "$3" 'split("\t") as [$t, $j] | ($j | fromjson) as $m
		| select($m.event == $e and $m.resource_id == $r) | "\($t)\t\($j)"' "$T_DIR/$1.ev" | head -1
}
stop_client() { kill -TERM "$2" 2>/dev/null || true; wait_until "$1 ends" 10 "closed $1"; }
metric() { curl -s "$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }

listening A
listening B
P0_TOK=$(login "$A_URL" "ev-p0-$RANDOM$RANDOM")
P1_TOK=$(login "$A_URL" "ev-p1-$RANDOM$RANDOM")
P0=$(sql "SELECT player_id FROM sessions ORDER BY created_at LIMIT 1")

# 1. Fan-out across replicas.
listen c0 "$B_URL" "$P0_TOK"
await_ready c0
probe "$A_URL" "$P0_TOK" eu-west
t_enq=$(now_ms)
http POST "$A_URL/v1/queue" "$P0_TOK" '{"playlist":"ranked","protocol_version":1,"build":"ev"}' -H "Idempotency-Key: ev-0"
expect_http "player 0 queues through A" 201
TICKET0=$(jq -r .id <<<"$BODY")
wait_until "ticket.queued on B's stream" 5 '[[ -n $(event_line c0 ticket.queued "$TICKET0") ]]'
t_recv=$(event_line c0 ticket.queued "$TICKET0" | cut -f1)
lat=$((t_recv - t_enq))
((lat <= 1000)) || fail "ticket.queued written through A reached B's stream after $lat ms (> 1000)"
pass "fan-out: queued through A, received on B's stream $lat ms after the request started"

# 2. Resume across a 5 s absence during the proposal.
probe "$A_URL" "$P1_TOK" eu-west
http POST "$A_URL/v1/queue" "$P1_TOK" '{"playlist":"ranked","protocol_version":1,"build":"ev"}' -H "Idempotency-Key: ev-1"
expect_http "player 1 queues" 201
wait_until "ticket.proposed on c0" 20 '[[ -n $(event_line c0 ticket.proposed "$TICKET0") ]]'
PROPOSAL=$(event_line c0 ticket.proposed "$TICKET0" | cut -f2 | jq -r .payload.proposal_id)
stop_client c0 "$c0_PID"
expect_eq "c0 closed by the client" 1000 "$(cut -f1 "$T_DIR/c0.ev.close")"
last=$(grep -v '"event":"stream\.' "$T_DIR/c0.ev" | cut -f2 | jq -s 'map(.position) | max')
away_start=$SECONDS
http POST "$A_URL/v1/proposals/$PROPOSAL/response" "$P0_TOK" '{"response":"accept","revision":1}'
expect_http "player 0 accepts while away" 200
http POST "$B_URL/v1/proposals/$PROPOSAL/response" "$P1_TOK" '{"response":"decline","revision":1}'
expect_http "player 1 declines" 200
undelivered() { sql "SELECT count(*) FROM outbox WHERE '$P0' = ANY(player_ids) AND published_at IS NULL AND dead_lettered_at IS NULL"; }
wait_until "the missed rows are delivered" 10 '(( $(undelivered) == 0 ))'
while ((SECONDS - away_start < 5)); do sleep 0.2; done # the client's absence itself, not a wait for a state
want=$(sql "SELECT string_agg(position::text, ' ' ORDER BY position) FROM outbox
            WHERE '$P0' = ANY(player_ids) AND position > $last AND published_at IS NOT NULL")
nwant=$(wc -w <<<"$want")
missed=$(sql "SELECT string_agg(event, ' ' ORDER BY position) FROM outbox
              WHERE '$P0' = ANY(player_ids) AND position > $last AND published_at IS NOT NULL")
((nwant >= 2)) || fail "only $nwant rows were delivered while away ($missed): the test needs the decline and the requeue"
listen c1 "$A_URL" "$P0_TOK" --after "$last"
await_ready c1
got=$(cut -f2 "$T_DIR/c1.ev" | jq -r 'select(.event | startswith("stream.") | not) | .position' | xargs)
expect_eq "replayed positions after $last" "$want" "$got"
ready_msg=$(grep '"event":"stream.ready"' "$T_DIR/c1.ev" | cut -f2)
expect_eq "stream.ready.replayed" "$nwant" "$(jq .replayed <<<"$ready_msg")"
expect_eq "stream.ready.position" "${want##* }" "$(jq .position <<<"$ready_msg")"
out_of_order=$(cut -f2 "$T_DIR/c1.ev" | jq -s '[.[] | select(.resource_id)] | group_by(.resource_id)
	| map(select((map(.revision)) != (map(.revision) | sort) or (map(.revision) | unique | length) != length)) | length')
expect_eq "resources whose revisions came out of order or twice" 0 "$out_of_order"
http POST "$B_URL/v1/queue/$TICKET0/cancel" "$P0_TOK" \
	"{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '$TICKET0'")}"
expect_http "player 0 cancels its requeued ticket through B" 200
wait_until "ticket.cancelled live on c1" 5 '[[ -n $(event_line c1 ticket.cancelled "$TICKET0") ]]'
pass "resume: $nwant missed events ($missed) replayed once in order, then stream.ready, then live"

# 2b. Resumes raced by live writes: rows for player 1 commit one after another
# while clients resume from where the last one stopped; a row both in the
# replay and heard live is sent once, and none between is lost.
P1=$(sql "SELECT player_id FROM sessions ORDER BY created_at OFFSET 1 LIMIT 1")
# C pauses 300 ms between registering a stream and reading its replay
# (cc-testkit-api only), so rows land in that window on every resume.
CC_TESTKIT_EVENTS_REPLAY_DELAY_MS=300 start_api C --regions=eu-west
listening C
touch "$T_DIR/writing"
(i=0; while [[ -e "$T_DIR/writing" ]]; do
	i=$((i + 1))
	sql "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
	     VALUES ('test.tick', 'test', '00000000-0000-4000-8000-000000000001', $i, ARRAY['$P1'::uuid], '{}'); SELECT pg_notify('outbox', '')" >/dev/null
	sleep 0.02
done) &
writer=$!
from=0
for k in $(seq 1 8); do
	listen k$k "$C_URL" "$P1_TOK" --after "$from"
	await_ready k$k
	sleep 0.2 # let live rows arrive behind the replay
	stop_client k$k "$(eval echo "\$k${k}_PID")"
	seen=$(cut -f2 "$T_DIR/k$k.ev" | jq -r 'select(.event == "test.tick") | .position' | xargs)
	[[ -n "$seen" ]] || continue
	want_k=$(sql "SELECT string_agg(position::text, ' ' ORDER BY position) FROM outbox
	              WHERE '$P1' = ANY(player_ids) AND event = 'test.tick' AND position > $from
	              AND position <= ${seen##* }")
	expect_eq "k$k: positions after $from up to its last" "$want_k" "$seen"
	from=${seen##* }
done
rm -f "$T_DIR/writing"
wait "$writer"
dups=$(cat "$T_DIR"/k*.ev | cut -f2 | jq -r 'select(.event == "test.tick") | .position' | sort | uniq -d | wc -l)
expect_eq "positions two resumes both received (each took over where the last stopped)" 0 "$dups"
pass "8 resumes on C raced by live writes: every position once, in order, none skipped"

# (A fixture row is inserted as cc_outbox_append would, with its wake-up NOTIFY.)
# 3. A payload over the NOTIFY limit: a reference on the channel, the whole envelope on the stream.
big=$(head -c 9000 /dev/zero | tr '\0' x)
RID=$(sql "SELECT gen_random_uuid()")
sql "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
     VALUES ('test.big', 'test', '$RID', 1, ARRAY['$P0'::uuid], jsonb_build_object('blob', '$big')); SELECT pg_notify('outbox', '')" >/dev/null
wait_until "the big envelope on c1" 10 '[[ -n $(event_line c1 test.big "$RID") ]]'
expect_eq "blob bytes received" 9000 "$(event_line c1 test.big "$RID" | cut -f2 | jq -r '.payload.blob | length')"
expect_eq "ref flag on the stream" null "$(event_line c1 test.big "$RID" | cut -f2 | jq .ref)"
expect_eq "references fetched by A" 1 "$(metric "$A_ADMIN" cosmic_clash_api_events_references_fetched_total)"
pass "a 9,000-byte payload went as a reference and arrived whole"

# 4. Resync, and the browser login.
newest=$(sql "SELECT max(position) FROM outbox")
listen r1 "$B_URL" "$P1_TOK" --after $((newest + 1000))
await_ready r1
expect_eq "after above every position" "stream.resync unknown_position" \
	"$(head -1 "$T_DIR/r1.ev" | cut -f2 | jq -r '"\(.event) \(.reason)"')"
sql "UPDATE outbox_purged SET position = $newest" >/dev/null
listen r2 "$B_URL" "$P1_TOK" --after 1 --subprotocol
await_ready r2
expect_eq "after below the purge floor, over the subprotocol login" "stream.resync too_old" \
	"$(head -1 "$T_DIR/r2.ev" | cut -f2 | jq -r '"\(.event) \(.reason)"')"
stop_client r1 "$r1_PID"
stop_client r2 "$r2_PID"
pass "resync: unknown_position above the newest, too_old below the floor; subprotocol cc.v1 accepted"

# 5. Hostile input, each on its own connection; c1 is the bystander.
for pair in oversized:1009 unmasked:1002 bad_utf8:1007 fragmented_ping:1002 binary:1003 flood:1008; do
	got=$("$PY" "$CLIENT" hostile "$B_URL" "$P1_TOK" "${pair%%:*}")
	expect_eq "close code for ${pair%%:*}" "${pair##*:}" "$got"
done
expect_eq "no session" http401 "$("$PY" "$CLIENT" hostile "$B_URL" "" binary)"
expect_eq "a forged session" http401 "$("$PY" "$CLIENT" hostile "$B_URL" "s1.forgedforgedforgedforgedforged" binary)"
# upgrade URL [HEADER...]: an upgrade request that must be refused; sets STATUS and BODY.
upgrade() {
	local url=$1; shift
	http GET "$url" "" "" --max-time 5 -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
		-H "Sec-WebSocket-Version: ${WS_VERSION:-13}" -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$@"
}
for a in 01 -1 abc 9007199254740992 12345678901234567 1e3 %20; do
	upgrade "$B_URL/v1/events?after=$a" -H "Authorization: Bearer $P1_TOK"
	expect_http "after=$a" 400 invalid_request
done
upgrade "$B_URL/v1/events" -H "Sec-WebSocket-Protocol: cc.v1.bearer.$P1_TOK"
expect_http "a bearer subprotocol without cc.v1" 400 invalid_request
upgrade "$B_URL/v1/events" -H "Sec-WebSocket-Protocol: cc.v1"
expect_http "cc.v1 without any token" 401 unauthorized
upgrade "$B_URL/v1/events" -H "Authorization: Bearer $P1_TOK" -H 'Sec-WebSocket-Version: 8'
expect_http "two Sec-WebSocket-Version headers (13 and 8)" 400 invalid_upgrade
WS_VERSION=8 upgrade "$B_URL/v1/events" -H "Authorization: Bearer $P1_TOK"
expect_http "WebSocket version 8" 426 upgrade_required
http GET "$B_URL/v1/events" "$P1_TOK" ""
expect_http "a plain GET" 400 invalid_upgrade
start_api D --regions=eu-west --events=false
upgrade "$D_URL/v1/events" -H "Authorization: Bearer $P1_TOK"
expect_http "--events=false" 503 events_disabled
closed c1 && fail "the bystander stream was closed: $(cat "$T_DIR/c1.ev.close")"
pass "hostile frames closed only their own connections with their codes; bad after, subprotocol, version and sessions refused before the upgrade"

# 6. 1,000 upgrades from one address against B; another address still gets in.
touch "$T_DIR/hold"
"$PY" "$CLIENT" idle "$B_URL" "$P1_TOK" 1000 127.0.0.1 "$T_DIR/hold" >"$T_DIR/idle.out" &
idle_pid=$!
wait_until "1,000 upgrades attempted" 60 '[[ -s "$T_DIR/idle.out" ]]'
counts=$(cat "$T_DIR/idle.out")
ok=$(jq '."101" // 0' <<<"$counts") refused=$(jq '."429" // 0' <<<"$counts")
((ok >= 1 && ok <= 32)) || fail "upgrades admitted from one address: $ok (want 1..32): $counts"
expect_eq "refused with 429 past the cap" $((1000 - ok)) "$refused"
listen o1 "$B_URL" "$P1_TOK" --local 127.0.0.2
await_ready o1
rm -f "$T_DIR/hold"
wait "$idle_pid"
stop_client o1 "$o1_PID"
pass "1,000 upgrades from one address: $ok admitted, $refused refused 429; 127.0.0.2 connected meanwhile"

# 7. A ban closes the open stream.
http POST "$A_URL/v1/admin/players/$P0/ban" "$OPTOKEN" '{"until":"2099-01-01T00:00:00Z","reason":"events test"}'
expect_http "ban" 200
wait_until "c1 closed after the ban" 10 "closed c1"
expect_eq "c1's close" "1008	session_revoked" "$(cat "$T_DIR/c1.ev.close")"
expect_eq "A counted the revoked stream" 1 \
	"$(metric "$A_ADMIN" 'cosmic_clash_api_events_session_closed_total{reason="session_revoked"}')"
expect_eq "A counted one resume" 1 "$(metric "$A_ADMIN" cosmic_clash_api_events_resumes_total)"
expect_eq "B counted the unknown_position resync" 1 \
	"$(metric "$B_ADMIN" 'cosmic_clash_api_events_resyncs_total{reason="unknown_position"}')"
wait_until "B's streams all released" 10 '[[ $(metric "$B_ADMIN" cosmic_clash_api_events_connections) == 0 ]]'
pass "a ban closed the stream 1008 session_revoked; the metrics counted it"

# 8. The contract: every message either client saw (but the test.big fixture).
cat "$T_DIR"/*.ev | cut -f2 | jq -c 'select(.event | startswith("test.") | not)' >"$T_DIR/all.jsonl"
"$TOP/scripts/npm-tools.sh" >"$T_DIR/npm.log" 2>&1 || fail "scripts/npm-tools.sh: $(tail -5 "$T_DIR/npm.log")"
node "$TOP/tests/contract/events-validator.js" "$TOP/contracts/v1/events.json" "$T_DIR/all.jsonl" ||
	fail "messages not valid against contracts/v1/events.json (above)"
pass "$(wc -l <"$T_DIR/all.jsonl") live messages valid against contracts/v1/events.json"
