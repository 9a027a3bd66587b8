#!/usr/bin/env bash
# Casual backfill end to end (SPEC 9, issue 26) through the real binaries:
# cc-testkit-api (server routes, --join-keys-file), cc-matcher (casual),
# cc-allocator's local provider running cc-supervisor (--roster-poll-ms),
# which runs cc-gameserver; players over real ENet (tests/gameserver/gsclient).
#  - six players match and connect; slot 0's player leaves for good (an ENet
#    disconnect, no resume); its 2 s reservation lapses, a bot takes the
#    ship and the game server POSTs vacated;
#  - two solo players queued with the match's build: the older one gets
#    the offer and ignores it; its 3 s window passes, the game server's
#    repeated report expires it (no penalty, the ticket stays QUEUED) and
#    the next receives the offer (backfill.offered on the outbox,
#    GET /v1/backfill-offers/{id} OPEN), accepts; its ticket is ASSIGNED into the match, its assignment is slot
#    0 at generation 2;
#  - cc-supervisor re-fetches the roster and SIGHUPs the game server, which
#    reloads it; the newcomer connects with its new token, is admitted to
#    slot 0 at generation 2 (entering at the next kickoff) and plays to
#    the end; the leaver's old token is refused (not_in_roster);
#  - the result lists seven players, the leaver and the newcomer both
#    marked bot (a bot drove slot 0 between them): neither is rated, the
#    five others are, once; every ticket of the match, the newcomer's
#    too, ends COMPLETED.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"
source "$(dirname "$0")/lib_match.sh"
GSCLIENT="$TOP/build/tests/gsclient"

scratch_database backfill
loop_secrets
cat >"$T_DIR/gameserver.conf" <<'CONF'
match-seconds = 90
warmup-seconds = 2
goal-pause-seconds = 1
overtime-max-seconds = 2
connect-window-seconds = 30
slot-reserve-seconds = 2
end-linger-ms = 500
CONF
start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" \
	--join-key-id=k1 --backfill-window-seconds=3 --ticket-ttl-seconds=300
start_loop "$BIN/cc-supervisor --join-keys-file=$T_DIR/join.json --gameserver-config=$T_DIR/gameserver.conf --roster-poll-ms=200"

make_match bf casual 3

# wait_log FILE PATTERN SECONDS
wait_log() {
	local deadline=$((SECONDS + $3))
	until grep -qE -- "$2" "$1" 2>/dev/null; do
		((SECONDS < deadline)) || fail "no line matching $2 in $1 within $3 s"
		sleep 0.05
	done
}
# assignment TOKEN FILE: the player's join token into FILE (retried while not ready); prints its slot.
assignment() {
	local deadline=$((SECONDS + 45))
	while :; do
		http GET "$A_URL/v1/matches/$MATCH/assignment" "$1"
		[[ $STATUS == 200 ]] && break
		[[ $STATUS == 409 || $STATUS == 503 ]] || fail "assignment: HTTP $STATUS $BODY"
		((SECONDS < deadline)) || fail "no assignment within 45 s: HTTP $STATUS $BODY"
		sleep 0.1
	done
	jq -r .join_token <<<"$BODY" >"$2"
	jq -r .slot <<<"$BODY"
}

# Everyone connects; the player of slot 0 leaves for good 3 s after its welcome (90 s of play: the
# vacancy comes well before the casual cut-off, the last 60 s).
leaver=""
for i in 0 1 2 3 4 5; do
	slot=$(assignment "${TOKENS[$i]}" "$T_DIR/p$i.token")
	if [[ $slot == 0 ]]; then
		leaver=$i
		start_bg "$T_DIR/p$i.out" "$GSCLIENT" play --port="$game_port" --token="$T_DIR/p$i.token" --drop-after-ms=3000
	else
		start_bg "$T_DIR/p$i.out" "$GSCLIENT" play --port="$game_port" --token="$T_DIR/p$i.token" --max-seconds=150
	fi
	PIDS[$i]=$LAST_PID
