#!/usr/bin/env bash
# Faults of one match, with the real binaries (issue 19, "What was seen"):
# cc-testkit-api with the server routes, a ranked cc-matcher (1v1),
# cc-allocator's local provider with one pool process (cc-supervisor, which
# runs cc-gameserver for each match, short matches through
# --gameserver-config) and two real ENet clients per match
# (tests/gameserver gsclient, playing with the join token of the player's
# own assignment), with cc-maintenance running every sweep throughout. One after
# the other:
#
#   d. cc-testkit-allocator SIGKILLs itself after writing the allocation
#      file ("delivered"), before publishing; cc-allocator restarted on the
#      same state: the match is played and COMPLETED, rated once.
#   a. SIGKILL of cc-gameserver mid-match: FAILED at once, nobody rated.
#   b. SIGKILL of cc-supervisor mid-match: the allocator restarts it, the
#      new supervisor finds the old allocation file, its PROCESS_READY is
#      refused 409 invalid_state, it kills its child before anyone plays
#      (match_past_registration) and reports the server lost (/shutdown
#      server_lost): FAILED, nobody rated (deviation and ranked games as
#      before), no result from a second game server.
#   c. A ranked player accepts and never connects: after the connect window
#      the server posts no_show and calls the match off (the player who came
#      is kicked shutting_down): INITIAL_CONNECT_NO_SHOW for the no-show
#      (its enqueue is then refused 429 cooldown), FAILED unrated, the other
#      player QUEUED again at once without penalty.
#   e. cc-api SIGKILLed as the match ends (FULL_TIME) and started again 20 s
#      later on the same port: the result, retried by cc-gameserver's
#      reporter, lands exactly once (one match_results row, one rating
#      change per player, ranked games 1).
#   f. The control plane ends the match mid-play (the match row set FAILED,
#      standing in for a cc-maintenance settlement): the next heartbeat
#      answer says FAILED and cc-gameserver calls the match off (players
#      kicked shutting_down, no result, exit 5, supervisor reports
#      called_off). The players' tickets are not checked there: the
#      stand-in moves only the match row.
#
# At the end audit.sql finds nothing, no ended match holds a ticket or a server, and
# cc-maintenance counted no failed batch. Each of a-e ends with the match FAILED or COMPLETED within its deadline (below,
# asserted), the game server IDLE again, the players able to queue again
# (an enqueue answered 201, then cancelled; the no-show of c: 429 cooldown),
# and ratings moved at most once. Deadlines: d 45 s from the restart, a 5 s
# from the kill, b 15 s from the kill, c connect window (8 s) + 10 s from
# the connect, e 15 s from the restart of cc-api, f 2 s from the change;
# the server IDLE within 10 s of the match's end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"
source "$(dirname "$0")/lib_match.sh"

GSCLIENT="$TOP/build/tests/gsclient"
[[ -x $GSCLIENT ]] || fail "$GSCLIENT is missing (make tests-build builds it)"
scratch_database faults_match
loop_secrets
# Long enough that two clients connect in time on a loaded machine; c waits all of it.
CONNECT_WINDOW=8
cat >"$T_DIR/gameserver.conf" <<EOF
match-seconds = 5
warmup-seconds = 0
overtime-max-seconds = 1
goal-pause-seconds = 1
connect-window-seconds = $CONNECT_WINDOW
end-linger-ms = 300
heartbeat-interval-ms = 500
result-timeout-ms = 40000
EOF

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---- services -------------------------------------------------------------------

API_PORT=$(free_port) API_ADMIN=$(free_port) N_API=0
A_URL="http://127.0.0.1:$API_PORT"
# api_up: cc-testkit-api on API_PORT (a restart keeps the port); sets API_PID.
api_up() {
	N_API=$((N_API + 1))
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/api-$N_API.log" "$BIN/cc-testkit-api" \
		--port="$API_PORT" --admin-port="$API_ADMIN" --regions=eu-west --workload-secret-file="$T_DIR/workload.secret"
	API_PID=$LAST_PID
	wait_http "http://127.0.0.1:$API_ADMIN/readyz" "$API_PID" 20
}
api_up
madmin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
	--playlist=ranked --admin-port="$madmin" --poll-interval-ms=100
wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
# cc-maintenance runs every sweep throughout (issue 19: the faults with it running), at its default
# windows but the no-show's: 10 s, just past the server's connect window (which starts before
# assignment_ready), so in c the sweep and the server's no_show report race to settle the same way.
MAINT_ADMIN=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/maintenance.log" "$BIN/cc-maintenance" \
	--admin-port="$MAINT_ADMIN" --no-show-after-seconds=10 --expiry-interval-ms=200 --stalled-interval-ms=200 \
	--no-show-interval-ms=200 --server-silent-interval-ms=200 --result-missing-interval-ms=200
MAINT_PID=$LAST_PID
wait_http "http://127.0.0.1:$MAINT_ADMIN/readyz" "$MAINT_PID" 20

mkdir -p "$T_DIR/state"
game_port=$(free_port)
GAME_LOG="$T_DIR/state/local-$game_port.log"
T_LOGS+=("$GAME_LOG")
N_ALLOC=0
# allocator_up BINARY [ENV=VALUE...]: the local provider, one server on game_port running cc-supervisor
# (lib_loop.sh start_pool); the same state dir and port each time (so the same instance). Sets ALLOC_PID, ALLOC_LOG.
allocator_up() {
	local bin=$1; shift
	N_ALLOC=$((N_ALLOC + 1))
	start_pool "$T_DIR/allocator-$N_ALLOC.log" "$game_port" "$game_port" "$bin" "$@"
}

# ---- helpers --------------------------------------------------------------------

mstate() { sql "SELECT state FROM matches WHERE id = '$1'"; }
server_state() { sql "SELECT state FROM game_servers WHERE port = $game_port"; }
connected() { sql "SELECT count(*) FROM assignments WHERE match_id = '$1' AND connection_generation > 0"; }

# connect NAME I: player I of MATCH fetches its assignment (retried while 409 assignment_pending) and
# plays it with gsclient in the background (its JSON line in $T_DIR/NAME-I.out). Sets GS_PID[I].
declare -a GS_PID=()
connect() {
	local name=$1 i=$2 deadline=$((SECONDS + 45))
	while :; do
		http GET "$A_URL/v1/matches/$MATCH/assignment" "${TOKENS[$i]}"
		[[ $STATUS == 200 ]] && break
		[[ $STATUS == 409 || $STATUS == 503 || $STATUS == 000 ]] || fail "$name: assignment of player $i: HTTP $STATUS $BODY"
		((SECONDS < deadline)) || fail "$name: no assignment for player $i within 45 s: HTTP $STATUS $BODY"
		sleep 0.1
	done
	expect_eq "$name: player $i's assigned port" "$game_port" "$(jq -r .port <<<"$BODY")"
	jq -r .join_token <<<"$BODY" >"$T_DIR/$name-$i.token"
	start_bg "$T_DIR/$name-$i.out" "$GSCLIENT" play --port="$game_port" --token="$T_DIR/$name-$i.token" --max-seconds=60
	GS_PID[$i]=$LAST_PID
}

# wait_log FILE PATTERN SECONDS: until FILE has a line matching PATTERN (grep -E).
wait_log() {
	local deadline=$((SECONDS + $3))
	until grep -qE -- "$2" "$1" 2>/dev/null; do
		((SECONDS < deadline)) || fail "no line matching $2 in $1 within $3 s"
		sleep 0.05
	done
}
# count_log FILE PATTERN: lines of FILE matching PATTERN (grep -E).
count_log() { grep -cE -- "$2" "$1" 2>/dev/null || true; }

