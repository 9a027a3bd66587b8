#!/usr/bin/env bash
# Party races (issue 26) through two cc-api replicas on one database, with
# real racing requests (curl --parallel fires them together), many rounds
# each; every round must end in one consistent state:
#  - the leader queueing while a member leaves: either the queue won (every
#    member, the leaver included, has a QUEUED ticket of the party, and the
#    leave was refused 409) or the leave won (the member is gone and nobody
#    has a ticket); never a partial party in the queue. A retried leave
#    then cancels every ticket of the party;
#  - two members accepting while the third declines (the proposal made by
#    the real claim function, cc_claim_proposal, over the party's three
#    tickets and three solos): DECLINED, the decliner's ticket CANCELLED and
#    the decliner out of the party (party.updated "declined"; the lead
#    passes on when it led), one DECLINE penalty and only on the decliner,
#    the two mates QUEUED as a party of two (party_id, queued_at and one
#    lease kept) that is claimed again, the solos QUEUED, no match; a mate's
#    cancel of its PROPOSED ticket in that second proposal declines it the
#    same way, leaving a party of one;
#  - one member's heartbeat racing another member's cancel: every ticket
#    of the party ends CANCELLED, the heartbeat either won before the
#    cancel (200) or found its ticket closed (409 ticket_closed).
#  - a member's leave racing the matcher's claim of a proposal over the
#    party's three tickets and three solos (the real claim functions, the
#    single cc_claim_proposal and the batch cc_claim_proposals in turn):
#    either the claim won (every party ticket PROPOSED, the leave refused
#    409 party_in_proposal, and the kick and the disband too, the party and
#    its tickets unchanged; once a solo's decline requeues the party, the
#    leave goes through and cancels its tickets) or the leave won (the
#    member gone, the party's tickets CANCELLED, the claim lost);
#  - a member's leave racing the proposal's last accept: the proposal
#    ACCEPTED and every ticket MATCHED, and the leave either refused 409
#    party_in_proposal or answered 200 only after the match (its
#    party.updated row follows every ticket.matched of the proposal: a
#    playing party's member may leave).
# After every round of these two: no PROPOSED ticket of a player who is not
# a member of the ticket's party, and no party with tickets both QUEUED and
# PROPOSED; and PostgreSQL's log shows no "deadlock detected" from them.
source "$(dirname "$0")/lib.sh"

start_api A --regions=eu-west
start_api B --regions=eu-west
ROUNDS=${ROUNDS:-12}
CLIENT='"protocol_version":1,"build":"b1"'

# race FILE...: runs each spec file (METHOD URL TOKEN BODY [HEADER]) at once; codes in par.codes (in order).
race() {
	local args=(-s -Z --parallel-immediate --parallel-max 8) i=0
	for spec in "$@"; do
		IFS=$'\t' read -r method url token body header <"$spec"
		((i > 0)) && args+=(--next)
		i=$((i + 1))
		args+=(-X "$method" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data-binary "$body"
			-o "$T_DIR/par.$i" -w "$i %{http_code}\n")
		[[ -n $header ]] && args+=(-H "$header")
		args+=("$url")
	done
	curl "${args[@]}" | sort -n | cut -d' ' -f2 >"$T_DIR/par.codes"
}
# spec METHOD URL TOKEN BODY [HEADER]: the next request of the race (numbered in order).
spec() { N_SPEC=$((N_SPEC + 1)); printf '%s\t%s\t%s\t%s\t%s\n' "$@" >"$T_DIR/spec.$N_SPEC"; }

# party TAG: a party of three probed players (leader first); sets PARTY, REV, TOK[0..2], PID[0..2].
party() {
	TOK=() PID=()
	for m in 0 1 2; do
		TOK[m]=$(login "$A_URL" "party-$1-$m-$RANDOM")
		probe "$A_URL" "${TOK[m]}" eu-west
	done
	http POST "$A_URL/v1/parties" "${TOK[0]}" "{$CLIENT}" -H "Idempotency-Key: p-$1-$RANDOM"
	expect_http "create party $1" 201
	PARTY=$(jq -r .id <<<"$BODY")
	code=$(jq -r .join_code <<<"$BODY")
	for m in 1 2; do
		http POST "$B_URL/v1/parties/join" "${TOK[m]}" "{\"join_code\":\"$code\",$CLIENT}"
		expect_http "join party $1" 200
	done
	REV=$(jq -r .revision <<<"$BODY")
	for m in 0 1 2; do PID[m]=$(jq -r ".members[$m].player_id" <<<"$BODY"); done
}

