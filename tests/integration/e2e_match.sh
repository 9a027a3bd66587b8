#!/usr/bin/env bash
# End to end, the real binaries as `make demo` runs them (issue 11): cc-testkit-api
# with the server routes, cc-matcher (casual), cc-allocator's local provider
# running cc-supervisor, which runs cc-gameserver per match, and cc-player
# --play: six players queue, match, fetch their assignments, connect over ENet
# with their join tokens, play a short match, and check their snapshots
# against the final score. Asserts that the match completed, its result was
# applied to the ratings exactly once, and every player agrees with the
# server's score; and that the allocator's default pool process, with no
# --local-server-command, is cc-supervisor. After the match (issue 20) every
# assignment has a disconnect time and reason (the result closed the leases
# still open: match_over), audit.sql finds nothing, and each player printed
# its post-match summary (GET /v1/matches/{id}: event match_summary) with the
# recorded score, the winner, end reason completed and, casual, no rating.
source "$(dirname "$0")/lib.sh"

source "$(dirname "$0")/lib_loop.sh"
loop_secrets
cat >"$T_DIR/gameserver.conf" <<'EOF'
match-seconds = 12
warmup-seconds = 2
overtime-max-seconds = 5
connect-window-seconds = 30
end-linger-ms = 500
EOF
mkdir -p "$T_DIR/state2"
start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret"

# The default pool process, without --local-server-command: cc-supervisor, waiting for an allocation.
port0=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/allocator0.log" "$BIN/cc-allocator" \
	--workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" --join-key-id=k1 \
	--local-capacity=1 --local-port-min="$port0" --local-port-max="$port0" --local-region=nowhere \
	--local-state-dir="$T_DIR/state2" --api-url="$A_URL" --poll-interval-ms=100 --admin-port="$(free_port)"
alloc0=$LAST_PID
T_LOGS+=("$T_DIR/state2/local-$port0.log")
deadline=$((SECONDS + 20))
until grep -q '"service":"cc-supervisor".*"event":"waiting"' "$T_DIR/state2/local-$port0.log" 2>/dev/null; do
	running "$alloc0" || fail "cc-allocator exited before its default pool process started"
	((SECONDS < deadline)) || fail "no cc-supervisor 'waiting' line from the default pool process in 20 s"
	sleep 0.05
done
kill "$alloc0"
pass "cc-allocator's default pool process is cc-supervisor (waiting for an allocation)"

start_loop "$BIN/cc-supervisor --join-keys-file=$T_DIR/join.json --gameserver-config=$T_DIR/gameserver.conf"

run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/player.err")
rc=0
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=3 --regions=eu-west --ranked-percent=0 \
	--decline-percent=0 --ticket-poll-ms=500 --seed="$run" --build="e2e-$run" --match-deadline-seconds=60 --play \
	--assignment-timeout-seconds=60 --game-deadline-seconds=90 --log-level=info \
	>"$T_DIR/player.out" 2>"$T_DIR/player.err" || rc=$?
summary=$(cat "$T_DIR/player.out")
expect_eq "cc-player's exit status ($summary)" 0 "$rc"
[[ $summary =~ \;\ play:\ played=6\ ok=6\ failed=0\ score_mismatch=0\ matches=1 ]] ||
	fail "the summary does not say six played, six agreed with the server's score: $summary"

match=$(sql "SELECT match_id FROM tickets WHERE build = 'e2e-$run' AND match_id IS NOT NULL LIMIT 1")
[[ -n $match ]] || fail "no match for build e2e-$run"
# The result lands after the players leave: wait for the match to complete.
deadline=$((SECONDS + 30))
until [[ $(sql "SELECT state FROM matches WHERE id = '$match'") == COMPLETED ]]; do
	((SECONDS < deadline)) || fail "match $match is $(sql "SELECT state FROM matches WHERE id = '$match'") after 30 s, not COMPLETED"
	sleep 0.1
done
expect_eq "results recorded for $match" 1 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$match'")"
expect_eq "rating changes for $match (one per player, once)" 6 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$match'")"
expect_eq "tickets of the match" "COMPLETED COMPLETED COMPLETED COMPLETED COMPLETED COMPLETED" \
	"$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE match_id = '$match'")"
