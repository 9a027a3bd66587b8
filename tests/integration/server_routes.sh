#!/usr/bin/env bash
# The game server's routes and results (SPEC 8, 9, issue 10) through the
# real cc-testkit-api over HTTP, against real PostgreSQL. Matches are made
# the real way (players queue, a real cc-matcher proposes, they accept);
# the allocation chain's rows (game server, allocation, roster,
# assignments) come from fixture_allocate/fixture_publish below, clearly a
# fixture: tests/integration/allocator_e2e.sh drives the same routes with
# the rows cc-allocator writes. Workload tokens are signed by
# workload_token_ref.py (Python's hmac), new ratings checked against
# glicko2_ref.py (Glickman's algorithm in Python), neither our C code.
#
# Proves:
#  - auth: no token, a forged signature, a well-signed token naming an
#    allocation never recorded: 401; allocation A's token on server B's
#    path: 403, on B's players: 404 not_in_roster / 422 invalid_result;
#  - every route: an identical replay answers 200 with the same body, a
#    conflicting one 409, and cosmic_clash_api_server_conflicts_total{kind}
#    moves by exactly the 409s sent;
#  - assignment_ready is refused (409 assignments_not_live) until the
#    allocation is PUBLISHED and every participant's assignment is live,
#    then reached with the tickets ASSIGNED;
#  - five identical results at once all answer 200 with one body, every
#    rating moved once (one rating_changes row each, games + 1), equal to
#    the Python Glicko-2 (2v2 ranked: composites), a conflicting result 409
#    with nothing changed; tickets COMPLETED; one outbox event per change;
#    GET /v1/profile/ranked shows the new rating; casual moves only the
#    hidden rating (ranked_games unchanged); a participant marked "bot"
#    (issue 12: a server bot drove its slot) is recorded, never rated, and
#    a team without a human rates nobody;
#  - shutdown releases the allocation (cc-allocator frees the server:
#    allocator_e2e.sh); a shutdown before any result fails the match and
#    its tickets (store/match_settle.h, as a sweep would);
#  - issue 19 (the match endings): a register replay once the match is past
#    the step's state is 409 invalid_state (a restarted supervisor never
#    runs a second server for a match in progress); the heartbeat records
#    the liveness signal, and phase "ended" moves the match to
#    RESULT_PENDING, where the result is taken; no_show settles a ranked
#    no-show (penalised once, the others requeued, called off unrated) and
#    its replay answers the same facts; a casual participant who never
#    connected is penalised and never rated; a result for a match nobody
#    ever connected to rates nobody.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_match.sh"

REF_TOKEN="$TOP/tests/integration/workload_token_ref.py"
REF_GLICKO="$TOP/tests/integration/glicko2_ref.py"
head -c 48 /dev/urandom | base64 | tr -d '\n=' >"$T_DIR/workload.secret"
head -c 48 /dev/urandom | base64 | tr -d '\n=' >"$T_DIR/forged.secret"