done
[[ -n $leaver ]] || fail "no participant was assigned slot 0"
leaver_id=${PLAYERS[$leaver]}

# Two solo players queue with the match's build before the slot lapses: the first will ignore its offer.
idle_tok=$(login "$A_URL" "bf-idle-$RANDOM$RANDOM")
probe "$A_URL" "$idle_tok" eu-west
http POST "$A_URL/v1/queue" "$idle_tok" '{"playlist":"casual","protocol_version":1,"build":"bf"}' -H "Idempotency-Key: bf-idle"
expect_http "the first solo player queues" 201
idle_id=$(jq -r .player_id <<<"$BODY")
solo_tok=$(login "$A_URL" "bf-solo-$RANDOM$RANDOM")
probe "$A_URL" "$solo_tok" eu-west
http POST "$A_URL/v1/queue" "$solo_tok" '{"playlist":"casual","protocol_version":1,"build":"bf"}' -H "Idempotency-Key: bf-solo"
expect_http "the solo player queues" 201
solo_ticket=$(jq -r .id <<<"$BODY")
solo_id=$(jq -r .player_id <<<"$BODY")

wait_log "$GAME_LOG" '"event":"slot_reservation_lapsed","slot":0' 40
wait_log "$GAME_LOG" '"event":"bot_took_slot","slot":0' 5
wait_log "$T_DIR/A.log" '"event":"slot_vacated".*"outcome":"offered"' 20
idle_offer=$(sql "SELECT id FROM backfill_offers WHERE match_id = '$MATCH' AND player_id = '$idle_id'")
[[ $idle_offer =~ ^[0-9a-f-]{36}$ ]] || fail "the oldest queued ticket got no offer: $(sql "SELECT player_id FROM backfill_offers")"
pass "the oldest queued ticket got the first offer; it does not answer"
# Its 3 s window passes; the game server's repeated report (every 12 s) expires it and offers the next ticket.
deadline=$((SECONDS + 30))
until [[ -n $(sql "SELECT id FROM backfill_offers WHERE match_id = '$MATCH' AND player_id = '$solo_id'") ]]; do
	((SECONDS < deadline)) || fail "the second solo player got no offer within 30 s: $(sql "SELECT player_id || ' ' || state FROM backfill_offers")"
	sleep 0.1
done
expect_eq "the unanswered offer" EXPIRED "$(sql "SELECT state FROM backfill_offers WHERE id = '$idle_offer'")"
expect_eq "the ignoring player's ticket (no penalty, still queued)" "QUEUED|0" \
	"$(sql "SELECT t.state || '|' || (SELECT count(*) FROM penalties p WHERE p.player_id = t.player_id) FROM tickets t WHERE t.player_id = '$idle_id'")"
pass "the unanswered offer expired and the vacancy went to the next queued ticket"
offer=$(sql "SELECT id FROM backfill_offers WHERE match_id = '$MATCH' AND player_id = '$solo_id'")
[[ $offer =~ ^[0-9a-f-]{36}$ ]] || fail "no backfill offer to the solo player: $(sql "SELECT count(*) FROM backfill_offers")"
expect_eq "backfill.offered events to the solo player" 1 \
	"$(sql "SELECT count(*) FROM outbox WHERE event = 'backfill.offered' AND resource_id = '$offer' AND '$solo_id'::uuid = ANY(player_ids)")"
http GET "$A_URL/v1/backfill-offers/$offer" "${TOKENS[1]}"
expect_http "another player reads the offer" 404 not_found
http GET "$A_URL/v1/backfill-offers/$offer" "$solo_tok"
expect_http "the solo player reads its offer" 200
expect_eq "offer state" OPEN "$(jq -r .state <<<"$BODY")"
expect_eq "offer slot" 0 "$(jq -r .slot <<<"$BODY")"
pass "the vacated slot 0 was offered to the queued solo player (window $(jq -r '.created_at + " .. " + .expires_at' <<<"$BODY"))"