# No lease outlives the match: each has its disconnect time and reason.
open_leases=$(sql "SELECT coalesce(string_agg(player_id || ' connected=' || connected || ' at=' || coalesce(disconnected_at::text, 'null')
	|| ' reason=' || coalesce(disconnect_reason, 'null'), '; '), '') FROM assignments
	WHERE match_id = '$match' AND (connected OR disconnected_at IS NULL OR disconnect_reason IS NULL)")
[[ -z $open_leases ]] || fail "assignments of the completed match $match without a disconnect time and reason: $open_leases"
expect_eq "assignments of $match" 6 "$(sql "SELECT count(*) FROM assignments WHERE match_id = '$match'")"
# ... and none ended after the match did: the result closed every lease still
# open in its own transaction (disconnected_at = ended_at), so a receipt the
# server sent after it (a player leaving in the end linger) changed nothing.
late=$(sql "SELECT coalesce(string_agg(s.player_id || ' ' || s.disconnect_reason || ' at ' || s.disconnected_at || ' > ' || m.ended_at, '; '), '')
	FROM assignments s JOIN matches m ON m.id = s.match_id WHERE s.match_id = '$match' AND s.disconnected_at > m.ended_at")
[[ -z $late ]] || fail "leases of $match closed after the match ended (the result left them open): $late"
pass "match $match: every lease closed by the end of the match: $(sql "SELECT string_agg(disconnect_reason, ' ' ORDER BY slot) FROM assignments WHERE match_id = '$match'")"
violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z $violations ]] || fail "audit found violations: $violations"
log="$T_DIR/state/local-$game_port.log"
grep -q '"service":"cc-gameserver".*"event":"match_ended"' "$log" || fail "no match_ended line from cc-gameserver in $log"
# The server exits once its result is acknowledged; the supervisor then reports it and frees the server.
deadline=$((SECONDS + 30))
until grep -q '"service":"cc-supervisor".*"event":"child_exited".*"reason":"completed"' "$log"; do
	((SECONDS < deadline)) || fail "no child_exited completed line in $log after 30 s"
	sleep 0.1
done
until [[ $(sql "SELECT state FROM game_servers WHERE port = $game_port") == IDLE ]]; do
	((SECONDS < deadline)) || fail "the game server on $game_port is $(sql "SELECT state FROM game_servers WHERE port = $game_port"), not IDLE again"
	sleep 0.1
done
score=$(grep '"event":"match_ended"' "$log" | tail -1 | jq -c '[.score_0, .score_1]')
# The score that rated the players is the one they saw: match_results (what
# cc-gameserver posted) must equal the server's match_ended line and every
# player's final snapshot score (game_finished), not only the broadcast.
recorded=$(sql "SELECT '[' || score_team0 || ',' || score_team1 || ']' FROM match_results WHERE match_id = '$match'")
expect_eq "recorded result vs the server's match_ended score" "$score" "$recorded"
seen=$(grep '"event":"game_finished"' "$T_DIR/player.err" | jq -c '[.score0, .score1]' | sort -u | tr '\n' ' ' | sed 's/ $//')
[[ $(grep -c '"event":"game_finished"' "$T_DIR/player.err") == 6 ]] || fail "expected 6 game_finished lines in $T_DIR/player.err"
expect_eq "every player's final snapshot score vs the recorded result" "$recorded" "$seen"
# Each player's post-match summary, as cc-player printed it: the recorded
# score, the winner it implies, completed, casual (so no rating at all).
[[ $summary =~ \ summaries=6\ summary_errors=0$ ]] || fail "the summary does not say six match summaries were read: $summary"
expect_eq "match_summary lines" 6 "$(grep -c '"event":"match_summary"' "$T_DIR/player.err" || true)"
winner=$(jq -n "$recorded | if .[0] > .[1] then 0 elif .[0] < .[1] then 1 else -1 end")
bad=$(grep '"event":"match_summary"' "$T_DIR/player.err" | jq -c --arg m "$match" --argjson s "$recorded" --argjson w "$winner" \
	'select(.match_id != $m or [.score0, .score1] != $s or .winner != $w or .state != "COMPLETED" or .end_reason != "completed"
		or .ranked != false or .playlist != "casual" or .duration_seconds < 1 or has("rating_before") or has("rating_after"))')
