#!/usr/bin/env bash
# Proposals end to end (SPEC 7) through the real binaries: players queue on
# two cc-api replicas, a real cc-matcher forms 1v1 ranked proposals, and the
# players answer over HTTP.
#  - all accept: proposal ACCEPTED, tickets MATCHED, a match ALLOCATING,
#    the allocator's outbox event;
#  - a decline: the other player requeued at once with a fresh expiry, the
#    decliner CANCELLED with a DECLINE cooldown (429 on the next enqueue);
#  - a timeout raced by eight requests on two replicas: exactly one
#    PROPOSAL_TIMEOUT per non-responder, whose ticket ends EXPIRED (one
#    ticket.expired), none for the responder, who is requeued;
#  - a cancel of a PROPOSED ticket declines the proposal and requeues the
#    other player; a cancel racing an accept leaves a consistent state;
#  - the audit query finds no violation at the end.
source "$(dirname "$0")/lib.sh"

start_api A --regions=eu-west
start_api B --regions=eu-west
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
	--playlist=ranked --team-size=1 --poll-interval-ms=100 --proposal-window-seconds=3 --admin-port="$(free_port)"
MATCHER_PID=$LAST_PID

# pair NAME: two fresh players queue for ranked; sets TOK0 TOK1 TICKET0 TICKET1 PLAYER0 PLAYER1.
pair() {
	for i in 0 1; do
		local base=$A_URL; ((i)) && base=$B_URL
		local t; t=$(login "$base" "$1-$i-$RANDOM$RANDOM")
		probe "$base" "$t" eu-west
		# A build of its own per pair, so leftovers of other steps never join it.
		http POST "$base/v1/queue" "$t" "{\"playlist\":\"ranked\",\"protocol_version\":1,\"build\":\"$1\"}" -H "Idempotency-Key: $1-$i"
		expect_http "$1: player $i queues" 201
		printf -v "TOK$i" '%s' "$t"
		printf -v "TICKET$i" '%s' "$(jq -r .id <<<"$BODY")"
		printf -v "PLAYER$i" '%s' "$(jq -r .player_id <<<"$BODY")"
	done
}

# await_proposal: polls player 0's ticket until it shows a proposal (as a
# client would); sets PROPOSAL. Fails at once if the matcher died.
await_proposal() {
	local deadline=$((SECONDS + 20))
	while ((SECONDS < deadline)); do
		kill -0 "$MATCHER_PID" 2>/dev/null || fail "cc-matcher exited: $(tail -5 "$T_DIR/matcher.log")"
		http GET "$A_URL/v1/queue/$TICKET0" "$TOK0" ""
		PROPOSAL=$(jq -r '.proposal_id // empty' <<<"$BODY")
		[[ -n "$PROPOSAL" ]] && return 0
		sleep 0.1
	done
	fail "no proposal within 20 s; last ticket: $BODY"
}

respond() { # respond TOKEN BASE accept|decline
	http POST "$2/v1/proposals/$PROPOSAL/response" "$1" "{\"response\":\"$3\",\"revision\":1}"
}

# 1. Everyone accepts.
pair accept
await_proposal
respond "$TOK0" "$A_URL" accept; expect_http "first accept" 200
expect_eq "proposal after one accept" OPEN "$(jq -r .state <<<"$BODY")"
respond "$TOK1" "$B_URL" accept; expect_http "second accept" 200
expect_eq "proposal after all accepted" ACCEPTED "$(jq -r .state <<<"$BODY")"
match=$(jq -r .match_id <<<"$BODY")
expect_eq "tickets" "MATCHED MATCHED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE id IN ('$TICKET0','$TICKET1')")"
expect_eq "match state" ALLOCATING "$(sql "SELECT state FROM matches WHERE id = '$match'")"
expect_eq "allocator's outbox event" 1 "$(sql "SELECT count(*) FROM outbox WHERE event = 'match.created' AND resource_id = '$match'")"
respond "$TOK0" "$A_URL" accept; expect_http "an identical repeat after the decision" 200
pass "all accept: ACCEPTED, MATCHED, match ALLOCATING with its outbox event"

