#!/usr/bin/env bash
# The Redis candidate index through the real cc-testkit-api binary:
#  - create puts the ticket in cc:cand:<playlist>:{h,z} with PostgreSQL's
#    values (player, rating, queued_at, expires_at, RTT);
#  - a heartbeat puts it again (an entry lost from Redis comes back, with the
#    new expiry); a probe answered while queued adds the new region's RTT;
#  - cancel, an operator ban and lazy expiry remove it;
#  - with Redis down (a port where nothing listens) every route still answers
#    2xx quickly, failures are counted in /metrics and logged once, not per
#    request.
# The harness Redis is shared, so this test only looks at its own tickets.
source "$(dirname "$0")/lib.sh"

R=(redis-cli -h "$CC_TEST_REDIS_HOST" -p "$CC_TEST_REDIS_PORT")
Z=cc:cand:casual:z
H=cc:cand:casual:h

start_api A --regions=local,far --redis-host="$CC_TEST_REDIS_HOST" --redis-port="$CC_TEST_REDIS_PORT" \
	--operator-token-file=<(echo optok-index-fixture)

# queued TOKEN KEY URL: creates a casual ticket; sets TICKET and PLAYER.
queued() {
	http POST "$3/v1/queue" "$1" '{"playlist":"casual","protocol_version":1,"build":"b1"}' -H "Idempotency-Key: $2"
	expect_http "create ($2)" 201
	TICKET=$(jq -r .id <<<"$BODY")
	PLAYER=$(jq -r .player_id <<<"$BODY")
}

# entry ID: the ticket's index value ("" when absent); fails if hash and zset disagree.
entry() {
	local v s
	v=$("${R[@]}" HGET "$H" "$1")
	s=$("${R[@]}" ZSCORE "$Z" "$1")
	[[ -n "$v" && -n "$s" ]] || [[ -z "$v" && -z "$s" ]] ||
		fail "ticket $1: hash value '$v' and zset score '$s' disagree"
	printf '%s' "$v"
}

# expect_entry WHAT ID: the entry matches the ticket's row field by field.
expect_entry() {
	local e want
	e=$(entry "$2")
	[[ -n "$e" ]] || fail "$1: ticket $2 is not in $Z/$H"
	want=$(sql "SELECT json_build_object('v', 1, 'p', player_id, 'b', build, 'pv', protocol_version,
		'r', rating, 'd', deviation, 'q', (extract(epoch FROM queued_at) * 1000)::bigint,
		'e', (extract(epoch FROM expires_at) * 1000)::bigint, 'rtt', predicted_rtt) FROM tickets WHERE id = '$2'")
	[[ $(jq -S . <<<"$e") == $(jq -S . <<<"$want") ]] || fail "$1: entry $e, PostgreSQL row $want"
	expect_eq "$1: zset score" "$(jq -r .q <<<"$want")" "$("${R[@]}" ZSCORE "$Z" "$2")"
}

expect_absent() {
	[[ -z $(entry "$2") ]] || fail "$1: ticket $2 is still in the index: $(entry "$2")"
}

tok=$(login "$A_URL" "index-a-$RANDOM")
probe "$A_URL" "$tok" local
queued "$tok" create-1 "$A_URL"
expect_entry "after create" "$TICKET"
[[ $(entry "$TICKET" | jq 'has("rtt") and (.rtt | has("local"))') == true ]] || fail "no local RTT in $(entry "$TICKET")"
pass "create: the ticket is in $Z with PostgreSQL's values: $(entry "$TICKET")"

# Lose the entry behind the API's back: the next heartbeat must bring it back.
"${R[@]}" HDEL "$H" "$TICKET" >/dev/null
"${R[@]}" ZREM "$Z" "$TICKET" >/dev/null
expect_absent "entry dropped by the test" "$TICKET"
old_expiry=$(sql "SELECT (extract(epoch FROM expires_at) * 1000)::bigint FROM tickets WHERE id = '$TICKET'")
http POST "$A_URL/v1/queue/$TICKET/heartbeat" "$tok" '{"revision":1}'
expect_http "heartbeat" 200
expect_entry "after heartbeat" "$TICKET"
new_expiry=$(entry "$TICKET" | jq -r .e)
((new_expiry > old_expiry)) || fail "heartbeat: entry expiry $new_expiry is not after the old $old_expiry"
pass "heartbeat: the entry is put again with the new expiry ($old_expiry -> $new_expiry)"

probe "$A_URL" "$tok" far
expect_entry "after probing 'far' while queued" "$TICKET"
[[ $(entry "$TICKET" | jq '.rtt | has("far")') == true ]] || fail "probe: no 'far' RTT in $(entry "$TICKET")"
pass "probe answer while queued: the entry carries the new RTT $(entry "$TICKET" | jq -c .rtt)"

