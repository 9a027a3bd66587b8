#!/usr/bin/env bash
# cc-player's community mode (issue 23) against the real
# `cc-gameserver --mode=community`: 7 players (lobbies of 3: two lobbies,
# one of 4 and one of 3, so an odd count plays 2 v 1 and 2 v 2) connect
# with display names, create and browse-and-join lobbies, ready up, play,
# return to their lobby and play again (2 rounds), then leave and
# disconnect. The summary line must say every player played both rounds
# with agreeing scores and no stale broadcast, and --results-log must hold
# one line per match with the scores cc-player saw.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

port=$(free_port)
gs_start_community "$port" --match-seconds=5 --warmup-seconds=0 --overtime-max-seconds=1 --results-log="$T_DIR/results.jsonl"
out=$("$BIN/cc-player" --community="127.0.0.1:$port" --players=7 --lobby-size=3 --community-rounds=2 --seed=7 --game-deadline-seconds=30 \
	2>"$T_DIR/player.log") || fail "cc-player --community exited $?: $out"
T_LOGS+=("$T_DIR/player.log")
jq -e . <<<"$out" >/dev/null || fail "the summary is not one JSON line: $out"
expect_eq "lobbies" 2 "$(jq .lobbies <<<"$out")"
expect_eq "matches" 4 "$(jq .matches <<<"$out")"
expect_eq "plays (7 players x 2 rounds)" 14 "$(jq .plays <<<"$out")"
expect_eq "plays whose score agrees with the final snapshot" 14 "$(jq .agreeing <<<"$out")"
expect_eq "stale broadcasts" 0 "$(jq .stale <<<"$out")"
expect_eq "failures" 0 "$(jq .failures <<<"$out")"
expect_eq "results lines" 4 "$(wc -l <"$T_DIR/results.jsonl")"
logged=$(jq -r '"\(.score[0])-\(.score[1])"' "$T_DIR/results.jsonl" | sort | tr '\n' ' ')
seen=$(jq -r '.scores[]' <<<"$out" | sort | tr '\n' ' ')
expect_eq "the scores cc-player saw are the logged ones" "$logged" "$seen"
# The lobbies are gone once everyone left; every player left on its own (peer_left, no kick).
grep -q '"event":"lobby_deleted"' "$T_DIR/gs.log" || fail "no lobby_deleted in the server log"
if grep -q '"event":"peer_kicked"' "$T_DIR/gs.log"; then fail "a player was kicked: $(grep peer_kicked "$T_DIR/gs.log" | head -n 3)"; fi
pass "cc-player --community: $out"
