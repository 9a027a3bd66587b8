#!/usr/bin/env bash
# Parties end to end (issue 26), the real binaries: cc-testkit-api,
# cc-matcher (casual), cc-allocator's local provider running cc-supervisor
# and cc-gameserver, and cc-player --play with --party-size=3: three friends
# form a party (create, join by code), the leader queues it for casual, and
# three solo players queue beside them. The match must form with the three
# friends on one team, all six accept, play over ENet, and be rated once
# each (six rating changes); the party's tickets end COMPLETED. Then a
# party with a banned member is refused with that member named.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"
scratch_database party_e2e
loop_secrets
cat >"$T_DIR/gameserver.conf" <<'CONF'
match-seconds = 8
warmup-seconds = 2
overtime-max-seconds = 3
connect-window-seconds = 30
end-linger-ms = 500
CONF
start_loop "$BIN/cc-supervisor --join-keys-file=$T_DIR/join.json --gameserver-config=$T_DIR/gameserver.conf"

run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/player.err")
rc=0
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=1 --party-size=3 --regions=eu-west \
	--ranked-percent=0 --decline-percent=0 --events=poll --ticket-poll-ms=300 --seed="$run" --build="pe2e-$run" \
	--match-deadline-seconds=60 --play --assignment-timeout-seconds=60 --game-deadline-seconds=90 --log-level=info \
	>"$T_DIR/player.out" 2>"$T_DIR/player.err" || rc=$?
summary=$(cat "$T_DIR/player.out")
expect_eq "cc-player's exit status ($summary)" 0 "$rc"
[[ $summary =~ \;\ play:\ played=6\ ok=6\ failed=0\ score_mismatch=0\ matches=1 ]] ||
	fail "the summary does not say six played and agreed with the server's score: $summary"

party=$(sql "SELECT party_id FROM tickets WHERE build = 'pe2e-$run' AND party_id IS NOT NULL LIMIT 1")
[[ -n $party ]] || fail "no ticket of build pe2e-$run was queued by a party"
expect_eq "tickets the party queued" 3 "$(sql "SELECT count(*) FROM tickets WHERE party_id = '$party'")"
match=$(sql "SELECT match_id FROM tickets WHERE party_id = '$party' AND match_id IS NOT NULL LIMIT 1")
[[ -n $match ]] || fail "the party's tickets have no match"
expect_eq "the match of every party ticket" "$match" "$(sql "SELECT string_agg(DISTINCT match_id::text, ',') FROM tickets WHERE party_id = '$party'")"
teams=$(sql "SELECT string_agg(DISTINCT mp.team::text, ',') FROM match_players mp JOIN tickets t ON t.match_id = mp.match_id AND t.player_id = mp.player_id WHERE t.party_id = '$party'")
expect_eq "the teams of the party's players in $match (one team, never split)" 1 "$(tr ',' '\n' <<<"$teams" | wc -l)"
expect_eq "solo players in $match" 3 "$(sql "SELECT count(*) FROM tickets WHERE match_id = '$match' AND party_id IS NULL")"
deadline=$((SECONDS + 30))
until [[ $(sql "SELECT state FROM matches WHERE id = '$match'") == COMPLETED ]]; do
	((SECONDS < deadline)) || fail "match $match is $(sql "SELECT state FROM matches WHERE id = '$match'") after 30 s, not COMPLETED"
	sleep 0.1
done
expect_eq "results recorded for $match" 1 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$match'")"
expect_eq "rating changes for $match (one per player, once)" "6 6" \
	"$(sql "SELECT count(*) || ' ' || count(DISTINCT player_id) FROM rating_changes WHERE match_id = '$match'")"
expect_eq "tickets of the match" "COMPLETED COMPLETED COMPLETED COMPLETED COMPLETED COMPLETED" \
	"$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE match_id = '$match'")"
violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z $violations ]] || fail "audit found violations: $violations"
pass "match $match: the party of three on team $teams with three solos, all accepted, played over ENet, COMPLETED, rated once each: $summary"

# A party with a banned member: the leader's queue is refused 403 member_banned, naming the member.
lead=$(login "$A_URL" "ban-lead-$run"); probe "$A_URL" "$lead" eu-west
mate=$(login "$A_URL" "ban-mate-$run"); probe "$A_URL" "$mate" eu-west
http POST "$A_URL/v1/parties" "$lead" '{"protocol_version":1,"build":"b1"}' -H "Idempotency-Key: ban-$run"
expect_http "create" 201
pid=$(jq -r .id <<<"$BODY")
http POST "$A_URL/v1/parties/join" "$mate" "{\"join_code\":\"$(jq -r .join_code <<<"$BODY")\",\"protocol_version\":1,\"build\":\"b1\"}"
expect_http "join" 200
mate_id=$(jq -r '.members[1].player_id' <<<"$BODY")
rev=$(jq -r .revision <<<"$BODY")
sql "UPDATE players SET banned_until = now() + interval '1 hour', ban_reason = 'e2e' WHERE id = '$mate_id'" >/dev/null
http POST "$A_URL/v1/parties/$pid/queue" "$lead" "{\"playlist\":\"casual\",\"revision\":$rev}" -H "Idempotency-Key: banq-$run"
expect_http "queue with a banned member" 403 member_banned
[[ $(jq -r .error.message <<<"$BODY") == *"$mate_id"* ]] || fail "the refusal does not name the banned member $mate_id: $BODY"
expect_eq "tickets of the refused party" 0 "$(sql "SELECT count(*) FROM tickets WHERE party_id = '$pid'")"
pass "a party with a banned member is refused, naming the member: $(jq -r .error.message <<<"$BODY")"
