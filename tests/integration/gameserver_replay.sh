#!/usr/bin/env bash
# The replay log of a hostile session (issue 12, SPEC 11 test aid): a real
# cc-gameserver started with --replay-log plays a match for one honest
# player (who also sends an unknown id now and then) while hostile peers
# send garbage, truncated, oversized and misrouted messages; then
# cc-replay-dump of the file shows each refused message with the decoder's
# reason, the server's verdict on it, and the kick, with the same detail as
# the server's peer_kicked log line. Join tokens never appear in the dump.
# The log is 0600, never overwritten (a second server on the same file
# refuses to start), and a truncated or foreign file is refused by the dump
# tool with a precise message.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

gs_mint 4
gs_start_fake
port=$(free_port)
replay="$T_DIR/replay.bin"
gs_start_server "$port" --match-seconds=5 --warmup-seconds=1 --connect-window-seconds=2 --max-bad-messages=8 \
	--overtime-max-seconds=1 --replay-log="$replay" --log-level=debug --handshake-timeout-ms=1500
gs_pid=$LAST_PID
grep -q '"event":"replay_log_on".*"max_bytes":67108864' "$T_DIR/gs.log" || fail "no replay_log_on line with the default cap in the server log"

start_bg "$T_DIR/player0.out" "$GSCLIENT" play --port="$port" --token="$T_DIR/mint/token.0" --unknown-every=30
player_pid=$LAST_PID
wait_log "$T_DIR/gs.log" '"event":"peer_admitted"' 1 "$gs_pid" 20

# hostile KIND [TOKEN [REASON]]: one misbehaving peer; it must be refused with REASON (default malformed).
hostile() {
	local kind=$1 token=${2:-} want=${3:-malformed} out
	local args=(hostile --port="$port" --kind="$kind")
	[[ -n $token ]] && args+=(--token="$T_DIR/mint/$token")
	out=$("$GSCLIENT" "${args[@]}") || fail "gsclient ${args[*]} exited $?: $out"
	[[ $(jq -r .reason <<<"$out") == "$want" ]] || fail "$kind: expected a $want refusal, saw $out"
}
# An unknown id before the hello is skipped (protocol section 8): the handshake deadline refuses the peer.
hostile garbage "" handshake_timeout
hostile truncated-input token.1
hostile oversized-input token.2
hostile wrong-channel token.3

wait "$player_pid" || fail "the honest player exited $?"
[[ $(jq -r .result "$T_DIR/player0.out") == ended ]] || fail "the honest player did not see the match end: $(cat "$T_DIR/player0.out")"
wait_exit "$gs_pid" 30
expect_eq "cc-gameserver exit status" 0 "$EXIT_STATUS"
grep -q '"event":"replay_log_closed"' "$T_DIR/gs.log" || fail "no replay_log_closed line in the server log"
expect_eq "replay log mode" 600 "$(stat -c %a "$replay")"

dump="$T_DIR/dump.txt"
"$BIN/cc-replay-dump" "$replay" >"$dump" 2>"$T_DIR/dump.err" || fail "cc-replay-dump $replay exited $?: $(cat "$T_DIR/dump.err")"
T_LOGS+=("$dump")
head -n1 "$dump" | grep -q "^# $replay: replay log version 1, opened " || fail "the dump's first line is not the header note: $(head -n1 "$dump")"
tail -n1 "$dump" | grep -qE '^[0-9]+\.[0-9]{6} closed closed: [0-9]+ records written, 0 not written$' ||
	fail "the dump does not end with the closed record: $(tail -n1 "$dump")"
pass "dumped $(wc -l <"$dump") lines, ending in the closed record"

# The peer number of each hostile kick, from the server's own log (peers 2..5 in the order above).
kicked_detail() { # PEER: the detail of that peer's peer_kicked line
	grep "\"event\":\"peer_kicked\",\"peer\":$1," "$T_DIR/gs.log" | jq -r .detail
}

