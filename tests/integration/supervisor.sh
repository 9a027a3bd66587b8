#!/usr/bin/env bash
# cc-supervisor, direct mode (SPEC 10, issue 11), with the real cc-gameserver
# as its child and the server routes served over real HTTP
# (tests/fakes/fake_server_routes, the documented shapes): it waits for the
# allocation file, fetches and verifies the roster, starts the child, waits
# for its ready probe, registers PROCESS_READY then ASSIGNMENT_READY,
# relays the child's output as one JSON object per line, reports the child's
# end (a completed match, a crash, a forwarded SIGTERM) with /shutdown, and
# waits for the next allocation. A failed PROCESS_READY kills the child.
# (The Agones mode, AGONES_SDK_HTTP_PORT set, is supervisor_agones.sh's.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

SUP="$BIN/cc-supervisor"

# Direct mode needs its allocation file: a clear start-up error, status 2.
rc=0
out=$(COSMIC_CLASH_JOIN_KEYS=x "$SUP" --server-id=a --game-port=7000 --api-url=http://127.0.0.1:1 2>&1) || rc=$?
expect_eq "cc-supervisor exit status in direct mode without --allocation-file" 2 "$rc"
grep -q -- '--allocation-file is required in direct mode' <<<"$out" || fail "no clear message for a missing --allocation-file: $out"
pass "direct mode without --allocation-file: refused at start-up ($out)"

gs_mint 2
gs_start_fake
port=$(free_port)
alloc="$T_DIR/alloc/allocation.json"
mkdir -p "$T_DIR/alloc"

# start_supervisor LOG [POLL_MS]: the pool process as the local provider starts it (environment only).
start_supervisor() {
	COSMIC_CLASH_SERVER_ID="$GS_SERVER_ID" COSMIC_CLASH_GAME_PORT="$port" COSMIC_CLASH_ALLOCATION_FILE="$alloc" \
		COSMIC_CLASH_API_URL="$FAKE_URL" COSMIC_CLASH_JOIN_KEYS_FILE="$T_DIR/keys.json" \
		COSMIC_CLASH_MATCH_SECONDS=6 COSMIC_CLASH_WARMUP_SECONDS=1 COSMIC_CLASH_CONNECT_WINDOW_SECONDS=1 COSMIC_CLASH_OVERTIME_MAX_SECONDS=1 \
		start_bg "$1" "$SUP" --poll-interval-ms="${2:-20}"
	SUP_PID=$LAST_PID
	wait_log "$1" '"event":"waiting"' 1 "$SUP_PID" 20
}

# allocate: writes the allocation file as the local provider does (tmp + rename, 0600).
allocate() {
	local match allocation
	match=$(cat "$T_DIR/mint/match_id")
	allocation=$(jq -r .allocation_id "$T_DIR/mint/roster.json")
	jq -n --arg m "$match" --arg a "$allocation" --arg s "$GS_SERVER_ID" --argjson p "$port" \
		--arg t "$(cat "$T_DIR/workload")" \
		'{version:1, allocation_id:$a, match_id:$m, server_id:$s, address:"127.0.0.1", port:$p,
		  workload_token:$t, playlist:"casual", arena:"aurora_ring", region:"local", build:"test", protocol_version:1}' \
		>"$alloc.tmp"
	chmod 0600 "$alloc.tmp"
	mv "$alloc.tmp" "$alloc"
}

# calls ROUTE: the recorded calls of ROUTE, as a JSON array of bodies.
calls() { curl -sf "$FAKE_URL/calls" | jq -c --arg r "$1" '[.calls[] | select(.route == $r) | .body]'; }

# wait_calls ROUTE COUNT SECONDS
wait_calls() {
	local deadline=$((SECONDS + $3)) n=0
	while ((SECONDS < deadline)); do
		n=$(calls "$1" | jq length)
		((n >= $2)) && return 0
		sleep 0.05
	done
	fail "$n of $2 $1 calls reached the server routes within $3 s: $(curl -sf "$FAKE_URL/calls")"
}

# ---- 1. a whole match: ready, registered, played, reported --------------------------------
start_supervisor "$T_DIR/sup.log"
allocate
wait_log "$T_DIR/sup.log" '"event":"child_ready"' 1 "$SUP_PID" 20
wait_calls register 2 20
regs=$(calls register)
expect_eq "registration order" '["process_ready","assignment_ready"]' "$(jq -c '[.[] | fromjson | .state]' <<<"$regs")"
expect_eq "protocol version registered" 1 "$(jq '.[0] | fromjson | .protocol_version' <<<"$regs")"
order=$(curl -sf "$FAKE_URL/calls" | jq -c '[.calls[].route][0:3]')
expect_eq "roster fetched before registering" '["roster","register","register"]' "$order"
ready_ms=$(grep '"event":"child_ready"' "$T_DIR/sup.log" | tail -1 | jq .ms)
pass "child ready ${ready_ms} ms after start; registered process_ready then assignment_ready: $regs"

for slot in 0 1; do
	start_bg "$T_DIR/player$slot.out" "$GSCLIENT" play --port="$port" --token="$T_DIR/mint/token.$slot"
	eval "player${slot}_pid=$LAST_PID"
done
for slot in 0 1; do
	pid_var="player${slot}_pid"
	wait "${!pid_var}" || fail "player $slot exited $?"
	[[ $(jq -r .result "$T_DIR/player$slot.out") == ended ]] || fail "player $slot: $(cat "$T_DIR/player$slot.out")"