# ---- 1: the leader queues while a member leaves ---------------------------------
won_queue=0 won_leave=0
for round in $(seq "$ROUNDS"); do
	party "ql$round"
	rm -f "$T_DIR"/spec.*; N_SPEC=0
	spec POST "$A_URL/v1/parties/$PARTY/queue" "${TOK[0]}" "{\"playlist\":\"casual\",\"revision\":$REV}" "Idempotency-Key: q-$round-$RANDOM"
	spec POST "$B_URL/v1/parties/$PARTY/leave" "${TOK[2]}" "{\"revision\":$REV}"
	race $(seq -f "$T_DIR/spec.%g" "$N_SPEC")
	codes=$(tr '\n' ' ' <"$T_DIR/par.codes")
	queued=$(sql "SELECT count(*) FROM tickets WHERE party_id = '$PARTY' AND state = 'QUEUED'")
	members=$(sql "SELECT count(*) FROM cc_party_members WHERE party_id = '$PARTY'")
	strays=$(sql "SELECT count(*) FROM tickets t WHERE t.party_id = '$PARTY' AND t.state = 'QUEUED' AND NOT EXISTS (SELECT 1 FROM cc_party_members m WHERE m.party_id = t.party_id AND m.player_id = t.player_id)")
	expect_eq "round $round: QUEUED tickets of someone no longer in the party (statuses $codes)" 0 "$strays"
	if [[ $queued == 3 && $members == 3 ]]; then
		won_queue=$((won_queue + 1))
		grep -q '^409$' "$T_DIR/par.codes" || fail "round $round: the queue won but the leave was not refused (statuses $codes)"
		# The member leaves at the new revision: every ticket of the party goes.
		http GET "$A_URL/v1/parties/$PARTY" "${TOK[2]}"
		http POST "$B_URL/v1/parties/$PARTY/leave" "${TOK[2]}" "{\"revision\":$(jq -r .revision <<<"$BODY")}"
		expect_http "round $round: leave after the queue" 200
		expect_eq "round $round: QUEUED tickets after the leave" 0 "$(sql "SELECT count(*) FROM tickets WHERE party_id = '$PARTY' AND state = 'QUEUED'")"
	elif [[ $queued == 0 && $members == 2 ]]; then
		won_leave=$((won_leave + 1))
	else
		fail "round $round: $queued QUEUED tickets with $members members (statuses $codes)"
	fi
done
pass "$ROUNDS rounds of queue vs leave: consistent every time (queue first $won_queue, leave first $won_leave)"

