#!/usr/bin/env bash
# From an accepted proposal to a completed, rated match with every row
# written by the production path (issue 10, SPEC 8, 9): real cc-matcher,
# cc-testkit-api and cc-allocator (local provider, its warm pool running the
# stand-in game server build/fakes/standin_server), no fixture rows.
#  - cc-allocator allocates and publishes; the stand-in registers
#    process_ready, fetches and verifies the roster, registers
#    assignment_ready: the match reaches ASSIGNMENT_READY, tickets ASSIGNED;
#  - players fetch their assignment (endpoint of the allocated server, join
#    token of the published roster);
#  - the test then plays the game server's part with the workload token
#    cc-allocator wrote into the allocation file: allocation A's token
#    cannot act on server B's path (403) nor on match B's players (404,
#    422); the players connect; five identical results at once all answer
#    the same 200 and every rating moves once, equal to glicko2_ref.py;
#  - shutdown releases the allocation, cc-allocator's sweep frees the
#    server (IDLE, file removed), and the next match is allocated to it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_match.sh"

REF_GLICKO="$TOP/tests/integration/glicko2_ref.py"
TAU=0.7
head -c 48 /dev/urandom | base64 | tr -d '\n=' >"$T_DIR/workload.secret"
printf '{"k1":"%s"}\n' "$(head -c 32 /dev/urandom | base64 | tr -d '\n')" >"$T_DIR/join.json"
mkdir -p "$T_DIR/state"

start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret" --rating-tau=$TAU
port_min=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/allocator.log" "$BIN/cc-allocator" \
	--workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" --join-key-id=k1 \
	--local-capacity=2 --local-port-min="$port_min" --local-port-max="$((port_min + 1))" --local-region=eu-west \
	--local-state-dir="$T_DIR/state" --local-server-command="$TOP/build/fakes/standin_server" \
	--api-url="$A_URL" --poll-interval-ms=100 --admin-port="$(free_port)"
ALLOCATOR_PID=$LAST_PID
T_LOGS+=("$T_DIR/state/local-$port_min.log" "$T_DIR/state/local-$((port_min + 1)).log")
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
	--playlist=ranked --team-size=1 --poll-interval-ms=100 --proposal-window-seconds=30 \
	--tolerance-start=5000 --tolerance-cap=5000 --admin-port="$(free_port)"

# await WHAT SECONDS SQL EXPECTED: polls the database until SQL prints EXPECTED.
await() {
	local deadline=$((SECONDS + $2)) seen=""
	while ((SECONDS < deadline)); do
		kill -0 "$ALLOCATOR_PID" 2>/dev/null || fail "cc-allocator exited while waiting for $1"
		seen=$(sql "$3")
		[[ $seen == "$4" ]] && return 0
		sleep 0.1
	done
	fail "$1: expected '$4' within $2 s, saw '$seen'"
}

make_match e2ea ranked 1 1580/90/0.06 1490/160/0.06
MA=$MATCH; PA=("${PLAYERS[@]}"); TA_PLAYERS=("${TOKENS[@]}")
make_match e2eb ranked 1
MB=$MATCH; PB=("${PLAYERS[@]}")
await "match A ready through cc-allocator and the stand-in" 60 "SELECT state FROM matches WHERE id = '$MA'" ASSIGNMENT_READY
await "match B ready" 60 "SELECT state FROM matches WHERE id = '$MB'" ASSIGNMENT_READY
expect_eq "tickets of A" "ASSIGNED ASSIGNED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE match_id = '$MA'")"
read -r AA SA < <(sql "SELECT id, server_id FROM allocations WHERE match_id = '$MA'" | tr '|' ' ')
read -r AB SB < <(sql "SELECT id, server_id FROM allocations WHERE match_id = '$MB'" | tr '|' ' ')
[[ $SA != "$SB" ]] || fail "two live matches on one server $SA"
expect_eq "A's allocation" PUBLISHED "$(sql "SELECT state FROM allocations WHERE id = '$AA'")"
grep -q 'register state=assignment_ready status=200' "$T_DIR/state/$SA.log" || fail "the stand-in's log lacks its assignment_ready: $(cat "$T_DIR/state/$SA.log")"
pass "cc-allocator allocated and published, the stand-in registered: A on $SA, B on $SB, both ASSIGNMENT_READY"

