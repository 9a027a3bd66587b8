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