TAU=0.5
start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret" --rating-tau=$TAU
for pl in ranked:2 casual:1; do
	name=${pl%%:*} size=${pl##*:}
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-$name.log" "$BIN/cc-matcher" \
		--playlist="$name" --team-size="$size" --poll-interval-ms=100 --proposal-window-seconds=30 \
		--tolerance-start=5000 --tolerance-cap=5000 --admin-port="$(free_port)" --matcher-id="m-$name"
done

# fixture_allocate MATCH SERVER PORT: TEST FIXTURE standing in for cc-allocator's
# claim + endpoint steps (game server IDLE -> ALLOCATED, allocation REQUESTED ->
# ALLOCATED); prints "allocation_id expires_unix".
fixture_allocate() {
	local exp
	exp=$(sql "SELECT floor(extract(epoch FROM now() + interval '1 hour'))::bigint")
	sql "INSERT INTO game_servers (id, provider, region, address, port, state) VALUES ('$2', 'local', 'eu-west', '127.0.0.1', $3, 'IDLE')
	     ON CONFLICT (id) DO NOTHING" >/dev/null
	local alloc
	alloc=$(sql "INSERT INTO allocations (match_id, state, provider, workload_expires_at) VALUES ('$1', 'REQUESTED', 'local', to_timestamp($exp)) RETURNING id")
	sql "UPDATE allocations SET state = 'ALLOCATED', server_id = '$2', address = '127.0.0.1', port = $3 WHERE id = '$alloc';
	     UPDATE game_servers SET state = 'ALLOCATED', allocation_id = '$alloc' WHERE id = '$2'" >/dev/null
	echo "$alloc $exp"
}

# fixture_publish MATCH ALLOCATION [EXPIRED_SLOT]: TEST FIXTURE standing in for
# cc-allocator's publish (one assignment per participant, the manifest,
# PUBLISHED); EXPIRED_SLOT gets an assignment already expired.
fixture_publish() {
	sql "INSERT INTO assignments (match_id, player_id, slot, team, join_token, expires_at)
	     SELECT match_id, player_id, (row_number() OVER (ORDER BY team, player_id) - 1)::smallint, team, 'fixture-join-' || player_id,
	            CASE WHEN (row_number() OVER (ORDER BY team, player_id) - 1) = ${3:--1} THEN now() - interval '1 second' ELSE now() + interval '10 minutes' END
	     FROM match_players WHERE match_id = '$1';
	     INSERT INTO rosters (match_id, allocation_id, key_id, digest, manifest)
	     VALUES ('$1', '$2', 'k1', repeat('ab', 32), jsonb_build_object('fixture', true, 'match_id', '$1'));
	     UPDATE allocations SET state = 'PUBLISHED' WHERE id = '$2'" >/dev/null
}

token() { python3 "$REF_TOKEN" "${3:-$T_DIR/workload.secret}" "" "$1" "$2"; }

conflicts() { # conflicts KIND: the counter's value now
	curl -s "$A_ADMIN/metrics" | awk -v k="kind=\"$1\"" 'index($0, "cosmic_clash_api_server_conflicts_total{") == 1 && index($0, k) { print $NF }'
}

# srv METHOD SERVER ROUTE TOKEN [BODY]
srv() { http "$1" "$A_URL/v1/servers/$2/$3" "$4" "${5:-}"; }

# replay_then_conflict KIND METHOD SERVER ROUTE TOKEN BODY CONFLICTING_BODY CODE:
# the body answers 200 twice with one answer, the other 409 CODE, the counter + 1.
replay_then_conflict() {
	local kind=$1 before after first
	before=$(conflicts "$kind")
	srv "$2" "$3" "$4" "$5" "$6"; expect_http "$kind: first" 200; first=$BODY
	srv "$2" "$3" "$4" "$5" "$6"; expect_http "$kind: identical replay" 200
	[[ $BODY == "$first" ]] || fail "$kind: the replay answered $BODY, the first $first"
	srv "$2" "$3" "$4" "$5" "$7"; expect_http "$kind: conflicting replay" 409 "$8"
	after=$(conflicts "$kind")
	expect_eq "$kind: conflicts counted" "$((before + 1))" "$after"
	BODY=$first
}

# ---- two ranked 2v2 matches with rated players, one casual 1v1 ----
make_match r2a ranked 2 1650/120/0.06/9 1500/350/0.06 1420/80/0.059 1580/200/0.061
M1=$MATCH; P1=("${PLAYERS[@]}"); T1=("${TOKENS[@]}")
make_match r2b ranked 2
M2=$MATCH; P2=("${PLAYERS[@]}")
make_match c1 casual 1 1500/300/0.06
M3=$MATCH; P3=("${PLAYERS[@]}"); T3=("${TOKENS[@]}")
make_match c2 casual 1
M4=$MATCH; P4=("${PLAYERS[@]}")
make_match r2c ranked 2 1610/150/0.06 1500/200/0.06 1450/100/0.06 1550/250/0.06
M5=$MATCH; P5=("${PLAYERS[@]}")
pass "five matches made through queue, matcher and proposals: $M1 $M2 $M3 $M4 $M5"

read -r A1 E1 < <(fixture_allocate "$M1" local-sr-1 17001)
read -r A2 E2 < <(fixture_allocate "$M2" local-sr-2 17002)
TA=$(token "$A1" "$E1")
TB=$(token "$A2" "$E2")

# ---- authentication --------------------------------------------------------
reg_body='{"state":"process_ready","protocol_version":1,"image_digest":"sha256:aaaa"}'
srv POST local-sr-1 register "" "$reg_body"; expect_http "no token" 401 unauthorized
srv POST local-sr-1 register "$(token "$A1" "$E1" "$T_DIR/forged.secret")" "$reg_body"; expect_http "forged signature" 401 unauthorized
srv POST local-sr-1 register "$(token "$(cat /proc/sys/kernel/random/uuid)" "$E1")" "$reg_body"
expect_http "well-signed token of an allocation never recorded" 401 unauthorized
srv POST local-sr-1 register "$(token "$A1" "$((E1 + 60))")" "$reg_body"; expect_http "token with another expiry than the row's" 401 unauthorized
srv POST local-sr-2 register "$TA" "$reg_body"; expect_http "A's token on B's server" 403 forbidden
# Expiry is PostgreSQL's clock against the signed expiry (the row agreeing).
past=$((E2 - 7200))
sql "UPDATE allocations SET workload_expires_at = to_timestamp($past) WHERE id = '$A2'" >/dev/null
srv POST local-sr-2 register "$(token "$A2" "$past")" "$reg_body"; expect_http "an expired token" 401 unauthorized
sql "UPDATE allocations SET workload_expires_at = to_timestamp($E2) WHERE id = '$A2'" >/dev/null
refusals=$(curl -s "$A_ADMIN/metrics" | awk '/^cosmic_clash_api_workload_token_refusals_total\{/ { split($1, a, "\""); printf "%s=%s ", a[2], $NF }')
expect_eq "refusals counted by reason" "missing=1 bad_signature=1 unknown_allocation=1 stale_token=1 wrong_server=1 expired=1 " "$refusals"
expect_eq "nothing registered for B" "ALLOCATING" "$(sql "SELECT state FROM matches WHERE id = '$M2'")"
pass "auth: missing, forged, unrecorded, superseded and expired tokens 401; A's token on B's server 403; each refusal counted by reason"

# ---- register ----------------------------------------------------------------
srv POST local-sr-1 register "$TA" '{"state":"process_ready","protocol_version":2,"image_digest":"sha256:aaaa"}'
expect_http "another protocol than the match's" 422 protocol_mismatch
srv POST local-sr-1 register "$TA" '{"state":"assignment_ready","protocol_version":1,"image_digest":"sha256:aaaa"}'
expect_http "assignment_ready before process_ready" 409 invalid_state
replay_then_conflict register POST local-sr-1 register "$TA" "$reg_body" \
	'{"state":"process_ready","protocol_version":1,"image_digest":"sha256:bbbb"}' replay_conflict
expect_eq "match after process_ready" PROCESS_READY "$(sql "SELECT state FROM matches WHERE id = '$M1'")"
expect_eq "match.process_ready events" 1 "$(sql "SELECT count(*) FROM outbox WHERE resource_id = '$M1' AND event = 'match.process_ready'")"
pass "register process_ready: recorded once, identical replay 200, another digest 409"

ar_body='{"state":"assignment_ready","protocol_version":1,"image_digest":"sha256:aaaa"}'
srv POST local-sr-1 register "$TA" "$ar_body"; expect_http "assignment_ready before the roster is published" 409 assignments_not_live
srv GET local-sr-1 roster "$TA"; expect_http "roster before publication" 404 roster_not_published
fixture_publish "$M1" "$A1" 2
srv POST local-sr-1 register "$TA" "$ar_body"; expect_http "assignment_ready with one assignment expired" 409 assignments_not_live
grep -q '3 of 4' <<<"$BODY" || fail "the refusal does not count the live assignments: $BODY"
expect_eq "tickets still MATCHED" "MATCHED MATCHED MATCHED MATCHED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE match_id = '$M1'")"
sql "UPDATE assignments SET expires_at = now() + interval '10 minutes' WHERE match_id = '$M1'" >/dev/null
replay_then_conflict register POST local-sr-1 register "$TA" "$ar_body" \
	'{"state":"assignment_ready","protocol_version":1,"image_digest":"sha256:cccc"}' replay_conflict
expect_eq "match" ASSIGNMENT_READY "$(sql "SELECT state FROM matches WHERE id = '$M1'")"
expect_eq "tickets ASSIGNED" "ASSIGNED ASSIGNED ASSIGNED ASSIGNED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE match_id = '$M1'")"
expect_eq "ticket.assigned events" 4 "$(sql "SELECT count(*) FROM outbox o JOIN tickets t ON t.id = o.resource_id WHERE t.match_id = '$M1' AND o.event = 'ticket.assigned'")"
pass "assignment_ready refused until every assignment is live (3 of 4), then reached once with the tickets ASSIGNED"

srv GET local-sr-1 roster "$TA"; expect_http "roster" 200
expect_eq "roster is the published manifest" "true $M1" "$(jq -r '"\(.fixture) \(.match_id)"' <<<"$BODY")"
srv GET local-sr-2 roster "$TA"; expect_http "A's token reads B's roster" 403 forbidden

# ---- the player's assignment ---------------------------------------------------
http GET "$A_URL/v1/matches/$M1/assignment" "${T1[1]}"; expect_http "participant's assignment" 200
expect_eq "assignment" "local-sr-1 127.0.0.1 17001 1 fixture-join-${P1[1]}" "$(jq -r '"\(.server_id) \(.address) \(.port) \(.slot) \(.join_token)"' <<<"$BODY")"
http GET "$A_URL/v1/matches/$M1/assignment" "${T3[0]}"; expect_http "a stranger's view of the match" 404 not_found
http GET "$A_URL/v1/matches/$M3/assignment" "${T3[0]}"; expect_http "assignment before publication" 409 assignment_pending
pass "GET /v1/matches/{id}/assignment: endpoint and join token for a participant only"

# ---- connect / disconnect --------------------------------------------------------
srv POST local-sr-1 connect "$TA" "{\"player_id\":\"${P2[0]}\",\"connection_id\":\"c-x\"}"
expect_http "A's token connects a player of match B" 404 not_in_roster
replay_then_conflict connect POST local-sr-1 connect "$TA" "{\"player_id\":\"${P1[0]}\",\"connection_id\":\"peer-1\"}" \
	"{\"player_id\":\"${P1[0]}\",\"connection_id\":\"peer-2\"}" already_connected
expect_eq "generation" 1 "$(jq -r .generation <<<"$BODY")"
expect_eq "first connect starts the match" IN_PROGRESS "$(sql "SELECT state FROM matches WHERE id = '$M1'")"
replay_then_conflict disconnect POST local-sr-1 disconnect "$TA" "{\"player_id\":\"${P1[0]}\",\"generation\":1,\"reason\":\"timeout\"}" \
	"{\"player_id\":\"${P1[0]}\",\"generation\":1,\"reason\":\"kicked\"}" replay_conflict
