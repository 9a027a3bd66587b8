#!/usr/bin/env bash
# cc-supervisor's Agones mode (SPEC 10, issue 21) end to end. The Agones
# pieces that cannot run here are fakes serving the published shapes:
# tests/fakes/fake_agones_sdk (the SDK sidecar's HTTP gateway,
# sdk.swagger.json) and tests/fakes/fake_k8s (the Kubernetes API's
# GameServerAllocation). Everything else is real: cc-testkit-api,
# PostgreSQL, cc-matcher, cc-allocator's agones provider, cc-supervisor in
# Agones mode running cc-gameserver, and six cc-player --play players over
# ENet. The fakes are wired as Agones is: the supervisor's SDK /ready puts
# its GameServer (the fake gateway's name, address and port) into the fake
# k8s fleet; the allocator's GameServerAllocation takes it there and the
# fake k8s hands its metadata (the allocation annotations) to that
# gateway, where the supervisor reads them; the SDK /shutdown marks it
# Shutdown in the fleet.
#  c. start-up: a bad AGONES_SDK_HTTP_PORT, a gateway that never assigns an
#     address and ports, and no gateway at all each end with a clear error
#     within the bound; incomplete answers during start-up are waited out
#     (checked in a: the gateway answers the first 4 polls without them);
#  a. a match played through to COMPLETED, rated once, the GameServer shut
#     down through the SDK, no health ping after the child's end;
#  b. a child SIGKILLed mid-match: the health pings stop, /shutdown is
#     called, the match is not rated;
#  d. SIGTERM: while a warm server waits for its allocation (SDK /shutdown,
#     exit 0), and mid-match (forwarded to the child, which stops: code 4,
#     cc-api and the SDK hear /shutdown);
#  e. a supervisor SIGKILLed mid-match and restarted in its pod finds its
#     GameServer Allocated: no second /ready (that would return the server
#     to the fleet), the lost match is reported, the SDK hears /shutdown;
# and every request the supervisor sent and every answer the fake gave
# validate against the vendored sdk.swagger.json (agones_sdk_check.py).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

SUP="$BIN/cc-supervisor"
FAKES="$TOP/build/fakes"
SWAGGER="$TOP/tests/fakes/agones/sdk.swagger.json"

# The vendored API description is the published one, byte for byte.
if [[ -f "$TOP/../shared/agones/sdk.swagger.json" ]]; then
	cmp -s "$SWAGGER" "$TOP/../shared/agones/sdk.swagger.json" ||
		fail "$SWAGGER differs from ../shared/agones/sdk.swagger.json"
fi

# start_fake VAR LOG CMD...: a fake that prints "listening <port>"; sets VAR (its port) and VAR_PID.
start_fake() {
	local var=$1 log=$2; shift 2
	start_bg "$log" "$@"
	local pid=$LAST_PID deadline=$((SECONDS + 10)) port=""
	until port=$(grep -m1 -oP '^listening \K[0-9]+' "$log" 2>/dev/null); do
		running "$pid" || fail "$* exited before listening: $(cat "$log")"
		((SECONDS < deadline)) || fail "$* did not listen within 10 s"
		sleep 0.02
	done
	printf -v "$var" '%s' "$port"
	printf -v "${var}_PID" '%s' "$pid"
}

# sdk_log PORT: the fake gateway's log.
sdk_log() { curl -sf "http://127.0.0.1:$1/fake/log"; }

# wait_exit PID SECONDS: waits for PID to end; its status in EXIT_RC.
wait_exit() {
	local deadline=$((SECONDS + $2))
	while running "$1"; do
		((SECONDS < deadline)) || fail "process $1 still running after $2 s"
		sleep 0.05
	done
	EXIT_RC=0
	wait "$1" 2>/dev/null || EXIT_RC=$?
}

