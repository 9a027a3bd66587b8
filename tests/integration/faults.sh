#!/usr/bin/env bash
# Faults under load (issue 14; the "faults under load" item of issue 13),
# with cc-maintenance running throughout (issue 19).
#
# A scratch database of its own (lib_loop.sh: cc-maintenance sweeps every
# row it finds, and the allocator below serves every ALLOCATING match: the
# shared database holds other tests' rows). Two cc-api replicas (A, B),
# cc-matcher for casual and two for ranked (one of them stands by: the pass
# lease), all on the harness Redis, cc-maintenance with short windows
# (below), and two loops of cc-player --mode=demo rounds (24 fresh players a
# round, on --api-url=A,B: a client behind a load balancer, failing over).
# Then, one after the other:
#
#   api-kill        SIGKILL of replica A (started again once B has served)
#   matcher-kill    SIGKILL of the active ranked matcher, the standby running
#   pg-restart      PostgreSQL restarted (tests/harness/pg-ctl.sh restart: fast)
#   redis-restart   Redis stopped for 2 s, then started
#   lease-freeze    SIGSTOP of the ranked matcher while it holds the pass lease
#   client-kill     SIGKILL of a cc-player whose players sit in proposals
#
# For each, the recovery time printed is from the injection until matching
# works end to end again: a proposal of each playlist concerned ACCEPTED
# after it (players answered through the API, the matcher proposed), and,
# where a service was hit, that service ready again (/readyz, cc-maintenance
# included) without a hand restart; for lease-freeze, until the other
# replica runs a leased pass (it must take over within 5 s). After each
# fault every sweep of cc-maintenance completes a pass again
# (cosmic_clash_maintenance_last_pass_timestamp_seconds past the fault's
# end; printed as maint-after-<fault>, 20 s deadline).
#
# Nothing allocates the load's matches: demo players stop at MATCHED, so
# they stay ALLOCATING until cc-maintenance's stalled sweep fails them and
# requeues their players with a fresh --ticket-ttl-seconds (10, cc-api's):
# after the players stop, when cc-maintenance is restarted with
# --stalled-after-seconds 12 (during the load it waits the load out; see
# LOAD_STALLED below for why). Their owners no
# longer look at them (a demo player is done at MATCHED) and never
# heartbeat, so those tickets are not in the matchers' Redis index and die
# EXPIRED one TTL later; only a matcher reading PostgreSQL (Redis down, an
# index rebuilt) proposes one, and that proposal expires unanswered (its
# live partner requeued, as cc-player expects). Once the players stop:
#   - every match of the load ends FAILED "stalled" (the stalled sweep, not
#     the test, reclaimed each; nobody rated) within the stalled window plus
#     20 s of the end of the last round (seen: 12-23 s after the stop).
#
# Then the two game-server faults of issue 19, against real servers:
# cc-allocator's local provider with two pool processes (cc-supervisor
# running cc-gameserver, short matches through --gameserver-config) and two
# real ENet clients per match (tests/gameserver gsclient). The allocator
# starts only now, with no match left ALLOCATING: its local provider claims
# every ALLOCATING match, oldest first, whatever its region or build
# (store/allocations.c, sql_claim), so during the load two servers would be
# taken by demo matches nobody joins (a ranked one held for the connect
# window, a casual one played out with bots) and a fault match would wait
# behind dozens; a region or build of its own would not change that. The
# fault matches have a build of their own (make_match) and region eu-west.
# Both kills at once, one per server:
#
#   gameserver-kill SIGKILL of cc-gameserver mid-match (both players
#                   connected): FAILED within 5 s
#   supervisor-kill SIGKILL of cc-supervisor mid-match: the allocator
#                   restarts it, the new one is refused PROCESS_READY (409
#                   invalid_state), kills its child before anyone plays and
#                   reports server_lost (or the server_silent sweep, 5 s,
#                   settles it first): FAILED within 6 s, under the game
#                   server's 8 s connect window, so a second server that
#                   starts the match (the bug of issue 19) cannot meet it
#                   even when its no-show call-off ends the match unrated
#
# Each with no result, nobody rated (rating_changes none, ranked games 0
# and deviation 350 untouched), its server IDLE again within 10 s of the
# end, and both players able to queue again (an enqueue answered 201, then
# cancelled). Finally, one recovery window after the players stopped (a
# proposal window plus a ticket TTL past the stalled window, waited for as
# a state with a deadline):
#   - audit.sql finds nothing (issue 19's invariants included), and
#     PostgreSQL logged no "deadlock detected";
#   - no ticket is live whose owner has gone: every player process has
#     exited, so no ticket may be PROPOSED, or QUEUED before its deadline;
#   - every round of players ended with 0 errors (the replica failover, the
#     retry horizon and the unsure-retry handling of cc-player leave none to
#     document), its summary says so, and every round exited 0.
# FAULTS_ROUND_PLAYERS and FAULTS_LOOPS scale the load.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"
source "$(dirname "$0")/lib_match.sh"

