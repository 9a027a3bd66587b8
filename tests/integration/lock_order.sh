#!/usr/bin/env bash
# Lock order on proposals and tickets (issue 13 item 4, store/README.md):
# the last accept of a proposal and a cancel of one of its tickets race,
# through two cc-api replicas, many rounds; each pair of answers is one of
# the two consistent outcomes, neither waited for PostgreSQL's deadlock
# detector (deadlock_timeout, 1 s), and the harness's PostgreSQL log shows no
# "deadlock detected" written while this script ran. Before the fix the
# cancel locked its ticket and then the proposal, the accept the proposal
# and then the tickets: rounds logged deadlocks and took a second.
#
# Proposals are written as cc-matcher's claim writes them (as the contract
# test does), so rounds need no matcher and no waiting.
source "$(dirname "$0")/lib.sh"

ROUNDS=${LOCK_ORDER_ROUNDS:-16}
[[ -r "$CC_TEST_PG_LOG" ]] || fail "no readable PostgreSQL log at CC_TEST_PG_LOG='$CC_TEST_PG_LOG'"
log_from=$(($(wc -l <"$CC_TEST_PG_LOG") + 1))

start_api A --regions=eu-west
start_api B --regions=eu-west
build="lock-order-$RANDOM$RANDOM"

# seed T0 T1: an OPEN ranked 1v1 proposal over two QUEUED tickets; prints its id.
seed() {
	psql -qAtX -v ON_ERROR_STOP=1 -v t0="$1" -v t1="$2" -v build="$build" "$CC_TEST_PG_DSN" <<'SQL'
BEGIN;
INSERT INTO proposals (playlist, state, region, arena, build, protocol_version, team_size, matcher, expires_at)
  VALUES ('ranked', 'OPEN', 'eu-west', 'aurora_ring', :'build', 1, 1, 'lock-order', now() + interval '10 minutes')
  RETURNING id AS proposal_id \gset
INSERT INTO proposal_participants (proposal_id, ticket_id, player_id, team)
  SELECT :'proposal_id', t.id, t.player_id, CASE WHEN t.id = :'t0' THEN 0 ELSE 1 END
  FROM tickets t WHERE t.id IN (:'t0', :'t1');
UPDATE tickets SET state = 'PROPOSED', proposal_id = :'proposal_id', revision = revision + 1, updated_at = now()
  WHERE id IN (:'t0', :'t1') AND state = 'QUEUED';
INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids)
  SELECT 'proposal.opened', 'proposal', :'proposal_id', 1, array_agg(player_id)
  FROM proposal_participants WHERE proposal_id = :'proposal_id';
INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
  SELECT 'ticket.proposed', 'ticket', t.id, t.revision, ARRAY[t.player_id], jsonb_build_object('proposal_id', :'proposal_id')
  FROM tickets t WHERE t.proposal_id = :'proposal_id' AND t.state = 'PROPOSED';
COMMIT;
SELECT :'proposal_id';
SQL
}

# queued NAME: a fresh player with a QUEUED ranked ticket; sets TOK TICKET.
queued() {
	TOK=$(login "$A_URL" "$1-$RANDOM$RANDOM")
	probe "$A_URL" "$TOK" eu-west
	http POST "$B_URL/v1/queue" "$TOK" "{\"playlist\":\"ranked\",\"protocol_version\":1,\"build\":\"$build\"}" -H "Idempotency-Key: $1"
	expect_http "$1 queues" 201
	TICKET=$(jq -r .id <<<"$BODY")
}

slowest=0
for round in $(seq "$ROUNDS"); do
	queued "lo-$round-0"; tok0=$TOK ticket0=$TICKET
	queued "lo-$round-1"; tok1=$TOK ticket1=$TICKET
	proposal=$(seed "$ticket0" "$ticket1")
	[[ $proposal =~ ^[0-9a-f-]{36}$ ]] || fail "round $round: seeding the proposal printed '$proposal'"
	# Player 0 accepts; then player 1's accept (the last one) races a cancel:
	# odd rounds player 1 cancels its own ticket, even rounds player 0 (who had accepted).
	http POST "$A_URL/v1/proposals/$proposal/response" "$tok0" '{"response":"accept","revision":1}'
	expect_http "round $round: first accept" 200
	if ((round % 2)); then ctok=$tok1 cticket=$ticket1; else ctok=$tok0 cticket=$ticket0; fi
	rev=$(sql "SELECT revision FROM tickets WHERE id = '$cticket'")
	curl -s -Z --parallel-immediate \
		-H "Authorization: Bearer $tok1" -H 'Content-Type: application/json' -o "$T_DIR/lo.accept" \
		-w 'accept %{http_code} %{time_total}\n' --data-binary '{"response":"accept","revision":1}' \
		"$A_URL/v1/proposals/$proposal/response" --next \
		-H "Authorization: Bearer $ctok" -H 'Content-Type: application/json' -o "$T_DIR/lo.cancel" \
		-w 'cancel %{http_code} %{time_total}\n' --data-binary "{\"revision\":$rev}" \
		"$B_URL/v1/queue/$cticket/cancel" >"$T_DIR/lo.codes"
	answers=$(sort "$T_DIR/lo.codes" | awk '{ printf "%s %s; ", $1, $2 }')
	outcome=$(sql "SELECT p.state || ' ' || string_agg(t.state, ' ' ORDER BY t.id = '$cticket') FROM proposals p
		JOIN tickets t ON t.id IN ('$ticket0', '$ticket1') WHERE p.id = '$proposal' GROUP BY p.state")
	case "$outcome/$answers" in
	"ACCEPTED MATCHED MATCHED/accept 200; cancel 409; ") ;;
	"DECLINED QUEUED CANCELLED/accept 409; cancel 200; ") ;;
	*) fail "round $round: accept racing cancel left '$outcome' with answers '$answers': $(cat "$T_DIR/lo.accept") $(cat "$T_DIR/lo.cancel")" ;;
	esac
	took=$(awk '{ if ($3 > m) m = $3 } END { printf "%.3f", m }' "$T_DIR/lo.codes")
	slowest=$(awk -v a="$took" -v b="$slowest" 'BEGIN { print (a > b ? a : b) }')
	echo "$T_NAME: round $round: $outcome ($answers slowest ${took} s)"
	# Leave nothing live for the next round or the audit.
	[[ $(sql "SELECT state FROM tickets WHERE id = '$ticket0'") == QUEUED ]] &&
		http POST "$A_URL/v1/queue/$ticket0/cancel" "$tok0" "{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '$ticket0'")}"
	[[ $(sql "SELECT state FROM tickets WHERE id = '$ticket1'") == QUEUED ]] &&
		http POST "$A_URL/v1/queue/$ticket1/cancel" "$tok1" "{\"revision\":$(sql "SELECT revision FROM tickets WHERE id = '$ticket1'")}"
done

deadlocks=$(tail -n "+$log_from" "$CC_TEST_PG_LOG" | grep -A3 'deadlock detected' || true)
[[ -z "$deadlocks" ]] || fail "PostgreSQL detected deadlocks while accepts raced cancels:
$deadlocks"
violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$violations" ]] || fail "audit found violations: $violations"
pass "$ROUNDS rounds of a last accept racing a cancel: consistent outcomes, no deadlock in the PostgreSQL log (slowest answer ${slowest} s)"
