#!/usr/bin/env bash
# Issue 12's first "done when": a 3v3 played through the real system (as
# e2e_match.sh: cc-testkit-api, cc-matcher, cc-allocator's local provider
# running cc-supervisor and cc-gameserver, cc-player --play) with every
# client behind a simulated bad network, applied by cc-player to both
# directions at the ENet packet layer: 80 ms one-way latency, +-30 ms
# jitter, 5% loss, 1% duplicates. (The whole system rather than
# cc-gameserver with fake routes: the join tokens, the admission, the
# result posting and the server's end-of-match linger all run as in
# production, and a player kicked or stranded anywhere on that path fails
# the test.) Asserts:
#   - the match completes, every player ended ok, agreeing with the score;
#   - no honest player was kicked: no peer_kicked line in the server's log;
#   - each player's prediction error of its own ship (tests/player/predict.h:
#     predicted position after input k vs the server's in the snapshot
#     acknowledging k) stays within the bound documented in the README's
#     operating notes (p99 <= PRED_P99_M, max <= PRED_MAX_M), over enough
#     used snapshots;
#   - each player's clock estimate (clocksync.h) is within its own bound
#     (lowest RTT / 2, plus CLOCK_SLACK_MS) of the server's clock, read from
#     cc-gameserver's once-a-second "clock" line (tick and the monotonic time
#     it was due: same machine, same CLOCK_MONOTONIC); and, the latency being
#     the same both ways, within the jitter (+ CLOCK_SLACK_MS): the error of a
#     sample is half the difference of its two one-way delays, each latency
#     +- jitter, so the latency cancels and at most the jitter is left.
# Prints every player's distribution, clock error and bound.
source "$(dirname "$0")/lib.sh"

PRED_P99_M=${PRED_P99_M:-0.1}
PRED_MAX_M=${PRED_MAX_M:-1.0}
CLOCK_SLACK_MS=${CLOCK_SLACK_MS:-2}
MIN_USED=${MIN_USED:-150}
NETSIM=${NETSIM---net-sim-latency=80 --net-sim-jitter=30 --net-sim-loss=5 --net-sim-dup=1}
jitter_ms=$(sed -nE 's/.*--net-sim-jitter=([0-9]+).*/\1/p' <<<"$NETSIM")

source "$(dirname "$0")/lib_loop.sh"
scratch_database player_netsim
loop_secrets
cat >"$T_DIR/gameserver.conf" <<'EOF'
match-seconds = 15
warmup-seconds = 2
overtime-max-seconds = 5
connect-window-seconds = 30
end-linger-ms = 500
EOF
start_loop "$BIN/cc-supervisor --join-keys-file=$T_DIR/join.json --gameserver-config=$T_DIR/gameserver.conf"
log=$GAME_LOG

run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/player.err")
rc=0
# shellcheck disable=SC2086 # NETSIM is a list of flags
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=3 --regions=eu-west --ranked-percent=0 \
	--decline-percent=0 --ticket-poll-ms=500 --seed="$run" --build="netsim-$run" --match-deadline-seconds=60 --play \
	--game-threads=6 --assignment-timeout-seconds=60 --game-deadline-seconds=120 --log-level=info \
	$NETSIM --net-sim-seed="$run" >"$T_DIR/player.out" 2>"$T_DIR/player.err" || rc=$?
summary=$(cat "$T_DIR/player.out")
echo "cc-player $NETSIM --net-sim-seed=$run: $summary"
expect_eq "cc-player's exit status ($summary)" 0 "$rc"
[[ $summary =~ \;\ play:\ played=6\ ok=6\ failed=0\ score_mismatch=0\ matches=1 ]] ||
	fail "the summary does not say six played, six ended ok: $summary"
# The simulation really ran: packets lost and duplicated (each game thread, here one per player, its own stream).
if [[ -n $NETSIM ]]; then
	[[ $summary =~ net_sim_packets=([0-9]+)\ net_sim_dropped=([0-9]+)\ net_sim_duplicated=([0-9]+) ]] ||
		fail "no network simulation counters in the summary: $summary"
	((BASH_REMATCH[2] > 0 && BASH_REMATCH[3] > 0)) ||
		fail "the simulation dropped ${BASH_REMATCH[2]} and duplicated ${BASH_REMATCH[3]} of ${BASH_REMATCH[1]} packets"
fi
grep -q '"service":"cc-gameserver".*"event":"match_ended"' "$log" || fail "no match_ended line from cc-gameserver in $log"
if grep '"event":"peer_kicked"' "$log"; then
	fail "cc-gameserver kicked an honest player under the simulated network (lines above, log $log)"