# check_refusals PEER KIND WHAT: the dump shows PEER's packets refused with fault KIND by the dump's
# own decoding, the server's verdict on each with the same fault text, and the kick with the log's detail.
check_refusals() {
	local peer=$1 kind=$2 what=$3 decoded verdicts detail
	decoded=$(grep -cE "^[0-9.]+ in peer $peer ch [0-9] refused $kind: " "$dump" || true)
	verdicts=$(grep -cE "^[0-9.]+ verdict peer $peer refused $kind: " "$dump" || true)
	((decoded >= 9)) || fail "$what (peer $peer): $decoded packets decoded as refused $kind in the dump (9 expected): $(grep " peer $peer " "$dump" | head -n 20)"
	expect_eq "$what (peer $peer): server verdicts 'refused $kind' in the dump" 9 "$verdicts"
	# The fault text the server wrote is the one the dump's decoder gives for the same bytes.
	local first_decoded first_verdict
	first_decoded=$(grep -m1 -E "^[0-9.]+ in peer $peer ch [0-9] refused $kind: " "$dump" | sed -E 's/^.* refused [a-z]+: (.*) \([0-9]+ bytes\)$/\1/')
	first_verdict=$(grep -m1 -E "^[0-9.]+ verdict peer $peer refused $kind: " "$dump" | sed -E 's/^.* refused [a-z]+: //')
	expect_eq "$what (peer $peer): the dump's decoding and the server's verdict" "$first_verdict" "$first_decoded"
	detail=$(kicked_detail "$peer")
	[[ -n $detail ]] || fail "$what: no peer_kicked line for peer $peer in the server log"
	grep -qF " verdict peer $peer kicked malformed: $detail" "$dump" ||
		fail "$what (peer $peer): no 'kicked malformed: $detail' verdict in the dump: $(grep " peer $peer " "$dump" | tail -n 5)"
	grep -qE "^[0-9.]+ out peer $peer ch 0 \{\"id\":4,\"name\":\"kicked\"" "$dump" ||
		fail "$what (peer $peer): the kicked message sent to it is not in the dump"
	pass "$what (peer $peer): $decoded packets refused ($kind: $first_verdict), kicked ($detail)"
}

