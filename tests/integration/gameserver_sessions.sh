#!/usr/bin/env bash
# Sessions against the real cc-gameserver (issue 12, SPEC 11), casual, with
# the default 30 s slot reservation, over real ENet, receipts and result to
# the fake server routes (tests/fakes/fake_server_routes) over real HTTP:
#  - slot 0 drops (ENet disconnect) and resumes 2 s later: same slot, team
#    and ship (its position continues within what the ship could coast);
#    before that, another player's token with slot 0's resume key, and a
#    display name with it, are refused resume_refused;
#  - slot 1 vanishes silently (the server still thinks it is live) and
#    resumes: it takes the session over, the older one is kicked
#    duplicate_session; receipts connect, disconnect, connect in order;
#  - slot 2 leaves for good: after exactly the 30 s reservation a bot takes
#    the ship (the others see the snapshot bot flag and player_info bot),
#    and the posted result marks slot 2's player "bot": true;
#  - slot 3 is a no-show: a bot plays it from the end of LOADING; its
#    player then joins late (during WARMUP): welcomed at once with
#    snapshots, its ship its own only from the next kickoff on;
#  - a spectator (a display name) receives the same snapshot bytes as the
#    players; a second one past --max-spectators=1 is refused
#    spectators_full; its inputs are ignored.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

gs_mint 4
gs_start_fake
port=$(free_port)
# LOADING 2 s (slot 3 will not be there), WARMUP 10 s (the late joiner comes in it), 45 s of play: the 30 s reservation of slot 2 lapses in play.
gs_start_server "$port" --match-seconds=45 --warmup-seconds=10 --connect-window-seconds=2 --goal-pause-seconds=1 \
	--overtime-max-seconds=1 --max-spectators=1
gs_pid=$LAST_PID
grep -q '"slot_reserve_seconds":30' "$T_DIR/gs.log" || fail "the server does not run the 30 s default reservation"
M="$T_DIR/mint"

start_bg "$T_DIR/spectator.out" "$GSCLIENT" spectate --port="$port" --name=watcher --snapshot-log="$T_DIR/spectator.snaps" \
	--await-close=8000
spectator_pid=$LAST_PID
wait_log "$T_DIR/gs.log" '"event":"spectator_admitted"' 1 "$gs_pid" 20
start_bg "$T_DIR/p0.out" "$GSCLIENT" play --port="$port" --token="$M/token.0" --snapshot-log="$T_DIR/p0.snaps" \
	--drop-after-ms=14000 --resume-after-ms=2000 --resume --impostor-token="$M/token.2" --impostor-name=player0
p0_pid=$LAST_PID
start_bg "$T_DIR/p1.out" "$GSCLIENT" play --port="$port" --token="$M/token.1" --drop-after-ms=16000 --drop=silent \
	--resume-after-ms=300 --resume
p1_pid=$LAST_PID
start_bg "$T_DIR/p2.out" "$GSCLIENT" play --port="$port" --token="$M/token.2" --drop-after-ms=12000
p2_pid=$LAST_PID

# The second spectator is past the cap.
out=$("$GSCLIENT" spectate --port="$port" --name=watcher2) || fail "gsclient spectate exited $?: $out"
[[ $(jq -r .result <<<"$out") == refused && $(jq -r .reason <<<"$out") == spectators_full && $(jq -r .disconnected <<<"$out") == true ]] ||
	fail "a spectator past --max-spectators=1: expected refused spectators_full and a disconnect, saw $out"
pass "a spectator past the cap is refused: $(jq -r .detail <<<"$out")"

# Slot 3 is a no-show: LOADING ends without it and a bot plays it; then its player joins, late.
wait_log "$T_DIR/gs.log" '"event":"bot_took_slot","slot":3,"why":"no_show"' 1 "$gs_pid" 20
start_bg "$T_DIR/p3.out" "$GSCLIENT" play --port="$port" --token="$M/token.3" --snapshot-log="$T_DIR/p3.snaps"
p3_pid=$LAST_PID
wait_log "$T_DIR/gs.log" '"event":"peer_admitted".*"slot":3.*"enters_at_kickoff":true' 1 "$gs_pid" 20

# Slot 1's silent drop: its resume takes the session over.
wait_log "$T_DIR/gs.log" '"event":"peer_kicked".*"reason":"duplicate_session".*"slot":1' 1 "$gs_pid" 60
pass "a resume while the old session still looked live took it over; the old one was kicked duplicate_session"