# 2. A decline. Player 0 has not answered and its heartbeat deadline is
# 15 s away (its client may be gone): the requeue keeps that deadline
# rather than granting a fresh one (SPEC 7: never extend what its owner
# earned), so a vanished client cannot hold live players a second time.
pair decline
await_proposal
sql "UPDATE tickets SET expires_at = now() + interval '15 seconds' WHERE id = '$TICKET0'" >/dev/null
respond "$TOK1" "$B_URL" decline; expect_http "decline" 200
expect_eq "proposal" DECLINED "$(jq -r .state <<<"$BODY")"
expect_eq "decliner's ticket" CANCELLED "$(sql "SELECT state FROM tickets WHERE id = '$TICKET1'")"
expect_eq "the silent other requeued keeping its deadline" "QUEUED 1" \
	"$(sql "SELECT state || ' ' || (expires_at < now() + interval '16 seconds')::int FROM tickets WHERE id = '$TICKET0'")"
expect_eq "DECLINE penalties of the decliner" 1 "$(sql "SELECT count(*) FROM penalties WHERE player_id = '$PLAYER1' AND kind = 'DECLINE'")"
expect_eq "penalties of the other" 0 "$(sql "SELECT count(*) FROM penalties WHERE player_id = '$PLAYER0'")"
http POST "$B_URL/v1/queue" "$TOK1" '{"playlist":"ranked","protocol_version":1,"build":"decline"}' -H "Idempotency-Key: after-decline"
expect_http "the decliner queues again" 429 cooldown
jq -e '.error.retry_after_seconds > 0' <<<"$BODY" >/dev/null || fail "429 without retry_after_seconds: $BODY"
respond "$TOK0" "$A_URL" accept; expect_http "accept after the decline" 409 proposal_closed
http POST "$A_URL/v1/queue/$TICKET0/cancel" "$TOK0" "{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '$TICKET0'")}"
expect_http "the requeued player cancels" 200
pass "decline: decliner CANCELLED with a cooldown, the other requeued at once"

# 2b. A decline after the other accepted: the accepter proved it is there
# and is requeued at once with a fresh deadline.
pair acceptdecline
await_proposal
sql "UPDATE tickets SET expires_at = now() + interval '15 seconds' WHERE id = '$TICKET0'" >/dev/null
respond "$TOK0" "$A_URL" accept; expect_http "accept before the decline" 200
respond "$TOK1" "$B_URL" decline; expect_http "decline after an accept" 200
expect_eq "the accepter requeued with a fresh deadline" "QUEUED 1" \
	"$(sql "SELECT state || ' ' || (expires_at > now() + interval '20 seconds')::int FROM tickets WHERE id = '$TICKET0'")"
http POST "$A_URL/v1/queue/$TICKET0/cancel" "$TOK0" "{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '$TICKET0'")}"
expect_http "the requeued accepter cancels" 200
pass "decline after an accept: the accepter requeued with a fresh deadline"

# 3. A timeout raced by eight requests on two replicas.
pair timeout
await_proposal
respond "$TOK0" "$A_URL" accept; expect_http "the responder accepts" 200
expires=$(sql "SELECT extract(epoch FROM expires_at - now()) FROM proposals WHERE id = '$PROPOSAL'")
kill -STOP "$MATCHER_PID" # the race must be between the API requests, not the matcher's sweep
sleep "$(awk -v e="$expires" 'BEGIN { print (e > 0 ? e + 0.2 : 0) }')"
args=(-s -Z --parallel-immediate)
for i in $(seq 8); do
	base=$A_URL; ((i % 2)) && base=$B_URL
	tok=$TOK0; ((i % 3)) && tok=$TOK1
	((i > 1)) && args+=(--next)
	if ((i % 4 == 0)); then
		args+=(-H "Authorization: Bearer $tok" -o /dev/null -w '%{http_code}\n' "$base/v1/proposals/$PROPOSAL")
	else
		args+=(-H "Authorization: Bearer $tok" -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' --data-binary '{"response":"accept","revision":1}' "$base/v1/proposals/$PROPOSAL/response")
	fi
done
curl "${args[@]}" >"$T_DIR/race.codes"
# Read the outcome while the matcher is still stopped (it would propose the
# requeued pair again at once), then let it go before any verdict.
state=$(sql "SELECT state FROM proposals WHERE id = '$PROPOSAL'")
timeouts=$(sql "SELECT count(*) FROM penalties WHERE player_id = '$PLAYER1' AND kind = 'PROPOSAL_TIMEOUT'")
responder=$(sql "SELECT count(*) FROM penalties WHERE player_id = '$PLAYER0'")
tickets=$(sql "SELECT string_agg(state, ' ' ORDER BY id = '$TICKET0' DESC) FROM tickets WHERE id IN ('$TICKET0','$TICKET1')")
expired_events=$(sql "SELECT count(*) FROM outbox WHERE resource_id = '$TICKET1' AND event = 'ticket.expired'")
kill -CONT "$MATCHER_PID"
grep -qvE '^(200|409)$' "$T_DIR/race.codes" && fail "racing expiry answered $(tr '\n' ' ' <"$T_DIR/race.codes")"
expect_eq "proposal" EXPIRED "$state"
expect_eq "PROPOSAL_TIMEOUT of the non-responder" 1 "$timeouts"
expect_eq "penalties of the responder" 0 "$responder"
expect_eq "responder requeued, non-responder EXPIRED" "QUEUED EXPIRED" "$tickets"
expect_eq "ticket.expired rows of the non-responder" 1 "$expired_events"
pass "timeout raced by 8 requests ($(tr '\n' ' ' <"$T_DIR/race.codes")): one PROPOSAL_TIMEOUT and EXPIRED for the non-responder, the responder requeued"
for i in 0 1; do
	t="TICKET$i"; k="TOK$i"
	http POST "$A_URL/v1/queue/${!t}/cancel" "${!k}" "{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '${!t}'")}"
