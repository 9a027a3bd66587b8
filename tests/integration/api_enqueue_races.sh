#!/usr/bin/env bash
# Enqueue under real concurrency, through two cc-api replicas on one database
# (curl -Z --parallel-immediate fires the requests together):
#  - PLAYERS (50) distinct players, each logged in and probed first, enqueue
#    at once: every one gets 201 with one QUEUED ticket, in every one of
#    ROUNDS rounds (creates of different players must not abort each other
#    under SERIALIZABLE, so no 503 retry_exhausted);
#  - the same with every player holding an overdue QUEUED ticket: the old
#    ones expire (one ticket.expired each) and every player gets 201;
#  - BAN_ROUNDS (20) rounds of one enqueue racing one ban of the same player:
#    afterwards the banned player never holds an active ticket.
source "$(dirname "$0")/lib.sh"

start_api A --regions=eu-west --operator-token-file=<(echo optok-enqueue-races)
start_api B --regions=eu-west --operator-token-file=<(echo optok-enqueue-races)
PLAYERS=${PLAYERS:-50}
ROUNDS=${ROUNDS:-4}
BAN_ROUNDS=${BAN_ROUNDS:-20}
run=$RANDOM$RANDOM
q='{"playlist":"casual","protocol_version":1,"build":"b1"}'

# player_of TOKEN: the player id of a session token.
player_of() { sql "SELECT player_id FROM sessions WHERE token_hash = sha256(convert_to('$1', 'UTF8'))"; }

# Players logged in on alternating replicas and probed; TOKS[i], PIDS[i].
TOKS=()
PIDS=()
for i in $(seq "$PLAYERS"); do
	base=$A_URL; ((i % 2)) || base=$B_URL
	TOKS[i]=$(login "$base" "enq-$run-$i")
	probe "$base" "${TOKS[i]}" eu-west
	PIDS[i]=$(player_of "${TOKS[i]}")
done
all_players="{$(IFS=,; echo "${PIDS[*]}")}"

# enqueue_all KEY: every player enqueues at once, odd ones through A, even
# ones through B; writes one status per player to $T_DIR/all.codes.
enqueue_all() {
	local args=(-s -Z --parallel-immediate --parallel-max "$PLAYERS")
	for i in $(seq "$PLAYERS"); do
		local base=$A_URL; ((i % 2)) || base=$B_URL
		((i > 1)) && args+=(--next)
		args+=(-H "Authorization: Bearer ${TOKS[i]}" -H "Idempotency-Key: $1-$i" -H 'Content-Type: application/json'
			--data-binary "$q" -o "$T_DIR/all.$i" -w '%{http_code}\n' "$base/v1/queue")
	done
	curl "${args[@]}" >"$T_DIR/all.codes" 2>"$T_DIR/curl.err"
}