H="$TOP/tests/harness"
GSCLIENT="$TOP/build/tests/gsclient"
[[ -x $GSCLIENT ]] || fail "$GSCLIENT is missing (make tests-build builds it)"
scratch_database faults
loop_secrets
# A process left stopped (SIGSTOP) would ignore t_cleanup's SIGTERM and hang
# its wait: thaw it first, whatever failed.
FROZEN_PID=""
thaw_then_cleanup() {
	local rc=$?
	if [[ -n "$FROZEN_PID" ]]; then kill -CONT "$FROZEN_PID" 2>/dev/null || true; fi
	admin_sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
	t_cleanup "$rc"
}
trap thaw_then_cleanup EXIT
run=$((RANDOM * 32768 + RANDOM))
[[ -r "$CC_TEST_PG_LOG" ]] || fail "no readable PostgreSQL log at CC_TEST_PG_LOG='$CC_TEST_PG_LOG'"
pg_log_from=$(($(wc -l <"$CC_TEST_PG_LOG") + 1))
build="faults-$run"
redis=(--redis-host="$CC_TEST_REDIS_HOST" --redis-port="$CC_TEST_REDIS_PORT")
ROUND_PLAYERS=${FAULTS_ROUND_PLAYERS:-24}
LOOPS=${FAULTS_LOOPS:-2}
TTL=10 # ticket TTL (s): a vanished client's QUEUED ticket is dead this long after its last heartbeat
# cc-maintenance's windows: stalled > no-show (cc-maintenance refuses otherwise) > the game servers'
# connect window (8 s: the server reports its own no-shows first); silent: 10 heartbeats of 0.5 s.
STALLED=12 NO_SHOW=10 SILENT=5

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "$1/readyz" 2>/dev/null) == 200 ]]; }

# ---- services -----------------------------------------------------------------

# api NAME PORT ADMIN: starts cc-testkit-api on fixed ports (a restart keeps them).
api() {
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/api-$1.log" "$BIN/cc-testkit-api" \
		--port="$2" --admin-port="$3" --regions=r-one,eu-west --ticket-ttl-seconds=$TTL "${redis[@]}" \
		--workload-secret-file="$T_DIR/workload.secret" \
		--max-connections-per-address=1000 \
		--rate-login-per-address=0 --rate-probe-per-address=0 --rate-enqueue-per-address=0 \
		--rate-response-per-address=0
	# Every player's event stream and REST calls come from 127.0.0.1: the
	# connection cap and the per-address rates are for real clients. Fresh
	# players log in every round, and as matching got faster (batched claims)
	# the rounds outran 300 logins a minute: 429s, an empty queue, no match.
	wait_http "http://127.0.0.1:$3/readyz" "$LAST_PID" 30
	printf -v "API_$1_PID" '%s' "$LAST_PID"
}
# matcher NAME PLAYLIST ADMIN: starts cc-matcher --matcher-id=NAME (default lease timeout).
matcher() {
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-$1.log" "$BIN/cc-matcher" \
		--playlist="$2" --admin-port="$3" --poll-interval-ms=200 --matcher-id="$1" "${redis[@]}"
	wait_http "http://127.0.0.1:$3/readyz" "$LAST_PID" 30
	printf -v "M_$1_PID" '%s' "$LAST_PID"
}
A_PORT=$(free_port) A_ADMIN=$(free_port) B_PORT=$(free_port) B_ADMIN=$(free_port)
C1_ADMIN=$(free_port) R1_ADMIN=$(free_port) R2_ADMIN=$(free_port)
api A "$A_PORT" "$A_ADMIN"
api B "$B_PORT" "$B_ADMIN"
matcher C1 casual "$C1_ADMIN"
matcher R1 ranked "$R1_ADMIN"
matcher R2 ranked "$R2_ADMIN"
# maint STALLED_AFTER: cc-maintenance with every sweep on a short interval, so each is seen
# passing again soon after a fault, on the harness Redis as in production (its requeues go into
# the matchers' candidate index at once); a restart keeps its admin port and starts a log of its
# own (MT_LOG: maintenance-1.log, -2.log).
MT_ADMIN=$(free_port) MT_URL="http://127.0.0.1:$MT_ADMIN" MT_N=0
maint() {
	MT_N=$((MT_N + 1)) MT_LOG="$T_DIR/maintenance-$MT_N.log"
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$MT_LOG" "$BIN/cc-maintenance" \
		--admin-port="$MT_ADMIN" --ticket-ttl-seconds=$TTL --outbox-interval-ms=500 --expiry-interval-ms=500 \
		--stalled-interval-ms=1000 --stalled-after-seconds="$1" --no-show-interval-ms=1000 \
		--no-show-after-seconds=$NO_SHOW --server-silent-interval-ms=1000 --server-silent-after-seconds=$SILENT \
		--result-missing-interval-ms=1000 --result-missing-after-seconds=20 --season-interval-ms=1000 \
		--retention-interval-ms=1000 "${redis[@]}"
	MT_PID=$LAST_PID
	wait_http "$MT_URL/readyz" "$MT_PID" 30
}
# While the players run, the stalled sweep waits out the load (LOAD_STALLED): every match of the
# load stalls (nothing allocates it), and a demo player is done at MATCHED, so a requeue would turn
# its ticket into a ghost for a TTL. A matcher reading PostgreSQL (after the Redis restart rebuilds
# its index) proposed ghosts to the live players, whose proposals then expired unanswered, and a
# fault's "matching again" check saw no ranked proposal accepted for 30 s (seen once in CI). The
# reclaim itself is proven after the players stop, with the short window.
LOAD_STALLED=3600
maint $LOAD_STALLED
A_URL="http://127.0.0.1:$A_PORT"
URLS="$A_URL,http://127.0.0.1:$B_PORT"
ADMINS=("http://127.0.0.1:$A_ADMIN" "http://127.0.0.1:$B_ADMIN" "http://127.0.0.1:$C1_ADMIN"
	"http://127.0.0.1:$R1_ADMIN" "http://127.0.0.1:$R2_ADMIN" "$MT_URL")