done

# 4. Cancel cascade, and a cancel racing an accept.
pair cascade
await_proposal
rev=$(sql "SELECT revision FROM tickets WHERE id = '$TICKET1'")
http POST "$B_URL/v1/queue/$TICKET1/cancel" "$TOK1" "{\"revision\":$rev}"
expect_http "cancel of a PROPOSED ticket" 200
expect_eq "canceller" CANCELLED "$(jq -r .state <<<"$BODY")"
expect_eq "proposal" DECLINED "$(sql "SELECT state FROM proposals WHERE id = '$PROPOSAL'")"
expect_eq "the other player" QUEUED "$(sql "SELECT state FROM tickets WHERE id = '$TICKET0'")"
http POST "$A_URL/v1/queue/$TICKET0/cancel" "$TOK0" "{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '$TICKET0'")}"
pass "cancel cascade: proposal DECLINED, canceller CANCELLED, other requeued"

for round in 1 2 3 4 5; do
	pair "cra-$round"
	await_proposal
	respond "$TOK0" "$A_URL" accept; expect_http "round $round: first accept" 200
	rev=$(sql "SELECT revision FROM tickets WHERE id = '$TICKET1'")
	curl -s -Z --parallel-immediate \
		-H "Authorization: Bearer $TOK1" -o "$T_DIR/cra.accept" -w '%{http_code}\n' -H 'Content-Type: application/json' --data-binary '{"response":"accept","revision":1}' "$A_URL/v1/proposals/$PROPOSAL/response" --next \
		-H "Authorization: Bearer $TOK1" -o "$T_DIR/cra.cancel" -w '%{http_code}\n' -H 'Content-Type: application/json' --data-binary "{\"revision\":$rev}" "$B_URL/v1/queue/$TICKET1/cancel" >"$T_DIR/cra.codes"
	outcome=$(sql "SELECT p.state || ' ' || string_agg(t.state, ' ' ORDER BY t.id = '$TICKET0' DESC) FROM proposals p JOIN tickets t ON t.id IN ('$TICKET0','$TICKET1') WHERE p.id = '$PROPOSAL' GROUP BY p.state")
	case "$outcome" in
	"ACCEPTED MATCHED MATCHED" | "DECLINED QUEUED CANCELLED") ;;
	*) fail "round $round: cancel racing accept left '$outcome' (answers $(tr '\n' ' ' <"$T_DIR/cra.codes"))" ;;
	esac
	for i in 0 1; do
		t="TICKET$i"; k="TOK$i"
		[[ $(sql "SELECT state FROM tickets WHERE id = '${!t}'") == QUEUED ]] &&
			http POST "$A_URL/v1/queue/${!t}/cancel" "${!k}" "{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '${!t}'")}"
	done
	echo "$T_NAME: round $round: $outcome"
done
pass "cancel racing accept: every round ended ACCEPTED/MATCHED or DECLINED/requeued+cancelled"

violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$violations" ]] || fail "audit found violations: $violations"
pass "audit query: no violations"
