#!/usr/bin/env bash
# Delta snapshots against the real cc-gameserver (issue 24), over real
# ENet: a 3v3 where slots 0-2 acknowledge every snapshot they take
# (snapshot_ack) and slots 3-5 never do (gsclient --no-ack), plus a
# spectator that acknowledges:
#  - the acknowledging players and the spectator get snapshot_delta after
#    the first snapshot or two and rebuild every one (no delta against a
#    base they lack, none refused); the server's peer_snapshots lines say
#    the same counts;
#  - the players that never acknowledge get full snapshots only;
#  - a rebuilt delta is the very snapshot the others got whole: every tick
#    both an acknowledging and a never-acknowledging player took hashes
#    the same (the hash of the snapshot's full encoding);
#  - the acknowledging players receive less than half the bytes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

gs_mint 6
gs_start_fake
port=$(free_port)
gs_start_server "$port" --match-seconds=6 --warmup-seconds=1 --connect-window-seconds=10 --overtime-max-seconds=1 \
	--end-linger-ms=500 --max-spectators=1
gs_pid=$LAST_PID
M="$T_DIR/mint"

start_bg "$T_DIR/spectator.out" "$GSCLIENT" spectate --port="$port" --name=watcher --snapshot-log="$T_DIR/spectator.snaps"
spectator_pid=$LAST_PID
wait_log "$T_DIR/gs.log" '"event":"spectator_admitted"' 1 "$gs_pid" 20
pids=()
for slot in 0 1 2 3 4 5; do
	ack=()
	((slot >= 3)) && ack=(--no-ack)
	start_bg "$T_DIR/p$slot.out" "$GSCLIENT" play --port="$port" --token="$M/token.$slot" --snapshot-log="$T_DIR/p$slot.snaps" "${ack[@]}"
	pids+=("$LAST_PID")
done
for slot in 0 1 2 3 4 5; do
	wait_exit "${pids[$slot]}" 60
	((EXIT_STATUS == 0)) || fail "player $slot: gsclient exited $EXIT_STATUS: $(cat "$T_DIR/p$slot.out")"
done
wait_exit "$spectator_pid" 30
((EXIT_STATUS == 0)) || fail "spectator: gsclient exited $EXIT_STATUS: $(cat "$T_DIR/spectator.out")"

for who in p0 p1 p2 p3 p4 p5 spectator; do
	line=$(tail -1 "$T_DIR/$who.out")
	expect_eq "$who's result" ended "$(jq -r .result <<<"$line")"
	expect_eq "$who's undecodable packets" 0 "$(jq -r .undecodable <<<"$line")"
	snaps=$(jq -r .snapshots <<<"$line") fulls=$(jq -r .fulls <<<"$line") deltas=$(jq -r .deltas <<<"$line")
	((snaps >= 60)) || fail "$who took only $snaps snapshots in a 6 s match at 20 Hz"
	if [[ $who == p[345] ]]; then
		expect_eq "$who (never acks): deltas" 0 "$deltas"
		expect_eq "$who (never acks): every snapshot full" "$snaps" "$fulls"
	else
		((fulls <= 3 && deltas >= snaps - 3)) || fail "$who (acks): $fulls full and $deltas delta snapshots of $snaps"
		expect_eq "$who: deltas against a base it lacks" 0 "$(jq -r .unknown_base <<<"$line")"
	fi
done
pass "acknowledging players and the spectator got deltas after their first snapshots; the others only full snapshots"

# The server's own count agrees, per slot.
for slot in 0 1 2 3 4 5; do
	l=$(grep '"event":"peer_snapshots"' "$T_DIR/gs.log" | jq -c "select(.slot == $slot)" | tail -1)
	[[ -n $l ]] || fail "no peer_snapshots line for slot $slot in $T_DIR/gs.log"
	if ((slot >= 3)); then
		expect_eq "server: deltas sent to slot $slot (never acks)" 0 "$(jq .deltas <<<"$l")"
	else
		(($(jq .deltas <<<"$l") > 10 * $(jq .fulls <<<"$l"))) || fail "server: slot $slot (acks): $l"
	fi
done

# Rebuilt deltas are the snapshots the others got whole, tick for tick.
common=$(join <(sort "$T_DIR/p0.snaps") <(sort "$T_DIR/p3.snaps") | wc -l)
same=$(comm -12 <(sort "$T_DIR/p0.snaps") <(sort "$T_DIR/p3.snaps") | wc -l)
((common >= 60)) || fail "slots 0 and 3 took only $common snapshots of the same tick"
expect_eq "ticks where slot 0's rebuilt snapshot and slot 3's full one hash alike (of $common in common)" "$common" "$same"
same_spec=$(comm -12 <(sort "$T_DIR/spectator.snaps") <(sort "$T_DIR/p3.snaps") | wc -l)
common_spec=$(join <(sort "$T_DIR/spectator.snaps") <(sort "$T_DIR/p3.snaps") | wc -l)
expect_eq "ticks where the spectator's rebuilt snapshot and slot 3's hash alike" "$common_spec" "$same_spec"
pass "every rebuilt delta equals the full snapshot of its tick ($same ticks for slot 0, $same_spec for the spectator)"

# Fewer than half the bytes.
full_b=$(tail -1 "$T_DIR/p3.out" | jq '.snapshot_bytes / .snapshots')
delta_b=$(tail -1 "$T_DIR/p0.out" | jq '.snapshot_bytes / .snapshots')
awk -v d="$delta_b" -v f="$full_b" 'BEGIN { exit !(d * 2 < f) }' ||
	fail "an acknowledging player's snapshots average $delta_b bytes, a full one $full_b: not under half"
pass "snapshot bytes per snapshot: $delta_b with deltas, $full_b full"