# passes ADMIN: leased passes (ok + error) a matcher has run.
passes() {
	curl -s "$1/metrics" | awk '/^cosmic_clash_matcher_passes_total\{/ && !/result="standby"/ { n += $NF } END { print n + 0 }'
}

# ---- players ------------------------------------------------------------------

# player_loop K: rounds of fresh players until $T_DIR/stop exists; each
# round's summary line and exit status go to players-K.out.
player_loop() {
	local k=$1 round=0 child rc
	trap '[[ -n "${child:-}" ]] && kill "$child" 2>/dev/null; exit 0' TERM
	while [[ ! -e "$T_DIR/stop" ]]; do
		round=$((round + 1))
		"$BIN/cc-player" --mode=demo --api-url="$URLS" --players="$ROUND_PLAYERS" --threads=4 --regions=r-one \
			--seed=$((run % 1000000 * 100 + k * 100000000 + round)) --build="$build" --decline-percent=5 \
			--match-deadline-seconds=20 >>"$T_DIR/players-$k.out" 2>>"$T_DIR/players-$k.err" &
		child=$!
		rc=0
		wait "$child" || rc=$?
		child=""
		echo "round $round exit $rc" >>"$T_DIR/players-$k.out"
	done
}
LOOP_PIDS=()
for ((k = 1; k <= LOOPS; k++)); do
	T_LOGS+=("$T_DIR/players-$k.err")
	player_loop "$k" &
	T_PIDS+=("$!")
	LOOP_PIDS+=("$!")
done

# accepted_since T PLAYLIST: proposals of the playlist ACCEPTED after epoch T.
accepted_since() {
	sql "SELECT count(*) FROM proposals WHERE build = '$build' AND playlist = '$2' AND state = 'ACCEPTED'
		AND decided_at > to_timestamp($1)" 2>/dev/null || echo 0
}
# recovered NAME T0 DEADLINE_S CHECK...: waits until every CHECK (a command)
# holds, then prints and records the recovery time; fails at the deadline.
RECOVERY=()
recovered() {
	local name=$1 t0=$2 limit=$3; shift 3
	local deadline=$((SECONDS + limit)) check ok
	while :; do
		ok=1
		for check in "$@"; do eval "$check" || { ok=0; break; }; done
		((ok)) && break
		((SECONDS < deadline)) || fail "$name: not recovered within $limit s: '$check' still false"
		sleep 0.05
	done
	local took; took=$(since "$t0")
	RECOVERY+=("$name $took s")
	echo "$T_NAME: fault $name: recovered in $took s"
}
# swept_since T: every sweep of cc-maintenance completed a pass after epoch T (15 sweeps).
swept_since() {
	curl -s "$MT_URL/metrics" | awk -v t="$1" '/^cosmic_clash_maintenance_last_pass_timestamp_seconds\{/ {
		n++; if ($NF + 0 <= t) old++ } END { exit !(n >= 15 && old == 0) }'
}
# maint_after NAME T: cc-maintenance ready and every sweep passing again after the fault that ended at T.
maint_after() {
	running "$MT_PID" || fail "cc-maintenance exited during $1: $(tail -n 5 "$MT_LOG")"
	recovered "maint-after-$1" "$2" 20 "ready $MT_URL" "swept_since $2"
}
both_playlists() { (($(accepted_since "$1" casual) > 0 && $(accepted_since "$1" ranked) > 0)); }
all_ready() { local a; for a in "${ADMINS[@]}"; do ready "$a" || return 1; done; }