# rated_at_most_once NAME WANT_CHANGES: rating_changes rows of MATCH == WANT_CHANGES (2 or 0), and each
# player's ranked games and deviation say the same (games 1 and a new deviation, or 0 and 350 untouched).
rated_at_most_once() {
	local name=$1 want=$2 p
	expect_eq "$name: rating_changes rows of $MATCH" "$want" "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$MATCH'")"
	for p in "${PLAYERS[@]}"; do
		if ((want == 0)); then
			expect_eq "$name: ranked games and deviation of $p" "0|350" \
				"$(sql "SELECT games, deviation FROM ratings WHERE player_id = '$p' AND playlist = 'ranked'")"
		else
			expect_eq "$name: ranked games of $p" 1 "$(sql "SELECT games FROM ratings WHERE player_id = '$p' AND playlist = 'ranked'")"
			[[ $(sql "SELECT deviation < 350 FROM ratings WHERE player_id = '$p' AND playlist = 'ranked'") == t ]] ||
				fail "$name: the deviation of $p did not move with its one rated game"
		fi
	done
}

# queue_again NAME I [STATUS]: player I enqueues (a build of its own: nobody to match) and expects STATUS
# (201: then the ticket is cancelled again).
queue_again() {
	local name=$1 i=$2 want=${3:-201}
	http POST "$A_URL/v1/queue" "${TOKENS[$i]}" \
		"{\"playlist\":\"ranked\",\"protocol_version\":1,\"build\":\"$name-again-$i\"}" -H "Idempotency-Key: $name-again-$i"
	if [[ $want != 201 ]]; then
		expect_http "$name: player $i enqueues again" "$want" "${4:-}"
		return
	fi
	expect_http "$name: player $i enqueues again" 201
	local ticket revision
	ticket=$(jq -r .id <<<"$BODY") revision=$(jq -r .revision <<<"$BODY")
	http POST "$A_URL/v1/queue/$ticket/cancel" "${TOKENS[$i]}" "{\"revision\":$revision}"
	expect_http "$name: player $i cancels its new ticket" 200
}

# server_freed NAME: the game server is IDLE again within 10 s.
server_freed() { wait_until "$1: game server on $game_port IDLE again" 10 '[[ $(server_state) == IDLE ]]'; }

# stop_clients: ends this match's gsclients still running (a killed server's clients would wait for ENet's timeout).
stop_clients() {
	local pid
	for pid in "${GS_PID[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	GS_PID=()
}

# in_progress NAME: both players connected (receipts taken), the match IN_PROGRESS.
in_progress() {
	wait_until "$1: match $MATCH IN_PROGRESS with both players connected" 30 \
		'[[ $(mstate "$MATCH") == IN_PROGRESS && $(connected "$MATCH") == 2 ]]'
}

RATED=1500/350/0.06/0
SUMMARY=()

# ---- d. cc-allocator SIGKILLed mid-allocation, restarted ------------------------------------
allocator_up cc-testkit-allocator COSMIC_CLASH_TESTKIT_CRASH_AT=delivered
wait_log "$GAME_LOG" '"service":"cc-supervisor".*"event":"waiting"' 20
make_match d ranked 1 "$RATED" "$RATED"
wait_until "d: cc-testkit-allocator crashes at 'delivered'" 30 '! running "$ALLOC_PID"'
grep -q '"event":"testkit_crash".*"step":"delivered"' "$ALLOC_LOG" || fail "d: the allocator exited without its testkit_crash line"
expect_eq "d: allocation of $MATCH after the crash" ALLOCATED "$(sql "SELECT state FROM allocations WHERE match_id = '$MATCH'")"
t=$(now)
allocator_up cc-allocator
connect d 0
connect d 1
wait_until "d: match $MATCH COMPLETED after the allocator's restart" 45 '[[ $(mstate "$MATCH") == COMPLETED ]]'
took=$(since "$t")
expect_eq "d: match_results of $MATCH" 1 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$MATCH'")"
expect_eq "d: allocations of $MATCH" 1 "$(sql "SELECT count(*) FROM allocations WHERE match_id = '$MATCH'")"
rated_at_most_once d 2
server_freed d
queue_again d 0
queue_again d 1
stop_clients
SUMMARY+=("d allocator-kill: COMPLETED ${took}s after the restart, rated once")
pass "d: allocator SIGKILLed at 'delivered', restarted: match $MATCH COMPLETED in $took s, rated once, server IDLE"