http POST "$A_URL/v1/queue/$TICKET/cancel" "$tok" '{"revision":2}'
expect_http "cancel" 200
expect_absent "after cancel" "$TICKET"
pass "cancel removes the entry"

tok=$(login "$A_URL" "index-ban-$RANDOM")
probe "$A_URL" "$tok" local
queued "$tok" ban-1 "$A_URL"
expect_entry "before the ban" "$TICKET"
http POST "$A_URL/v1/admin/players/$PLAYER/ban" optok-index-fixture '{"until":"2099-01-01T00:00:00Z","reason":"index test"}'
expect_http "ban" 200
expect_eq "ticket state after the ban" CANCELLED "$(sql "SELECT state FROM tickets WHERE id = '$TICKET'")"
expect_absent "after the ban" "$TICKET"
pass "ban removes the cancelled ticket's entry"

tok=$(login "$A_URL" "index-exp-$RANDOM")
probe "$A_URL" "$tok" local
queued "$tok" exp-1 "$A_URL"
expect_entry "before expiry" "$TICKET"
sql "UPDATE tickets SET expires_at = now() - interval '1 second' WHERE id = '$TICKET'" >/dev/null
http GET "$A_URL/v1/queue/$TICKET" "$tok"
expect_http "read after the deadline" 200
expect_eq "state read after the deadline" EXPIRED "$(jq -r .state <<<"$BODY")"
expect_absent "after lazy expiry" "$TICKET"
pass "lazy expiry removes the entry"

curl -sf "$A_ADMIN/metrics" >"$T_DIR/metrics.a" || fail "GET /metrics on A"
if grep '^cosmic_clash_api_candidate_index_errors_total{' "$T_DIR/metrics.a"; then
	fail "index errors counted while Redis was up"
fi

# ---- Redis down -------------------------------------------------------------
dead=$(free_port)
start_api D --regions=local --redis-host=127.0.0.1 --redis-port="$dead"

# timed WHAT STATUS METHOD URL TOKEN BODY [CURL ARGS]: one request, under 1 s.
timed() {
	local what=$1 status=$2; shift 2
	local t0=$EPOCHREALTIME
	http "$@"
	local ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
	expect_http "$what with Redis down" "$status"
	((ms < 1000)) || fail "$what with Redis down took $ms ms"
	echo "  $what: HTTP $STATUS in $ms ms"
}
down_start=$SECONDS
for round in 1 2 3; do
	tok=$(login "$D_URL" "index-down-$round-$RANDOM")
	probe "$D_URL" "$tok" local
	t0=$EPOCHREALTIME
	http POST "$D_URL/v1/queue" "$tok" '{"playlist":"casual","protocol_version":1,"build":"b1"}' -H "Idempotency-Key: down-$round"
	ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
	expect_http "create with Redis down" 201
	((ms < 1000)) || fail "create with Redis down took $ms ms"
	id=$(jq -r .id <<<"$BODY")
	timed heartbeat 200 POST "$D_URL/v1/queue/$id/heartbeat" "$tok" '{"revision":1}'
	timed "probe challenge" 201 POST "$D_URL/v1/probes/local/challenge" "$tok" ""
	timed "probe answer" 200 POST "$D_URL/v1/probes/local/answer" "$tok" "{\"nonce\":\"$(jq -r .nonce <<<"$BODY")\"}"
	timed read 200 GET "$D_URL/v1/queue/$id" "$tok"
	timed cancel 200 POST "$D_URL/v1/queue/$id/cancel" "$tok" '{"revision":2}'
	expect_eq "round $round: ticket state" CANCELLED "$(sql "SELECT state FROM tickets WHERE id = '$id'")"
done
curl -sf "$D_ADMIN/metrics" >"$T_DIR/metrics.d" || fail "GET /metrics on D"
puts=$(sed -n 's/^cosmic_clash_api_candidate_index_errors_total{op="put"} //p' "$T_DIR/metrics.d")
removes=$(sed -n 's/^cosmic_clash_api_candidate_index_errors_total{op="remove"} //p' "$T_DIR/metrics.d")
# Per round: create, heartbeat and probe answer put; cancel removes.
expect_eq "failed puts counted" 9 "$puts"
expect_eq "failed removes counted" 3 "$removes"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T_DIR/metrics.d" >"$T_DIR/promtool.out" 2>&1 ||
		fail "promtool refused /metrics with index errors: $(cat "$T_DIR/promtool.out")"
fi
# At most one line per 10 s interval, so a dead Redis cannot flood the log.
logged=$(grep -c '"event":"candidate_index_refresh_failed"' "$T_DIR/D.log" || true)
allowed=$((1 + (SECONDS - down_start) / 10))
((logged >= 1 && logged <= allowed)) ||
	fail "12 refresh failures in $((SECONDS - down_start)) s were logged $logged times (want 1..$allowed)"
pass "Redis down: every route answered 2xx in under 1 s; 9 puts and 3 removes counted, logged $logged time(s)"