# Warm-up: matching works end to end before anything is broken.
t=$(now)
recovered warm-up "$t" 30 "both_playlists $t"

# 1. SIGKILL of replica A: its clients fail over to B. A comes back on the same port.
t=$(now)
kill -9 "$API_A_PID"
recovered api-kill "$t" 30 "both_playlists $t"
wait "$API_A_PID" 2>/dev/null || true
api A "$A_PORT" "$A_ADMIN"
maint_after api-kill "$t"

# 2. SIGKILL of the active ranked matcher (the one that ran the last leased pass).
r1=$(passes "http://127.0.0.1:$R1_ADMIN") r2=$(passes "http://127.0.0.1:$R2_ADMIN")
sleep 0.5 # a window to see which one is passing (not a synchronisation)
if (($(passes "http://127.0.0.1:$R1_ADMIN") - r1 >= $(passes "http://127.0.0.1:$R2_ADMIN") - r2)); then
	active=R1 standby=R2
else
	active=R2 standby=R1
fi
active_pid_var="M_${active}_PID" active_admin_var="${active}_ADMIN" standby_admin_var="${standby}_ADMIN"
t=$(now)
kill -9 "${!active_pid_var}"
recovered "matcher-kill($active)" "$t" 30 "(( \$(accepted_since $t ranked) > 0 ))" \
	"(( \$(sql \"SELECT count(*) FROM proposals WHERE matcher = '$standby' AND created_at > to_timestamp($t)\") > 0 ))"
wait "${!active_pid_var}" 2>/dev/null || true
matcher "$active" ranked "${!active_admin_var}" # back, as the standby
maint_after matcher-kill "$t"

# 3. PostgreSQL restarted (fast): every service ready again by itself, matching again.
t=$(now)
"$H/pg-ctl.sh" restart || fail "pg-ctl.sh restart failed"
t_up=$(now)
recovered pg-restart "$t" 30 all_ready "both_playlists $t"
maint_after pg-restart "$t_up"

# 4. Redis stopped for 2 s, then started on the same port.
t=$(now)
"$H/redis-ctl.sh" stop || fail "redis-ctl.sh stop failed"
down_until=$(awk -v t="$t" 'BEGIN { printf "%.3f", t + 2 }')
recovered redis-down "$t" 30 "both_playlists $t"
while awk -v u="$down_until" -v n="$(now)" 'BEGIN { exit !(n < u) }'; do sleep 0.05; done
t=$(now)
"$H/redis-ctl.sh" start || fail "redis-ctl.sh start failed"
recovered redis-start "$t" 30 all_ready "both_playlists $t" \
	"(( \$(redis-cli -p $CC_TEST_REDIS_PORT dbsize) > 0 ))"
maint_after redis-restart "$t"

# 5. SIGSTOP of the ranked matcher at a moment it holds the pass lease. The
# holder is the backend holding the ranked advisory lock; its client port
# names the process (ss).
holder_port() {
	sql "SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
		  AND l.classid::bigint = (hashtext('cc-matcher')::bigint + 4294967296) % 4294967296
		  AND l.objid::bigint = (hashtext('ranked')::bigint + 4294967296) % 4294967296"
}
stopped() { [[ $(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) == T ]]; }
frozen=""
deadline=$((SECONDS + 40))
while [[ -z "$frozen" ]] && ((SECONDS < deadline)); do
	for name in R1 R2; do
		pid_var="M_${name}_PID"
		pid=${!pid_var}
		FROZEN_PID=$pid
		kill -STOP "$pid"
		for _ in $(seq 1000); do stopped "$pid" && break; sleep 0.001; done
		stopped "$pid" || fail "lease-freeze: $name (pid $pid) did not stop on SIGSTOP"
		port=$(holder_port)
		if [[ -n "$port" ]] && ss -Htnp "( sport = :$port )" | grep -q "pid=$pid,"; then
			frozen=$name t=$(now)
			break
		fi
		kill -CONT "$pid"
		FROZEN_PID=""
	done