# check_all WHAT: every player got 201 and holds exactly one QUEUED ticket.
check_all() {
	local summary; summary=$(sort "$T_DIR/all.codes" | uniq -c | tr -s ' \n' ' ')
	if [[ $(grep -c '^201$' "$T_DIR/all.codes") != "$PLAYERS" ]]; then
		local errs; errs=$(cat "$T_DIR"/all.[0-9]* | jq -r '.error.code // empty' 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')
		fail "$1: $PLAYERS players enqueued at once gave statuses [$summary] (want $PLAYERS x 201); errors: $errs"
	fi
	expect_eq "$1: players with one QUEUED ticket" "$PLAYERS" \
		"$(sql "SELECT count(DISTINCT player_id) FROM tickets WHERE state = 'QUEUED' AND player_id = ANY('$all_players'::uuid[])")"
}

# retries: serialization retries so far, both replicas together.
retries() {
	local n=0 v
	for admin in "$A_ADMIN" "$B_ADMIN"; do
		v=$(curl -s "$admin/metrics" | awk '$1 == "cosmic_clash_pg_serialization_retries_total" { print $2 }')
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

# The players' QUEUED tickets leave the queue between rounds.
mine="state = 'QUEUED' AND player_id = ANY('$all_players'::uuid[])"
cancel_all() { sql "UPDATE tickets SET state = 'CANCELLED', revision = revision + 1 WHERE $mine" >/dev/null; }

retries_before=$(retries)
for round in $(seq "$ROUNDS"); do
	enqueue_all "fresh-$round"
	check_all "round $round"
	cancel_all
done
# Not even a retried conflict: enqueues of different players share nothing.
expect_eq "serialization retries during $ROUNDS rounds of $PLAYERS enqueues" 0 $(($(retries) - retries_before))
pass "$ROUNDS rounds of $PLAYERS distinct players enqueueing at once on two replicas: all 201, one QUEUED ticket each, no retries"

# Every player holds an overdue QUEUED ticket: enqueue expires it and queues anew.
enqueue_all overdue-setup
check_all "overdue setup"
sql "UPDATE tickets SET expires_at = now() - interval '1 second' WHERE $mine" >/dev/null
old=$(sql "SELECT string_agg(id::text, ',') FROM tickets WHERE $mine")
enqueue_all overdue
check_all "overdue round"
expect_eq "old tickets expired" "$PLAYERS" \
	"$(sql "SELECT count(*) FROM tickets WHERE state = 'EXPIRED' AND id = ANY('{$old}'::uuid[])")"
expect_eq "ticket.expired rows of the old tickets" "$PLAYERS" \
	"$(sql "SELECT count(*) FROM outbox WHERE event = 'ticket.expired' AND resource_id = ANY('{$old}'::uuid[])")"
cancel_all
pass "$PLAYERS players with overdue tickets enqueueing at once: old ones EXPIRED and announced, all 201"

# One enqueue racing one ban of the same player, on different replicas.
kept=0 won=0 refused=0
for round in $(seq "$BAN_ROUNDS"); do
	tok=$(login "$A_URL" "enq-ban-$run-$round")
	probe "$A_URL" "$tok" eu-west
	player=$(player_of "$tok")
	curl -s -Z --parallel-immediate \
		-H "Authorization: Bearer $tok" -H "Idempotency-Key: ban-$round" -H 'Content-Type: application/json' --data-binary "$q" \
		-o "$T_DIR/ban.q" -w 'queue %{http_code}\n' "$B_URL/v1/queue" --next \
		-H "Authorization: Bearer optok-enqueue-races" -H 'Content-Type: application/json' --data-binary '{"until":"2099-01-01T00:00:00Z","reason":"race"}' \
		-o "$T_DIR/ban.b" -w 'ban %{http_code}\n' "$A_URL/v1/admin/players/$player/ban" >"$T_DIR/ban.codes" 2>"$T_DIR/curl.err"
	grep -q '^ban 200$' "$T_DIR/ban.codes" || fail "round $round: the ban did not answer 200: $(cat "$T_DIR/ban.codes") $(cat "$T_DIR/ban.b")"
	qs=$(sed -n 's/^queue //p' "$T_DIR/ban.codes")
	case $qs in
	201) won=$((won + 1)) ;; # queued first: the ban must have cancelled it
	403) refused=$((refused + 1)) ;;
	*) fail "round $round: the racing enqueue answered $qs: $(cat "$T_DIR/ban.q")" ;;
	esac
	active=$(sql "SELECT count(*) FROM tickets WHERE player_id = '$player' AND state IN ('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED')")
	[[ $active == 0 ]] && continue
	kept=$((kept + 1))
	echo "$T_NAME: round $round: the banned player kept $active active ticket(s); enqueue answered $qs"
done
expect_eq "rounds in which a banned player kept an active ticket" 0 "$kept"
pass "$BAN_ROUNDS rounds of an enqueue racing a ban ($won queued then cancelled, $refused refused 403): the banned player never holds an active ticket"
