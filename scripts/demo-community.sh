#!/usr/bin/env bash
# demo-community.sh - community mode on loopback (`make demo-community`,
# issue 23): one long-running `cc-gameserver --mode=community` (no
# control plane, no database), and cc-player --community with
# DEMO_PLAYERS (8) simulated players: they connect with display names,
# create and join lobbies of DEMO_LOBBY_SIZE (4), ready up, play a
# DEMO_MATCH_SECONDS (8) match per lobby on the same server at once, come
# back to their lobbies, and leave. The server writes one JSON line per
# match (--results-log). It prints, as the LAST line, "demo-community:
# P players, L lobbies, M matches played (scores ...), R results logged,
# F failures, T s". Logs stay in build/demo-community/. The server is
# stopped on exit, success or not; on failure its log's tail is printed.
set -Eeuo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$top/build/bin"
LOGS="$top/build/demo-community"
PLAYERS=${DEMO_PLAYERS:-8}
LOBBY_SIZE=${DEMO_LOBBY_SIZE:-4}
MATCH_SECONDS=${DEMO_MATCH_SECONDS:-8}
SEED=${DEMO_SEED:-1}

say() { echo "demo-community: $*" >&2; }
# shellcheck source=lib/services.sh
source "$top/scripts/lib/services.sh"
# shellcheck source=lib/ports.sh
source "$top/scripts/lib/ports.sh"
trap_services_exit 30

rm -rf "$LOGS"
mkdir -p "$LOGS"
start=$SECONDS
port=$(free_port)
start_service gameserver "$BIN/cc-gameserver" --mode=community --bind=127.0.0.1 --game-port="$port" \
	--match-seconds="$MATCH_SECONDS" --warmup-seconds=1 --overtime-max-seconds=2 --results-log="$LOGS/results.jsonl"
wait_http gameserver "http://127.0.0.1:$port/readyz" 20
say "community server on 127.0.0.1:$port (UDP game, TCP probe); $PLAYERS players, lobbies of $LOBBY_SIZE"
status=0
summary=$("$BIN/cc-player" --community="127.0.0.1:$port" --players="$PLAYERS" --lobby-size="$LOBBY_SIZE" \
	--seed="$SEED" --log-level=info 2>>"$LOGS/cc-player.log") || status=$?
echo "$summary" >"$LOGS/summary.json"
stop_services
results=$(wc -l <"$LOGS/results.jsonl" 2>/dev/null || echo 0)
if ((status != 0)) || [[ -z $summary ]]; then
	say "cc-player failed (exit $status): ${summary:-no summary}"
	dump_logs 30
	exit 1
fi
jq -r --arg r "$results" --arg t "$((SECONDS - start))" \
	'"demo-community: \(.players) players, \(.lobbies) lobbies, \(.matches) matches played (scores \(.scores | join(", "))), \(.plays) plays with scores agreeing \(.agreeing)/\(.plays), \(.broadcasts) lobby broadcasts, \($r) results logged, \(.failures) failures, \($t) s"' \
	<<<"$summary"
((results == $(jq .matches <<<"$summary"))) || { say "the server logged $results results for $(jq .matches <<<"$summary") matches"; exit 1; }