done
[[ -n "$frozen" ]] || fail "lease-freeze: never caught a ranked matcher holding the lease in 40 s"
other=$([[ $frozen == R1 ]] && echo R2 || echo R1)
other_admin_var="${other}_ADMIN"
frozen_pid_var="M_${frozen}_PID"
before=$(passes "http://127.0.0.1:${!other_admin_var}")
recovered "lease-freeze($frozen)" "$t" 30 "(( \$(passes http://127.0.0.1:${!other_admin_var}) > $before ))"
takeover=$(since "$t")
awk -v s="$takeover" 'BEGIN { exit !(s < 5) }' ||
	fail "lease-freeze: the standby took over after $takeover s, not under 5 s (--lease-timeout-ms default)"
t2=$(now)
recovered "lease-freeze($frozen)-matching" "$t2" 30 "(( \$(accepted_since $t2 ranked) > 0 ))"
kill -CONT "${!frozen_pid_var}"
FROZEN_PID=""
frozen_admin_var="${frozen}_ADMIN"
wait_http "http://127.0.0.1:${!frozen_admin_var}/readyz" "${!frozen_pid_var}" 30
maint_after lease-freeze "$t"

# 6. A client vanishes: SIGKILL of a cc-player while some of its players sit
# in proposals (they never answer again). Its tickets must end, not live on.
# Its players are named by their enqueue keys (demo-<seed>-<index>); they
# poll and heartbeat slowly, so they are often proposed before they look.
T_LOGS+=("$T_DIR/victim.err")
vseed=$((run % 1000000 + 7))
"$BIN/cc-player" --mode=demo --api-url="$URLS" --players=12 --threads=2 --regions=r-one --seed=$vseed \
	--build="$build" --decline-percent=0 --ticket-poll-ms=4000 --heartbeat-interval-ms=4000 \
	--match-deadline-seconds=60 >"$T_DIR/victim.out" 2>"$T_DIR/victim.err" &
victim=$!
T_PIDS+=("$victim")
victim_tickets="SELECT t.id FROM tickets t JOIN idempotency_keys k ON k.player_id = t.player_id
	WHERE t.build = '$build' AND k.key LIKE 'demo-$vseed-%'"
deadline=$((SECONDS + 30))
until (($(sql "SELECT count(*) FROM tickets WHERE id IN ($victim_tickets) AND state = 'PROPOSED'") > 0)); do
	((SECONDS < deadline)) || fail "client-kill: none of the victim's tickets was proposed within 30 s"
	sleep 0.02
done
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
echo "$T_NAME: fault client-kill: $(sql "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) n FROM tickets WHERE id IN ($victim_tickets) GROUP BY 1) x") at the kill"

# Stop the players: each loop finishes its round.
touch "$T_DIR/stop"
t_stop=$(now)
for pid in "${LOOP_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
stop_s=$SECONDS # the last round has ended: no match is made after this

# ---- the load's matches: reclaimed by the stalled sweep ----------------------------
# Nothing allocates them; each must end FAILED "stalled" by cc-maintenance (the only writer here
# that fails a match without a server), nobody rated, within the stalled window (+ 20 s) of the
# end of the last round, once cc-maintenance runs with the short window (restarted: a stop and a
# start of a replica, which it must take in its stride too).
kill "$MT_PID"
wait "$MT_PID" 2>/dev/null || true
maint $STALLED
open_matches="SELECT count(*) FROM matches WHERE state NOT IN ('COMPLETED', 'FAILED')"
deadline=$((stop_s + STALLED + 20))
until [[ $(sql "$open_matches") == 0 ]]; do
	((SECONDS < deadline)) || fail "matches still open $((SECONDS - stop_s)) s after the last round ended (stalled window $STALLED s): $(sql "SELECT string_agg(state || ' ' || n || ' (oldest ' || age || ' s)', ', ') FROM (SELECT state, count(*) n, round(extract(epoch FROM now() - min(updated_at))) age FROM matches WHERE state NOT IN ('COMPLETED', 'FAILED') GROUP BY 1) x")"
	sleep 0.2
