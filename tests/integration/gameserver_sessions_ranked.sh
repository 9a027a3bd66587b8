#!/usr/bin/env bash
# Ranked has no bots (issue 12): a ranked player who leaves keeps its slot
# for --slot-reserve-seconds (2 here), then its ship is parked at its spawn
# (logged slot_parked), nobody ever sees a bot flag, and the posted result
# marks nobody "bot"; a spectator with a display name is refused wrong_mode
# (only a join token of this match may watch ranked), and a join token
# plays or watches, never both (protocol section 10). The real cc-gameserver over real ENet, the result to
# the fake server routes over real HTTP.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

gs_mint 2
gs_start_fake
port=$(free_port)
gs_start_server "$port" --playlist=ranked --slot-reserve-seconds=2 --match-seconds=12 --warmup-seconds=1 \
	--connect-window-seconds=5 --overtime-max-seconds=1
gs_pid=$LAST_PID
grep -q '"bots":false' "$T_DIR/gs.log" || fail "a ranked server runs bots"
M="$T_DIR/mint"
start_bg "$T_DIR/p0.out" "$GSCLIENT" play --port="$port" --token="$M/token.0"
p0_pid=$LAST_PID
start_bg "$T_DIR/p1.out" "$GSCLIENT" play --port="$port" --token="$M/token.1" --drop-after-ms=3000
p1_pid=$LAST_PID

wait_log "$T_DIR/gs.log" '"event":"peer_left".*"slot":1' 1 "$gs_pid" 20
wait_log "$T_DIR/gs.log" '"event":"slot_reservation_lapsed","slot":1' 1 "$gs_pid" 10
away=$(grep '"event":"slot_reservation_lapsed","slot":1' "$T_DIR/gs.log" | head -1 | jq -r .away_ms)
((away >= 2000 && away < 3000)) || fail "slot 1's reservation lapsed after $away ms; want 2000 (+ a tick or two)"
wait_log "$T_DIR/gs.log" '"event":"slot_parked","slot":1,"why":"reservation_lapsed"' 1 "$gs_pid" 5
! grep -q '"event":"bot_took_slot"' "$T_DIR/gs.log" || fail "a bot took a ranked slot: $(grep bot_took_slot "$T_DIR/gs.log")"
pass "ranked: slot 1's reservation lapsed after $away ms and its ship was parked, no bot"

# Ranked spectators need a join token of this match: a display name alone is refused.
out=$("$GSCLIENT" spectate --port="$port" --name=stranger) || fail "gsclient spectate exited $?: $out"
[[ $(jq -r .result <<<"$out") == refused && $(jq -r .reason <<<"$out") == wrong_mode ]] ||
	fail "ranked: a spectator with a display name was not refused wrong_mode: $out"
pass "ranked: a spectator needs a join token of this match (a display name is refused wrong_mode)"

# A join token plays or watches, never both (section 10): slot 0 is being played, so its token may not watch.
out=$("$GSCLIENT" spectate --port="$port" --token="$M/token.0" --max-seconds=1) || fail "gsclient spectate exited $?: $out"
[[ $(jq -r .result <<<"$out") == refused && $(jq -r .reason <<<"$out") == token_replayed ]] ||
	fail "ranked: a spectator on the token of a slot being played was not refused token_replayed: $out"
pass "ranked: the token of a slot being played may not watch: $(jq -r .detail <<<"$out")"
# Slot 1's player left: its token may watch, until its player joins again (the watcher is then kicked duplicate_session).
start_bg "$T_DIR/spec1.out" "$GSCLIENT" spectate --port="$port" --token="$M/token.1" --max-seconds=30
spec1_pid=$LAST_PID
wait_log "$T_DIR/gs.log" '"event":"spectator_admitted".*"auth":"token"' 1 "$gs_pid" 10
start_bg "$T_DIR/p1again.out" "$GSCLIENT" play --port="$port" --token="$M/token.1"
p1again_pid=$LAST_PID
wait_exit "$spec1_pid" 15
((EXIT_STATUS == 0)) || fail "the spectator on token.1: gsclient exited $EXIT_STATUS"
spec1=$(tail -1 "$T_DIR/spec1.out")
expect_eq "the spectator on token.1 once its player joined (result, reason, welcome slot)" "refused duplicate_session 255" \
	"$(jq -r '"\(.result) \(.reason) \(.slot)"' <<<"$spec1")"
pass "ranked: a left player's token watched (slot 255, $(jq -r .snapshots <<<"$spec1") snapshots) until its player joined again: kicked duplicate_session"

wait_exit "$p0_pid" 60
((EXIT_STATUS == 0)) || fail "p0: gsclient exited $EXIT_STATUS"
wait_exit "$p1again_pid" 30
expect_eq "slot 1's player, back after its token watched" ended "$(jq -r .result <<<"$(tail -1 "$T_DIR/p1again.out")")"
p0=$(tail -1 "$T_DIR/p0.out")
expect_eq "p0 played to the end" ended "$(jq -r .result <<<"$p0")"
expect_eq "bot flags p0 saw (snapshots, player_info)" "0 0" "$(jq -r '"\(.bot_slots) \(.pi_bot_slots)"' <<<"$p0")"
wait_exit "$gs_pid" 60
expect_eq "cc-gameserver exit status (0 = result acknowledged)" 0 "$EXIT_STATUS"
result=$(curl -sf "$FAKE_URL/calls" | jq -c '[.calls[] | select(.route == "result") | .body | fromjson][0]')
expect_eq "players marked bot in the ranked result" 0 "$(jq '[.players[] | select(.bot == true)] | length' <<<"$result")"
pass "ranked: no bot flag seen, the result marks nobody bot: $result"