# Slot 2 left at ~12 s: a bot takes its ship when the 30 s reservation lapses, not before.
wait_log "$T_DIR/gs.log" '"event":"peer_left".*"slot":2' 1 "$gs_pid" 30
wait_log "$T_DIR/gs.log" '"event":"slot_reservation_lapsed","slot":2' 1 "$gs_pid" 45
away=$(grep '"event":"slot_reservation_lapsed","slot":2' "$T_DIR/gs.log" | head -1 | jq -r .away_ms)
((away >= 30000 && away < 33000)) || fail "slot 2's reservation lapsed after $away ms; want 30000 (+ a tick or two)"
wait_log "$T_DIR/gs.log" '"event":"bot_took_slot","slot":2,"why":"reservation_lapsed"' 1 "$gs_pid" 5
pass "slot 2's reservation lapsed after $away ms and a bot took the ship"

for who in p0 p1 p3 spectator; do
	pid_var="${who}_pid"
	wait_exit "${!pid_var}" 120
	((EXIT_STATUS == 0)) || fail "$who: gsclient exited $EXIT_STATUS: $(cat "$T_DIR/$who.out")"
done
wait_exit "$p2_pid" 10
p0=$(tail -1 "$T_DIR/p0.out") p1=$(tail -1 "$T_DIR/p1.out") p3=$(tail -1 "$T_DIR/p3.out") spec=$(tail -1 "$T_DIR/spectator.out")

# Slot 0: the impostors, then its own resume.
expect_eq "another player's token with slot 0's resume key" "refused:resume_refused" "$(jq -r .impostor_token <<<"$p0")"
expect_eq "a display name with slot 0's resume key" "refused:resume_refused" "$(jq -r .impostor_name <<<"$p0")"
expect_eq "slot 0 after its resume (result, resumed, slot, team)" "ended true 0 0" \
	"$(jq -r '"\(.result) \(.resumed) \(.resumed_slot) \(.resumed_team)"' <<<"$p0")"
grep -q '"event":"peer_admitted".*"slot":0.*"resumed":true' "$T_DIR/gs.log" || fail "no resumed admission of slot 0 in the server log"
read -r t0 t1 dist < <(jq -r '[.own_before.tick, .own_after.tick,
	([.own_before.pos, .own_after.pos] | transpose | map((.[0] - .[1]) * (.[0] - .[1])) | add | sqrt)] | @tsv' <<<"$p0")
((t0 > 0 && t1 > t0)) || fail "slot 0: no ship state around the drop: $p0"
kicked_between=$(grep '"event":"kickoff"' "$T_DIR/gs.log" | jq -r --argjson a "$t0" --argjson b "$t1" 'select(.tick > $a and .tick <= $b) | .tick' | wc -l)
if ((kicked_between == 0)); then
	# The ship coasted where the server left it: at most 35 m/s (the speed cap) for the ticks between, plus quantisation.
	python3 -c "import sys; d, t = float('$dist'), ($t1 - $t0) / 60; sys.exit(0 if d <= 35 * t + 0.5 else 1)" ||
		fail "slot 0's ship jumped $dist m in $((t1 - t0)) ticks across the resume: $p0"
	# Nor was it parked: slot 0 (team 0, spawn index 0) parks at (0, 9, -18) (game/sim.h cc_sim_spawn).
	from_spawn=$(jq -r '.own_after.pos | [.[0], .[1] - 9, .[2] + 18] | map(. * .) | add | sqrt' <<<"$p0")
	python3 -c "import sys; sys.exit(0 if float('$from_spawn') > 0.5 else 1)" ||
		fail "slot 0's ship sat at its spawn when it resumed (parked, not kept in play): $p0"
	pass "slot 0 resumed: same slot and team, its ship $dist m on after $((t1 - t0)) ticks away (it coasted, never reset)"
else
	pass "slot 0 resumed: same slot and team (a kickoff reset every ship while it was away)"
fi

# Slot 1: taken over, same slot and ship.
expect_eq "slot 1 after its takeover (result, resumed, slot, team)" "ended true 1 1" \
	"$(jq -r '"\(.result) \(.resumed) \(.resumed_slot) \(.resumed_team)"' <<<"$p1")"

