#!/usr/bin/env bash
# Community mode, a slow reader (issue 23): one member of a lobby stops
# servicing its ENet host while the others keep renaming (each rename a
# lobby_updated to every registered player, the slow one included). The
# server must drop the slow peer (peer_kicked backlog_overflow) within
# the bound the protocol document states, and the others' updates must
# keep arriving within 100 ms of the change, before and after the drop.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

port=$(free_port)
gs_start_community "$port"
gs_community "slow reader" "$T_DIR/slow.out" community-slow --port="$port" --server-log="$T_DIR/gs.log" \
	--clients=4 --seconds=40 --latency-ms=100 --events="$T_DIR/slow.events"
slow=$(grep '^{"slow"' "$T_DIR/slow.out" | jq -c .slow)
dropped_ms=$(jq -r .dropped_after_ms <<<"$slow")
# The documented bound (gameserver/community.h): a peer that acknowledges nothing is dropped within 10 s
# (ENet timeout 5..10 s), and sooner when its backlog passes --max-peer-backlog.
bound_s=${COMMUNITY_SLOW_BOUND_S:-10}
((dropped_ms >= 0 && dropped_ms <= bound_s * 1000)) || fail "the slow reader was dropped after $dropped_ms ms, over ${bound_s} s: $slow"
grep -q '"event":"peer_kicked".*"reason":"backlog_overflow"' "$T_DIR/gs.log" || fail "no peer_kicked backlog_overflow line"
pass "slow reader dropped after $dropped_ms ms; the others' updates: $slow"
