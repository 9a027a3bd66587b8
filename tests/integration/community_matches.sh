#!/usr/bin/env bash
# Community mode, many matches in one process (issue 23): 10 lobbies of 6
# real ENet clients ready up and play their matches at the same time in
# one `cc-gameserver --mode=community` (each at 60 Hz). Every member's
# match_end must agree with its final snapshot and with its lobby's other
# members, the teams split 3 v 3, every player back in its lobby after,
# and --results-log must hold one line per match with the same score. An
# eleventh lobby of 3 loses a player 2 s into its match (an ENet
# disconnect): the other two play it out and return to their lobby.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

port=$(free_port)
gs_start_community "$port" --match-seconds=15 --warmup-seconds=1 --overtime-max-seconds=1 --max-peers=128 --results-log="$T_DIR/results.jsonl"
gs_community "10 lobbies of 6" "$T_DIR/matches.out" community-matches --port="$port" --lobbies=10 --size=6 --quitter=1 \
	--events="$T_DIR/matches.events"
n=$(wc -l <"$T_DIR/results.jsonl" 2>/dev/null || echo 0)
expect_eq "results lines (one per match)" 11 "$n"
while read -r m; do
	id=$(jq -r .lobby_id <<<"$m")
	seen=$(jq -c .score <<<"$m")
	logged=$(jq -c "select(.lobby_id == $id) | (.score // [.score_0, .score_1])" "$T_DIR/results.jsonl")
	expect_eq "lobby $id: --results-log score against the players'" "$seen" "$logged"
done < <(grep '^{"lobby_match"' "$T_DIR/matches.out" | jq -c .lobby_match)
pass "10 matches at once (and one with a quitter); every --results-log score is its players' ($(jq -c '.score // [.score_0, .score_1]' "$T_DIR/results.jsonl" | tr '\n' ' '))"
