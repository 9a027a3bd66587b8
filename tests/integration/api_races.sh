#!/usr/bin/env bash
# Concurrency through two cc-api replicas on one database, with real racing
# requests (curl --parallel fires them together):
#  - five heartbeats at one revision: exactly one 200, four 409, revision +1;
#  - five creates with one idempotency key: one ticket, identical answers;
#  - the same key with another body: 409 idempotency_conflict;
#  - two creates with different keys: one active ticket;
#  - a ban through replica A refuses the session at once on replica B, and
#    the banned player cannot log in.
source "$(dirname "$0")/lib.sh"

start_api A --regions=eu-west --operator-token-file=<(echo optok-races-fixture)
start_api B --regions=eu-west
ROUNDS=${ROUNDS:-8}

# parallel N METHOD PATH TOKEN BODY [CURL ARGS]: N requests at once, spread
# over both replicas; writes "status<TAB>body" lines to $T_DIR/par.
parallel() {
	local n=$1 method=$2 path=$3 token=$4 body=$5; shift 5
	local args=(-s -Z --parallel-immediate --parallel-max "$n")
	for i in $(seq "$n"); do
		local base=$A_URL; ((i % 2)) || base=$B_URL
		((i > 1)) && args+=(--next)
		args+=(-X "$method" -H "Authorization: Bearer $token" -H 'Content-Type: application/json'
			--data-binary "$body" -o "$T_DIR/par.$i" -w "%{http_code}\n" "$@" "$base$path")
	done
	curl "${args[@]}" >"$T_DIR/par.codes"
}

for round in $(seq "$ROUNDS"); do
	tok=$(login "$A_URL" "race-hb-$round-$RANDOM")
	probe "$B_URL" "$tok" eu-west
	http POST "$A_URL/v1/queue" "$tok" '{"playlist":"casual","protocol_version":1,"build":"b1"}' -H "Idempotency-Key: hb-$round"
	expect_http "create" 201
	id=$(jq -r .id <<<"$BODY")
	parallel 5 POST "/v1/queue/$id/heartbeat" "$tok" '{"revision":1}'
	ok=$(grep -c '^200$' "$T_DIR/par.codes" || true)
	conflict=$(grep -c '^409$' "$T_DIR/par.codes" || true)
	[[ $ok == 1 && $conflict == 4 ]] || fail "round $round: 5 heartbeats at revision 1 gave statuses $(tr '\n' ' ' <"$T_DIR/par.codes") (want one 200, four 409); bodies: $(cat "$T_DIR"/par.[0-9])"
	for f in "$T_DIR"/par.[0-9]; do
		code=$(jq -r '.error.code // "ok"' "$f")
		[[ $code == ok || $code == revision_conflict ]] || fail "round $round: a heartbeat answered $(cat "$f")"
	done
	expect_eq "round $round: revision after the race" 2 "$(sql "SELECT revision FROM tickets WHERE id = '$id'")"
done
pass "$ROUNDS rounds of 5 racing heartbeats: exactly one 200 and four revision_conflict each, revision +1"

for round in $(seq "$ROUNDS"); do
	tok=$(login "$A_URL" "race-idem-$round-$RANDOM")
	probe "$A_URL" "$tok" eu-west
	parallel 5 POST /v1/queue "$tok" '{"playlist":"ranked","protocol_version":1,"build":"b1"}' -H "Idempotency-Key: same-$round"
	[[ $(sort -u "$T_DIR/par.codes") == 201 ]] || fail "round $round: 5 creates with one key gave statuses $(tr '\n' ' ' <"$T_DIR/par.codes")"
	# Each answer is the one stored ticket with a fresh estimated wait (openapi: POST /v1/queue 201).
	first=$(jq -cS 'del(.estimated_wait_seconds, .estimated_wait_method)' "$T_DIR/par.1")
	for f in "$T_DIR"/par.[2-5]; do
		[[ "$(jq -cS 'del(.estimated_wait_seconds, .estimated_wait_method)' "$f")" == "$first" ]] ||
			fail "round $round: replays differ: '$first' vs '$(cat "$f")'"
	done
	ticket_player=$(jq -r .player_id <<<"$first")
	expect_eq "round $round: tickets of the player after 5 creates" 1 "$(sql "SELECT count(*) FROM tickets WHERE player_id = '$ticket_player'")"
	http POST "$B_URL/v1/queue" "$tok" '{"playlist":"casual","protocol_version":1,"build":"b1"}' -H "Idempotency-Key: same-$round"
	expect_http "same key, different body" 409 idempotency_conflict
done
pass "$ROUNDS rounds of 5 racing creates with one key: one ticket, identical answers; another body with that key: 409"

for round in $(seq "$ROUNDS"); do
	tok=$(login "$B_URL" "race-keys-$round-$RANDOM")
	probe "$A_URL" "$tok" eu-west
	args=(-s -Z --parallel-immediate)
	for i in 1 2; do
		base=$A_URL; ((i == 2)) && base=$B_URL
		((i > 1)) && args+=(--next)
		args+=(-H "Authorization: Bearer $tok" -H "Idempotency-Key: k$i-$round" -o "$T_DIR/two.$i" -w '%{http_code}\n'
			-H 'Content-Type: application/json' --data-binary '{"playlist":"casual","protocol_version":1,"build":"b1"}' "$base/v1/queue")
	done
	curl "${args[@]}" | sort >"$T_DIR/two.codes"
	[[ "$(tr '\n' ' ' <"$T_DIR/two.codes")" == "201 409 " ]] || fail "round $round: two keys gave $(tr '\n' ' ' <"$T_DIR/two.codes"): $(cat "$T_DIR"/two.[12])"
	grep -q active_ticket_exists "$T_DIR"/two.[12] || fail "round $round: the loser was not told active_ticket_exists: $(cat "$T_DIR"/two.[12])"
	player=$(jq -r '.player_id // empty' "$T_DIR"/two.[12] | head -n1)
	expect_eq "round $round: active tickets" 1 "$(sql "SELECT count(*) FROM tickets WHERE player_id = '$player' AND state = 'QUEUED'")"
done
pass "$ROUNDS rounds of two creates with different keys: one 201, one 409 active_ticket_exists, one active ticket"

ban_ticket="race-ban-$RANDOM"
tok=$(login "$A_URL" "$ban_ticket")
probe "$A_URL" "$tok" eu-west
http POST "$B_URL/v1/queue" "$tok" '{"playlist":"casual","protocol_version":1,"build":"b1"}' -H "Idempotency-Key: ban"
expect_http "create before ban" 201
id=$(jq -r .id <<<"$BODY"); player=$(jq -r .player_id <<<"$BODY")
http GET "$B_URL/v1/queue/$id" "$tok" ""
expect_http "read on replica B before the ban" 200
http POST "$A_URL/v1/admin/players/$player/ban" optok-races-fixture '{"until":"2099-01-01T00:00:00Z","reason":"race test"}'
expect_http "ban through replica A" 200
http GET "$B_URL/v1/queue/$id" "$tok" ""
expect_http "replica B, next request after the ban" 403 banned
http POST "$B_URL/v1/session/steam" "" "{\"ticket\":\"$ban_ticket\"}"
expect_http "the banned player logs in again on replica B" 403 banned
expect_eq "revoked sessions of the banned player" 0 "$(sql "SELECT count(*) FROM sessions WHERE player_id = '$player' AND revoked_at IS NULL")"
expect_eq "banned player's ticket" CANCELLED "$(sql "SELECT state FROM tickets WHERE id = '$id'")"
pass "a ban through replica A refuses the session on replica B at once, revokes sessions and cancels the waiting ticket"