done
reclaimed=$(since "$t_stop")
load_matches=$(sql "SELECT count(*) FROM matches WHERE build = '$build'")
((load_matches > 0)) || fail "the load made no match: nothing for the stalled sweep to reclaim"
not_stalled="SELECT count(*) FROM matches m WHERE m.build = '$build' AND NOT (m.state = 'FAILED' AND EXISTS (SELECT 1 FROM outbox o
	WHERE o.event = 'match.failed' AND o.resource_id = m.id AND o.payload ->> 'reason' = 'stalled'))"
expect_eq "matches of the load not FAILED 'stalled'" 0 "$(sql "$not_stalled")"
expect_eq "rating changes of the load's matches" 0 \
	"$(sql "SELECT count(*) FROM rating_changes r JOIN matches m ON m.id = r.match_id WHERE m.build = '$build'")"
RECOVERY+=("stalled-reclaim $load_matches matches FAILED stalled, the last $reclaimed s after the players stopped")
echo "$T_NAME: the stalled sweep failed all $load_matches matches of the load; none open $reclaimed s after the players stopped"

# ---- the game-server faults: cc-allocator with two pool processes -------------------------
cat >"$T_DIR/gameserver.conf" <<CONF
match-seconds = 30
warmup-seconds = 0
overtime-max-seconds = 1
goal-pause-seconds = 1
connect-window-seconds = 8
end-linger-ms = 300
heartbeat-interval-ms = 500
result-timeout-ms = 10000
CONF
# Two consecutive free ports (--local-port-min..max).
for _ in $(seq 50); do
	gp=$(free_port)
	[[ -z $(ss -Htan "( sport = :$((gp + 1)) )" 2>/dev/null) ]] && break
done
GAME_PORTS=("$gp" "$((gp + 1))")
mkdir -p "$T_DIR/state"
for p in "${GAME_PORTS[@]}"; do T_LOGS+=("$T_DIR/state/local-$p.log"); done
start_pool "$T_DIR/allocator.log" "${GAME_PORTS[0]}" "${GAME_PORTS[1]}" cc-allocator
for p in "${GAME_PORTS[@]}"; do
	wait_until "cc-supervisor on $p waiting for an allocation" 20 \
		"grep -q '\"service\":\"cc-supervisor\".*\"event\":\"waiting\"' '$T_DIR/state/local-$p.log' 2>/dev/null"
done
running "$ALLOC_PID" || fail "cc-allocator exited: $(tail -n 5 "$ALLOC_LOG")"
mstate() { sql "SELECT state FROM matches WHERE id = '$1'"; }
port_of() { sql "SELECT g.port FROM allocations a JOIN game_servers g ON g.id = a.server_id WHERE a.match_id = '$1'"; }
server_state() { sql "SELECT state FROM game_servers WHERE port = $1"; }
connected() { sql "SELECT count(*) FROM assignments WHERE match_id = '$1' AND connection_generation > 0"; }