# ---- 2: two members accept while the third declines ----------------------------------
# The decliner goes round the party (round 1 the leader, so the lead passes
# on). Then the two mates, back in the queue as a party of two, are claimed
# again with four solos, and one of them cancels its PROPOSED ticket (the
# cancel declines as a response does): the last mate stays, a party of one.
q() { sed "s/[^,]*/'&'/g" <<<"$1"; }
for round in $(seq "$ROUNDS"); do
	party "ad$round"
	http POST "$A_URL/v1/parties/$PARTY/queue" "${TOK[0]}" "{\"playlist\":\"casual\",\"revision\":$REV}" -H "Idempotency-Key: q-ad-$round"
	expect_http "round $round: queue the party" 201
	qrev=$(jq -r .party.revision <<<"$BODY")
	d=$(((round - 1) % 3)) m1=$(((round % 3))) m2=$(((round + 1) % 3)) # the decliner, the mates (join order below)
	((m1 > m2)) && { t=$m1; m1=$m2; m2=$t; }
	decliner=${PID[d]} mate1=${PID[m1]} mate2=${PID[m2]}
	ticket_of() { jq -r ".tickets[] | select(.player_id == \"$1\") | .id" <<<"$2"; }
	dticket=$(ticket_of "$decliner" "$BODY") mticket1=$(ticket_of "$mate1" "$BODY") mticket2=$(ticket_of "$mate2" "$BODY")
	queued_at=$(sql "SELECT string_agg(queued_at::text, ' ' ORDER BY id) FROM tickets WHERE party_id = '$PARTY'")
	solo_tickets=()
	SOLO_TOK=()
	for s in 0 1 2 3; do
		SOLO_TOK[s]=$(login "$A_URL" "solo-ad-$round-$s-$RANDOM")
		probe "$A_URL" "${SOLO_TOK[s]}" eu-west
		http POST "$B_URL/v1/queue" "${SOLO_TOK[s]}" "{\"playlist\":\"casual\",$CLIENT}" -H "Idempotency-Key: s-$round-$s"
		expect_http "round $round: solo $s" 201
		solo_tickets[s]=$(jq -r .id <<<"$BODY")
	done
	solos=$(IFS=,; echo "${solo_tickets[*]:0:3}")
	outcome=$(sql "SELECT outcome FROM cc_claim_proposal(gen_random_uuid(), 'casual', ARRAY[$(q "$dticket,$mticket1,$mticket2,$solos")]::uuid[], '{0,0,0,1,1,1}', 'b1', 1, 'eu-west', 100, 3, 'party-races', 60, 0)")
	expect_eq "round $round: claim" claimed "$outcome"
	proposal=$(sql "SELECT proposal_id FROM tickets WHERE id = '${solo_tickets[0]}'")
	rm -f "$T_DIR"/spec.*; N_SPEC=0
	spec POST "$A_URL/v1/proposals/$proposal/response" "${TOK[m1]}" '{"response":"accept","revision":1}'
	spec POST "$B_URL/v1/proposals/$proposal/response" "${TOK[m2]}" '{"response":"accept","revision":1}'
	spec POST "$A_URL/v1/proposals/$proposal/response" "${TOK[d]}" '{"response":"decline","revision":1}'
	spec POST "$B_URL/v1/proposals/$proposal/response" "${SOLO_TOK[0]}" '{"response":"accept","revision":1}'
	race $(seq -f "$T_DIR/spec.%g" "$N_SPEC")
	codes=$(tr '\n' ' ' <"$T_DIR/par.codes")
	expect_eq "round $round: proposal state (statuses $codes)" DECLINED "$(sql "SELECT state FROM proposals WHERE id = '$proposal'")"
	[[ $(sed -n 3p "$T_DIR/par.codes") == 200 ]] || fail "round $round: the decline answered $(cat "$T_DIR/par.3")"
	expect_eq "round $round: the decliner's ticket" "CANCELLED $PARTY" "$(sql "SELECT state || ' ' || party_id FROM tickets WHERE id = '$dticket'")"
	expect_eq "round $round: the mates' tickets (state party_size, statuses $codes)" "QUEUED 2 QUEUED 2" \
		"$(sql "SELECT string_agg(state || ' ' || party_size, ' ' ORDER BY id = '$mticket2') FROM tickets WHERE party_id = '$PARTY' AND id <> '$dticket'")"
	expect_eq "round $round: queued_at kept" "$queued_at" "$(sql "SELECT string_agg(queued_at::text, ' ' ORDER BY id) FROM tickets WHERE party_id = '$PARTY'")"
	expect_eq "round $round: the mates share one lease" 1 "$(sql "SELECT count(DISTINCT expires_at) FROM tickets WHERE id IN ('$mticket1', '$mticket2')")"
	expect_eq "round $round: the party's members" "$mate1 $mate2" "$(sql "SELECT string_agg(player_id::text, ' ' ORDER BY joined_at, player_id) FROM cc_party_members WHERE party_id = '$PARTY'")"
	expect_eq "round $round: the party's leader" "$mate1" "$(sql "SELECT leader FROM cc_parties WHERE id = '$PARTY'")"
	expect_eq "round $round: party.updated declined, to the mates and the decliner, at revision $((qrev + 1))" \
		"$((qrev + 1)) $decliner $decliner $mate1 $mate2" \
		"$(sql "SELECT revision || ' ' || (payload->>'player_id') || ' ' || (SELECT string_agg(x::text, ' ' ORDER BY x::text = '$decliner' DESC, x::text = '$mate2') FROM unnest(player_ids) x) FROM outbox
		        WHERE resource_type = 'party' AND resource_id = '$PARTY' AND event = 'party.updated' AND payload->>'change' = 'declined'")"
	http GET "$B_URL/v1/parties/$PARTY" "${TOK[m2]}"
	expect_http "round $round: a mate reads the party" 200
	expect_eq "round $round: the party as the mate reads it" "$((qrev + 1)) $mate1 2 true" "$(jq -r '"\(.revision) \(.leader) \(.members | length) \(.queued)"' <<<"$BODY")"
	http GET "$A_URL/v1/parties/$PARTY" "${TOK[d]}"
	expect_http "round $round: the decliner is out of the party" 404
	expect_eq "round $round: the solos' tickets" "QUEUED QUEUED QUEUED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE id IN ($(q "$solos"))")"
	expect_eq "round $round: DECLINE penalties of the proposal" "$decliner" "$(sql "SELECT string_agg(player_id::text, ' ') FROM penalties WHERE source_id = '$proposal'")"
	expect_eq "round $round: matches of the proposal" 0 "$(sql "SELECT count(*) FROM matches WHERE proposal_id = '$proposal'")"

	# The party of two forms again, on one team; mate 1 then cancels its PROPOSED ticket.
	outcome=$(sql "SELECT outcome FROM cc_claim_proposal(gen_random_uuid(), 'casual', ARRAY[$(q "$mticket1,$mticket2,$(IFS=,; echo "${solo_tickets[*]}")")]::uuid[], '{0,0,0,1,1,1}', 'b1', 1, 'eu-west', 100, 3, 'party-races', 60, 0)")
	expect_eq "round $round: the party of two claimed again" claimed "$outcome"
	again=$(sql "SELECT proposal_id FROM tickets WHERE id = '$mticket1'")
	expect_eq "round $round: the mates in the new proposal" "PROPOSED PROPOSED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE proposal_id = '$again' AND party_id = '$PARTY'")"
	rev=$(sql "SELECT revision FROM tickets WHERE id = '$mticket1'")
	http POST "$A_URL/v1/queue/$mticket1/cancel" "${TOK[m1]}" "{\"revision\":$rev}"
	expect_http "round $round: mate 1 cancels its PROPOSED ticket" 200
	expect_eq "round $round: the cancel answer" CANCELLED "$(jq -r .state <<<"$BODY")"
	expect_eq "round $round: the new proposal" DECLINED "$(sql "SELECT state FROM proposals WHERE id = '$again'")"
	expect_eq "round $round: the last mate's ticket (state party_size)" "QUEUED 1" "$(sql "SELECT state || ' ' || party_size FROM tickets WHERE id = '$mticket2'")"
	expect_eq "round $round: the party of one" "$mate2 $mate2" "$(sql "SELECT p.leader || ' ' || string_agg(m.player_id::text, ' ') FROM cc_parties p JOIN cc_party_members m ON m.party_id = p.id WHERE p.id = '$PARTY' GROUP BY p.leader")"
	expect_eq "round $round: DECLINE penalties of the new proposal" "$mate1" "$(sql "SELECT string_agg(player_id::text, ' ') FROM penalties WHERE source_id = '$again'")"
	expect_eq "round $round: the solos' tickets after it" "QUEUED QUEUED QUEUED QUEUED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE id IN ($(q "$(IFS=,; echo "${solo_tickets[*]}")"))")"
	# Leave nothing live for the next round or the audit.
	rev=$(sql "SELECT revision FROM tickets WHERE id = '$mticket2'")
	http POST "$A_URL/v1/queue/$mticket2/cancel" "${TOK[m2]}" "{\"revision\":$rev}"
	expect_http "round $round: the last mate leaves the queue" 200
	for s in 0 1 2 3; do
		http GET "$A_URL/v1/queue/${solo_tickets[s]}" "${SOLO_TOK[s]}"
		rev=$(jq -r .revision <<<"$BODY")
		http POST "$A_URL/v1/queue/${solo_tickets[s]}/cancel" "${SOLO_TOK[s]}" "{\"revision\":$rev}"
		expect_http "round $round: solo $s leaves" 200
	done
