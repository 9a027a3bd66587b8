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
# before and after the drop.
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