done
wait_calls shutdown 1 30
expect_eq "shutdown reason after a completed match" completed "$(calls shutdown | jq -r '.[0] | fromjson | .reason')"
[[ ! -e $alloc ]] || fail "the allocation file is still there after the match"
grep -q '"event":"child_exited".*"reason":"completed".*"code":0' "$T_DIR/sup.log" || fail "no child_exited completed line"
expect_eq "results posted by the child" 1 "$(calls result | jq length)"
pass "match played; the child's exit (code 0) reported as shutdown {reason: completed}; allocation file removed"

# Every line the supervisor wrote is one JSON object, and the child's own lines are among them.
bad=$(while IFS= read -r line; do jq -e 'type == "object"' <<<"$line" >/dev/null 2>&1 || echo "$line"; done <"$T_DIR/sup.log")
[[ -z $bad ]] || fail "lines of the supervisor's output that are not one JSON object: $bad"
grep -q '"service":"cc-gameserver".*"event":"match_ended"' "$T_DIR/sup.log" || fail "the child's match_ended line was not relayed"
pass "output relayed: $(wc -l <"$T_DIR/sup.log") lines, each one JSON object, the child's included"

# ---- 2. a crash: the child dies by a signal --------------------------------------------------
wait_log "$T_DIR/sup.log" '"event":"waiting"' 2 "$SUP_PID" 20
allocate
wait_log "$T_DIR/sup.log" '"event":"child_ready"' 2 "$SUP_PID" 20
wait_calls register 4 20
child=$(grep '"event":"child_started"' "$T_DIR/sup.log" | tail -1 | jq .pid)
kill -SEGV "$child"
wait_calls shutdown 2 20
expect_eq "shutdown reason after a crash" killed_by_signal "$(calls shutdown | jq -r '.[1] | fromjson | .reason')"
grep -q '"event":"child_exited".*"reason":"killed_by_signal".*"signal":11' "$T_DIR/sup.log" || fail "no child_exited line with signal 11"
wait_log "$T_DIR/sup.log" '"event":"waiting"' 3 "$SUP_PID" 20
pass "child killed by SIGSEGV: classified (signal 11), reported, supervisor waits for the next allocation"

# ---- 3. SIGTERM to the supervisor is forwarded to the child -----------------------------------
allocate
wait_log "$T_DIR/sup.log" '"event":"child_ready"' 3 "$SUP_PID" 20
wait_calls register 6 20
child=$(grep '"event":"child_started"' "$T_DIR/sup.log" | tail -1 | jq .pid)
kill -TERM "$SUP_PID"
wait_exit "$SUP_PID" 30
expect_eq "cc-supervisor exit status after SIGTERM" 0 "$EXIT_STATUS"
running "$child" && fail "the child $child outlived its supervisor"
grep -q '"event":"forwarding_stop"' "$T_DIR/sup.log" || fail "no forwarding_stop line"
expect_eq "shutdown reason after a forwarded SIGTERM" stopped "$(calls shutdown | jq -r '.[2] | fromjson | .reason')"
pass "SIGTERM forwarded: the child stopped (exit 4 = stopped before the end), reported, supervisor exited 0"

# ---- 4. PROCESS_READY refused: the child is killed ---------------------------------------------
kill "$FAKE_PID"
gs_start_fake --fail-process-ready
rm -f "$alloc"
start_supervisor "$T_DIR/sup2.log"
allocate
wait_calls shutdown 1 40
expect_eq "shutdown reason when PROCESS_READY fails" register_failed "$(calls shutdown | jq -r '.[0] | fromjson | .reason')"
expect_eq "PROCESS_READY attempts (--register-attempts default)" 5 "$(calls register | jq length)"
child=$(grep '"event":"child_started"' "$T_DIR/sup2.log" | tail -1 | jq .pid)
running "$child" && fail "the child $child lives on after PROCESS_READY failed"
grep -q '"event":"register_failed".*"state":"process_ready"' "$T_DIR/sup2.log" || fail "no register_failed line"
pass "PROCESS_READY refused 5 times: the child was killed and shutdown {reason: register_failed} sent"

# ---- 5. the allocator's wake-up FIFO beside the file (INTERFACES.md) -------------------------------
# cc-allocator's local provider writes a byte into <server dir>/wake after each new file: with the
# poll interval at 10 s (its maximum) here, only that wake-up can make the supervisor see its file in time.
kill -TERM "$SUP_PID"
wait_exit "$SUP_PID" 30
alloc="$T_DIR/alloc5/allocation.json"
port=$(free_port)
mkdir -p "$T_DIR/alloc5"
mkfifo -m 0600 "$T_DIR/alloc5/wake"
start_supervisor "$T_DIR/sup5.log" 10000
grep -q '"event":"waiting".*"wake_fifo":true' "$T_DIR/sup5.log" || fail "the supervisor did not open the wake FIFO: $(grep waiting "$T_DIR/sup5.log")"
allocate
timeout 5 bash -c 'echo w >"$1"' _ "$T_DIR/alloc5/wake" || fail "nobody holds the wake FIFO open for reading"
wait_log "$T_DIR/sup5.log" '"event":"allocated"' 1 "$SUP_PID" 5
kill -TERM "$SUP_PID"
wait_exit "$SUP_PID" 30
pass "woken by the FIFO: the allocation file was read at once, not at the 10 s poll"