# fault_match NAME: a ranked 1v1 of two fresh players (rated 1500/350, 0 games), both connected
# with gsclient, IN_PROGRESS. Sets <NAME>_MATCH, <NAME>_PLAYERS, <NAME>_TOKENS, <NAME>_PORT, <NAME>_GS.
RATED=1500/350/0.06/0
fault_match() {
	local name=$1 i deadline p
	local -a gs=()
	make_match "$name-$run" ranked 1 "$RATED" "$RATED"
	for i in 0 1; do
		deadline=$((SECONDS + 30))
		while :; do
			http GET "$A_URL/v1/matches/$MATCH/assignment" "${TOKENS[$i]}"
			[[ $STATUS == 200 ]] && break
			[[ $STATUS == 409 || $STATUS == 503 ]] || fail "$name: assignment of player $i: HTTP $STATUS $BODY"
			((SECONDS < deadline)) || fail "$name: no assignment for player $i within 30 s: HTTP $STATUS $BODY"
			sleep 0.1
		done
		p=$(jq -r .port <<<"$BODY")
		[[ $p == "${GAME_PORTS[0]}" || $p == "${GAME_PORTS[1]}" ]] || fail "$name: player $i assigned port $p, not the pool's"
		jq -r .join_token <<<"$BODY" >"$T_DIR/$name-$i.token"
		start_bg "$T_DIR/$name-$i.out" "$GSCLIENT" play --port="$p" --token="$T_DIR/$name-$i.token" --max-seconds=60
		gs+=("$LAST_PID")
	done
	printf -v "${name}_MATCH" '%s' "$MATCH"
	printf -v "${name}_PORT" '%s' "$p"
	printf -v "${name}_PLAYERS" '%s' "${PLAYERS[*]}"
	printf -v "${name}_TOKENS" '%s' "${TOKENS[*]}"
	printf -v "${name}_GS" '%s' "${gs[*]}"
}
# settled NAME T0 DEADLINE: the match FAILED within DEADLINE s of T0 with no result and nobody rated,
# its server IDLE within 10 s more, both players able to queue again (201, then cancelled). Recorded.
settled() {
	local name=$1 t0=$2 limit=$3 m_var="${1}_MATCH" port_var="${1}_PORT" players_var="${1}_PLAYERS"
	local tokens_var="${1}_TOKENS" gs_var="${1}_GS" m failed_in idle_in p i ticket revision
	m=${!m_var}
	# The times are PostgreSQL's (same clock): when the rows changed, not when this shell looked
	# (the two kills are settled one after the other).
	wait_until "$name: match $m FAILED" "$limit" '[[ $(mstate "$m") == FAILED ]]'
	failed_in=$(sql "SELECT round((extract(epoch FROM updated_at) - $t0)::numeric, 2) FROM matches WHERE id = '$m'")
	awk -v a="$failed_in" -v l="$limit" 'BEGIN { exit !(a <= l) }' || fail "$name: match $m FAILED $failed_in s after the kill, past $limit s"
	expect_eq "$name: match_results of $m" 0 "$(sql "SELECT count(*) FROM match_results WHERE match_id = '$m'")"
	expect_eq "$name: rating_changes of $m" 0 "$(sql "SELECT count(*) FROM rating_changes WHERE match_id = '$m'")"
	for p in ${!players_var}; do
		expect_eq "$name: ranked games and deviation of $p" "0|350" \
			"$(sql "SELECT games, deviation FROM ratings WHERE player_id = '$p' AND playlist = 'ranked'")"
	done
	wait_until "$name: game server on ${!port_var} IDLE again" 10 '[[ $(server_state "${!port_var}") == IDLE ]]'
	idle_in=$(sql "SELECT round((extract(epoch FROM updated_at) - $t0)::numeric, 2) FROM game_servers WHERE port = ${!port_var}")
	awk -v a="$idle_in" -v f="$failed_in" 'BEGIN { exit !(a - f <= 10) }' || fail "$name: server ${!port_var} IDLE $idle_in s after the kill, more than 10 s after the match FAILED ($failed_in s)"
	for p in ${!gs_var}; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	local -a toks=(${!tokens_var})
	for i in 0 1; do
		http POST "$A_URL/v1/queue" "${toks[$i]}" \
			"{\"playlist\":\"ranked\",\"protocol_version\":1,\"build\":\"$name-again-$run\"}" -H "Idempotency-Key: $name-again-$i"
		expect_http "$name: player $i enqueues again" 201
		ticket=$(jq -r .id <<<"$BODY") revision=$(jq -r .revision <<<"$BODY")
		http POST "$A_URL/v1/queue/$ticket/cancel" "${toks[$i]}" "{\"revision\":$revision}"
		expect_http "$name: player $i cancels its new ticket" 200
	done
	RECOVERY+=("$name FAILED in $failed_in s (deadline $limit s), server IDLE in $idle_in s, players queue again")
	echo "$T_NAME: fault $name: match $m FAILED in $failed_in s, server ${!port_var} IDLE in $idle_in s, nobody rated, players queue again"
}

fault_match gskill
fault_match supkill
[[ $gskill_PORT != "$supkill_PORT" ]] || fail "both fault matches on port $gskill_PORT: the pool has two servers"
for name in gskill supkill; do
	m_var="${name}_MATCH"
	wait_until "$name: match ${!m_var} IN_PROGRESS with both players connected" 30 \
		"[[ \$(mstate ${!m_var}) == IN_PROGRESS && \$(connected ${!m_var}) == 2 ]]"
done
gs_pid=$(grep '"service":"cc-supervisor".*"event":"child_started"' "$T_DIR/state/local-$gskill_PORT.log" |
	grep "$gskill_MATCH" | tail -1 | jq -r .pid)