fi

# Delta snapshots (issue 24): cc-player acknowledges every snapshot, so after the first few each player's come as
# snapshot_delta, rebuilt against a snapshot it acknowledged; none it could not rebuild.
expect_eq "game_finished lines (one per player)" 6 "$(grep -c '"event":"game_finished"' "$T_DIR/player.err")"
while read -r player full delta; do
	echo "player $player: $delta delta snapshots, $full full"
	((delta > 10 * full)) || fail "player $player: $delta delta snapshots against $full full (acknowledged snapshots should come as deltas)"
done < <(grep '"event":"game_finished"' "$T_DIR/player.err" | jq -r '[.player, .full_snapshots, .delta_snapshots] | @tsv')
if grep -E '"event":"(game_delta_unknown_base|game_bad_message)"' "$T_DIR/player.err"; then
	fail "a player got a delta it could not rebuild (lines above)"
fi

# Prediction error, per player.
expect_eq "prediction lines (one per player)" 6 "$(grep -c '"event":"prediction"' "$T_DIR/player.err")"
while read -r player slot snapshots used stalled held kickoff stopped unmatched p50 p95 p99 max; do
	echo "player $player (slot $slot): prediction error p50 $p50 m, p95 $p95 m, p99 $p99 m, max $max m over $used of $snapshots snapshots (stalled $stalled, held $held, kickoff $kickoff, stopped $stopped, unmatched $unmatched)"
	((used >= MIN_USED)) || fail "player $player: only $used snapshots measured (want >= $MIN_USED)"
	awk -v v="$p99" -v b="$PRED_P99_M" 'BEGIN { exit !(v <= b) }' ||
		fail "player $player: prediction error p99 $p99 m exceeds the documented bound $PRED_P99_M m"
	awk -v v="$max" -v b="$PRED_MAX_M" 'BEGIN { exit !(v <= b) }' ||
		fail "player $player: prediction error max $max m exceeds the documented bound $PRED_MAX_M m"
done < <(grep '"event":"prediction"' "$T_DIR/player.err" |
	jq -r '[.player, .slot, .snapshots, .used, .stalled, .held, .kickoff, .stopped, .unmatched, .p50_m, .p95_m, .p99_m, .max_m] | @tsv')

# Clock sync: each estimate against the server's clock line nearest to it.
grep '"service":"cc-gameserver".*"event":"clock"' "$log" | jq -c '{tick, due_ns}' >"$T_DIR/server_clock.jsonl"
(($(wc -l <"$T_DIR/server_clock.jsonl") >= 10)) || fail "fewer than 10 clock lines from cc-gameserver in $log"
expect_eq "clock_sync lines (one per player)" 6 "$(grep -c '"event":"clock_sync"' "$T_DIR/player.err")"
while read -r player err_ms bound_ms rtt_ms pongs; do
	echo "player $player: clock error $err_ms ms (bound: lowest RTT $rtt_ms ms / 2 = $bound_ms ms; $pongs pongs)"
	awk -v e="$err_ms" -v b="$bound_ms" -v s="$CLOCK_SLACK_MS" 'BEGIN { if (e < 0) e = -e; exit !(e <= b + s) }' ||
		fail "player $player: clock error $err_ms ms exceeds its bound $bound_ms ms + $CLOCK_SLACK_MS ms"
	if [[ -n $jitter_ms ]]; then
		awk -v e="$err_ms" -v j="$jitter_ms" -v s="$CLOCK_SLACK_MS" 'BEGIN { if (e < 0) e = -e; exit !(e <= j + s) }' ||
			fail "player $player: clock error $err_ms ms exceeds the simulated jitter $jitter_ms ms + $CLOCK_SLACK_MS ms"
	fi
done < <(grep '"event":"clock_sync"' "$T_DIR/player.err" | jq -c '{player, at_ns, origin_ns, bound_ms, rtt_ms, pongs}' |
	jq -r --slurpfile srv "$T_DIR/server_clock.jsonl" '
		. as $c
		| ($srv | min_by((.due_ns - $c.at_ns) | fabs)) as $s
		| (((($s.due_ns - $c.origin_ns) / (1e9 / 60)) - $s.tick) * 1000 / 60) as $err
		| [$c.player, ($err * 1000 | round / 1000), $c.bound_ms, $c.rtt_ms, $c.pongs] | @tsv')
pass "3v3 under '$NETSIM': six players ok, nobody kicked, prediction and clock within their bounds: $summary"
