#!/usr/bin/env bash
# Hostile peers against the real cc-gameserver (issue 11, SPEC 11): each is
# refused with a reason, logged as peer_kicked, and disconnected, while a
# match in progress continues for the honest players, one of whom sends a
# message with an unknown id now and then (skipped, never fatal). Before
# its hello a peer may send unknown ids, pings and inputs: skipped,
# answered, ignored, never refused (protocol section 8); one that never
# says hello is refused handshake_timeout. The faulty-message threshold is
# the server's default, the number section 8 states. The
# receipts and the result reach the server routes (tests/fakes/
# fake_server_routes: the documented shapes over real HTTP) with the
# workload token, and the server exits 0 once the result is acknowledged.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

gs_mint 6
# The first two connect receipts meet a match not yet ASSIGNMENT_READY (409 invalid_state): retried.
gs_start_fake --connect-not-yet=2
port=$(free_port)
# The faulty-message threshold, from the protocol document (section 8), tested against the server's default.
max_bad=$(grep -oP 'tolerates \*\*\K[0-9]+(?=\*\* faulty messages)' "$TOP/contracts/gameserver-protocol.md") ||
	fail "contracts/gameserver-protocol.md section 8 states no faulty-message threshold ('tolerates **N** faulty messages')"
gs_start_server "$port" --match-seconds=12 --warmup-seconds=1 --connect-window-seconds=2 --overtime-max-seconds=1 \
	--handshake-timeout-ms=2000 --end-linger-ms=2500
gs_pid=$LAST_PID

# Honest players in slots 0, 1 and 5; slot 5 also sends an unknown id every 30 ticks.
for slot in 0 1 5; do
	extra=()
	[[ $slot == 5 ]] && extra=(--unknown-every=30)
	[[ $slot == 0 ]] && extra=(--await-close=8000) # stays after match_end for the server's close (section 6)
	start_bg "$T_DIR/player$slot.out" "$GSCLIENT" play --port="$port" --token="$T_DIR/mint/token.$slot" "${extra[@]}"
	eval "player${slot}_pid=$LAST_PID"
done
wait_log "$T_DIR/gs.log" '"event":"peer_admitted"' 3 "$gs_pid" 20

# hostile NAME KIND EXPECTED_REASON [TOKEN [DETAIL]]: one misbehaving peer, refused with the
# wire reason EXPECTED_REASON (and, for tokens, the precise refusal DETAIL in the message and log).
hostile() {
	local name=$1 kind=$2 want=$3 token=${4:-} detail=${5:-} out
	local args=(hostile --port="$port" --kind="$kind")
	[[ -n $token ]] && args+=(--token="$T_DIR/mint/$token")
	out=$("$GSCLIENT" "${args[@]}") || fail "$name: gsclient ${args[*]} exited $?: $out"
	[[ $(jq -r .result <<<"$out") == refused ]] || fail "$name: expected a refusal, saw $out"
	[[ $(jq -r .reason <<<"$out") == "$want" ]] || fail "$name: expected reason $want, saw $out"
	[[ $(jq -r .disconnected <<<"$out") == true ]] || fail "$name: refused but not disconnected: $out"
	[[ -z $detail || $(jq -r .detail <<<"$out") == "$detail" ]] || fail "$name: expected detail $detail, saw $out"
	grep -q "\"event\":\"peer_kicked\".*\"reason\":\"$want\",\"detail\":\"${detail}" "$T_DIR/gs.log" ||
		fail "$name: no peer_kicked line with reason $want (detail $detail) in the server log"
	pass "$name: refused ($want: $(jq -r .detail <<<"$out")), logged and disconnected"
}
# An unknown id before the hello is skipped like any unknown (section 8): the peer is refused only by the deadline.
hostile "garbage with an unknown id (0xfefe) and no hello" garbage handshake_timeout "" "no hello in time"
grep -q '"event":"unknown_message".*"id":65278.*"phase":"handshake"' "$T_DIR/gs.log" ||
	fail "the unknown id 0xfefe before the hello was not logged as skipped (unknown_message, phase handshake)"
out=$("$GSCLIENT" hostile --port="$port" --kind=unknown-first --token="$T_DIR/mint/token.3") ||
	fail "gsclient hostile --kind=unknown-first exited $?: $out"
[[ $(jq -r .result <<<"$out") == admitted ]] ||
	fail "0xDEAD, a ping and an input before the hello: expected the hello admitted (section 8), saw $out"
[[ $(jq -r .pong_before_welcome <<<"$out") == true ]] || fail "a ping before the hello was not answered: $out"
grep -q '"event":"unknown_message".*"id":57005.*"phase":"handshake"' "$T_DIR/gs.log" ||
	fail "the unknown id 0xDEAD before the hello was not logged as skipped"
grep -q '"event":"message_before_handshake_ignored".*"message":"input"' "$T_DIR/gs.log" ||
	fail "the input before the hello was not logged as ignored"