[[ $gs_pid =~ ^[0-9]+$ ]] && running "$gs_pid" || fail "gameserver-kill: no running cc-gameserver for $gskill_MATCH ('$gs_pid')"
sup_pid=$(grep '"event":"child_started"' "$ALLOC_LOG" | jq -r "select(.port == $supkill_PORT) | .pid" | tail -1)
[[ $sup_pid =~ ^[0-9]+$ ]] && running "$sup_pid" || fail "supervisor-kill: no running cc-supervisor on $supkill_PORT ('$sup_pid')"
SUP_LOG="$T_DIR/state/local-$supkill_PORT.log"
gs_started_before=$(grep -c '"service":"cc-gameserver".*"event":"started"' "$SUP_LOG" || true)
t_gs=$(now)
kill -9 "$gs_pid"
t_sup=$(now)
kill -9 "$sup_pid"
settled gskill "$t_gs" 5
settled supkill "$t_sup" 6
grep -q "\"event\":\"match_past_registration\".*\"match_id\":\"$supkill_MATCH\"" "$SUP_LOG" ||
	fail "supervisor-kill: the restarted supervisor never said match_past_registration for $supkill_MATCH"
reason=$(sql "SELECT shutdown_reason FROM allocations WHERE match_id = '$supkill_MATCH'")
[[ $reason == server_lost || $reason == server_silent ]] ||
	fail "supervisor-kill: the allocation's shutdown reason: expected server_lost (or server_silent, the sweep first), saw '$reason'"
# The restarted supervisor's game server was killed at its registration: it never reached a kickoff.
gs_after=$(grep '"service":"cc-gameserver"' "$SUP_LOG" | awk -v n="$gs_started_before" '/"event":"started"/ { k++ } k > n')
grep -q '"event":"kickoff"' <<<"$gs_after" && fail "supervisor-kill: a second cc-gameserver played the match: $(grep '"event":"kickoff"' <<<"$gs_after" | head -1)"
echo "$T_NAME: supervisor-kill: released with reason $reason"
running "$MT_PID" || fail "cc-maintenance exited: $(tail -n 5 "$MT_LOG")"

# The recovery window: the stalled window, a proposal window (10 s) plus a ticket TTL after the
# last round ended, waited for as a state. Nobody is left to answer or heartbeat.
t=$t_stop
live="SELECT count(*) FROM tickets WHERE state = 'PROPOSED' OR (state = 'QUEUED' AND expires_at > now())"
deadline=$((stop_s + STALLED + 10 + TTL + 15))
until [[ $(sql "$live") == 0 ]]; do
	((SECONDS < deadline)) || fail "tickets live after every owner has gone ($(since "$t") s after the players stopped): $(sql "SELECT string_agg(t.id || ' ' || t.state || ' rev ' || t.revision || ' proposals ' ||
		(SELECT count(*) FROM proposal_participants pp WHERE pp.ticket_id = t.id), '; ') FROM tickets t
		WHERE state = 'PROPOSED' OR (state = 'QUEUED' AND expires_at > now())")"
	sleep 0.2
done
echo "$T_NAME: no live ticket $(since "$t") s after the last player stopped"
audit=$(psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$audit" ]] || fail "audit.sql after the faults: $audit"
# One lock order on proposals and tickets (libcommon/store/README.md): no
# deadlock under load either, across the restart (the log file goes on).
deadlocks=$(tail -n "+$pg_log_from" "$CC_TEST_PG_LOG" | grep -A3 'deadlock detected' || true)
[[ -z "$deadlocks" ]] || fail "PostgreSQL detected deadlocks under the faults:
$deadlocks"

# Every round's summary: 0 errors, exit 0.
rounds=0 errors=0 retries=0 matched=0
for ((k = 1; k <= LOOPS; k++)); do
	while read -r line; do
		if [[ "$line" =~ ^round\ [0-9]+\ exit\ ([0-9]+)$ ]]; then
			[[ ${BASH_REMATCH[1]} == 0 ]] || fail "players loop $k: a round exited ${BASH_REMATCH[1]}: $(grep -B1 "$line" "$T_DIR/players-$k.out" | head -n 1)"
			rounds=$((rounds + 1))
		elif [[ "$line" =~ \ ([0-9]+)\ players\ matched,.*\ ([0-9]+)\ errors,\ ([0-9]+)\ retries, ]]; then
			matched=$((matched + BASH_REMATCH[1])) errors=$((errors + BASH_REMATCH[2])) retries=$((retries + BASH_REMATCH[3]))
		else
			fail "players loop $k: unexpected output line: $line"
		fi
	done <"$T_DIR/players-$k.out"
done
expect_eq "player errors over $rounds rounds" 0 "$errors"
((rounds >= 2 * LOOPS)) || fail "only $rounds rounds of players ran"
for r in "${RECOVERY[@]}"; do echo "$T_NAME: recovery: $r"; done
pass "6 faults under $rounds rounds of players ($matched matched, $retries retries, 0 errors), then the game-server and supervisor kills; every load match reclaimed by the stalled sweep; audit clean; no live ticket of a gone owner; lease takeover $takeover s"