done
pass "$ROUNDS rounds of two accepts racing a decline: the decliner out of the party with the penalty alone, the mates requeued as a party of two that forms again (and, after a mate's cancel, a party of one), the solos requeued"

# ---- 3: a member's heartbeat races another member's cancel ---------------------------
hb_first=0 hb_late=0
for round in $(seq "$ROUNDS"); do
	party "hc$round"
	http POST "$A_URL/v1/parties/$PARTY/queue" "${TOK[0]}" "{\"playlist\":\"casual\",\"revision\":$REV}" -H "Idempotency-Key: q-hc-$round"
	expect_http "round $round: queue the party" 201
	t1=$(jq -r ".tickets[] | select(.player_id == \"${PID[1]}\") | .id" <<<"$BODY")
	t2=$(jq -r ".tickets[] | select(.player_id == \"${PID[2]}\") | .id" <<<"$BODY")
	rm -f "$T_DIR"/spec.*; N_SPEC=0
	spec POST "$A_URL/v1/queue/$t1/heartbeat" "${TOK[1]}" '{"revision":1}'
	spec POST "$B_URL/v1/queue/$t2/cancel" "${TOK[2]}" '{"revision":1}'
	race $(seq -f "$T_DIR/spec.%g" "$N_SPEC")
	codes=$(tr '\n' ' ' <"$T_DIR/par.codes")
	expect_eq "round $round: the party's tickets (statuses $codes)" "CANCELLED CANCELLED CANCELLED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE party_id = '$PARTY'")"
	grep -q "^200$" <(sed -n 2p "$T_DIR/par.codes") || fail "round $round: the cancel failed (statuses $codes)"
	case $(sed -n 1p "$T_DIR/par.codes") in
	200) hb_first=$((hb_first + 1)) ;;
	409) [[ $(jq -r .error.code "$T_DIR/par.1") == ticket_closed ]] || fail "round $round: heartbeat $(cat "$T_DIR/par.1")"
	     hb_late=$((hb_late + 1)) ;;
	*) fail "round $round: heartbeat answered $(cat "$T_DIR/par.1")" ;;
	esac