srv POST local-sr-1 connect "$TA" "{\"player_id\":\"${P1[0]}\",\"connection_id\":\"peer-1\"}"; expect_http "a replay of the ended connection" 200
expect_eq "the ended lease is not revived" "false 1" "$(jq -r '"\(.connected) \(.generation)"' <<<"$BODY")"
srv POST local-sr-1 connect "$TA" "{\"player_id\":\"${P1[0]}\",\"connection_id\":\"peer-3\"}"; expect_http "reconnect" 200
expect_eq "reconnect's generation" 2 "$(jq -r .generation <<<"$BODY")"
before=$(conflicts disconnect)
srv POST local-sr-1 disconnect "$TA" "{\"player_id\":\"${P1[0]}\",\"generation\":1,\"reason\":\"timeout\"}"; expect_http "disconnect of the old generation" 409 stale_generation
expect_eq "stale disconnect counted" "$((before + 1))" "$(conflicts disconnect)"
for i in 1 2 3; do
	srv POST local-sr-1 connect "$TA" "{\"player_id\":\"${P1[$i]}\",\"connection_id\":\"peer-p$i\"}"; expect_http "player $i connects" 200
done
pass "connect/disconnect: leases by connection id and generation, replays 200, conflicts 409 counted"

# ---- result -------------------------------------------------------------------------
players_json() { # players_json GOALS...: the M1 players with these goals
	local out="" i=0
	for p in "${P1[@]}"; do
		out+="${out:+,}{\"player_id\":\"$p\",\"team\":$((i / 2)),\"goals\":${1:-0},\"assists\":0,\"saves\":1,\"shots\":3}"
		shift || true; i=$((i + 1))
	done
	echo "[$out]"
}
result='{"score":[3,1],"duration_seconds":300,"players":'"$(players_json 2 1 1 0)"'}'
srv POST local-sr-1 result "$TA" '{"score":[3,1],"duration_seconds":300,"players":'"$(players_json 3 1 1 0)"'}'
expect_http "team 0's goals above its score" 422 invalid_result
p2json="[{\"player_id\":\"${P2[0]}\",\"team\":0,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0},{\"player_id\":\"${P2[1]}\",\"team\":0,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0},{\"player_id\":\"${P2[2]}\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0},{\"player_id\":\"${P2[3]}\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0}]"
srv POST local-sr-1 result "$TA" "{\"score\":[0,0],\"duration_seconds\":300,\"players\":$p2json}"
expect_http "A's token submits match B's players" 422 invalid_result
srv POST local-sr-2 result "$TA" "$result"; expect_http "A's token on B's result route" 403 forbidden
expect_eq "no result recorded yet" 0 "$(sql "SELECT count(*) FROM match_results WHERE match_id IN ('$M1', '$M2')")"

# The outbox rows about match M1: the match, its tickets, its players' ratings
# (other scripts of a full run share this database).
m1_outbox() {
	sql "SELECT ${1:-count(*)} FROM outbox o WHERE o.resource_id = '$M1'
	     OR o.resource_id IN (SELECT id FROM tickets WHERE match_id = '$M1')
	     OR o.resource_id IN (SELECT player_id FROM match_players WHERE match_id = '$M1')"
}
before_json=$(sql "SELECT json_agg(json_build_object('id', r.player_id, 'team', mp.team, 'rating', r.rating, 'deviation', r.deviation, 'volatility', r.volatility))
	FROM ratings r JOIN match_players mp ON mp.player_id = r.player_id AND mp.match_id = '$M1' WHERE r.playlist = 'ranked'")
outbox_before=$(m1_outbox)
conflicts_before=$(conflicts result)
args=(-s -Z --parallel-immediate)
for i in 1 2 3 4 5; do
	((i > 1)) && args+=(--next)
	args+=(-H "Authorization: Bearer $TA" -H 'Content-Type: application/json' -o "$T_DIR/result.$i" -w '%{http_code}\n' --data-binary "$result" "$A_URL/v1/servers/local-sr-1/result")
done
curl "${args[@]}" >"$T_DIR/result.codes"
expect_eq "five identical concurrent results" "200 200 200 200 200" "$(sort "$T_DIR/result.codes" | tr '\n' ' ' | sed 's/ $//')"
for i in 2 3 4 5; do cmp -s "$T_DIR/result.1" "$T_DIR/result.$i" || fail "answer $i differs: $(cat "$T_DIR/result.$i") vs $(cat "$T_DIR/result.1")"; done
expect_eq "conflicts while racing" "$conflicts_before" "$(conflicts result)"
expect_eq "match" COMPLETED "$(sql "SELECT state FROM matches WHERE id = '$M1'")"
expect_eq "result rows" 1 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$M1'")"
expect_eq "rating_changes rows" 4 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$M1'")"
expect_eq "games of each player" "1 1 1 10" "$(sql "SELECT string_agg(games::text, ' ' ORDER BY games) FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${P1[0]}','${P1[1]}','${P1[2]}','${P1[3]}')")"
expect_eq "tickets COMPLETED" "COMPLETED COMPLETED COMPLETED COMPLETED" "$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE match_id = '$M1'")"
events=$(sql "SELECT string_agg(event || '=' || n, ' ' ORDER BY event) FROM (SELECT event, count(*) n FROM outbox WHERE event IN ('match.result_pending','match.completed','ticket.completed','rating.changed')
	AND (resource_id = '$M1' OR resource_id IN (SELECT id FROM tickets WHERE match_id = '$M1') OR resource_id IN (SELECT player_id FROM match_players WHERE match_id = '$M1')) GROUP BY event) e")
expect_eq "outbox: one event per change" "match.completed=1 match.result_pending=1 rating.changed=4 ticket.completed=4" "$events"
expect_eq "outbox rows the race added" "$((outbox_before + 10))" "$(m1_outbox)"
pass "five identical results at once: all 200 with one body, match COMPLETED once, 4 ratings moved once, 10 outbox events"

# The new ratings against Glickman's algorithm in Python.
want=$(jq -c --argjson tau "$TAU" '{tau: $tau, score_team0: 1, players: .}' <<<"$before_json" | python3 "$REF_GLICKO")
have=$(sql "SELECT json_object_agg(player_id, json_build_object('rating', rating, 'deviation', deviation, 'volatility', volatility)) FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${P1[0]}','${P1[1]}','${P1[2]}','${P1[3]}')")
jq -n --argjson want "$want" --argjson have "$have" '
	[$want | to_entries[] | .key as $k | .value | to_entries[] | (.value - $have[$k][.key]) | fabs] | max < 1e-6' | grep -qx true ||
	fail "ratings differ from the Python Glicko-2: want $want, have $have"
jq -e --argjson want "$want" '[.rating_changes[] | .player_id as $p | (.rating_after - $want[$p].rating) | fabs] | max < 1e-6' "$T_DIR/result.1" >/dev/null ||
	fail "the answer's rating_changes differ from the Python Glicko-2: $(cat "$T_DIR/result.1")"
pass "new ratings equal Glickman's Glicko-2 computed in Python (tau $TAU, composite opponents): $(jq -c '[.[] | .rating | floor]' <<<"$want")"