http GET "$A_URL/v1/matches/$MA/assignment" "${TA_PLAYERS[0]}"; expect_http "player's assignment" 200
expect_eq "assignment endpoint" "$SA 127.0.0.1 $(sql "SELECT port FROM game_servers WHERE id = '$SA'")" "$(jq -r '"\(.server_id) \(.address) \(.port)"' <<<"$BODY")"
expect_eq "join token of the published roster" "$(sql "SELECT join_token FROM assignments WHERE match_id = '$MA' AND player_id = '${PA[0]}'")" "$(jq -r .join_token <<<"$BODY")"
pass "GET /v1/matches/{id}/assignment serves the allocator's endpoint and join token"

# The workload tokens as cc-allocator delivered them to the game servers.
TA=$(jq -r .workload_token "$T_DIR/state/$SA/allocation.json")
TB=$(jq -r .workload_token "$T_DIR/state/$SB/allocation.json")
[[ -n $TA && $TA != null && -n $TB && $TB != null ]] || fail "no workload token in the allocation files"
srv() { http "$1" "$A_URL/v1/servers/$2/$3" "$4" "${5:-}"; }
reg='{"state":"process_ready","protocol_version":1,"image_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}'
# The token is accepted on its own server (not 401/403); the replay itself is refused, the match
# being past process_ready (issue 19: a register replay answers 200 only in the state its step produced).
srv POST "$SA" register "$TA" "$reg"; expect_http "the stand-in's register, replayed with its token in ASSIGNMENT_READY" 409 invalid_state
srv POST "$SB" register "$TA" "$reg"; expect_http "A's token registers on B's server" 403 forbidden
srv POST "$SA" connect "$TA" "{\"player_id\":\"${PB[0]}\",\"connection_id\":\"x1\"}"; expect_http "A's token connects B's player" 404 not_in_roster
bres="{\"score\":[1,0],\"duration_seconds\":9,\"players\":[{\"player_id\":\"${PB[0]}\",\"team\":0,\"goals\":1,\"assists\":0,\"saves\":0,\"shots\":1},{\"player_id\":\"${PB[1]}\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0}]}"
srv POST "$SB" result "$TA" "$bres"; expect_http "A's token posts B's result on B's server" 403 forbidden
srv POST "$SA" connect "$TA" "{\"player_id\":\"${PA[0]}\",\"connection_id\":\"a0\"}"; expect_http "player 0 connects" 200
srv POST "$SA" connect "$TA" "{\"player_id\":\"${PA[1]}\",\"connection_id\":\"a1\"}"; expect_http "player 1 connects" 200
srv POST "$SA" result "$TA" "$bres"; expect_http "A's token posts B's players" 422 invalid_result
expect_eq "match B untouched" "ASSIGNMENT_READY 0" "$(sql "SELECT state || ' ' || (SELECT count(*) FROM match_results WHERE match_id = '$MB') FROM matches WHERE id = '$MB'")"
pass "allocation A's token cannot register, connect or post a result for match B (403, 404, 422)"