# ---- a. SIGKILL of cc-gameserver mid-match ------------------------------------------------
make_match a ranked 1 "$RATED" "$RATED"
connect a 0
connect a 1
in_progress a
gs_pid=$(grep '"service":"cc-supervisor".*"event":"child_started"' "$GAME_LOG" | grep "$MATCH" | tail -1 | jq -r .pid)
[[ $gs_pid =~ ^[0-9]+$ ]] && running "$gs_pid" || fail "a: no running cc-gameserver pid for $MATCH in $GAME_LOG ('$gs_pid')"
t=$(now)
kill -9 "$gs_pid"
wait_until "a: match $MATCH FAILED after its game server was SIGKILLed" 5 '[[ $(mstate "$MATCH") == FAILED ]]'
took=$(since "$t")
expect_eq "a: match_results of $MATCH" 0 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$MATCH'")"
rated_at_most_once a 0
server_freed a
stop_clients
queue_again a 0
queue_again a 1
SUMMARY+=("a gameserver-kill: FAILED in ${took}s, nobody rated")
pass "a: cc-gameserver SIGKILLed: match $MATCH FAILED in $took s, nobody rated, server IDLE, players queue again"

# ---- b. SIGKILL of cc-supervisor mid-match ------------------------------------------------
make_match b ranked 1 "$RATED" "$RATED"
connect b 0
connect b 1
in_progress b
sup_pid=$(grep '"event":"child_started"' "$ALLOC_LOG" | tail -1 | jq -r .pid)
[[ $sup_pid =~ ^[0-9]+$ ]] && running "$sup_pid" || fail "b: no running cc-supervisor pid in $ALLOC_LOG ('$sup_pid')"
gs_lines_before=$(grep -c '"service":"cc-gameserver".*"event":"started"' "$GAME_LOG" || true)
t=$(now)
kill -9 "$sup_pid"
wait_until "b: match $MATCH FAILED after its supervisor was SIGKILLed" 15 '[[ $(mstate "$MATCH") == FAILED ]]'
took=$(since "$t")
grep -q "\"event\":\"match_past_registration\".*\"match_id\":\"$MATCH\"" "$GAME_LOG" ||
	fail "b: the restarted supervisor never said match_past_registration for $MATCH"
expect_eq "b: the allocation's shutdown reason" server_lost \
	"$(sql "SELECT shutdown_reason FROM allocations WHERE match_id = '$MATCH'")"
expect_eq "b: match_results of $MATCH (no second server's result)" 0 \
	"$(sql "SELECT count(*) FROM match_results WHERE match_id = '$MATCH'")"
rated_at_most_once b 0
server_freed b
# The second game server was started and killed at its registration: it never reached a kickoff.
gs_after=$(grep '"service":"cc-gameserver"' "$GAME_LOG" | awk -v n="$gs_lines_before" '/"event":"started"/ { k++ } k > n')
grep -q '"event":"kickoff"' <<<"$gs_after" && fail "b: the second cc-gameserver played the match: $(grep '"event":"kickoff"' <<<"$gs_after" | head -1)"
stop_clients
queue_again b 0
queue_again b 1
SUMMARY+=("b supervisor-kill: FAILED in ${took}s (server_lost), nobody rated")
pass "b: cc-supervisor SIGKILLed: restarted, refused 409 invalid_state, child killed; match $MATCH FAILED in $took s, nobody rated"

# ---- c. a ranked player accepts and never connects ----------------------------------------
make_match c ranked 1 "$RATED" "$RATED"
connect c 0
t=$(now)
wait_until "c: match $MATCH FAILED after the connect window" $((CONNECT_WINDOW + 10)) '[[ $(mstate "$MATCH") == FAILED ]]'
took=$(since "$t")
expect_eq "c: INITIAL_CONNECT_NO_SHOW penalties of the no-show ${PLAYERS[1]}" 1 \
	"$(sql "SELECT count(*) FROM penalties WHERE player_id = '${PLAYERS[1]}' AND kind = 'INITIAL_CONNECT_NO_SHOW'")"