http GET "$A_URL/v1/profile/ranked" "${T1[0]}"; expect_http "profile after the result" 200
expect_eq "profile rating" "$(jq -r ".\"${P1[0]}\".rating" <<<"$want" | cut -c1-8)" "$(jq -r .rating <<<"$BODY" | cut -c1-8)"
for i in 0 1 2 3; do
	http GET "$A_URL/v1/profile/ranked" "${T1[$i]}"; expect_http "profile of player $i" 200
	games=$(sql "SELECT games FROM ratings WHERE playlist = 'ranked' AND player_id = '${P1[$i]}'")
	band=PROVISIONAL provisional=true
	if ((games >= 10)); then
		provisional=false
		band=$(sql "SELECT name FROM tier_bands WHERE min_rating <= (SELECT rating FROM ratings WHERE playlist = 'ranked' AND player_id = '${P1[$i]}') ORDER BY min_rating DESC LIMIT 1")
	fi
	expect_eq "player $i's profile" "$provisional $games $band" "$(jq -r '"\(.provisional) \(.ranked_games) \(.tier)"' <<<"$BODY")"
done

ratings_before=$(sql "SELECT string_agg(rating::text, ' ' ORDER BY player_id) FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${P1[0]}','${P1[1]}','${P1[2]}','${P1[3]}')")
outbox_before=$(m1_outbox)
srv POST local-sr-1 result "$TA" '{"score":[1,3],"duration_seconds":300,"players":'"$(players_json 1 0 2 1)"'}'
expect_http "a conflicting result" 409 replay_conflict
expect_eq "conflicting result counted" "$((conflicts_before + 1))" "$(conflicts result)"
expect_eq "ratings unchanged by the conflict" "$ratings_before" "$(sql "SELECT string_agg(rating::text, ' ' ORDER BY player_id) FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${P1[0]}','${P1[1]}','${P1[2]}','${P1[3]}')")"
expect_eq "outbox unchanged by the conflict" "$outbox_before" "$(m1_outbox)"
srv POST local-sr-1 result "$TA" '{"players":'"$(players_json 2 1 1 0)"',"duration_seconds":300,"score":[3,1]}'
expect_http "a late replay, keys reordered" 200
cmp -s <(printf '%s' "$BODY") "$T_DIR/result.1" || fail "the late replay answered differently: $BODY"
pass "conflicting result 409 changes nothing; a late identical one answers the same 200; profile shows the new rating"

# ---- shutdown --------------------------------------------------------------------------
replay_then_conflict shutdown POST local-sr-1 shutdown "$TA" '{"reason":"match_over"}' '{"reason":"crashed"}' replay_conflict
expect_eq "shutdown answer" "RELEASED COMPLETED" "$(jq -r '"\(.state) \(.match_state)"' <<<"$BODY")"
expect_eq "allocation" RELEASED "$(sql "SELECT state FROM allocations WHERE id = '$A1'")"
expect_eq "allocation.released events" 1 "$(sql "SELECT count(*) FROM outbox WHERE resource_id = '$A1' AND event = 'allocation.released'")"
srv POST local-sr-1 register "$TA" "$reg_body"; expect_http "an identical register replay once the match is over" 409 invalid_state
srv POST local-sr-1 connect "$TA" "{\"player_id\":\"${P1[0]}\",\"connection_id\":\"peer-9\"}"; expect_http "a new connect after the release" 409 invalid_state
srv POST local-sr-1 connect "$TA" "{\"player_id\":\"${P1[1]}\",\"connection_id\":\"peer-p1\"}"; expect_http "an identical connect replay after the release" 200
srv POST local-sr-1 disconnect "$TA" "{\"player_id\":\"${P1[1]}\",\"generation\":1,\"reason\":\"server_shutdown\"}"; expect_http "a disconnect after the release" 200
http GET "$A_URL/v1/matches/$M1/assignment" "${T1[0]}"; expect_http "assignment of a completed match" 409 match_closed
pass "shutdown: allocation RELEASED (announced for the allocator, which frees the server), replays 200, another reason 409"

# Match B shuts down before any result: it fails with its tickets, nobody's rating moves.
srv POST local-sr-2 register "$TB" "$reg_body"; expect_http "B process_ready" 200
srv POST local-sr-2 shutdown "$TB" '{"reason":"crashed"}'; expect_http "B shuts down early" 200
expect_eq "B after an early shutdown" "FAILED FAILED FAILED FAILED FAILED" \
	"$(sql "SELECT (SELECT state FROM matches WHERE id = '$M2') || ' ' || string_agg(state, ' ') FROM tickets WHERE match_id = '$M2'")"
expect_eq "no rating moved for B" 0 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$M2'")"
pass "shutdown before a result: match and tickets FAILED, no rating change"

# ---- casual: the hidden rating ---------------------------------------------------------
read -r A3 E3 < <(fixture_allocate "$M3" local-sr-3 17003)
TC=$(token "$A3" "$E3")
srv POST local-sr-3 register "$TC" "$reg_body"; expect_http "casual process_ready" 200
fixture_publish "$M3" "$A3"
srv POST local-sr-3 register "$TC" "$ar_body"; expect_http "casual assignment_ready" 200
srv POST local-sr-3 connect "$TC" "{\"player_id\":\"${P3[0]}\",\"connection_id\":\"c1\"}"; expect_http "casual connect" 200
srv POST local-sr-3 connect "$TC" "{\"player_id\":\"${P3[1]}\",\"connection_id\":\"c2\"}"; expect_http "casual connect of the other" 200
cbody="{\"score\":[0,2],\"duration_seconds\":300,\"players\":[{\"player_id\":\"${P3[0]}\",\"team\":0,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0},{\"player_id\":\"${P3[1]}\",\"team\":1,\"goals\":2,\"assists\":0,\"saves\":0,\"shots\":4}]}"
srv POST local-sr-3 result "$TC" "$cbody"; expect_http "casual result" 200
expect_eq "casual ratings moved" "casual casual" "$(sql "SELECT string_agg(playlist, ' ') FROM rating_changes WHERE match_id = '$M3'")"
expect_eq "no ranked row for casual players" 0 "$(sql "SELECT count(*) FROM ratings WHERE playlist = 'ranked' AND player_id IN ('${P3[0]}','${P3[1]}')")"
http GET "$A_URL/v1/profile/ranked" "${T3[1]}"; expect_http "casual winner's ranked profile" 404 no_rating
expect_eq "casual winner's hidden rating went up" t "$(sql "SELECT rating > 1500 FROM ratings WHERE playlist = 'casual' AND player_id = '${P3[1]}'")"
pass "casual result moves the hidden rating only; ranked_games untouched"

