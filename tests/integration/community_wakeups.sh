#!/usr/bin/env bash
# Community mode's tick loop wakes once per tick too (issue 24: the pacing
# of gameserver/pace.h, shared with allocated mode): one lobby of 6 real
# ENet clients (gsclient community-matches) readies into a match and plays
# it, each client sending 60 Hz input with snapshot acks, so a loop woken
# by every datagram would wake ~6 times a tick. Asserted from the server's
# own counters over a window of 180 ticks while the match runs, and over
# the whole run from the loop_wakeups line as the server stops: at most
# 1.5 wake-ups per tick. The match still ends and agrees for everyone.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

port=$(free_port)
gs_start_community "$port" --match-seconds=8 --warmup-seconds=1 --overtime-max-seconds=1 --log-level=info
gs_pid=$GS_PID
METRICS="http://127.0.0.1:$port/metrics"
start_bg "$T_DIR/matches.out" "$GSCLIENT" community-matches --port="$port" --lobbies=1 --size=6
cl_pid=$LAST_PID

# sample: "ticks wakeups matches_running" from the server's metrics.
sample() {
	local m
	m=$(curl -sf "$METRICS") || fail "GET $METRICS failed"
	awk '/^cosmic_clash_gameserver_ticks_total/ { t = $2 } /^cosmic_clash_gameserver_loop_wakeups_total/ { w = $2 }
		/^cosmic_clash_gameserver_matches_running/ { r = $2 } END { printf "%d %d %d\n", t, w, r }' <<<"$m"
}
# The lobby's match is playing: wait for it, not a time (then 1 s of warm-up passes inside the window).
deadline=$((SECONDS + 30))
while :; do
	read -r t0 w0 r0 <<<"$(sample)"
	((r0 >= 1)) && break
	running "$cl_pid" || fail "gsclient exited before its match began: $(tail -n 3 "$T_DIR/matches.out")"
	((SECONDS < deadline)) || fail "no match running after 30 s"
	sleep 0.05
done
deadline=$((SECONDS + 60))
while :; do
	read -r t1 w1 r1 <<<"$(sample)"
	((t1 - t0 >= 180)) && break
	running "$gs_pid" || fail "cc-gameserver exited during the window"
	((SECONDS < deadline)) || fail "only $((t1 - t0)) ticks in 60 s"
	sleep 0.2
done
((r1 >= 1)) || fail "the match ended inside the window: the window did not measure a match playing"
ticks=$((t1 - t0)) wakes=$((w1 - w0))
((ticks > 0 && wakes > 0)) || fail "no wake-ups counted ($wakes over $ticks ticks): the counter is not wired"
per_tick=$(awk -v w="$wakes" -v t="$ticks" 'BEGIN { printf "%.3f", w / t }')
awk -v p="$per_tick" 'BEGIN { exit !(p <= 1.5) }' ||
	fail "community mode woke $wakes times in $ticks ticks with a match of 6 playing ($per_tick per tick, want <= 1.5)"
pass "a community match of 6 playing: $wakes wake-ups over $ticks ticks ($per_tick per tick)"

wait_exit "$cl_pid" 60
((EXIT_STATUS == 0)) && [[ $(tail -n 1 "$T_DIR/matches.out" | jq -r .result) == ok ]] ||
	fail "gsclient community-matches exited $EXIT_STATUS: $(grep '"ok":false' "$T_DIR/matches.out" | head -n 5) $(tail -n 1 "$T_DIR/matches.out")"
pass "the match ended and agreed for all six"
kill -TERM "$gs_pid"
wait_exit "$gs_pid" 30
expect_whole_run_wakeups "$T_DIR/gs.log" "community mode"
