#!/usr/bin/env bash
# Community lobbies, property test (issue 23): 8 real ENet clients send
# random request sequences (create, join, leave, ready, un-ready, rename,
# unknown joins, lists) to the real `cc-gameserver --mode=community`.
# After every step one random client's view, built only from the
# broadcasts it received (lobby_updated, lobby_deleted, match_starting,
# applied by revision), must equal the server's state as lobby_list
# shows it; every other client must reach that revision and hold the same
# view at it; no broadcast may arrive stale or skip a revision. Two seeds.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

port=$(free_port)
gs_start_community "$port" --match-seconds=5 --warmup-seconds=0 --overtime-max-seconds=1
for seed in 1 2; do
	gs_community "seed $seed" "$T_DIR/prop.$seed.out" community-property --port="$port" --clients=8 --steps=300 --step-ms=50 \
		--seed="$seed" --events="$T_DIR/prop.$seed.events"
	echo "$T_NAME: $(grep '"check":"property run"' "$T_DIR/prop.$seed.out" | jq -r .detail)"
done