[[ -z $bad ]] || fail "match_summary lines that disagree with the recorded result $recorded (winner $winner) or show a casual rating: $bad"
pass "match $match: played over ENet by six players, score $score, COMPLETED, rated once, server IDLE again: $summary"

# A ranked 1v1 on the same server, IDLE again (issue 20): each player's
# printed summary shows its rating and deviation before and after, exactly
# as rating_changes recorded them, moved the way the score says.
madmin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-ranked.log" "$BIN/cc-matcher" \
	--playlist=ranked --admin-port="$madmin" --poll-interval-ms=100
wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
T_LOGS+=("$T_DIR/ranked.err")
rc=0
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=2 --threads=2 --regions=eu-west --ranked-percent=100 \
	--decline-percent=0 --ticket-poll-ms=500 --seed="$((run + 1))" --build="e2r-$run" --match-deadline-seconds=60 --play \
	--assignment-timeout-seconds=60 --game-deadline-seconds=90 --log-level=info \
	>"$T_DIR/ranked.out" 2>"$T_DIR/ranked.err" || rc=$?
rsummary=$(cat "$T_DIR/ranked.out")
expect_eq "cc-player's exit status, ranked ($rsummary)" 0 "$rc"
[[ $rsummary =~ \;\ play:\ played=2\ ok=2\ failed=0\ score_mismatch=0\ matches=1\  && $rsummary =~ \ summaries=2\ summary_errors=0$ ]] ||
	fail "the ranked summary does not say two played and two summaries were read: $rsummary"
rmatch=$(sql "SELECT match_id FROM tickets WHERE build = 'e2r-$run' AND match_id IS NOT NULL LIMIT 1")
expect_eq "ranked match $rmatch" "ranked COMPLETED completed" "$(sql "SELECT playlist || ' ' || state || ' ' || end_reason FROM matches WHERE id = '$rmatch'")"
rrecorded=$(sql "SELECT '[' || score_team0 || ',' || score_team1 || ']' FROM match_results WHERE match_id = '$rmatch'")
expect_eq "ranked match_summary lines" 2 "$(grep -c '"event":"match_summary"' "$T_DIR/ranked.err" || true)"
while read -r line; do
	pid=$(jq -r .player_id <<<"$line")
	want=$(sql "SELECT json_build_object('rating_before', rating_before, 'deviation_before', deviation_before,
		'rating_after', rating_after, 'deviation_after', deviation_after) FROM rating_changes WHERE match_id = '$rmatch' AND player_id = '$pid'")
	[[ -n $want ]] || fail "no rating change of $pid in $rmatch, yet its summary says: $line"
	bad=$(jq -c --arg m "$rmatch" --argjson s "$rrecorded" --argjson w "$want" '
		def near(a; b): ((a - b) | fabs) < 1e-6 * (1 + (b | fabs));
		(if .winner == -1 then true elif .winner == .team then .rating_after > .rating_before else .rating_after < .rating_before end) as $way
		| (near(.rating_before; $w.rating_before) and near(.rating_after; $w.rating_after)
		   and near(.deviation_before; $w.deviation_before) and near(.deviation_after; $w.deviation_after)) as $same
		| select(.match_id != $m or [.score0, .score1] != $s or .ranked != true or .playlist != "ranked" or .end_reason != "completed"
			or ($same | not) or .deviation_after >= .deviation_before or ($way | not))' <<<"$line")
	[[ -z $bad ]] || fail "ranked match_summary of $pid disagrees with rating_changes $want or the score $rrecorded: $bad"
done < <(grep '"event":"match_summary"' "$T_DIR/ranked.err")
expect_eq "open leases of the ranked match" 0 \
	"$(sql "SELECT count(*) FROM assignments WHERE match_id = '$rmatch' AND (connected OR disconnected_at IS NULL OR disconnect_reason IS NULL)")"
violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z $violations ]] || fail "audit found violations after the ranked match: $violations"
pass "ranked match $rmatch, score $rrecorded: both players printed their summary with the recorded ratings: $(grep '"event":"match_summary"' "$T_DIR/ranked.err" | jq -c '{team, winner, rating_before, rating_after}' | tr '\n' ' ')"