done
pass "$ROUNDS rounds of heartbeat vs cancel: every party ticket CANCELLED (heartbeat first $hb_first, after $hb_late)"

# ---- 4: a member's leave races the claim of a proposal ---------------------------------

# queued_with_solos TAG: party TAG queued casual, three solos queued; sets PARTY_T (the party's
# ticket ids, comma-separated), SOLO_T[0..2], SOLO_TOK[0..2], REV (the party's revision).
queued_with_solos() {
	party "$1"
	http POST "$A_URL/v1/parties/$PARTY/queue" "${TOK[0]}" "{\"playlist\":\"casual\",\"revision\":$REV}" -H "Idempotency-Key: q-$1"
	expect_http "$1: queue the party" 201
	PARTY_T=$(jq -r '[.tickets[].id] | join(",")' <<<"$BODY")
	REV=$(jq -r .party.revision <<<"$BODY")
	SOLO_T=() SOLO_TOK=()
	for s in 0 1 2; do
		SOLO_TOK[s]=$(login "$A_URL" "solo-$1-$s-$RANDOM")
		probe "$A_URL" "${SOLO_TOK[s]}" eu-west
		http POST "$B_URL/v1/queue" "${SOLO_TOK[s]}" "{\"playlist\":\"casual\",$CLIENT}" -H "Idempotency-Key: s-$1-$s"
		expect_http "$1: solo $s" 201
		SOLO_T[s]=$(jq -r .id <<<"$BODY")
	done
}
# claim_sql ROUND: the statement that claims the party (team 0) against the solos (team 1),
# single claim on odd rounds, the matcher's batch claim on even ones; prints the outcome.
claim_sql() {
	local ids
	ids="ARRAY[$(sed "s/[^,]*/'&'/g" <<<"$PARTY_T,$(IFS=,; echo "${SOLO_T[*]}")")]::uuid[]"
	if (($1 % 2)); then
		echo "SELECT outcome FROM cc_claim_proposal(gen_random_uuid(), 'casual', $ids, '{0,0,0,1,1,1}', 'b1', 1, 'eu-west', 100, 3, 'party-races', 60, 0)"
	else
		echo "SELECT outcome FROM cc_claim_proposals(ARRAY[gen_random_uuid()], 'casual', $ids, '{0,0,0,1,1,1}', '{b1}', '{1}', '{eu-west}', 100, 3, 'party-races', 60, '{0}')"
	fi
}
# claim_run SQL OUT: runs the claim as cc-matcher does, in a SERIALIZABLE transaction retried on a
# serialization failure (sys/pg.h's cc_pg_run_serializable); its output in OUT.
claim_run() {
	for _ in 1 2 3 4 5 6 7 8; do
		psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" -c "BEGIN ISOLATION LEVEL SERIALIZABLE" -c "$1" -c COMMIT \
			>"$2" 2>"$2.err" && return 0
		grep -q "could not serialize" "$2.err" || { cat "$2.err" >&2; return 1; }
	done
	echo "the claim kept failing to serialize" >&2
	return 1
}
# A warm psql session (connected before the race starts, so a statement fired at the race costs one
# round trip, as cc-matcher's does, not a process start): psql_open starts it and waits for it;
# psql_say SQL sends statements; psql_line reads its next output line into LINE; psql_wait waits for
# it to end (after its \q) and sets PSQL_RC; psql_close drops its pipes.
psql_open() {
	rm -f "$T_DIR/w.in" "$T_DIR/w.out"
	mkfifo "$T_DIR/w.in" "$T_DIR/w.out"
	exec {PSQL_W}<>"$T_DIR/w.in" {PSQL_R}<>"$T_DIR/w.out"
	psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" <"$T_DIR/w.in" >"$T_DIR/w.out" 2>"$T_DIR/w.err" &
	PSQL_PID=$!
	T_PIDS+=("$PSQL_PID")
	psql_say "SELECT 'ready';"
	psql_line && [[ $LINE == ready ]] || fail "the warm psql session did not start: $(cat "$T_DIR/w.err")"
}
psql_say() { printf '%s\n' "$1" >&"$PSQL_W"; }
psql_line() { LINE=; read -r -t 30 -u "$PSQL_R" LINE; }
psql_wait() { PSQL_RC=0; wait "$PSQL_PID" || PSQL_RC=$?; }
psql_close() { exec {PSQL_W}>&- {PSQL_R}<&-; }
# gate TABLE ID: the warm session takes the row's lock (and keeps it until it is sent COMMIT);
# gate_waited WHAT: waits until a request waits on a lock (the gated row), fails after 200 looks.
gate() {
	psql_open
	psql_say "BEGIN; SELECT 'locked' FROM $1 WHERE id = '$2' FOR UPDATE;"
	psql_line && [[ $LINE == locked ]] || fail "locking $1 $2: $(cat "$T_DIR/w.err")"
}
gate_waited() {
	local waiting=
	for _ in $(seq 200); do
		waiting=$(sql "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")
		((waiting >= 1)) && return 0
	done
	fail "$1 never waited on the gate's lock"
}
# leave_bg TOKEN: fires the leave of member TOKEN at revision REV in the background (LEAVE_PID);
# its status in leave.code, its body in leave.body.
leave_bg() {
	curl -s -o "$T_DIR/leave.body" -w '%{http_code}' -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		--data-binary "{\"revision\":$REV}" "$B_URL/v1/parties/$PARTY/leave" >"$T_DIR/leave.code" &
	LEAVE_PID=$!
}
# party_state: the party's revision, leader and members, and its tickets' states, revisions and proposals.
party_state() {
	sql "SELECT coalesce((SELECT p.revision || ':' || p.leader FROM cc_parties p WHERE p.id = '$PARTY'), 'gone') || ' / ' ||
		coalesce((SELECT string_agg(m.player_id::text, ' ' ORDER BY m.player_id) FROM cc_party_members m WHERE m.party_id = '$PARTY'), '') || ' / ' ||
		coalesce((SELECT string_agg(t.state || ':' || t.revision || ':' || coalesce(t.proposal_id::text, ''), ' ' ORDER BY t.id)
		  FROM tickets t WHERE t.party_id = '$PARTY'), '')"
}
# invariants WHAT: no PROPOSED ticket of a non-member of its party; no party half QUEUED, half PROPOSED.
invariants() {
	local strays split
	strays=$(sql "SELECT count(*) FROM tickets t WHERE t.party_id IS NOT NULL AND t.state = 'PROPOSED'
		AND NOT EXISTS (SELECT 1 FROM cc_party_members m WHERE m.party_id = t.party_id AND m.player_id = t.player_id)")
	expect_eq "$1: PROPOSED tickets of players no longer in the ticket's party" 0 "$strays"
	split=$(sql "SELECT count(*) FROM (SELECT party_id FROM tickets WHERE party_id IS NOT NULL AND state IN ('QUEUED', 'PROPOSED')
		GROUP BY party_id HAVING count(DISTINCT state) > 1) s")
	expect_eq "$1: parties with tickets both QUEUED and PROPOSED" 0 "$split"
}

log_from=$(($(wc -l <"$CC_TEST_PG_LOG") + 1)) # sections 4 and 5 must not deadlock (tests/integration/lock_order.sh)
won_claim=0 won_leave=0
for round in $(seq 0 "$ROUNDS"); do # round 0: the claim commits before the leave is sent (the refusal, whatever the races do)
	queued_with_solos "cl$round"
	claim=$(claim_sql "$round")
	if ((round == 0)); then
		claim_run "$claim" "$T_DIR/claim.out" || fail "round 0: the claim failed"
		leave_bg "${TOK[2]}"
		wait "$LEAVE_PID" || fail "round 0: the leave failed"
	else
		# The claim from a warm session, in the matcher's SERIALIZABLE transaction, fired with the leave;
		# on even rounds the leave is already in its transaction (its snapshot taken, waiting behind a
		# lock on the party's row) when the claim starts, so it reads the party's tickets as they were
		# before the claim.
		if ((round % 2)); then
			psql_open
		else
			gate cc_parties "$PARTY"
			leave_bg "${TOK[2]}"
			gate_waited "round $round: the leave"
			psql_say "COMMIT;"
		fi
		psql_say "BEGIN ISOLATION LEVEL SERIALIZABLE;" && psql_say "$claim;" && psql_say "COMMIT;" & sayer=$!
		((round % 2)) && leave_bg "${TOK[2]}"
		wait "$sayer"
		psql_say '\q'
		wait "$LEAVE_PID" || fail "round $round: the leave failed"
		psql_wait
		((PSQL_RC == 0)) && psql_line
		psql_close
		if ((PSQL_RC == 0)); then
			echo "$LINE" >"$T_DIR/claim.out"
		else # a serialization failure: retried as the matcher does
			grep -q "could not serialize" "$T_DIR/w.err" || fail "round $round: the claim failed: $(cat "$T_DIR/w.err")"
			claim_run "$claim" "$T_DIR/claim.out" || fail "round $round: the claim's retry failed"
		fi
	fi
	outcome=$(cat "$T_DIR/claim.out") code=$(cat "$T_DIR/leave.code")
	answer="claim $outcome, leave $code $(cat "$T_DIR/leave.body")"
	invariants "round $round ($answer)"
	members=$(sql "SELECT count(*) FROM cc_party_members WHERE party_id = '$PARTY'")
	states=$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE party_id = '$PARTY'")
	solos=$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE id IN ($(sed "s/[^,]*/'&'/g" <<<"$(IFS=,; echo "${SOLO_T[*]}")"))")
	case "$outcome/$code/$members/$states" in
	"claimed/409/3/PROPOSED PROPOSED PROPOSED")
		[[ $(jq -r .error.code "$T_DIR/leave.body") == party_in_proposal ]] || fail "round $round: the leave's refusal ($answer)"
		won_claim=$((won_claim + 1))
		before=$(party_state)
		http POST "$A_URL/v1/parties/$PARTY/kick" "${TOK[0]}" "{\"player_id\":\"${PID[1]}\",\"revision\":$REV}"
		expect_http "round $round: kick in a proposal" 409 party_in_proposal
		http POST "$B_URL/v1/parties/$PARTY/disband" "${TOK[0]}" "{\"revision\":$REV}"
		expect_http "round $round: disband in a proposal" 409 party_in_proposal
		http POST "$A_URL/v1/parties/$PARTY/leave" "${TOK[1]}" "{\"revision\":$REV}"
		expect_http "round $round: another member's leave in a proposal" 409 party_in_proposal
		expect_eq "round $round: the party and its tickets after the refusals" "$before" "$(party_state)"
		# The proposal resolves: a solo declines, the party goes back to the queue whole; now the leave goes through.
		proposal=$(sql "SELECT proposal_id FROM tickets WHERE id = '${SOLO_T[0]}'")
		http POST "$A_URL/v1/proposals/$proposal/response" "${SOLO_TOK[0]}" '{"response":"decline","revision":1}'
		expect_http "round $round: a solo declines" 200
		expect_eq "round $round: the party requeued" "QUEUED QUEUED QUEUED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE party_id = '$PARTY'")"
		invariants "round $round, after the decline"
		http POST "$B_URL/v1/parties/$PARTY/leave" "${TOK[2]}" "{\"revision\":$REV}"
		expect_http "round $round: the leave once the proposal resolved" 200
		expect_eq "round $round: the party's tickets after the leave" "CANCELLED CANCELLED CANCELLED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE party_id = '$PARTY'")"
		expect_eq "round $round: members after the leave" 2 "$(sql "SELECT count(*) FROM cc_party_members WHERE party_id = '$PARTY'")"
		;;
	"lost/200/2/CANCELLED CANCELLED CANCELLED")
		expect_eq "round $round: the solos after a lost claim" "QUEUED QUEUED QUEUED" "$solos"
		won_leave=$((won_leave + 1))
		;;
	*) fail "round $round: leave racing the claim left $members members, party tickets '$states', solos '$solos' ($answer)" ;;
	esac
	invariants "round $round, at its end"
	for s in 0 1 2; do # the solos leave the queue (those still in it)
		http GET "$A_URL/v1/queue/${SOLO_T[s]}" "${SOLO_TOK[s]}"
		[[ $(jq -r .state <<<"$BODY") == QUEUED ]] || continue
		http POST "$A_URL/v1/queue/${SOLO_T[s]}/cancel" "${SOLO_TOK[s]}" "{\"revision\":$(jq -r .revision <<<"$BODY")}"
		expect_http "round $round: solo $s leaves" 200
	done
