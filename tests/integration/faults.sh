#!/usr/bin/env bash
# Faults under load (issue 14; the "faults under load" item of issue 13).
#
# Two cc-api replicas (A, B), cc-matcher for casual and two for ranked (one
# of them stands by: the pass lease), all on the harness Redis, and two
# loops of cc-player --mode=demo rounds (24 fresh players a round, on
# --api-url=A,B: a client behind a load balancer, failing over). Then, one
# after the other:
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
# where a service was hit, that service ready again (/readyz) without a hand
# restart; for lease-freeze, until the other replica runs a leased pass (it
# must take over within 5 s). After the players stop and one recovery
# window (a proposal window plus a ticket TTL, waited for as a state with a
# deadline):
#   - audit.sql finds nothing, and PostgreSQL logged no "deadlock detected";
#   - no ticket is live whose owner has gone: every player process has
#     exited, so no ticket may be PROPOSED, or QUEUED before its deadline;
#   - every round of players ended with 0 errors (the replica failover, the
#     retry horizon and the unsure-retry handling of cc-player leave none to
#     document), its summary says so, and every round exited 0.
# FAULTS_ROUND_PLAYERS and FAULTS_LOOPS scale the load.
source "$(dirname "$0")/lib.sh"

H="$TOP/tests/harness"
# A process left stopped (SIGSTOP) would ignore t_cleanup's SIGTERM and hang
# its wait: thaw it first, whatever failed.
FROZEN_PID=""
thaw_then_cleanup() {
	local rc=$?
	if [[ -n "$FROZEN_PID" ]]; then kill -CONT "$FROZEN_PID" 2>/dev/null || true; fi
	set +e # t_cleanup reads the status from $?: hand it over without errexit
	(exit "$rc")
	t_cleanup
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

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "$1/readyz" 2>/dev/null) == 200 ]]; }

# ---- services -----------------------------------------------------------------

# api NAME PORT ADMIN: starts cc-testkit-api on fixed ports (a restart keeps them).
api() {
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/api-$1.log" "$BIN/cc-testkit-api" \
		--port="$2" --admin-port="$3" --regions=r-one --ticket-ttl-seconds=$TTL "${redis[@]}"
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
URLS="http://127.0.0.1:$A_PORT,http://127.0.0.1:$B_PORT"
ADMINS=("http://127.0.0.1:$A_ADMIN" "http://127.0.0.1:$B_ADMIN" "http://127.0.0.1:$C1_ADMIN"
	"http://127.0.0.1:$R1_ADMIN" "http://127.0.0.1:$R2_ADMIN")

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

# 3. PostgreSQL restarted (fast): every service ready again by itself, matching again.
t=$(now)
"$H/pg-ctl.sh" restart || fail "pg-ctl.sh restart failed"
recovered pg-restart "$t" 30 all_ready "both_playlists $t"

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
t=$(now)
for pid in "${LOOP_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done

# The recovery window: a proposal window (10 s) plus a ticket TTL, waited
# for as a state. Nobody is left to answer or heartbeat.
live="SELECT count(*) FROM tickets WHERE build = '$build' AND (state = 'PROPOSED' OR (state = 'QUEUED' AND expires_at > now()))"
deadline=$((SECONDS + 10 + TTL + 15))
until [[ $(sql "$live") == 0 ]]; do
	((SECONDS < deadline)) || fail "tickets live after every owner has gone ($(since "$t") s after the players stopped): $(sql "SELECT string_agg(t.id || ' ' || t.state || ' rev ' || t.revision || ' proposals ' ||
		(SELECT count(*) FROM proposal_participants pp WHERE pp.ticket_id = t.id), '; ') FROM tickets t WHERE build = '$build'
		AND (state = 'PROPOSED' OR (state = 'QUEUED' AND expires_at > now()))")"
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
pass "6 faults under $rounds rounds of players ($matched matched, $retries retries, 0 errors); audit clean; no live ticket of a gone owner; lease takeover $takeover s"
