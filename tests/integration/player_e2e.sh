#!/usr/bin/env bash
# The loop closed with cc-player as the players (issue 11): cc-testkit-api,
# cc-matcher (casual 3v3, then ranked 1v1), cc-allocator's local provider
# running cc-supervisor -> cc-gameserver, and cc-player --play. Every player
# matches, fetches its assignment, connects with its join token, plays a
# short match with the chasing policy, checks its snapshots against the
# final score and leaves; cc-player exits 0 and says so. The database then
# holds the same final score for each match (match_results, written by
# cc-gameserver's result) and the match is COMPLETED; the ranked results
# moved each rating once.
source "$(dirname "$0")/lib.sh"

source "$(dirname "$0")/lib_loop.sh"
scratch_database player_e2e
loop_secrets
mkdir -p "$T_DIR/state"
# Short matches: 8 s of regulation, overtime capped so a 0-0 ends.
cat >"$T_DIR/gameserver.conf" <<CONF
match-seconds = 8
warmup-seconds = 1
goal-pause-seconds = 1
overtime-max-seconds = 4
connect-window-seconds = 20
CONF
start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret"
game_port=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/allocator.log" "$BIN/cc-allocator" \
	--workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" --join-key-id=k1 \
	--local-capacity=2 --local-port-min="$game_port" --local-port-max="$((game_port + 1))" --local-region=eu-west \
	--local-state-dir="$T_DIR/state" \
	--local-server-command="$BIN/cc-supervisor --join-keys-file=$T_DIR/join.json --gameserver-config=$T_DIR/gameserver.conf" \
	--api-url="$A_URL" --poll-interval-ms=100 --admin-port="$(free_port)"
T_LOGS+=("$T_DIR/state/local-$game_port.log" "$T_DIR/state/local-$((game_port + 1)).log")
for playlist in casual ranked; do
	madmin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-$playlist.log" "$BIN/cc-matcher" \
		--playlist=$playlist --admin-port="$madmin" --poll-interval-ms=100
	wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
done

run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/player.err")
# 6 casual (one 3v3) and 2 ranked (one 1v1): two matches on the two servers at once.
rc=0
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=8 --threads=4 --regions=eu-west --ranked-percent=25 \
	--decline-percent=0 --seed="$run" --build="itest-$run" --match-deadline-seconds=30 --play \
	--assignment-timeout-seconds=60 --game-deadline-seconds=90 --log-level=info \
	>"$T_DIR/player.out" 2>"$T_DIR/player.err" || rc=$?
summary=$(cat "$T_DIR/player.out")
expect_eq "cc-player's exit status ($summary)" 0 "$rc"
[[ $summary =~ \ 8\ players\ matched, ]] || fail "not every player matched: $summary"
[[ $summary =~ \;\ play:\ played=8\ ok=8\ failed=0\ score_mismatch=0\ matches=2\  ]] ||
	fail "the summary does not say all 8 played 2 matches to a checked end: $summary"

# Each match: what the players were sent is what cc-gameserver reported to cc-api.
for match in $(sql "SELECT DISTINCT match_id FROM tickets WHERE build = 'itest-$run'"); do
	line=$(grep "\"event\":\"demo_match_played\",\"match_id\":\"$match\"" "$T_DIR/player.err") ||
		fail "cc-player logged no demo_match_played for $match"
	seen=$(jq -r '"\(.score0)-\(.score1)"' <<<"$line")
	stored=$(sql "SELECT score_team0 || '-' || score_team1 FROM match_results WHERE match_id = '$match'")
	expect_eq "match $match: final score in match_results vs the players' snapshots" "$seen" "$stored"
	expect_eq "match $match state" COMPLETED "$(sql "SELECT state FROM matches WHERE id = '$match'")"
	playlist=$(sql "SELECT playlist FROM matches WHERE id = '$match'")
	if [[ $playlist == ranked ]]; then
		expect_eq "ranked match $match: one rating change per player" 2 \
			"$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$match'")"
	fi
	scores+="$playlist $seen; "
done
pass "8 players matched, connected, played and left; scores agree with match_results: ${scores:-none}; $summary"