# check_swagger PORT: the gateway's log against sdk.swagger.json, and the field names agones_sdk.c reads.
check_swagger() {
	sdk_log "$1" >"$T_DIR/sdk-$1.json"
	local out
	out=$(python3 "$TOP/tests/integration/agones_sdk_check.py" "$SWAGGER" "$T_DIR/sdk-$1.json" \
		"$TOP/services/supervisor/agones_sdk.c") || fail "the SDK gateway traffic does not match sdk.swagger.json: $out"
	pass "SDK traffic of the gateway on $1 matches sdk.swagger.json: ${out##*$'\n'}"
}

# ---- c. start-up bounds -----------------------------------------------------------------------
rc=0
out=$(AGONES_SDK_HTTP_PORT=abc COSMIC_CLASH_JOIN_KEYS=x "$SUP" --game-port=7000 --api-url=http://127.0.0.1:1 2>&1) || rc=$?
expect_eq "exit status with AGONES_SDK_HTTP_PORT=abc" 2 "$rc"
grep -q "AGONES_SDK_HTTP_PORT: 'abc' is not a port" <<<"$out" || fail "no clear message for a bad AGONES_SDK_HTTP_PORT: $out"
rc=0
out=$(COSMIC_CLASH_JOIN_KEYS=x "$SUP" --game-port=7000 --api-url=http://127.0.0.1:1 --allocation-file=/x 2>&1) || rc=$?
expect_eq "direct mode without --server-id" 2 "$rc"
grep -q -- "--server-id is required in direct mode" <<<"$out" || fail "no clear message for direct mode without --server-id: $out"
pass "a bad AGONES_SDK_HTTP_PORT and a direct mode without --server-id are refused at start-up (status 2)"

start_fake NEVER "$T_DIR/never.log" "$FAKES/fake_agones_sdk" --name=gs-never --game-port=7999 --never-assign
rc=0
t0=$SECONDS
AGONES_SDK_HTTP_PORT=$NEVER COSMIC_CLASH_JOIN_KEYS=x timeout 20 "$SUP" --game-port=7999 --api-url=http://127.0.0.1:1 \
	--sdk-start-timeout-ms=1500 >"$T_DIR/never-sup.log" 2>&1 || rc=$?
T_LOGS+=("$T_DIR/never-sup.log")
expect_eq "exit status when the gateway never assigns an address and ports" 1 "$rc"
((SECONDS - t0 <= 8)) || fail "the supervisor took $((SECONDS - t0)) s to give up (bound 1.5 s)"
grep -q 'assigned no address and ports within 1500 ms' "$T_DIR/never-sup.log" || fail "no clear error: $(tail -5 "$T_DIR/never-sup.log")"
grep -q '"event":"sdk_not_assigned"' "$T_DIR/never-sup.log" || fail "no sdk_not_assigned line"
gets=$(sdk_log "$NEVER" | jq '[.requests[] | select(.path == "/gameserver")] | length')
others=$(sdk_log "$NEVER" | jq -c '[.requests[] | select(.path != "/gameserver") | .path]')
((gets >= 3)) || fail "only $gets GET /gameserver polls before giving up"
expect_eq "calls other than GET /gameserver to a gateway that never assigned (no /ready)" '[]' "$others"
check_swagger "$NEVER"
pass "a gateway that never assigns: $gets polls, a clear error and exit 1 after $((SECONDS - t0)) s"

nobody=$(free_port)
rc=0
t0=$SECONDS
out=$(AGONES_SDK_HTTP_PORT=$nobody COSMIC_CLASH_JOIN_KEYS=x timeout 20 "$SUP" --game-port=7999 --api-url=http://127.0.0.1:1 \
	--sdk-start-timeout-ms=800 2>&1) || rc=$?
expect_eq "exit status without any gateway" 1 "$rc"
grep -q 'assigned no address and ports within 800 ms.*CC_EUNAVAILABLE' <<<"$out" || fail "no clear error without a gateway: $out"
pass "no gateway on $nobody: exit 1 after $((SECONDS - t0)) s naming the refused connection"

# ---- the control plane, the fake Kubernetes API, the agones provider ------------------------------
scratch_database supervisor_agones
loop_secrets
cat >"$T_DIR/gameserver.conf" <<'EOF'
match-seconds = 10
warmup-seconds = 2
overtime-max-seconds = 4
connect-window-seconds = 30
end-linger-ms = 500
EOF
start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret"
# --notify-lead-ms: each supervisor sees its allocation 300 ms before cc-allocator can record it (cc-api then
# answers its roster request 403 until it has).
start_fake K8S "$T_DIR/k8s.log" "$FAKES/fake_k8s" --capacity=0 --notify-lead-ms=300
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/allocator.log" "$BIN/cc-allocator" --provider=agones \
	--k8s-url="http://127.0.0.1:$K8S" --k8s-token-file= --k8s-ca-file= --k8s-namespace=games \
	--workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" --join-key-id=k1 \
	--api-url="$A_URL" --poll-interval-ms=100 --admin-port="$(free_port)"
madmin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
	--playlist=casual --admin-port="$madmin" --poll-interval-ms=100
wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
run=$((RANDOM * 32768 + RANDOM))

# game_server NAME BUILD [FAKE FLAGS...]: a pod: a fake SDK gateway for GameServer NAME (fleet, region and
# build labels the allocator's selector asks for) and cc-supervisor in Agones mode beside it, its child's UDP
# port that of status.ports. Sets GW (the gateway's port), SUP_PID, SUP_LOG and GPORT; waits for "waiting".
game_server() {
	local name=$1 build=$2; shift 2
	GPORT=$(free_port)
	start_fake GW "$T_DIR/$name-sdk.log" "$FAKES/fake_agones_sdk" --name="$name" --game-port="$GPORT" \
		--labels="agones.dev/fleet=cosmic-clash,cosmic-clash.io/region=eu-west,cosmic-clash.io/build=$build" \
		--k8s-url="http://127.0.0.1:$K8S" --shutdown-delay-ms=1000 "$@"
	SUP_LOG="$T_DIR/$name-sup.log"
	AGONES_SDK_HTTP_PORT=$GW start_bg "$SUP_LOG" "$SUP" --game-port="$GPORT" --api-url="$A_URL" \
		--join-keys-file="$T_DIR/join.json" --gameserver-config="$T_DIR/gameserver.conf" --work-dir="$T_DIR" \
		--health-interval-ms=200 --sdk-poll-interval-ms=50
	SUP_PID=$LAST_PID
	wait_log "$SUP_LOG" '"event":"waiting"' 1 "$SUP_PID" 20
}

# wait_log LOG PATTERN COUNT PID SECONDS (as gameserver_lib.sh's)
wait_log() {
	local deadline=$((SECONDS + $5)) n=0
	while ((SECONDS < deadline)); do
		n=$(grep -c -- "$2" "$1" 2>/dev/null || true)
		((n >= $3)) && return 0
		running "$4" || fail "process $4 exited before $3 '$2' lines in $1: $(tail -5 "$1")"
		sleep 0.05
	done
	fail "$n of $3 '$2' lines in $1 within $5 s"
}

# no_ping_after_shutdown PORT WHAT: no /health after the first /shutdown (which the gateway answers 1 s
# late, so a pinger left running would be seen), at least one before; sets PINGS.
no_ping_after_shutdown() {
	local log
	log=$(sdk_log "$1")
	expect_eq "SDK /shutdown calls ($2)" 1 "$(jq '[.requests[] | select(.path == "/shutdown")] | length' <<<"$log")"
	PINGS=$(jq '[.requests[] | select(.path == "/health")] | length' <<<"$log")
	((PINGS > 0)) || fail "no health ping at all ($2)"
	local late
	late=$(jq '(.requests | map(select(.path == "/shutdown")) | .[0].t_ms) as $s |
		[.requests[] | select(.path == "/health" and .t_ms > $s)] | length' <<<"$log")
	expect_eq "health pings after /shutdown ($2)" 0 "$late"
}

# ---- a. a played match -------------------------------------------------------------------------------
game_server gs-agones-a "agones-$run" --incomplete-polls=4
A_GW=$GW
log=$(sdk_log "$A_GW")
first_ready=$(jq '[.requests[].path] | index("/ready")' <<<"$log")
incomplete=$(jq '[.answers[] | select(.path == "/gameserver" and .body.status.address == "")] | length' <<<"$log")
expect_eq "incomplete GameServer answers before the supervisor went on" 4 "$incomplete"
((first_ready >= 5)) || fail "/ready came after only $first_ready requests (4 incomplete answers to wait out)"
grep -q '"event":"sdk_waiting".*without an address' "$SUP_LOG" || fail "the supervisor did not say it waited for an address"
grep -q '"event":"sdk_assigned".*"server_id":"gs-agones-a".*"polls":5' "$SUP_LOG" || fail "no sdk_assigned after 5 polls: $(grep sdk_ "$SUP_LOG")"
pass "4 incomplete GameServer answers waited out, assigned at poll 5, then /ready"

rc=0
T_LOGS+=("$T_DIR/player.err")
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=3 --regions=eu-west --ranked-percent=0 \
	--decline-percent=0 --ticket-poll-ms=500 --seed="$run" --build="agones-$run" --match-deadline-seconds=60 --play \
	--assignment-timeout-seconds=60 --game-deadline-seconds=90 --log-level=info \
	>"$T_DIR/player.out" 2>"$T_DIR/player.err" || rc=$?
summary=$(cat "$T_DIR/player.out")
expect_eq "cc-player's exit status ($summary)" 0 "$rc"
[[ $summary =~ \;\ play:\ played=6\ ok=6\ failed=0\ score_mismatch=0\ matches=1 ]] ||
	fail "the summary does not say six played, six agreed with the server's score: $summary"
match=$(sql "SELECT match_id FROM tickets WHERE build = 'agones-$run' AND match_id IS NOT NULL LIMIT 1")
[[ -n $match ]] || fail "no match for build agones-$run"
expect_eq "the allocation's provider, server and endpoint" "agones|gs-agones-a|127.0.0.1|$GPORT" \
	"$(sql "SELECT provider || '|' || server_id || '|' || address || '|' || port FROM allocations WHERE match_id = '$match'")"
deadline=$((SECONDS + 30))
until [[ $(sql "SELECT state FROM matches WHERE id = '$match'") == COMPLETED ]]; do
	((SECONDS < deadline)) || fail "match $match is $(sql "SELECT state FROM matches WHERE id = '$match'") after 30 s, not COMPLETED"
	sleep 0.1
done
expect_eq "rating changes for $match (one per player, once)" 6 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$match'")"
wait_exit "$SUP_PID" 30
expect_eq "the supervisor's exit status after its match" 0 "$EXIT_RC"
grep -q '"event":"child_exited".*"reason":"completed"' "$SUP_LOG" || fail "no child_exited completed"
grep -q '"event":"sdk_shutdown".*"ok":true' "$SUP_LOG" || fail "no sdk_shutdown ok"
no_ping_after_shutdown "$A_GW" "played match"
log=$(sdk_log "$A_GW")
expect_eq "the gateway's GameServer state at the end" Shutdown "$(jq -r .state <<<"$log")"
expect_eq "SDK /ready calls" 1 "$(jq '[.requests[] | select(.path == "/ready")] | length' <<<"$log")"
alloc_id=$(sql "SELECT id FROM allocations WHERE match_id = '$match'")
expect_eq "annotations the supervisor was shown (match-id, allocation-id)" "$match $alloc_id" \
	"$(jq -r '[.answers[] | select(.path == "/gameserver") | .body.object_meta.annotations] | last |
		.["cosmic-clash.io/match-id"] + " " + .["cosmic-clash.io/allocation-id"]' <<<"$log")"
expect_eq "the fake k8s fleet's GameServer" "gs-agones-a Shutdown" \
	"$(curl -sf "http://127.0.0.1:$K8S/fake/gameservers" | jq -r '.gameservers[] | select(.name == "gs-agones-a") | .name + " " + .state')"
check_swagger "$A_GW"
pass "match $match through the agones provider on gs-agones-a: COMPLETED, rated once, $PINGS health pings, SDK /shutdown, supervisor exited 0: $summary"

# ---- b. the child dies mid-match ---------------------------------------------------------------------
game_server gs-agones-b "agones-kill-$run"
B_GW=$GW
T_LOGS+=("$T_DIR/player-b.err")
start_bg "$T_DIR/player-b.err" "$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=3 \
	--regions=eu-west --ranked-percent=0 --decline-percent=0 --ticket-poll-ms=500 --seed="$((run + 1))" \
	--build="agones-kill-$run" --match-deadline-seconds=60 --play --assignment-timeout-seconds=60 \
	--game-deadline-seconds=40 --log-level=info
wait_log "$SUP_LOG" '"event":"match_state".*"state":"PLAYING"' 1 "$SUP_PID" 60
child=$(grep '"event":"child_started"' "$SUP_LOG" | tail -1 | jq .pid)
before=$(sdk_log "$B_GW" | jq '[.requests[] | select(.path == "/health")] | length')
kill -KILL "$child"
wait_exit "$SUP_PID" 30
expect_eq "the supervisor's exit status after its child was killed" 0 "$EXIT_RC"
grep -q '"event":"child_exited".*"reason":"killed_by_signal".*"signal":9' "$SUP_LOG" ||
	fail "no child_exited killed_by_signal 9: $(grep child_exited "$SUP_LOG")"
# The pings stop the moment the child is found gone (before its exit is
# even logged), so before its end is reported to cc-api.
stopped_at=$(grep -n '"event":"sdk_health_stopped"' "$SUP_LOG" | head -1 | cut -d: -f1)
exited_at=$(grep -n '"event":"child_exited"' "$SUP_LOG" | head -1 | cut -d: -f1)
reported_at=$(grep -n '"event":"api_ok".*"call":"shutdown"' "$SUP_LOG" | head -1 | cut -d: -f1)
[[ -n $stopped_at && -n $exited_at && -n $reported_at ]] ||
	fail "no sdk_health_stopped ($stopped_at), child_exited ($exited_at) or cc-api shutdown ($reported_at) line"
((stopped_at < exited_at)) || fail "health pings stopped at line $stopped_at, after the child's exit was logged (line $exited_at)"
((stopped_at < reported_at)) || fail "health pings stopped at line $stopped_at, after cc-api heard of the end (line $reported_at)"
no_ping_after_shutdown "$B_GW" "child killed"
((before > 0)) || fail "no health ping while the child lived"
expect_eq "the gateway's GameServer state after the kill" Shutdown "$(sdk_log "$B_GW" | jq -r .state)"
match_b=$(sql "SELECT match_id FROM allocations WHERE server_id = 'gs-agones-b'")
expect_eq "rating changes of the killed match" 0 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$match_b'")"
check_swagger "$B_GW"
pass "child $child SIGKILLed mid-match: $before pings while it lived, none after /shutdown, SDK /shutdown called, match $match_b unrated"

# ---- d. SIGTERM --------------------------------------------------------------------------------------
game_server gs-agones-warm "agones-warm-$run"
deadline=$((SECONDS + 10))
until (($(sdk_log "$GW" | jq '[.requests[] | select(.path == "/health")] | length') > 0)); do
	((SECONDS < deadline)) || fail "no health ping from the warm supervisor within 10 s"
	sleep 0.05
done
kill -TERM "$SUP_PID"
wait_exit "$SUP_PID" 15
expect_eq "exit status of a warm supervisor stopped by SIGTERM" 0 "$EXIT_RC"
no_ping_after_shutdown "$GW" "warm server stopped"
grep -q '"event":"child_started"' "$SUP_LOG" && fail "a warm supervisor started a child"
pass "SIGTERM while warm: SDK /shutdown, $PINGS pings before it, none after, exit 0"

game_server gs-agones-c "agones-term-$run"
C_GW=$GW
T_LOGS+=("$T_DIR/player-c.err")
start_bg "$T_DIR/player-c.err" "$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=3 \
	--regions=eu-west --ranked-percent=0 --decline-percent=0 --ticket-poll-ms=500 --seed="$((run + 2))" \
	--build="agones-term-$run" --match-deadline-seconds=60 --play --assignment-timeout-seconds=60 \
	--game-deadline-seconds=40 --log-level=info
wait_log "$SUP_LOG" '"event":"match_state".*"state":"PLAYING"' 1 "$SUP_PID" 60
kill -TERM "$SUP_PID"
wait_exit "$SUP_PID" 30
expect_eq "the supervisor's exit status after a forwarded SIGTERM" 0 "$EXIT_RC"
grep -q '"event":"forwarding_stop"' "$SUP_LOG" || fail "no forwarding_stop line"
grep -q '"event":"child_exited".*"reason":"stopped".*"code":4' "$SUP_LOG" ||
	fail "the child did not stop on the forwarded SIGTERM: $(grep child_exited "$SUP_LOG")"
grep -q '"event":"api_ok".*"call":"shutdown"' "$SUP_LOG" || fail "cc-api did not hear /shutdown"
no_ping_after_shutdown "$C_GW" "SIGTERM mid-match"
check_swagger "$C_GW"
pass "SIGTERM mid-match: forwarded, the child stopped (code 4), cc-api and the SDK heard /shutdown, exit 0"

# ---- e. the supervisor restarted in an allocated pod ---------------------------------------------------
game_server gs-agones-e "agones-restart-$run"
E_GW=$GW
T_LOGS+=("$T_DIR/player-e.err")
start_bg "$T_DIR/player-e.err" "$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=3 \
	--regions=eu-west --ranked-percent=0 --decline-percent=0 --ticket-poll-ms=500 --seed="$((run + 3))" \
	--build="agones-restart-$run" --match-deadline-seconds=60 --play --assignment-timeout-seconds=60 \
	--game-deadline-seconds=40 --log-level=info
wait_log "$SUP_LOG" '"event":"match_state".*"state":"PLAYING"' 1 "$SUP_PID" 60
child=$(grep '"event":"child_started"' "$SUP_LOG" | tail -1 | jq .pid)
kill -KILL "$SUP_PID"
deadline=$((SECONDS + 15))
while running "$child"; do # it gets SIGTERM when its parent dies (PR_SET_PDEATHSIG)
	((SECONDS < deadline)) || fail "the killed supervisor's child $child still runs after 15 s"
	sleep 0.05
done
SUP_LOG="$T_DIR/gs-agones-e-sup2.log"
AGONES_SDK_HTTP_PORT=$E_GW start_bg "$SUP_LOG" "$SUP" --game-port="$GPORT" --api-url="$A_URL" \
	--join-keys-file="$T_DIR/join.json" --gameserver-config="$T_DIR/gameserver.conf" --work-dir="$T_DIR" \
	--health-interval-ms=200 --sdk-poll-interval-ms=50 --roster-timeout-ms=2000
SUP_PID=$LAST_PID
wait_exit "$SUP_PID" 30
expect_eq "the restarted supervisor's exit status" 0 "$EXIT_RC"
grep -q '"event":"sdk_already_allocated"' "$SUP_LOG" || fail "the restarted supervisor did not see its GameServer Allocated"
expect_eq "SDK /ready calls (the restart made none)" 1 \
	"$(sdk_log "$E_GW" | jq '[.requests[] | select(.path == "/ready")] | length')"
grep -qE '"event":"(match_past_registration|roster_failed)"' "$SUP_LOG" ||
	fail "the restarted supervisor served the lost match: $(grep -E 'child_|register|roster' "$SUP_LOG" | head -5)"
grep -q '"event":"api_ok".*"call":"shutdown"' "$SUP_LOG" || fail "cc-api did not hear the lost match's /shutdown"
no_ping_after_shutdown "$E_GW" "restarted in an allocated pod"
match_e=$(sql "SELECT match_id FROM allocations WHERE server_id = 'gs-agones-e'")
expect_eq "rating changes of the lost match" 0 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$match_e'")"
pass "restarted in an allocated pod: no second /ready, $(grep -oE '"event":"(match_past_registration|roster_failed)"' "$SUP_LOG" | head -1), SDK /shutdown, match $match_e unrated"