# The three peers kicked for bad messages, in the order they came (truncated, oversized, wrong channel).
mapfile -t bad_peers < <(grep '"event":"peer_kicked"' "$T_DIR/gs.log" | jq -r 'select(.detail | test("bad messages, last: ")) | .peer')
[[ ${#bad_peers[@]} == 3 ]] || fail "expected three peers kicked for bad messages in the log: $(grep peer_kicked "$T_DIR/gs.log")"
p_trunc=${bad_peers[0]} p_over=${bad_peers[1]} p_chan=${bad_peers[2]}
check_refusals "$p_trunc" truncated "truncated inputs"
check_refusals "$p_over" oversized "oversized inputs"
check_refusals "$p_chan" malformed "inputs on the snapshot channel"

# Garbage before the hello: decoded as an unknown id, skipped, and the peer refused at the handshake deadline.
p_garbage=$(grep '"event":"peer_kicked"' "$T_DIR/gs.log" | jq -r 'select(.detail == "no hello in time") | .peer' | head -n1)
[[ -n $p_garbage ]] || fail "no peer refused handshake_timeout after garbage before its hello in the log"
grep -qE "^[0-9.]+ in peer $p_garbage ch 0 unknown id 0xfefe \(64 bytes\)$" "$dump" || fail "garbage (peer $p_garbage): its packet is not in the dump as unknown id 0xfefe"
grep -qE "^[0-9.]+ verdict peer $p_garbage skipped unknown: id 0xfefe \(64 bytes\)$" "$dump" || fail "garbage (peer $p_garbage): no 'skipped unknown' verdict in the dump"
grep -qE "^[0-9.]+ verdict peer $p_garbage kicked handshake_timeout: no hello in time$" "$dump" || fail "garbage (peer $p_garbage): no kick verdict"
grep -qE "^[0-9.]+ out peer $p_garbage ch 0 \{\"id\":3,\"name\":\"refused\"" "$dump" || fail "garbage (peer $p_garbage): the refused message is not in the dump"
pass "garbage before the hello (peer $p_garbage): unknown id, skipped, refused at the handshake deadline"

# The honest player: its unknown ids skipped, its inputs and the match's messages decoded, its token redacted.
grep -qE "^[0-9.]+ verdict peer 1 skipped unknown: id 0x7777 \(8 bytes\)$" "$dump" || fail "the honest player's unknown id is not a 'skipped' verdict in the dump"
grep -qE "^[0-9.]+ in peer 1 ch 1 \{\"id\":256,\"name\":\"input\"" "$dump" || fail "no decoded input from peer 1 in the dump"
grep -qE "^[0-9.]+ out peer 1 ch 2 \{\"id\":257,\"name\":\"snapshot\"" "$dump" || fail "no decoded snapshot to peer 1 in the dump"
grep -qE "^[0-9.]+ out peer 1 ch 0 \{\"id\":275,\"name\":\"match_end\"" "$dump" || fail "no match_end to peer 1 in the dump"
grep -qE "^[0-9.]+ in peer 1 ch 0 \{\"id\":1,\"name\":\"hello\".*\"REDACTED\"" "$dump" || fail "peer 1's hello is not in the dump with its credential redacted"
for slot in 0 1 2 3; do
	if grep -qF "$(cat "$T_DIR/mint/token.$slot")" "$dump"; then fail "the join token of slot $slot is in the dump"; fi
done
grep -qF "$(cat "$T_DIR/mint/token.0")" "$replay" || fail "the token is not in the raw log either: the redaction check reads the wrong thing"
pass "honest player: inputs, snapshots, match_end decoded; unknown ids skipped; join tokens redacted"

# --peer filters; --hex prints the bytes.
n_other=$("$BIN/cc-replay-dump" --peer="$p_garbage" "$replay" | { grep -vE "^#| peer $p_garbage | (closed|truncated) " || true; } | wc -l)
expect_eq "lines of other peers with --peer=$p_garbage" 0 "$n_other"
"$BIN/cc-replay-dump" --hex --peer="$p_garbage" "$replay" | grep -qE "^[0-9.]+ in peer $p_garbage ch 0 unknown id 0xfefe \(64 bytes\) hex fefe[0-9a-f]{124}$" ||
	fail "--hex did not print the garbage packet's 64 bytes"
pass "--peer keeps one peer's records, --hex prints the bytes"

# --hex is no way around the redaction: the bytes of a hello (join token) and of a welcome (resume key) are
# withheld unless --show-secrets, which does print them.
"$BIN/cc-replay-dump" --hex "$replay" >"$T_DIR/dump-hex.txt" || fail "cc-replay-dump --hex exited $?"
T_LOGS+=("$T_DIR/dump-hex.txt")
token_hex=$(printf '%s' "$(cat "$T_DIR/mint/token.0")" | od -An -tx1 -v | tr -d ' \n')
[[ -n $token_hex ]] || fail "the token's hex is empty: the check below would prove nothing"
if grep -qF "$token_hex" "$T_DIR/dump-hex.txt"; then
	fail "--hex prints the join token of slot 0 in hex: $(grep -m1 -F "$token_hex" "$T_DIR/dump-hex.txt" | cut -c1-160)"
fi
grep -qE "^[0-9.]+ in peer 1 ch 0 \{\"id\":1,\"name\":\"hello\".* hex withheld: the message carries a secret \(--show-secrets prints it\)$" "$T_DIR/dump-hex.txt" ||
	fail "peer 1's hello with --hex: no 'hex withheld' note: $(grep -m1 ' in peer 1 ch 0 ' "$T_DIR/dump-hex.txt" | cut -c1-200)"
grep -qE "^[0-9.]+ out peer 1 ch 0 \{\"id\":2,\"name\":\"welcome\".* hex withheld: " "$T_DIR/dump-hex.txt" ||
	fail "peer 1's welcome with --hex: no 'hex withheld' note: $(grep -m1 ' out peer 1 ch 0 ' "$T_DIR/dump-hex.txt" | cut -c1-200)"
"$BIN/cc-replay-dump" --hex --show-secrets "$replay" >"$T_DIR/dump-secrets.txt" || fail "cc-replay-dump --hex --show-secrets exited $?"
grep -qF "$token_hex" "$T_DIR/dump-secrets.txt" ||
	fail "--hex --show-secrets does not print the join token's bytes: the check above reads the wrong thing"
pass "--hex withholds the bytes of messages carrying a token or resume key; --show-secrets prints them"

# Never overwritten: a second server on the same file does not start (exit 2, naming it), the log is intact.
before=$(md5sum <"$replay")
rc=0
COSMIC_CLASH_JOIN_KEYS_FILE="$T_DIR/keys.json" COSMIC_CLASH_WORKLOAD_TOKEN_FILE="$T_DIR/workload" \
	timeout 20 "$BIN/cc-gameserver" --bind=127.0.0.1 --game-port=0 --server-id="$GS_SERVER_ID" \
	--roster-file="$T_DIR/mint/roster.json" --api-url="$FAKE_URL" --replay-log="$replay" >"$T_DIR/again.out" 2>&1 || rc=$?
expect_eq "cc-gameserver on an existing --replay-log: exit status" 2 "$rc"
grep -qF -- "--replay-log: '$replay' exists; a replay log is never overwritten" "$T_DIR/again.out" ||
	fail "the refusal does not name the file: $(cat "$T_DIR/again.out")"
expect_eq "the existing log's checksum" "$before" "$(md5sum <"$replay")"
pass "an existing replay log is refused at start-up and left as it was"

# The dump tool refuses what is not a whole replay log, naming the record and the fault.
size=$(stat -c %s "$replay")
head -c $((size - 3)) "$replay" >"$T_DIR/cut.bin"
rc=0
"$BIN/cc-replay-dump" "$T_DIR/cut.bin" >"$T_DIR/cut.out" 2>"$T_DIR/cut.err" || rc=$?
expect_eq "cc-replay-dump of a cut file: exit status" 1 "$rc"
grep -qE "^cc-replay-dump: $T_DIR/cut.bin: record [0-9]+ at byte [0-9]+: the file ends inside the record \([0-9]+ bytes declared, [0-9]+ present\): cut short$" "$T_DIR/cut.err" ||
	fail "the cut file's refusal is not precise: $(cat "$T_DIR/cut.err")"
expect_eq "records printed before the cut" "$(($(wc -l <"$dump") - 2))" "$(($(wc -l <"$T_DIR/cut.out") - 1))"
printf 'GIF89a and then some bytes' >"$T_DIR/foreign.bin"
rc=0
"$BIN/cc-replay-dump" "$T_DIR/foreign.bin" >/dev/null 2>"$T_DIR/foreign.err" || rc=$?
expect_eq "cc-replay-dump of a foreign file: exit status" 1 "$rc"
grep -qF 'not a replay log: the first 8 bytes are not "CCREPLAY"' "$T_DIR/foreign.err" || fail "foreign file: $(cat "$T_DIR/foreign.err")"
rc=0
"$BIN/cc-replay-dump" >/dev/null 2>"$T_DIR/noarg.err" || rc=$?
expect_eq "cc-replay-dump without FILE: exit status" 2 "$rc"
pass "a cut file and a foreign file are refused with a precise message (exit 1), no FILE is a usage error (exit 2)"