expect_eq "c: penalties of the player who came ${PLAYERS[0]}" 0 \
	"$(sql "SELECT count(*) FROM penalties WHERE player_id = '${PLAYERS[0]}'")"
expect_eq "c: the ticket of the player who came" QUEUED \
	"$(sql "SELECT state FROM tickets WHERE player_id = '${PLAYERS[0]}' ORDER BY created_at DESC LIMIT 1")"
expect_eq "c: match_results of $MATCH" 0 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$MATCH'")"
rated_at_most_once c 0
server_freed c
wait_until "c: the player who came is told" 10 '[[ -s $T_DIR/c-0.out ]]'
expect_eq "c: what the player who came was told" "refused shutting_down" "$(jq -r '.result + " " + .reason' "$T_DIR/c-0.out")"
grep -q "\"event\":\"match_called_off\".*\"reason\":\"no_show\"" "$GAME_LOG" || fail "c: no match_called_off no_show line from cc-gameserver"
# The requeued ticket is live: it goes, and the player queues again; the no-show is in its cooldown.
ticket=$(sql "SELECT id || ' ' || revision FROM tickets WHERE player_id = '${PLAYERS[0]}' AND state = 'QUEUED'")
http POST "$A_URL/v1/queue/${ticket% *}/cancel" "${TOKENS[0]}" "{\"revision\":${ticket#* }}"
expect_http "c: the requeued player cancels its ticket" 200
queue_again c 0
queue_again c 1 429 cooldown
stop_clients
SUMMARY+=("c ranked-no-show: FAILED ${took}s after the connect, penalty once, other requeued")
pass "c: ranked no-show: match $MATCH FAILED unrated in $took s, INITIAL_CONNECT_NO_SHOW once, the other requeued without penalty"

# ---- e. cc-api down 20 s as the match ends ------------------------------------------------
FULL_TIME='"service":"cc-gameserver".*"event":"match_state".*"state":"FULL_TIME"'
ENDED='"service":"cc-gameserver".*"event":"match_ended"'
full_before=$(count_log "$GAME_LOG" "$FULL_TIME") ended_before=$(count_log "$GAME_LOG" "$ENDED")
make_match e ranked 1 "$RATED" "$RATED"
connect e 0
connect e 1
in_progress e
# The server's lines name no match: this match's FULL_TIME is the first one after those of the matches before.
wait_until "e: FULL_TIME of match $MATCH" 30 '(( $(count_log "$GAME_LOG" "$FULL_TIME") > full_before ))'
# SIGKILL: the outage starts at once, before the result (posted at RESULTS, at least 1 s later) can land.
kill -9 "$API_PID"
wait "$API_PID" 2>/dev/null || true
t_down=$(now)
state_down=$(mstate "$MATCH")
[[ $state_down != COMPLETED ]] || fail "e: the match completed before cc-api was stopped: nothing was tested"
# The outage itself: 20 s by the clock (the fault, not a wait for a state).
while awk -v a="$t_down" -v b="$(now)" 'BEGIN { exit !(b - a < 20) }'; do sleep 0.2; done
expect_eq "e: match_results of $MATCH while cc-api was down" 0 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$MATCH'")"
(($(count_log "$GAME_LOG" "$ENDED") > ended_before)) || fail "e: the match did not end while cc-api was down"
t=$(now)
api_up
wait_until "e: match $MATCH COMPLETED after cc-api came back" 15 '[[ $(mstate "$MATCH") == COMPLETED ]]'
took=$(since "$t")
expect_eq "e: match_results of $MATCH" 1 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$MATCH'")"
rated_at_most_once e 2
server_freed e
wait_log "$GAME_LOG" "\"service\":\"cc-supervisor\".*\"event\":\"child_exited\".*\"match_id\":\"$MATCH\".*\"reason\":\"completed\"" 10
queue_again e 0
queue_again e 1
stop_clients
SUMMARY+=("e api-down-20s: COMPLETED ${took}s after cc-api came back, result once")
pass "e: cc-api down 20 s from FULL_TIME ($state_down): the result landed once, $took s after cc-api came back"

