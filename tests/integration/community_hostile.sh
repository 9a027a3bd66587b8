#!/usr/bin/env bash
# Community mode, hostile inputs (issue 23) while an honest lobby plays a
# match on the same server: hellos with names over 32 bytes, with control
# bytes (C0, DEL, C1) or invalid UTF-8 (overlong, lone continuation,
# surrogate, cut) are refused invalid_name; set_name and lobby_create with
# those names are invalid_parameters and keep the player; lobby requests
# before the hello are refused and the peer dropped without a broadcast;
# a paced create/leave loop leaks nothing and an unpaced one is kicked by
# the per-peer rate limit; lobbies up to --max-lobbies (its default) with the longest
# names, then too_many_lobbies; every lobby_list page within the message
# cap, all pages covering every lobby once. The honest match ends with its
# score agreeing with the final snapshots.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

port=$(free_port)
# The lobby cap at its default (--max-lobbies, 100 as cc-gameserver --help says): as many lobbies as a server holds.
max=$("$BIN/cc-gameserver" --help | grep -oP -- '--max-lobbies=INT .*\(default: \K[0-9]+') || fail "cc-gameserver --help names no --max-lobbies default"
gs_start_community "$port" --match-seconds=20 --warmup-seconds=0 --overtime-max-seconds=1 --max-peers=160
gs_community "hostile community inputs" "$T_DIR/hostile.out" community-hostile --port="$port" --max-lobbies="$max" \
	--events="$T_DIR/hostile.events"
grep -q '"event":"peer_kicked".*"reason":"rate_limited"' "$T_DIR/gs.log" || fail "the flood was not logged peer_kicked rate_limited"
running "$GS_PID" || fail "the server died"
pass "the server is still up after the hostile inputs"