# ---- casual with a bot: recorded, never rated -------------------------------------------
read -r A4 E4 < <(fixture_allocate "$M4" local-sr-4 17004)
TD=$(token "$A4" "$E4")
srv POST local-sr-4 register "$TD" "$reg_body"; expect_http "bot match process_ready" 200
fixture_publish "$M4" "$A4"
srv POST local-sr-4 register "$TD" "$ar_body"; expect_http "bot match assignment_ready" 200
srv POST local-sr-4 connect "$TD" "{\"player_id\":\"${P4[0]}\",\"connection_id\":\"c1\"}"; expect_http "bot match connect" 200
bplayers="[{\"player_id\":\"${P4[0]}\",\"team\":0,\"goals\":1,\"assists\":0,\"saves\":0,\"shots\":2},{\"player_id\":\"${P4[1]}\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":1,\"bot\":BOT}]"
srv POST local-sr-4 result "$TD" "{\"score\":[1,0],\"duration_seconds\":300,\"players\":${bplayers/BOT/\"yes\"}}"
expect_http "a bot mark that is not a boolean" 400 invalid_request
srv POST local-sr-4 result "$TD" "{\"score\":[1,0],\"duration_seconds\":300,\"players\":${bplayers/BOT/true}}"
expect_http "casual result with a bot" 200
expect_eq "no rating change in the answer" 0 "$(jq '.rating_changes | length' <<<"$BODY")"
expect_eq "no rating_changes rows (the bot's team has no human)" 0 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$M4'")"
expect_eq "no rating row moved for the bot-played participant" 0 "$(sql "SELECT count(*) FROM ratings WHERE player_id = '${P4[1]}' AND games > 0")"
expect_eq "the bot mark is recorded" t "$(sql "SELECT body->'players' @> '[{\"player_id\":\"${P4[1]}\",\"bot\":true}]' FROM match_results WHERE match_id = '$M4'")"
expect_eq "the match completed" COMPLETED "$(sql "SELECT state FROM matches WHERE id = '$M4'")"
expect_eq "the participant who never connected is a casual no-show" "INITIAL_CONNECT_NO_SHOW" \
	"$(sql "SELECT string_agg(kind, ' ') FROM penalties WHERE source_id = '$M4' AND player_id = '${P4[1]}'")"
expect_eq "nobody else is penalised" 1 "$(sql "SELECT count(*) FROM penalties WHERE source_id = '$M4'")"
srv POST local-sr-4 result "$TD" "{\"score\":[1,0],\"duration_seconds\":300,\"players\":${bplayers/BOT/false}}"
expect_http "the same result without the bot mark" 409 replay_conflict
pass "a bot-played participant is recorded (bot: true), never rated; a team without a human rates nobody"

# 2v2 with one bot-played participant: the three humans are rated, against the humans only (the
# rule is cc-api's whatever the playlist; cc-gameserver marks bots in casual only).
read -r A5 E5 < <(fixture_allocate "$M5" local-sr-5 17005)
TE=$(token "$A5" "$E5")
srv POST local-sr-5 register "$TE" "$reg_body"; expect_http "2v2 bot match process_ready" 200
fixture_publish "$M5" "$A5"
srv POST local-sr-5 register "$TE" "$ar_body"; expect_http "2v2 bot match assignment_ready" 200
for i in 0 1 2 3; do # all four connected; the fourth left and a bot drove its slot
	srv POST local-sr-5 connect "$TE" "{\"player_id\":\"${P5[$i]}\",\"connection_id\":\"c$i\"}"; expect_http "2v2 bot match connect $i" 200
