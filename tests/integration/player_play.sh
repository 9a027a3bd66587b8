#!/usr/bin/env bash
# cc-player --play against the real control plane: cc-testkit-api with the
# server routes, cc-matcher (casual, 3v3) and cc-allocator's local provider
# with its stand-in game server (issue 11). Six players match, fetch their
# assignments (GET /v1/matches/{id}/assignment: retried while 409
# assignment_pending, then the allocator's endpoint and join token) and hand
# them to the game stage. The stand-in speaks no ENet, so every player must
# then fail, naming the endpoint the allocator gave it, and cc-player must
# exit 1 with a summary that says so: a player who cannot play is never a
# clean run. (Playing for real against cc-gameserver is the demo's
# end-to-end test.) Players re-read their tickets only every 1.5 s, so most
# first see theirs ASSIGNED, never MATCHED: that is a match too.
source "$(dirname "$0")/lib.sh"

source "$(dirname "$0")/lib_loop.sh"
scratch_database player_play
loop_secrets
start_loop "$TOP/build/fakes/standin_server"

run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/player.err")
rc=0
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=3 --regions=eu-west --ranked-percent=0 \
	--decline-percent=0 --ticket-poll-ms=1500 --seed="$run" --build="itest-$run" --match-deadline-seconds=30 --play --assignment-timeout-seconds=60 \
	--game-deadline-seconds=60 --log-level=info >"$T_DIR/player.out" 2>"$T_DIR/player.err" || rc=$?
summary=$(cat "$T_DIR/player.out")
expect_eq "cc-player's exit status with players that could not play ($summary)" 1 "$rc"
[[ $summary =~ \ 6\ players\ matched, ]] || fail "the six players did not match: $summary"
[[ $summary =~ \;\ play:\ played=6\ ok=0\ failed=6\ score_mismatch=0\ matches=0\  ]] ||
	fail "the summary does not say six played and six failed: $summary"

# Each failure names the endpoint of the allocated server: the assignment was read right.
match=$(sql "SELECT match_id FROM tickets WHERE build = 'itest-$run' AND match_id IS NOT NULL LIMIT 1")
read -r server port < <(sql "SELECT a.server_id, g.port FROM allocations a JOIN game_servers g ON g.id = a.server_id WHERE a.match_id = '$match'" | tr '|' ' ')
expect_eq "the allocated server's port" "$game_port" "$port"
failed=$(grep -c "\"event\":\"game_failed\".*\"match_id\":\"$match\".*127\\.0\\.0\\.1:$game_port" "$T_DIR/player.err" || true)
expect_eq "game_failed lines naming 127.0.0.1:$game_port for match $match" 6 "$failed"
expect_eq "demo_game_failed lines" 6 "$(grep -c '"event":"demo_game_failed"' "$T_DIR/player.err" || true)"
expect_eq "tickets of the match" "ASSIGNED ASSIGNED ASSIGNED ASSIGNED ASSIGNED ASSIGNED" \
	"$(sql "SELECT string_agg(state, ' ') FROM tickets WHERE match_id = '$match'")"
pass "six players matched, read their assignments to $server (127.0.0.1:$game_port) and failed to play, exit 1: $summary"
