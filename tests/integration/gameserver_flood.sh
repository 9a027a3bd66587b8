#!/usr/bin/env bash
# Floods against the real cc-gameserver (issue 12): per-peer leaky-bucket
# limits, here --peer-max-packets-per-second=100 (burst 100; honest
# gsclient players send 62.5 packets/s).
#   - a throttled flooder (valid inputs at 140 packets/s): its packets over
#     the limit are dropped, it is NOT kicked (its drops, 40/s, leak away at
#     half the limit, 50/s: documented policy: a sender less than half over
#     the limit is only throttled), and its rate_limited line is written
#     once per window (--rate-limit-log-window-ms=2000: over its ~7 s of
#     flooding at most 5 lines, not one per dropped packet);
#   - a hard flooder (as fast as it can, joining again after each kick for
#     the whole flood): dropped, then kicked rate_limited, every time;
#   - three honest players keep playing: the server's tick timing while the
#     floods run stays flat against a no-flood baseline measured in the same
#     run over the same length of time (from its metrics: mean CPU time of a
#     tick within 3x + 0.5 ms of the baseline, mean lateness of a tick
#     within the baseline + 4 ms, no missed ticks: generous margins, so that
#     the test holds on a loaded 2-core machine while it still catches a
#     loop that serves packets instead of ticking), and their matches end
#     normally with no snapshot gap over 1 s.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

gs_mint 6
gs_start_fake
port=$(free_port)
gs_start_server "$port" --match-seconds=30 --warmup-seconds=1 --connect-window-seconds=3 --overtime-max-seconds=1 \
	--peer-max-packets-per-second=100 --rate-limit-log-window-ms=2000 --log-level=info \
	--replay-log="$T_DIR/replay.log" --replay-log-max-bytes=8388608
gs_pid=$LAST_PID
METRICS="http://127.0.0.1:$port/metrics"

for slot in 0 1 2; do
	start_bg "$T_DIR/player$slot.out" "$GSCLIENT" play --port="$port" --token="$T_DIR/mint/token.$slot" --max-seconds=90
	eval "player${slot}_pid=$LAST_PID"
done
wait_log "$T_DIR/gs.log" '"event":"peer_admitted"' 3 "$gs_pid" 20
wait_log "$T_DIR/gs.log" '"event":"match_state".*"state":"PLAYING"' 1 "$gs_pid" 20

# sample NAME: "tick_sum tick_count late_sum late_count missed" from the server's metrics.
sample() {
	local m
	m=$(curl -sf "$METRICS") || fail "GET $METRICS failed"
	awk '
		/^cosmic_clash_gameserver_tick_duration_seconds_sum/ { ts = $2 }
		/^cosmic_clash_gameserver_tick_duration_seconds_count/ { tc = $2 }
		/^cosmic_clash_gameserver_tick_lateness_seconds_sum/ { ls = $2 }
		/^cosmic_clash_gameserver_tick_lateness_seconds_count/ { lc = $2 }
		/^cosmic_clash_gameserver_missed_ticks_total/ { mi = $2 }
		END { printf "%s %s %s %s %s\n", ts, tc, ls, lc, (mi == "" ? 0 : mi) }' <<<"$m"
}
# mean_us A B: the mean tick CPU and lateness between two samples, in microseconds, and the missed ticks.
mean_us() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		if (y[2] - x[2] <= 0 || y[4] - x[4] <= 0) { print "none"; exit }
		printf "%.0f %.0f %d\n", (y[1] - x[1]) / (y[2] - x[2]) * 1e6, (y[3] - x[3]) / (y[4] - x[4]) * 1e6, y[5] - x[5] }'
}

FLOOD_SECONDS=7
# The baseline: the same match, no flood, for as long as the flood will run (a measurement window, not a wait).
s0=$(sample)
sleep "$FLOOD_SECONDS"
s1=$(sample)
base=$(mean_us "$s0" "$s1")
[[ $base != none ]] || fail "no ticks measured in the baseline window: $s0 -> $s1"

start_bg "$T_DIR/throttled.out" "$GSCLIENT" flood --port="$port" --token="$T_DIR/mint/token.3" --pps=140 --seconds="$FLOOD_SECONDS"
throttled_pid=$LAST_PID
start_bg "$T_DIR/hard.out" "$GSCLIENT" flood --port="$port" --token="$T_DIR/mint/token.4" --pps=0 --rejoin=1 --seconds="$FLOOD_SECONDS"
hard_pid=$LAST_PID
wait_exit "$throttled_pid" $((FLOOD_SECONDS + 20))
s2=$(sample)
drops=$(curl -sf "$METRICS" | awk '/^cosmic_clash_gameserver_rate_limited_packets_total/ { n += $2 } END { print n + 0 }')
wait_exit "$hard_pid" 30
flood=$(mean_us "$s1" "$s2")
[[ $flood != none ]] || fail "no ticks measured in the flood window: $s1 -> $s2"
read -r base_cpu base_late base_missed <<<"$base"
read -r flood_cpu flood_late flood_missed <<<"$flood"
echo "tick timing, baseline: cpu ${base_cpu} us, lateness ${base_late} us, missed $base_missed; flood: cpu ${flood_cpu} us, lateness ${flood_late} us, missed $flood_missed"