before_json=$(sql "SELECT json_agg(json_build_object('id', r.player_id, 'team', mp.team, 'rating', r.rating, 'deviation', r.deviation, 'volatility', r.volatility))
	FROM ratings r JOIN match_players mp ON mp.player_id = r.player_id AND mp.match_id = '$MA' WHERE r.playlist = 'ranked'")
result="{\"score\":[0,2],\"duration_seconds\":300,\"players\":[{\"player_id\":\"${PA[0]}\",\"team\":0,\"goals\":0,\"assists\":0,\"saves\":3,\"shots\":2},{\"player_id\":\"${PA[1]}\",\"team\":1,\"goals\":2,\"assists\":0,\"saves\":1,\"shots\":5}]}"
args=(-s -Z --parallel-immediate)
for i in 1 2 3 4 5; do
	((i > 1)) && args+=(--next)
	args+=(-H "Authorization: Bearer $TA" -H 'Content-Type: application/json' -o "$T_DIR/result.$i" -w '%{http_code}\n' --data-binary "$result" "$A_URL/v1/servers/$SA/result")
done
curl "${args[@]}" >"$T_DIR/result.codes"
expect_eq "five identical concurrent results" "200 200 200 200 200" "$(sort "$T_DIR/result.codes" | tr '\n' ' ' | sed 's/ $//')"
for i in 2 3 4 5; do cmp -s "$T_DIR/result.1" "$T_DIR/result.$i" || fail "answer $i differs from answer 1"; done
expect_eq "ratings moved once" "2 1 1" "$(sql "SELECT (SELECT count(*) FROM rating_changes WHERE match_id = '$MA') || ' ' || string_agg(games::text, ' ') FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${PA[0]}','${PA[1]}')")"
expect_eq "match and tickets" "COMPLETED COMPLETED COMPLETED" "$(sql "SELECT (SELECT state FROM matches WHERE id = '$MA') || ' ' || string_agg(state, ' ') FROM tickets WHERE match_id = '$MA'")"
want=$(jq -c --argjson tau "$TAU" '{tau: $tau, score_team0: 0, players: .}' <<<"$before_json" | python3 "$REF_GLICKO")
have=$(sql "SELECT json_object_agg(player_id, json_build_object('rating', rating, 'deviation', deviation, 'volatility', volatility)) FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${PA[0]}','${PA[1]}')")
jq -n --argjson want "$want" --argjson have "$have" '[$want | to_entries[] | .key as $k | .value | to_entries[] | (.value - $have[$k][.key]) | fabs] | max < 1e-6' | grep -qx true ||
	fail "ratings differ from the Python Glicko-2 (tau $TAU): want $want, have $have"
http GET "$A_URL/v1/profile/ranked" "${TA_PLAYERS[1]}"; expect_http "the winner's profile" 200
expect_eq "the winner's ranked games" 1 "$(jq -r .ranked_games <<<"$BODY")"
pass "five identical results at once: one completion, ratings moved once and equal to Python's Glicko-2 (tau $TAU): $(jq -c '[.[] | .rating | floor]' <<<"$want")"

# A conflicting result on the rows cc-allocator wrote: 409, nothing moves.
snapshot="SELECT (SELECT count(*) FROM match_results WHERE match_id = '$MA') || ' ' || (SELECT count(*) FROM rating_changes WHERE match_id = '$MA') || ' ' || string_agg(rating::text || '/' || games, ' ' ORDER BY player_id) FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${PA[0]}','${PA[1]}')"
before_conflict=$(sql "$snapshot")
srv POST "$SA" result "$TA" "${result/\"score\":\[0,2\]/\"score\":[0,3]}"; expect_http "a conflicting result" 409
expect_eq "nothing moved after the conflicting result" "$before_conflict" "$(sql "$snapshot")"
pass "a conflicting result after the five gives 409 and changes nothing"

srv POST "$SA" shutdown "$TA" '{"reason":"match_over"}'; expect_http "shutdown" 200
await "cc-allocator frees server $SA" 30 "SELECT state || ' ' || coalesce(allocation_id::text, '-') FROM game_servers WHERE id = '$SA'" "IDLE -"
[[ ! -e $T_DIR/state/$SA/allocation.json ]] || fail "the allocation file of the released allocation is still there"
make_match e2ec ranked 1
await "the next match on the freed server" 60 "SELECT coalesce((SELECT server_id || ' ' || m.state FROM allocations a JOIN matches m ON m.id = a.match_id WHERE a.match_id = '$MATCH'), '')" "$SA ASSIGNMENT_READY"
pass "shutdown: allocation RELEASED, cc-allocator freed $SA and gave it to the next match"

violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$violations" ]] || fail "audit found violations: $violations"