http POST "$A_URL/v1/backfill-offers/$offer/response" "$solo_tok" '{"response":"accept"}'
expect_http "the solo player accepts" 200
expect_eq "offer after accept" ACCEPTED "$(jq -r .state <<<"$BODY")"
http POST "$A_URL/v1/backfill-offers/$offer/response" "$solo_tok" '{"response":"accept"}'
expect_http "the same accept again (a replay)" 200
http POST "$A_URL/v1/backfill-offers/$offer/response" "$solo_tok" '{"response":"decline"}'
expect_http "a decline after the accept" 409 offer_closed
expect_eq "the solo ticket" "ASSIGNED|$MATCH" "$(sql "SELECT state || '|' || match_id FROM tickets WHERE id = '$solo_ticket'")"
expect_eq "slot 0's current assignment" "$solo_id|2" \
	"$(sql "SELECT player_id || '|' || generation FROM assignments WHERE match_id = '$MATCH' AND slot = 0 AND replaced_at IS NULL")"

# The supervisor re-fetches the roster and tells the game server; the newcomer connects with its new token.
wait_log "$GAME_LOG" '"event":"roster_reloaded"' 20
wait_log "$GAME_LOG" '"event":"slot_reassigned","slot":0' 20
slot=$(assignment "$solo_tok" "$T_DIR/solo.token")
expect_eq "the newcomer's slot" 0 "$slot"
start_bg "$T_DIR/solo.out" "$GSCLIENT" play --port="$game_port" --token="$T_DIR/solo.token" --max-seconds=150
solo_pid=$LAST_PID
wait_log "$GAME_LOG" "\"event\":\"peer_admitted\".*\"slot\":0.*\"player_id\":\"$solo_id\",\"generation\":2" 20
pass "the newcomer was admitted to slot 0 at generation 2"

# The leaver's old token is refused now.
out=$("$GSCLIENT" play --port="$game_port" --token="$T_DIR/p$leaver.token" --max-seconds=10) || true
[[ $(jq -r .result <<<"$out") == refused && $(jq -r .reason <<<"$out") == not_in_roster ]] ||
	fail "the leaver's old token: expected refused not_in_roster, saw $out"
pass "the leaver's old token is refused: $(jq -r .reason <<<"$out")"

# The match plays to its end, the newcomer with it.
wait "$solo_pid" || true
expect_eq "the newcomer's game" ended "$(jq -r .result "$T_DIR/solo.out")"
deadline=$((SECONDS + 40))
until [[ $(sql "SELECT state FROM matches WHERE id = '$MATCH'") == COMPLETED ]]; do
	((SECONDS < deadline)) || fail "match $MATCH is $(sql "SELECT state FROM matches WHERE id = '$MATCH'"), not COMPLETED"
	sleep 0.1
done
body=$(sql "SELECT body::text FROM match_results WHERE match_id = '$MATCH'")
expect_eq "players in the result" 7 "$(jq '.players | length' <<<"$body")"
expect_eq "the newcomer in the result" true "$(jq --arg p "$solo_id" '.players[] | select(.player_id == $p) | .bot' <<<"$body")"
expect_eq "the leaver in the result" true "$(jq --arg p "$leaver_id" '.players[] | select(.player_id == $p) | .bot' <<<"$body")"
expect_eq "rating changes (the five who played throughout, once)" 5 \
	"$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$MATCH'")"
expect_eq "rating changes of the leaver and the newcomer" 0 \
	"$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$MATCH' AND player_id IN ('$solo_id', '$leaver_id')")"
expect_eq "tickets of the match" "COMPLETED x7" \
	"$(sql "SELECT min(state) || ' x' || count(*) FROM tickets WHERE match_id = '$MATCH' AND state = 'COMPLETED'")"
expect_eq "the newcomer joined the match" t \
	"$(sql "SELECT joined_at IS NOT NULL FROM match_players WHERE match_id = '$MATCH' AND player_id = '$solo_id'")"
pass "the match completed with the backfilled player listed for its part, unrated with the leaver"
