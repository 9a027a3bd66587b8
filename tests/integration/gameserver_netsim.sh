#!/usr/bin/env bash
# cc-gameserver's --net-sim-* flags are wired (issue 12): a real server
# simulating 80 ms +- 30 ms each way, 5% loss and 1% duplication still
# plays a match to its end for four gsclient players (which simulate
# nothing themselves), kicks nobody, and says at start-up and at the end
# what it simulated: the stats line shows packets really dropped,
# duplicated and delayed as retransmissions. The same run keeps a replay
# log with a 4 KiB cap: the file stays within it, ends with the truncated
# and closed records, and the server logs replay_log_truncated once.
# Out-of-range knobs are start-up errors naming each flag.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

gs_mint 4

# Out of range: every bad knob named at once, exit 2, before anything starts.
rc=0
COSMIC_CLASH_JOIN_KEYS_FILE="$T_DIR/keys.json" COSMIC_CLASH_WORKLOAD_TOKEN_FILE="$T_DIR/workload" \
	timeout 20 "$BIN/cc-gameserver" --game-port=0 --server-id="$GS_SERVER_ID" --roster-file="$T_DIR/mint/roster.json" \
	--api-url=http://127.0.0.1:9 --net-sim-latency=10001 --net-sim-jitter=-1 --net-sim-loss=100.5 --net-sim-dup=abc \
	--replay-log-max-bytes=100 >"$T_DIR/bad.out" 2>&1 || rc=$?
expect_eq "cc-gameserver with out-of-range --net-sim-* knobs: exit status" 2 "$rc"
for flag in net-sim-latency net-sim-jitter net-sim-loss net-sim-dup replay-log-max-bytes; do
	grep -q -- "--$flag" "$T_DIR/bad.out" || fail "the start-up error does not name --$flag: $(cat "$T_DIR/bad.out")"
done
"$BIN/cc-gameserver" --help >"$T_DIR/help" 2>&1 || fail "cc-gameserver --help failed"
for flag in net-sim-latency net-sim-jitter net-sim-loss net-sim-dup net-sim-seed replay-log replay-log-max-bytes; do
	grep -q -- "--$flag" "$T_DIR/help" || fail "--help does not list --$flag"
done
pass "out-of-range knobs refused at start-up, each named; --help lists the test-aid flags"

gs_start_fake
port=$(free_port)
replay="$T_DIR/capped.bin"
gs_start_server "$port" --match-seconds=6 --warmup-seconds=1 --connect-window-seconds=5 --overtime-max-seconds=1 \
	--net-sim-latency=80 --net-sim-jitter=30 --net-sim-loss=5 --net-sim-dup=1 --net-sim-seed=42 \
	--replay-log="$replay" --replay-log-max-bytes=4096
gs_pid=$LAST_PID
on=$(grep '"event":"net_sim_on"' "$T_DIR/gs.log") || fail "no net_sim_on line at start-up"
for kv in '"latency_ms":80' '"jitter_ms":30' '"loss_pct":5' '"dup_pct":1' '"seed":42'; do
	grep -qF "$kv" <<<"$on" || fail "net_sim_on does not say $kv: $on"
done
pass "start-up says the simulation is on and with what: $on"

for slot in 0 1 2 3; do
	start_bg "$T_DIR/player$slot.out" "$GSCLIENT" play --port="$port" --token="$T_DIR/mint/token.$slot" --max-seconds=90
	eval "player${slot}_pid=$LAST_PID"
done
for slot in 0 1 2 3; do
	pid_var="player${slot}_pid"
	wait "${!pid_var}" || fail "player $slot exited $?"
	out=$(cat "$T_DIR/player$slot.out")
	[[ $(jq -r .result <<<"$out") == ended ]] || fail "player $slot did not see the match end through the simulated network: $out"
	[[ "$(jq -c .score <<<"$out")" == "$(jq -c .ended_score <<<"$out")" ]] || fail "player $slot: snapshots disagree with the final score: $out"
	(($(jq -r .snapshots <<<"$out") > 20)) || fail "player $slot saw too few snapshots: $out"
done
pass "four players played the match to its end: $(jq -c '{snapshots, max_gap_ms, score}' "$T_DIR/player0.out")"

wait_exit "$gs_pid" 30
expect_eq "cc-gameserver exit status (0 = result acknowledged)" 0 "$EXIT_STATUS"
if grep -q '"event":"peer_kicked"' "$T_DIR/gs.log"; then fail "an honest player was kicked: $(grep peer_kicked "$T_DIR/gs.log")"; fi
stats=$(grep '"event":"net_sim_stats"' "$T_DIR/gs.log") || fail "no net_sim_stats line at the end"
for k in packets_out packets_in dropped_out dropped_in retransmits_out; do
	v=$(jq -r ".$k" <<<"$stats")
	((v > 0)) || fail "net_sim_stats.$k is $v: the simulation did not act on the traffic: $stats"
done
dup=$(jq -r '.duplicated_out + .duplicated_in' <<<"$stats")
((dup > 0)) || fail "no packet was duplicated: $stats"
# 5% of the unreliable packets, within a wide band (a few thousand packets in a 6 s match).
rate=$(jq -r '(.dropped_out + .dropped_in) * 1000 / (.packets_out + .packets_in) | floor' <<<"$stats")
((rate >= 15 && rate <= 80)) || fail "dropped ${rate} per mille of all packets for a 5% knob: $stats"
pass "nobody kicked; the simulation acted: $stats"

# The capped replay log of the same run.
size=$(stat -c %s "$replay")
((size <= 4096)) || fail "the replay log is $size bytes, over its 4096-byte cap"
expect_eq "replay_log_truncated lines" 1 "$(grep -c '"event":"replay_log_truncated"' "$T_DIR/gs.log")"
"$BIN/cc-replay-dump" "$replay" >"$T_DIR/dump.txt" 2>"$T_DIR/dump.err" || fail "cc-replay-dump exited $?: $(cat "$T_DIR/dump.err")"
tail -n2 "$T_DIR/dump.txt" | head -n1 | grep -qE '^[0-9.]+ truncated truncated: the cap of 4096 bytes \(--replay-log-max-bytes\) was reached; later records were not written$' ||
	fail "the capped log does not end with the truncated record: $(tail -n2 "$T_DIR/dump.txt")"
tail -n1 "$T_DIR/dump.txt" | grep -qE '^[0-9.]+ closed closed: [0-9]+ records written, [1-9][0-9]* not written$' ||
	fail "the capped log does not end with the closed record counting what was not written: $(tail -n1 "$T_DIR/dump.txt")"
pass "capped replay log: $size bytes, $(tail -n1 "$T_DIR/dump.txt" | cut -d' ' -f3-)"