pass "unknown ids (0xDEAD), a ping and an input before the hello: skipped, answered, ignored; the hello admitted"
hostile "a message shorter than its id" short malformed
hostile "truncated hello" truncated-hello malformed token.3
hostile "oversized hello" oversized-hello malformed token.3
hostile "wrong protocol version" version protocol_mismatch token.3
hostile "forged token (unknown key material)" token bad_token forged.token bad_signature
hostile "expired token" token expired_token expired.token expired
hostile "token for another server" token wrong_match foreign.token wrong_server
hostile "token for another match" token wrong_match othermatch.token wrong_match
hostile "token that is not a token" token bad_token "" malformed
hostile "replayed token (slot 0 is connected)" token token_replayed token.0 token_replayed
hostile "truncated inputs after joining" truncated-input malformed token.2
grep -q "\"event\":\"peer_kicked\".*\"reason\":\"malformed\",\"detail\":\"$((max_bad + 1)) bad messages" "$T_DIR/gs.log" ||
	fail "the truncated inputs were not kicked on the faulty message after the $max_bad section 8 tolerates: $(grep peer_kicked "$T_DIR/gs.log" | grep 'bad messages')"
pass "kicked malformed on faulty message $((max_bad + 1)), as section 8 states ($max_bad tolerated)"
hostile "oversized inputs after joining" oversized-input malformed token.3
hostile "inputs on the snapshot channel" wrong-channel malformed token.4

# A handshake after the end (during the linger) is refused match_over (section 4).
wait_log "$T_DIR/gs.log" '"event":"match_ended"' 1 "$gs_pid" 40
hostile "a hello after the match ended" token match_over token.4 "the match is over"

# The honest players played the match to its end, undisturbed.
for slot in 0 1 5; do
	pid_var="player${slot}_pid"
	wait "${!pid_var}" || fail "player $slot exited $?"
	out=$(cat "$T_DIR/player$slot.out")
	[[ $(jq -r .result <<<"$out") == ended ]] || fail "player $slot did not see the match end: $out"
	gap=$(jq -r .max_gap_ms <<<"$out")
	((gap < 1000)) || fail "player $slot went ${gap} ms without a snapshot during the hostile peers: $out"
	[[ "$(jq -c .score <<<"$out")" == "$(jq -c .ended_score <<<"$out")" ]] || fail "player $slot: snapshots disagree with the final score: $out"
	(($(jq -r .last_ack <<<"$out") > 0)) || fail "player $slot: no snapshot acknowledged its input: $out"
	pass "player $slot: match ended, $(jq -r .snapshots <<<"$out") snapshots, longest gap ${gap} ms, input acknowledged up to $(jq -r .last_ack <<<"$out")"
done
# Section 6, end of a match: after the linger the server says kicked {match_over} and disconnects with data 14.
p0=$(cat "$T_DIR/player0.out")
expect_eq "what slot 0 heard when the finished match closed (kicked reason, detail, ENet disconnect data)" \
	"match_over|the match is over|14" "$(jq -r '"\(.close_kicked)|\(.close_detail)|\(.close_data)"' <<<"$p0")"
(($(jq -r .close_ms <<<"$p0") >= 2000)) || fail "the match closed before the 2500 ms end linger: $p0"
grep -q '"event":"match_closed","peers_closed":[1-9]' "$T_DIR/gs.log" || fail "no match_closed line in the server log"
pass "the finished match closed slot 0 with kicked match_over and disconnect data 14, $(jq -r .close_ms <<<"$p0") ms after match_end"
# Section 4, player_info: allocated mode sends no names, for connected players too.
(($(jq -r .pi_connected <<<"$p0") >= 3)) || fail "slot 0 saw fewer than 3 player_info messages of connected players: $p0"
expect_eq "player_info names of connected players in allocated mode (section 4: always empty)" 0 "$(jq -r .pi_connected_named <<<"$p0")"
pass "allocated mode: $(jq -r .pi_connected <<<"$p0") player_info messages of connected players, every name empty"
grep -q '"event":"unknown_message".*"id":30583' "$T_DIR/gs.log" || fail "the unknown id 0x7777 was not logged as skipped"
pass "unknown id skipped, its sender kept playing"

# The server ends on its own once cc-api acknowledged the result.
wait_exit "$gs_pid" 30
expect_eq "cc-gameserver exit status (0 = result acknowledged)" 0 "$EXIT_STATUS"
calls=$(curl -sf "$FAKE_URL/calls") || fail "GET $FAKE_URL/calls failed"
n_connect=$(jq '[.calls[] | select(.route == "connect")] | length' <<<"$calls")
n_players=$(jq '[.calls[] | select(.route == "connect") | .body | fromjson | .player_id] | unique | length' <<<"$calls")
# 3 honest players + the one admitted after unknown ids + the three that joined and were kicked for
# malformed input; two refused once first.
expect_eq "connect receipts (two of them retried after 409 invalid_state)" 9 "$n_connect"
expect_eq "players with a connect receipt" 6 "$n_players"
n_kicked=$(jq '[.calls[] | select(.route == "disconnect") | select(.body | fromjson | .reason == "malformed")] | length' <<<"$calls")
expect_eq "disconnect receipts with reason malformed" 3 "$n_kicked"
result=$(jq -c '[.calls[] | select(.route == "result") | .body | fromjson][0]' <<<"$calls")
[[ $(jq '.players | length' <<<"$result") == 6 ]] || fail "the result does not list the 6 roster players: $result"
pass "receipts and result reached the server routes with the workload token: $result"
