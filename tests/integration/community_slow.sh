#!/usr/bin/env bash
# Community mode, slow readers (issue 23), with the bounds of protocol
# section 11 ("Slow readers"). First a registered client stops servicing
# its ENet host while nothing is broadcast: only ENet's timeout can tell,
# and it must be gone within the documented bound. Then one member of a
# lobby stops servicing its ENet host while the others keep renaming
# (each rename a lobby_updated to every registered player, the slow one
# included): the server must drop it (peer_kicked backlog_overflow, once
# --max-peer-backlog reliable messages pile up) within the same bound,
# and the others' updates must keep arriving within 100 ms of the change,
# before and after the drop. Last, the keep-alive: an idle player is
# kicked idle_timeout, a pinging one stays.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

doc="$TOP/contracts/gameserver-protocol.md"
bound_s=$(grep -oP 'a reader that stops reading is gone within \K[0-9]+(?= s)' "$doc") ||
	fail "$doc section 11 states no slow-reader bound ('a reader that stops reading is gone within N s')"
port=$(free_port)
gs_start_community "$port"
gs_community "slow readers" "$T_DIR/slow.out" community-slow --port="$port" --server-log="$T_DIR/gs.log" \
	--clients=4 --seconds=40 --latency-ms=100 --quiet-bound-ms="$((bound_s * 1000))" --events="$T_DIR/slow.events"
quiet=$(grep '^{"quiet"' "$T_DIR/slow.out" | jq -c .quiet)
slow=$(grep '^{"slow"' "$T_DIR/slow.out" | jq -c .slow)
dropped_ms=$(jq -r .dropped_after_ms <<<"$slow")
((dropped_ms >= 0 && dropped_ms <= bound_s * 1000)) || fail "the slow reader was dropped after $dropped_ms ms, over ${bound_s} s: $slow"
grep -q '"event":"peer_kicked".*"reason":"backlog_overflow"' "$T_DIR/gs.log" || fail "no peer_kicked backlog_overflow line"
pass "silent reader dropped after $(jq -r .dropped_after_ms <<<"$quiet") ms; slow reader after $dropped_ms ms (bound $bound_s s); the others' updates: $slow"

# Liveness: a registered player that sends nothing at all (its ENet host still acknowledges) is kicked
# idle_timeout at --keepalive-ms, while one that pings stays (a second server with a short keep-alive).
keepalive_s=$(grep -oP 'A registered peer from which nothing arrives for \*\*\K[0-9]+(?= s\*\*)' "$doc") ||
	fail "$doc section 11 states no keep-alive ('A registered peer from which nothing arrives for **N s**')"
port2=$(free_port)
start_bg "$T_DIR/gs-idle.log" "$BIN/cc-gameserver" --mode=community --bind=127.0.0.1 --game-port="$port2" --keepalive-ms=3000
wait_http "http://127.0.0.1:$port2/readyz" "$LAST_PID" 20
gs_community "keep-alive (3 s here, $keepalive_s s by default)" "$T_DIR/idle.out" community-idle --port="$port2" \
	--keepalive-ms=3000 --events="$T_DIR/idle.events"
grep -q '"event":"peer_kicked".*"reason":"idle_timeout"' "$T_DIR/gs-idle.log" || fail "no peer_kicked idle_timeout line"
pass "$(jq -r 'select(.check == "an idle player is kicked at the keep-alive") | .detail' "$T_DIR/idle.out")"