# ---- f. the control plane ends a match mid-play: the server calls it off ----------------
# A stand-in for a settlement made elsewhere (cc-maintenance's sweeps, which would not act here): the match row
# and its tickets go FAILED in SQL, in one transaction, as a settlement leaves them (audit.sql's
# ticket_held_by_ended_match would flag a match row moved alone). The next heartbeat answer says so and the server stops the match within two
# heartbeat intervals (0.5 s each) and a second: its players kicked shutting_down, exit 5, server freed.
make_match f ranked 1 "$RATED" "$RATED"
connect f 0
connect f 1
in_progress f
t=$(now)
sql "UPDATE matches SET state = 'FAILED' WHERE id = '$MATCH' AND state = 'IN_PROGRESS';
     UPDATE tickets SET state = 'FAILED' WHERE match_id = '$MATCH' AND state IN ('MATCHED', 'ASSIGNED')" >/dev/null
wait_until "f: cc-gameserver calls match $MATCH off after a heartbeat answer said FAILED" 2 \
	'grep -q "\"event\":\"match_called_off\".*\"reason\":\"control_plane\".*\"match_state\":\"FAILED\"" "$GAME_LOG"'
took=$(since "$t")
wait_until "f: both players are told" 10 '[[ -s $T_DIR/f-0.out && -s $T_DIR/f-1.out ]]'
expect_eq "f: what the players were told" "refused shutting_down|refused shutting_down" \
	"$(jq -r '.result + " " + .reason' "$T_DIR/f-0.out")|$(jq -r '.result + " " + .reason' "$T_DIR/f-1.out")"
wait_log "$GAME_LOG" "\"service\":\"cc-supervisor\".*\"event\":\"child_exited\".*\"match_id\":\"$MATCH\".*\"reason\":\"called_off\".*\"code\":5" 10
expect_eq "f: match_results of $MATCH" 0 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$MATCH'")"
rated_at_most_once f 0
server_freed f
# (No queue_again: the stand-in moved only the match row; its tickets are the real settlement's to end.)
stop_clients
SUMMARY+=("f called-off: stopped ${took}s after the match went FAILED")
pass "f: match $MATCH FAILED by the control plane mid-play: called off in $took s, players kicked shutting_down, exit 5, server IDLE"

# The end state of all six with cc-maintenance running: the audit finds nothing, every match ended
# holds no ticket and no server, and cc-maintenance ran every batch without a failure.
running "$MAINT_PID" || fail "cc-maintenance exited during the faults"
audit=$(psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$audit" ]] || fail "audit.sql after the faults: $audit"
expect_eq "matches not ended, or ended holding a ticket or a server" "" "$(sql "SELECT string_agg(x, '; ') FROM (
	SELECT m.id || ' ' || m.state || ' holds ticket ' || t.state AS x FROM matches m JOIN match_players mp ON mp.match_id = m.id
	  JOIN tickets t ON t.id = mp.ticket_id WHERE m.state IN ('FAILED', 'COMPLETED') AND t.state IN ('MATCHED', 'ASSIGNED')
	UNION ALL SELECT m.id || ' ' || m.state || ' holds allocation ' || a.state FROM matches m JOIN allocations a ON a.match_id = m.id
	  WHERE m.state IN ('FAILED', 'COMPLETED') AND a.state IN ('REQUESTED', 'ALLOCATED', 'PUBLISHED')
	UNION ALL SELECT m.id || ' still ' || m.state FROM matches m WHERE m.state NOT IN ('FAILED', 'COMPLETED')) v")"
failures=$(curl -fsS "http://127.0.0.1:$MAINT_ADMIN/metrics" | awk '/^cosmic_clash_maintenance_failures_total/ { n += $2 } END { print n + 0 }')
expect_eq "cc-maintenance's failed batches" 0 "$failures"
SUMMARY+=("cc-maintenance ran throughout: audit clean, nothing stranded, 0 failed batches")
for s in "${SUMMARY[@]}"; do echo "$T_NAME: $s"; done
pass "six faults, each settled within its deadline: ${SUMMARY[*]}"