# The hard flooder: kicked rate_limited on every join, each of its sessions with at most 2 rate_limited lines.
hard=$(cat "$T_DIR/hard.out")
h_joins=$(jq -r .joins <<<"$hard")
h_kicks=$(jq -r .kicks <<<"$hard")
# Every join but possibly the last (cut by the end of the flood) ended in a kick.
((h_kicks >= 1 && h_kicks >= h_joins - 1)) || fail "the hard flooder was not kicked on every join: $hard"
n_kicked=$(grep -c '"event":"peer_kicked".*"reason":"rate_limited"' "$T_DIR/gs.log" || true)
((n_kicked >= h_kicks && n_kicked <= h_joins)) || fail "$n_kicked peer_kicked rate_limited lines for $h_kicks kicks seen in $h_joins joins"
# rate_limited lines per session of the hard flooder (slot 4): the most any one of them got.
max_lines=$(grep '"event":"rate_limited"' "$T_DIR/gs.log" | jq -r 'select(.slot == 4) | .peer' | sort | uniq -c |
	sort -rn | awk 'NR == 1 { print $1 } END { if (NR == 0) print 0 }')
((max_lines >= 1 && max_lines <= 2)) || fail "a hard flooder session has $max_lines rate_limited lines, want 1 or 2 (one per 2 s window)"
pass "hard flooder: sent $(jq -r .sent <<<"$hard") packets in $(jq -r .seconds <<<"$hard") s over $(jq -r .joins <<<"$hard") joins, kicked rate_limited $n_kicked times, at most $max_lines rate_limited line(s) per session"

# The throttled flooder: dropped, not kicked, one line per window.
throttled=$(cat "$T_DIR/throttled.out")
[[ $(jq -r .result <<<"$throttled") == done ]] || fail "the throttled flooder (40% over the limit) was not just throttled: $throttled"
t_peer=$(grep '"event":"peer_admitted".*"slot":3,' "$T_DIR/gs.log" | head -n 1 | jq -r .peer)
t_lines=$(grep -c "\"event\":\"rate_limited\",\"peer\":$t_peer," "$T_DIR/gs.log" || true)
t_dropped=$(grep "\"event\":\"rate_limited\",\"peer\":$t_peer," "$T_DIR/gs.log" | tail -n 1 | jq -r .dropped_total)
((t_lines >= 1)) || fail "the throttled flooder (peer $t_peer) has no rate_limited line"
((t_lines <= FLOOD_SECONDS / 2 + 2)) || fail "the throttled flooder has $t_lines rate_limited lines in ${FLOOD_SECONDS} s: more than one per 2 s window"
((drops > 0)) || fail "cosmic_clash_gameserver_rate_limited_packets_total is $drops"
pass "throttled flooder: sent $(jq -r .sent <<<"$throttled") packets, not kicked, $t_lines rate_limited lines in ${FLOOD_SECONDS} s (dropped_total $t_dropped at the last); $drops packets dropped in all (metric)"

# Flat ticks for the others.
((flood_missed == 0)) || fail "$flood_missed ticks missed during the flood (baseline $base_missed)"
((flood_cpu <= 3 * base_cpu + 500)) || fail "mean tick CPU ${flood_cpu} us during the flood, baseline ${base_cpu} us (allowed 3x + 500 us)"
((flood_late <= base_late + 4000)) || fail "mean tick lateness ${flood_late} us during the flood, baseline ${base_late} us (allowed + 4000 us)"
pass "tick timing flat under the flood: cpu ${base_cpu} -> ${flood_cpu} us, lateness ${base_late} -> ${flood_late} us, no missed ticks"

for slot in 0 1 2; do
	pid_var="player${slot}_pid"
	wait "${!pid_var}" || fail "player $slot exited $?"
	out=$(cat "$T_DIR/player$slot.out")
	[[ $(jq -r .result <<<"$out") == ended ]] || fail "player $slot did not see the match end: $out"
	gap=$(jq -r .max_gap_ms <<<"$out")
	((gap < 1000)) || fail "player $slot went ${gap} ms without a snapshot during the flood: $out"
	pass "player $slot: match ended, longest snapshot gap ${gap} ms"
done
if grep '"event":"peer_kicked"' "$T_DIR/gs.log" | grep -v '"slot":4,'; then
	fail "someone besides the hard flooder was kicked (lines above)"
fi
wait_exit "$gs_pid" 30
expect_eq "cc-gameserver exit status (0 = result acknowledged)" 0 "$EXIT_STATUS"

# The replay log (capped at 8 MiB: the hard flood fills it within a second) records the drops and the kick
# of the hard flooder's first sessions as verdicts.
"$BIN/cc-replay-dump" "$T_DIR/replay.log" >"$T_DIR/dump.txt" 2>"$T_DIR/dump.err" || true
n=$(grep -cE "^[0-9.]+ verdict peer [0-9]+ dropped rate_limited: over the packets limit" "$T_DIR/dump.txt" || true)
k=$(grep -cE "^[0-9.]+ verdict peer [0-9]+ kicked rate_limited: persistently over the packets limit" "$T_DIR/dump.txt" || true)
((n >= 1 && k >= 1)) || fail "replay dump: $n 'dropped rate_limited' and $k 'kicked rate_limited' verdicts ($(wc -l <"$T_DIR/dump.txt") lines; $(head -c 300 "$T_DIR/dump.err"))"
pass "the replay dump shows the rate limit's verdicts: $n drops, $k kicks before the cap"