done
humans_before=$(sql "SELECT json_agg(json_build_object('id', r.player_id, 'team', mp.team, 'rating', r.rating, 'deviation', r.deviation, 'volatility', r.volatility))
	FROM ratings r JOIN match_players mp ON mp.player_id = r.player_id AND mp.match_id = '$M5' WHERE r.playlist = 'ranked' AND r.player_id <> '${P5[3]}'")
bot_before=$(sql "SELECT coalesce((SELECT rating::text || ' ' || games FROM ratings WHERE playlist = 'ranked' AND player_id = '${P5[3]}'), 'none')")
p5json="[{\"player_id\":\"${P5[0]}\",\"team\":0,\"goals\":1,\"assists\":0,\"saves\":0,\"shots\":1},{\"player_id\":\"${P5[1]}\",\"team\":0,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0},{\"player_id\":\"${P5[2]}\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0},{\"player_id\":\"${P5[3]}\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0,\"bot\":true}]"
srv POST local-sr-5 result "$TE" "{\"score\":[1,0],\"duration_seconds\":300,\"players\":$p5json}"
expect_http "2v2 result with a bot" 200
expect_eq "rating changes: the three humans" 3 "$(jq '.rating_changes | length' <<<"$BODY")"
expect_eq "no rating change for the bot-played participant" 0 "$(jq --arg p "${P5[3]}" '[.rating_changes[] | select(.player_id == $p)] | length' <<<"$BODY")"
expect_eq "the bot-played participant's rating untouched" "$bot_before" "$(sql "SELECT coalesce((SELECT rating::text || ' ' || games FROM ratings WHERE playlist = 'ranked' AND player_id = '${P5[3]}'), 'none')")"
want5=$(jq -c --argjson tau "$TAU" '{tau: $tau, score_team0: 1, players: .}' <<<"$humans_before" | python3 "$REF_GLICKO")
jq -e --argjson want "$want5" '[.rating_changes[] | .player_id as $p | (.rating_after - $want[$p].rating) | fabs] | max < 1e-6' <<<"$BODY" >/dev/null ||
	fail "2v2 with a bot: ratings differ from the Python Glicko-2 over the humans only: want $want5, have $BODY"
pass "2v2 with a bot: the three humans rated against the humans only (equal to the Python Glicko-2), the bot-played slot untouched"

# ---- issue 19: register replays, heartbeat, RESULT_PENDING -----------------------------
make_match f6 casual 1
M6=$MATCH; P6=("${PLAYERS[@]}")
read -r A6 E6 < <(fixture_allocate "$M6" local-sr-6 17006)
TF=$(token "$A6" "$E6")
srv POST local-sr-6 register "$TF" "$reg_body"; expect_http "f6 process_ready" 200
srv POST local-sr-6 register "$TF" "$reg_body"; expect_http "f6 process_ready replay in PROCESS_READY" 200
fixture_publish "$M6" "$A6"
srv POST local-sr-6 register "$TF" "$ar_body"; expect_http "f6 assignment_ready" 200
srv POST local-sr-6 register "$TF" "$reg_body"; expect_http "f6 process_ready replay in ASSIGNMENT_READY" 409 invalid_state
for i in 0 1; do
	srv POST local-sr-6 connect "$TF" "{\"player_id\":\"${P6[$i]}\",\"connection_id\":\"f6-$i\"}"; expect_http "f6 connect $i" 200
done
before=$(conflicts register)
srv POST local-sr-6 register "$TF" "$ar_body"; expect_http "a restarted supervisor's assignment_ready replay in IN_PROGRESS" 409 invalid_state
srv POST local-sr-6 register "$TF" "$reg_body"; expect_http "a restarted supervisor's process_ready replay in IN_PROGRESS" 409 invalid_state
expect_eq "register refusals counted" "$((before + 2))" "$(conflicts register)"
expect_eq "the match is still in progress" IN_PROGRESS "$(sql "SELECT state FROM matches WHERE id = '$M6'")"
pass "register: an identical replay answers 200 only in the state its step produced; past it (IN_PROGRESS) 409 invalid_state, counted"

for bad in '{"phase":"paused","tick":1}' '{"phase":"playing","tick":-1}' '{"phase":"playing"}' '{"tick":3}' \
	'{"phase":"playing","tick":1.5}' '{"phase":"playing","tick":1,"score":[0,0]}'; do
	srv POST local-sr-6 heartbeat "$TF" "$bad"; expect_http "heartbeat $bad" 400 invalid_request
done
srv POST local-sr-6 heartbeat "" '{"phase":"playing","tick":1}'; expect_http "heartbeat without a token" 401 unauthorized
srv POST local-sr-2 heartbeat "$TF" '{"phase":"playing","tick":1}'; expect_http "heartbeat on another server's path" 403 forbidden
expect_eq "nothing recorded by the refusals" "" "$(sql "SELECT coalesce(last_phase, '') FROM allocations WHERE id = '$A6'")"
outbox6=$(sql "SELECT count(*) FROM outbox")
srv POST local-sr-6 heartbeat "$TF" '{"phase":"playing","tick":120}'; expect_http "heartbeat playing" 200
expect_eq "heartbeat answer" "$A6 $M6 IN_PROGRESS PUBLISHED" "$(jq -r '"\(.allocation_id) \(.match_id) \(.match_state) \(.allocation_state)"' <<<"$BODY")"
[[ $(jq -r .heartbeat_at <<<"$BODY") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T.*Z$ ]] || fail "heartbeat_at is not RFC 3339: $BODY"
expect_eq "recorded on the allocation" "playing true" "$(sql "SELECT last_phase || ' ' || (last_heartbeat_at > now() - interval '10 seconds') FROM allocations WHERE id = '$A6'")"
first_beat=$(sql "SELECT last_heartbeat_at FROM allocations WHERE id = '$A6'")
srv POST local-sr-6 heartbeat "$TF" '{"phase":"playing","tick":120}'; expect_http "heartbeat replay" 200
expect_eq "a replay moves only the time" "playing true" "$(sql "SELECT last_phase || ' ' || (last_heartbeat_at >= '$first_beat') FROM allocations WHERE id = '$A6'")"
expect_eq "no outbox row for a heartbeat" "$outbox6" "$(sql "SELECT count(*) FROM outbox")"
srv POST local-sr-6 heartbeat "$TF" '{"phase":"ended","tick":18000}'; expect_http "heartbeat ended" 200
expect_eq "ended: RESULT_PENDING" RESULT_PENDING "$(jq -r .match_state <<<"$BODY")"
srv POST local-sr-6 heartbeat "$TF" '{"phase":"ended","tick":18000}'; expect_http "heartbeat ended again" 200
expect_eq "ended replay" RESULT_PENDING "$(jq -r .match_state <<<"$BODY")"
expect_eq "match.result_pending once" "RESULT_PENDING 1" "$(sql "SELECT (SELECT state FROM matches WHERE id = '$M6') || ' ' || count(*) FROM outbox WHERE resource_id = '$M6' AND event = 'match.result_pending'")"
f6result="{\"score\":[2,1],\"duration_seconds\":300,\"players\":[{\"player_id\":\"${P6[0]}\",\"team\":0,\"goals\":2,\"assists\":0,\"saves\":0,\"shots\":3},{\"player_id\":\"${P6[1]}\",\"team\":1,\"goals\":1,\"assists\":0,\"saves\":0,\"shots\":2}]}"
srv POST local-sr-6 result "$TF" "$f6result"; expect_http "a result in RESULT_PENDING" 200
expect_eq "completed, both rated" "COMPLETED 2" "$(sql "SELECT (SELECT state FROM matches WHERE id = '$M6') || ' ' || count(*) FROM rating_changes WHERE match_id = '$M6'")"
expect_eq "match events" "match.completed=1 match.result_pending=1" "$(sql "SELECT string_agg(event || '=' || n, ' ' ORDER BY event) FROM (SELECT event, count(*) n FROM outbox WHERE resource_id = '$M6' AND event IN ('match.result_pending', 'match.completed') GROUP BY event) e")"
srv POST local-sr-6 heartbeat "$TF" '{"phase":"ended","tick":18000}'; expect_http "heartbeat after the result" 200
expect_eq "the server learns its match is over" COMPLETED "$(jq -r .match_state <<<"$BODY")"
pass "heartbeat: validated, recorded on the allocation with no outbox row, replays 200; ended -> RESULT_PENDING once; the result is taken there and rates both"

# ---- issue 19: no_show (ranked 2v2: three connect, one never does) ----------------------
make_match f7 ranked 2 1500/200/0.06 1500/200/0.06 1500/200/0.06 1500/200/0.06
M7=$MATCH; P7=("${PLAYERS[@]}")
read -r A7 E7 < <(fixture_allocate "$M7" local-sr-7 17007)
TG=$(token "$A7" "$E7")
srv POST local-sr-7 register "$TG" "$reg_body"; expect_http "f7 process_ready" 200
srv POST local-sr-7 no_show "$TG" "{\"player_ids\":[\"${P7[3]}\"]}"; expect_http "no_show before any connect window" 409 invalid_state
fixture_publish "$M7" "$A7"
srv POST local-sr-7 register "$TG" "$ar_body"; expect_http "f7 assignment_ready" 200
for i in 0 1 2; do
	srv POST local-sr-7 connect "$TG" "{\"player_id\":\"${P7[$i]}\",\"connection_id\":\"f7-$i\"}"; expect_http "f7 connect $i" 200
done
for bad in '{"player_ids":[]}' "{\"player_ids\":[\"${P7[3]}\",\"${P7[3]}\"]}" '{"player_ids":["not-a-uuid"]}' \
	"{\"player_ids\":\"${P7[3]}\"}" "{\"player_ids\":[\"${P7[3]^^}\"]}" '{}' \
	"{\"player_ids\":[$(for i in $(seq 17); do printf '"%s",' "$(cat /proc/sys/kernel/random/uuid)"; done | sed 's/,$//')]}"; do
	srv POST local-sr-7 no_show "$TG" "$bad"; expect_http "no_show ${bad:0:60}" 400 invalid_request
done
srv POST local-sr-7 no_show "$TG" "{\"player_ids\":[\"${P6[0]}\"]}"; expect_http "no_show naming a player of another match" 422 not_in_roster
expect_eq "nothing settled by the refusals" "IN_PROGRESS 0" "$(sql "SELECT (SELECT state FROM matches WHERE id = '$M7') || ' ' || count(*) FROM penalties WHERE source_id = '$M7'")"
srv POST local-sr-7 no_show "$TG" "{\"player_ids\":[\"${P7[0]}\"]}"; expect_http "no_show naming only a player who connected" 200
expect_eq "who connected is not a no-show" "IN_PROGRESS [] []" "$(jq -r '"\(.match_state) \(.no_show_player_ids | tostring) \(.requeued_player_ids | tostring)"' <<<"$BODY")"
outbox7=$(sql "SELECT count(*) FROM outbox")
srv POST local-sr-7 no_show "$TG" "{\"player_ids\":[\"${P7[3]}\",\"${P7[0]}\"]}"; expect_http "no_show" 200
first=$BODY
expect_eq "no_show answer" "$M7 FAILED [\"${P7[3]}\"] [\"${P7[0]}\",\"${P7[1]}\",\"${P7[2]}\"]" \
	"$(jq -r '"\(.match_id) \(.match_state) \(.no_show_player_ids | tostring) \(.requeued_player_ids | tostring)"' <<<"$BODY")"
expect_eq "one INITIAL_CONNECT_NO_SHOW, the no-show's" "${P7[3]} INITIAL_CONNECT_NO_SHOW" "$(sql "SELECT string_agg(player_id || ' ' || kind, ',') FROM penalties WHERE source_id = '$M7'")"
expect_eq "tickets: the no-show FAILED, the others QUEUED with a fresh expiry" "QUEUED QUEUED QUEUED FAILED" \
	"$(sql "SELECT string_agg(t.state, ' ' ORDER BY mp.team, mp.player_id) FROM match_players mp JOIN tickets t ON t.id = mp.ticket_id WHERE mp.match_id = '$M7' AND (t.state = 'FAILED' OR t.expires_at > now() + interval '20 seconds')")"
expect_eq "allocation released" "RELEASED no_show" "$(sql "SELECT state || ' ' || shutdown_reason FROM allocations WHERE id = '$A7'")"
expect_eq "nobody rated" "0 0" "$(sql "SELECT (SELECT count(*) FROM rating_changes WHERE match_id = '$M7') || ' ' || count(*) FROM ratings WHERE games > 0 AND player_id IN ('${P7[0]}','${P7[1]}','${P7[2]}','${P7[3]}')")"
expect_eq "events of the settlement" "allocation.released=1 match.failed=1 ticket.failed=1 ticket.requeued=3" \
	"$(sql "SELECT string_agg(event || '=' || n, ' ' ORDER BY event) FROM (SELECT event, count(*) n FROM outbox WHERE id > 0 AND event IN ('match.failed','ticket.failed','ticket.requeued','allocation.released') AND (resource_id IN ('$M7', '$A7') OR resource_id IN (SELECT ticket_id FROM match_players WHERE match_id = '$M7')) GROUP BY event) e")"
outbox7=$(sql "SELECT count(*) FROM outbox")
srv POST local-sr-7 no_show "$TG" "{\"player_ids\":[\"${P7[3]}\",\"${P7[0]}\"]}"; expect_http "no_show replay" 200
expect_eq "the replay answers the same facts" "$first" "$BODY"
expect_eq "the replay wrote nothing" "$outbox7 1" "$(sql "SELECT (SELECT count(*) FROM outbox) || ' ' || count(*) FROM penalties WHERE source_id = '$M7'")"
srv POST local-sr-7 heartbeat "$TG" '{"phase":"playing","tick":600}'; expect_http "heartbeat of a called-off match" 200
expect_eq "the server learns its match was called off" "FAILED RELEASED" "$(jq -r '"\(.match_state) \(.allocation_state)"' <<<"$BODY")"
http GET "$A_URL/v1/queue/$(sql "SELECT t.id FROM match_players mp JOIN tickets t ON t.id = mp.ticket_id WHERE mp.match_id = '$M7' AND mp.player_id = '${P7[0]}'")" "${TOKENS[0]}"
expect_http "a requeued player's ticket" 200
expect_eq "back in the queue" "QUEUED null" "$(jq -r '"\(.state) \(.match_id)"' <<<"$BODY")"
pass "no_show (ranked): the no-show penalised once, the three others requeued, the match called off unrated, the server released; a replay answers the same facts and writes nothing"

# ---- issue 19: a result for a match nobody ever connected to rates nobody ---------------
make_match f8 ranked 2 1600/150/0.06 1500/150/0.06 1450/150/0.06 1550/150/0.06
M8=$MATCH; P8=("${PLAYERS[@]}")
read -r A8 E8 < <(fixture_allocate "$M8" local-sr-8 17008)
TH=$(token "$A8" "$E8")
srv POST local-sr-8 register "$TH" "$reg_body"; expect_http "f8 process_ready" 200
fixture_publish "$M8" "$A8"
srv POST local-sr-8 register "$TH" "$ar_body"; expect_http "f8 assignment_ready" 200
# TEST FIXTURE: the match in progress although no connect receipt was ever taken
# (what a lost supervisor's second server used to report a result for).
sql "UPDATE matches SET state = 'IN_PROGRESS' WHERE id = '$M8'" >/dev/null
ratings8=$(sql "SELECT string_agg(rating || '/' || games, ' ' ORDER BY player_id) FROM ratings WHERE player_id IN ('${P8[0]}','${P8[1]}','${P8[2]}','${P8[3]}')")
p8json=$(for i in 0 1 2 3; do printf '{"player_id":"%s","team":%d,"goals":0,"assists":0,"saves":0,"shots":0},' "${P8[$i]}" $((i / 2)); done | sed 's/,$//')
srv POST local-sr-8 result "$TH" "{\"score\":[0,0],\"duration_seconds\":300,\"players\":[$p8json]}"; expect_http "result of a match nobody connected to" 200
expect_eq "completed, nobody rated" "COMPLETED 0 0" "$(sql "SELECT (SELECT state FROM matches WHERE id = '$M8') || ' ' || (SELECT count(*) FROM rating_changes WHERE match_id = '$M8') || ' ' || count(*) FROM penalties WHERE source_id = '$M8'")"
expect_eq "ratings untouched" "$ratings8" "$(sql "SELECT string_agg(rating || '/' || games, ' ' ORDER BY player_id) FROM ratings WHERE player_id IN ('${P8[0]}','${P8[1]}','${P8[2]}','${P8[3]}')")"
grep -q "\"event\":\"rating_skipped\".*\"match_id\":\"$M8\".*no participant ever connected" "$T_DIR/A.log" || fail "no rating_skipped log line for $M8"
pass "a result for a match nobody ever connected to completes it and rates nobody (rating_skipped logged), penalises nobody"

# ---- issue 19: the result never rates a participant who never connected ----------------
# Casual 1v1, the second player never connects and the server does not mark his slot a bot.
make_match f9 casual 1 1500/300/0.06 1500/300/0.06
M9=$MATCH; P9=("${PLAYERS[@]}")
read -r A9 E9 < <(fixture_allocate "$M9" local-sr-9 17009)
TI=$(token "$A9" "$E9")
srv POST local-sr-9 register "$TI" "$reg_body"; expect_http "f9 process_ready" 200
fixture_publish "$M9" "$A9"
srv POST local-sr-9 register "$TI" "$ar_body"; expect_http "f9 assignment_ready" 200
srv POST local-sr-9 connect "$TI" "{\"player_id\":\"${P9[0]}\",\"connection_id\":\"f9\"}"; expect_http "f9 connect" 200
p9json="[{\"player_id\":\"${P9[0]}\",\"team\":0,\"goals\":3,\"assists\":0,\"saves\":0,\"shots\":3},{\"player_id\":\"${P9[1]}\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0}]"
srv POST local-sr-9 result "$TI" "{\"score\":[3,0],\"duration_seconds\":300,\"players\":$p9json}"; expect_http "casual result with a no-show" 200
expect_eq "completed; the no-show penalised, nobody rated (his team has no one who played)" \
	"COMPLETED 0 ${P9[1]}:INITIAL_CONNECT_NO_SHOW" \
	"$(sql "SELECT (SELECT state FROM matches WHERE id = '$M9') || ' ' || (SELECT count(*) FROM rating_changes WHERE match_id = '$M9') || ' ' || string_agg(player_id || ':' || kind, ',') FROM penalties WHERE source_id = '$M9'")"
pass "casual: a participant who never connected is penalised INITIAL_CONNECT_NO_SHOW and never rated"

# Ranked 2v2 in progress, one never connected: the result calls the match off instead.
make_match f10 ranked 2 1500/200/0.06 1500/200/0.06 1500/200/0.06 1500/200/0.06
M10=$MATCH; P10=("${PLAYERS[@]}")
read -r A10 E10 < <(fixture_allocate "$M10" local-sr-10 17010)
TJ=$(token "$A10" "$E10")
srv POST local-sr-10 register "$TJ" "$reg_body"; expect_http "f10 process_ready" 200
fixture_publish "$M10" "$A10"
srv POST local-sr-10 register "$TJ" "$ar_body"; expect_http "f10 assignment_ready" 200
for i in 0 1 2; do
	srv POST local-sr-10 connect "$TJ" "{\"player_id\":\"${P10[$i]}\",\"connection_id\":\"f10-$i\"}"; expect_http "f10 connect $i" 200
done
p10json=$(for i in 0 1 2 3; do printf '{"player_id":"%s","team":%d,"goals":%d,"assists":0,"saves":0,"shots":1},' "${P10[$i]}" $((i / 2)) $((i < 2 ? 1 : 0)); done | sed 's/,$//')
srv POST local-sr-10 result "$TJ" "{\"score\":[2,0],\"duration_seconds\":300,\"players\":[$p10json]}"
expect_http "a ranked result with a participant who never connected" 409 invalid_state
expect_eq "called off: FAILED, nobody rated, the no-show penalised, the others requeued" \
	"FAILED 0 0 ${P10[3]}:INITIAL_CONNECT_NO_SHOW QUEUED QUEUED QUEUED FAILED" \
	"$(sql "SELECT (SELECT state FROM matches WHERE id = '$M10') || ' ' || (SELECT count(*) FROM rating_changes WHERE match_id = '$M10') || ' ' || (SELECT count(*) FROM match_results WHERE match_id = '$M10') || ' ' ||
	        (SELECT string_agg(player_id || ':' || kind, ',') FROM penalties WHERE source_id = '$M10') || ' ' ||
	        (SELECT string_agg(t.state, ' ' ORDER BY mp.team, mp.player_id) FROM match_players mp JOIN tickets t ON t.id = mp.ticket_id WHERE mp.match_id = '$M10')")"
grep -q "\"event\":\"match_called_off\".*\"match_id\":\"$M10\"" "$T_DIR/A.log" || fail "no match_called_off log line for $M10"
pass "ranked: a result with a participant who never connected calls the match off (the no_show settlement), rates nobody"

# Ranked 2v2 played out to RESULT_PENDING (the server's "ended" heartbeat), one never
# connected: still called off, never rated 2 against 1.
make_match f12 ranked 2 1500/200/0.06 1500/200/0.06 1500/200/0.06 1500/200/0.06
M12=$MATCH; P12=("${PLAYERS[@]}")
read -r A12 E12 < <(fixture_allocate "$M12" local-sr-12 17012)
TL=$(token "$A12" "$E12")
srv POST local-sr-12 register "$TL" "$reg_body"; expect_http "f12 process_ready" 200
fixture_publish "$M12" "$A12"
srv POST local-sr-12 register "$TL" "$ar_body"; expect_http "f12 assignment_ready" 200
for i in 0 1 2; do
	srv POST local-sr-12 connect "$TL" "{\"player_id\":\"${P12[$i]}\",\"connection_id\":\"f12-$i\"}"; expect_http "f12 connect $i" 200
done
srv POST local-sr-12 heartbeat "$TL" '{"phase":"ended","tick":18000}'; expect_http "f12 ended" 200
expect_eq "f12 RESULT_PENDING" "RESULT_PENDING" "$(jq -r .match_state <<<"$BODY")"
p12json=$(for i in 0 1 2 3; do printf '{"player_id":"%s","team":%d,"goals":%d,"assists":0,"saves":0,"shots":1},' "${P12[$i]}" $((i / 2)) $((i < 2 ? 1 : 0)); done | sed 's/,$//')
srv POST local-sr-12 result "$TL" "{\"score\":[2,0],\"duration_seconds\":300,\"players\":[$p12json]}"
expect_http "a ranked result in RESULT_PENDING with a participant who never connected" 409 invalid_state
expect_eq "called off from RESULT_PENDING: FAILED, nobody rated, the no-show penalised" \
	"FAILED 0 ${P12[3]}:INITIAL_CONNECT_NO_SHOW" \
	"$(sql "SELECT (SELECT state FROM matches WHERE id = '$M12') || ' ' || (SELECT count(*) FROM rating_changes WHERE match_id = '$M12') || ' ' ||
	        (SELECT string_agg(player_id || ':' || kind, ',') FROM penalties WHERE source_id = '$M12')")"
pass "ranked: a match played out to RESULT_PENDING past a no-show is called off too, never rated 2 against 1"

# ---- issue 19: a ranked game in a new season rates from the reset numbers ----------------
# TEST FIXTURE: a season running since a minute ago (numbered past any other test's, at
# least 2) and four ranked ratings made before it, not reset yet: cc-maintenance's season
# sweep has not reached them. The result must reset them first (the sweep's statement
# and guard), then rate from the reset numbers (1900/80 -> 1700/200, 1300/250 -> 1400/250,
# 1500/80 -> 1500/200 twice), never rate the old ones and pull them back after.
make_match f11 ranked 2 1900/80/0.06 1500/80/0.06 1300/250/0.06 1500/80/0.06
M11=$MATCH; P11=("${PLAYERS[@]}")
in11="'${P11[0]}', '${P11[1]}', '${P11[2]}', '${P11[3]}'"
season11=$(sql "INSERT INTO seasons (season, starts_at, ends_at)
	SELECT greatest(coalesce(max(season), 0) + 1, 2), now() - interval '1 minute', now() + interval '12 weeks' FROM seasons RETURNING season")
sql "UPDATE ratings SET created_at = now() - interval '1 day' WHERE player_id IN ($in11)" >/dev/null
read -r A11 E11 < <(fixture_allocate "$M11" local-sr-11 17011)
TK=$(token "$A11" "$E11")
srv POST local-sr-11 register "$TK" "$reg_body"; expect_http "f11 process_ready" 200
fixture_publish "$M11" "$A11"
srv POST local-sr-11 register "$TK" "$ar_body"; expect_http "f11 assignment_ready" 200
for i in 0 1 2 3; do
	srv POST local-sr-11 connect "$TK" "{\"player_id\":\"${P11[$i]}\",\"connection_id\":\"f11-$i\"}"; expect_http "f11 connect $i" 200
done
p11json=$(for i in 0 1 2 3; do printf '{"player_id":"%s","team":%d,"goals":%d,"assists":0,"saves":0,"shots":1},' "${P11[$i]}" $((i / 2)) $((i == 0 ? 1 : 0)); done | sed 's/,$//')
srv POST local-sr-11 result "$TK" "{\"score\":[1,0],\"duration_seconds\":300,\"players\":[$p11json]}"; expect_http "f11 result in a new season" 200
expect_eq "rated from the season's reset numbers" "1400/250 1500/200 1500/200 1700/200" \
	"$(sql "SELECT string_agg(round(rating_before) || '/' || round(deviation_before), ' ' ORDER BY rating_before) FROM rating_changes WHERE match_id = '$M11'")"
expect_eq "one reset each, for that season" "4 $season11" \
	"$(sql "SELECT count(*) || ' ' || min(season) FROM season_resets WHERE player_id IN ($in11)")"
after11=$(sql "SELECT string_agg(rating || '/' || deviation, ' ' ORDER BY player_id) FROM ratings WHERE playlist = 'ranked' AND player_id IN ($in11)")
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" "$BIN/cc-maintenance" --once --admin-port=0 >"$T_DIR/maint11.log" 2>&1 ||
	fail "cc-maintenance --once exited $?: $(tail -5 "$T_DIR/maint11.log")"
expect_eq "the season sweep afterwards changes no rating" "$after11" \
	"$(sql "SELECT string_agg(rating || '/' || deviation, ' ' ORDER BY player_id) FROM ratings WHERE playlist = 'ranked' AND player_id IN ($in11)")"
pass "a ranked result in a new season resets its players first (season $season11, once each) and rates from the reset numbers; the sweep after it changes nothing"

violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$violations" ]] || fail "audit found violations: $violations"
pass "audit query: no violations"