# Slot 3: welcomed at once, its ship bot-driven until the next kickoff, its own from then on.
read -r wstate bot_last free_tick first_kick < <(jq -r '[.welcome_state, .own_bot_last_tick, .own_free_tick, (.kickoffs[0] // 0)] | @tsv' <<<"$p3")
((wstate != 0)) || fail "slot 3 was welcomed during LOADING: not a late joiner: $p3"
((bot_last > 0 && first_kick > 0)) || fail "slot 3: no bot-driven snapshot of its slot, or no kickoff seen: $p3"
# kickoff.tick is the first tick simulated from the reset; the reset (and the handover) is the tick before.
((bot_last < first_kick - 1 && free_tick >= first_kick - 1)) ||
	fail "slot 3's ship was not handed over at the kickoff (reset at tick $((first_kick - 1))): last bot tick $bot_last, first own tick $free_tick"
expect_eq "slot 3 played to the end" ended "$(jq -r .result <<<"$p3")"
pass "late joiner: welcomed in state $wstate, snapshots at once, the bot drove its ship until the kickoff at tick $first_kick"

# What the others saw of the bots: slot 2 (lapsed) and slot 3 (no-show), in snapshots and player_info.
bits=$(jq -r '"\(.bot_slots) \(.pi_bot_slots)"' <<<"$p0")
read -r snap_bits pi_bits <<<"$bits"
(((snap_bits & 12) == 12 && (pi_bits & 12) == 12)) || fail "slot 0 did not see bots on slots 2 and 3 (snapshot mask $snap_bits, player_info mask $pi_bits)"
(((snap_bits & 3) == 0)) || fail "slot 0 saw a bot on a human slot: mask $snap_bits"
pass "players saw the bot flag on slots 2 and 3 only (snapshots $snap_bits, player_info $pi_bits)"

# The spectator: the same snapshot bytes as the players, to the end.
expect_eq "spectator" "ended 255 255" "$(jq -r '"\(.result) \(.slot) \(.team)"' <<<"$spec")"
# The finished match closes spectators as it does players (protocol section 6): kicked match_over, data 14.
expect_eq "what the spectator heard when the finished match closed (kicked reason, disconnect data)" "match_over 14" \
	"$(jq -r '"\(.close_kicked) \(.close_data)"' <<<"$spec")"
for who in p0 p3; do
	# Lines are "tick hash": ticks both saw, and of those the lines (tick and bytes' hash) that are identical.
	ticks=$(comm -12 <(cut -d' ' -f1 "$T_DIR/spectator.snaps" | sort -u) <(cut -d' ' -f1 "$T_DIR/$who.snaps" | sort -u) | wc -l)
	common=$(comm -12 <(sort -u "$T_DIR/spectator.snaps") <(sort -u "$T_DIR/$who.snaps") | wc -l)
	((ticks >= 200)) || fail "spectator and $who share only $ticks snapshot ticks"
	expect_eq "snapshots with identical bytes, of the $ticks ticks both the spectator and $who received" "$ticks" "$common"
done
grep -q '"event":"spectator_left".*"ignored_messages":[1-9]' "$T_DIR/gs.log" || fail "the spectator's inputs were not counted as ignored"
pass "the spectator received byte-identical snapshots ($common shared with slot 3), its own inputs ignored"

# Receipts and the result.
wait_exit "$gs_pid" 60
expect_eq "cc-gameserver exit status (0 = result acknowledged)" 0 "$EXIT_STATUS"
calls=$(curl -sf "$FAKE_URL/calls") || fail "GET $FAKE_URL/calls failed"
pid_of() { jq -r --argjson s "$1" '.players[] | select(.slot == $s) | .player_id' "$M/roster.json"; }
seq_of() { jq -r --arg p "$1" --arg n "$2" '[.calls[] | select(.route == "connect" or .route == "disconnect") | .body | fromjson | select(.player_id == $p) | (.reason // "connect")] | .[0:($n | tonumber)] | join(" ")' <<<"$calls"; }
# (The last "left" of each may or may not beat the server's exit: only the receipts up to the resume are checked.)
expect_eq "slot 0's receipts" "connect left connect" "$(seq_of "$(pid_of 0)" 3)"
expect_eq "slot 1's receipts" "connect duplicate_session connect" "$(seq_of "$(pid_of 1)" 3)"
expect_eq "slot 2's receipts" "connect left" "$(seq_of "$(pid_of 2)" 9)"
result=$(jq -c '[.calls[] | select(.route == "result") | .body | fromjson][0]' <<<"$calls")
bots=$(jq -r --slurpfile r "$M/roster.json" '[.players[] | select(.bot == true) | .player_id as $p | $r[0].players[] | select(.player_id == $p) | .slot] | sort | join(",")' <<<"$result")
expect_eq "slots marked bot in the posted result" "2,3" "$bots"
pass "receipts connect/disconnect in order per player; the result marks the bot-played slots: $result"