done
pass "$((ROUNDS + 1)) rounds of leave vs claim: consistent every time (claim first $won_claim, leave first $won_leave); kick, disband and leave refused party_in_proposal in a proposal, the leave through once it resolved"

# ---- 5: a member's leave races the proposal's last accept ---------------------------------
# accept_bg: fires the last accept (solo 2's) of proposal in the background (ACCEPT_PID).
accept_bg() {
	curl -s -o "$T_DIR/par.1" -w '%{http_code}' -H "Authorization: Bearer ${SOLO_TOK[2]}" -H 'Content-Type: application/json' \
		--data-binary '{"response":"accept","revision":1}' "$A_URL/v1/proposals/$proposal/response" >"$T_DIR/accept.code" &
	ACCEPT_PID=$!
}
refused=0 after_match=0
for round in $(seq 0 "$ROUNDS"); do # round 0: the leave is sent once the match is made
	queued_with_solos "la$round"
	expect_eq "round $round: claim" claimed "$(sql "$(claim_sql "$round")")"
	proposal=$(sql "SELECT proposal_id FROM tickets WHERE id = '${SOLO_T[0]}'")
	for t in "${TOK[0]}" "${TOK[1]}" "${TOK[2]}" "${SOLO_TOK[0]}" "${SOLO_TOK[1]}"; do
		http POST "$A_URL/v1/proposals/$proposal/response" "$t" '{"response":"accept","revision":1}'
		expect_http "round $round: an accept" 200
	done
	if ((round == 0)); then
		accept_bg
		wait "$ACCEPT_PID"
		leave_bg "${TOK[2]}"
		wait "$LEAVE_PID"
	else
		# One of the two waits behind a lock (odd rounds the accept on its proposal's row, the first it
		# locks; even rounds the leave on the party's row, its snapshot taken); the lock's release and
		# the other request go together, so both transactions run at the same time.
		if ((round % 2)); then
			gate proposals "$proposal"
			accept_bg
			gate_waited "round $round: the last accept"
		else
			gate cc_parties "$PARTY"
			leave_bg "${TOK[2]}"
			gate_waited "round $round: the leave"
		fi
		psql_say 'COMMIT;' & sayer=$!
		if ((round % 2)); then leave_bg "${TOK[2]}"; else accept_bg; fi
		wait "$sayer"
		psql_say '\q'
		psql_wait
		psql_close
		wait "$ACCEPT_PID" || fail "round $round: the accept failed"
		wait "$LEAVE_PID" || fail "round $round: the leave failed"
	fi
	cp "$T_DIR/leave.body" "$T_DIR/par.2"
	{ cat "$T_DIR/accept.code"; echo; cat "$T_DIR/leave.code"; echo; } >"$T_DIR/par.codes"
	acc=1 lv=2
	codes=$(tr '\n' ' ' <"$T_DIR/par.codes")
	invariants "round $round (statuses $codes)"
	expect_eq "round $round: the last accept (statuses $codes)" 200 "$(sed -n ${acc}p "$T_DIR/par.codes")"
	expect_eq "round $round: the proposal" ACCEPTED "$(sql "SELECT state FROM proposals WHERE id = '$proposal'")"
	expect_eq "round $round: its tickets" "MATCHED MATCHED MATCHED MATCHED MATCHED MATCHED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE proposal_id = '$proposal'")"
	members=$(sql "SELECT count(*) FROM cc_party_members WHERE party_id = '$PARTY'")
	case "$(sed -n ${lv}p "$T_DIR/par.codes")/$members" in
	409/3)
		[[ $(jq -r .error.code "$T_DIR/par.$lv") == party_in_proposal ]] || fail "round $round: the leave's refusal $(cat "$T_DIR/par.$lv")"
		refused=$((refused + 1))
		;;
	200/2)
		# Allowed only once the party plays: the leave's event after every ticket.matched of the proposal.
		order=$(sql "SELECT (SELECT min(o.id) FROM outbox o WHERE o.resource_type = 'party' AND o.resource_id = '$PARTY'
			AND o.payload->>'change' = 'left') > (SELECT max(o.id) FROM outbox o JOIN tickets t ON t.id = o.resource_id
			WHERE o.event = 'ticket.matched' AND t.proposal_id = '$proposal')")
		expect_eq "round $round: the leave came after the match (statuses $codes)" t "$order"
		after_match=$((after_match + 1))
		;;
	*) fail "round $round: the leave answered $(cat "$T_DIR/par.$lv") with $members members (statuses $codes)" ;;
	esac
done
deadlocks=$(tail -n "+$log_from" "$CC_TEST_PG_LOG" | grep -A3 'deadlock detected' || true)
[[ -z "$deadlocks" ]] || fail "PostgreSQL detected deadlocks while leaves raced claims and accepts:
$deadlocks"
pass "$((ROUNDS + 1)) rounds of leave vs the last accept: one match every time, the party whole in it (leave refused party_in_proposal $refused, after the match $after_match)"
