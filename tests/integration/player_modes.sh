#!/usr/bin/env bash
# cc-player against a real cc-testkit-api and two cc-matchers (casual,
# ranked), all on the harness Redis: the demo's summary line matches what
# the database holds afterwards (matches, matched and cancelled tickets,
# proposals, DECLINE penalties, requeues) and the audit query finds no
# violation; the heartbeat bench runs closed and open loop with no errors
# and prints its key=value report; a second bench with the same seed reuses
# its players; and an unreachable API is reported as errors with a non-zero
# exit, not as a clean run.
source "$(dirname "$0")/lib.sh"

redis=(--redis-host="$CC_TEST_REDIS_HOST" --redis-port="$CC_TEST_REDIS_PORT")
port=$(free_port); admin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/api.log" \
	"$BIN/cc-testkit-api" --port="$port" --admin-port="$admin" --regions=r-one,r-two --ticket-ttl-seconds=600 "${redis[@]}" \
	--rate-login-per-address=0 --rate-probe-per-address=0 --rate-enqueue-per-address=0 # the benches log in 400 players from one address
pid=$LAST_PID
wait_http "http://127.0.0.1:$admin/readyz" "$pid" 20
api="http://127.0.0.1:$port"
run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/demo.err" "$T_DIR/bench.err")

matchers=()
for playlist in casual ranked; do
	madmin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-$playlist.log" "$BIN/cc-matcher" \
		--playlist="$playlist" --admin-port="$madmin" --poll-interval-ms=100 "${redis[@]}"
	matchers+=("$LAST_PID")
	wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
done

# 1. Demo: 24 fresh players (names from $run), 12 casual (2 matches of 6)
# and 12 ranked (6 matches of 2). The decision seed is fixed, so the same
# players decline every time: 15% of first proposals, at least one.
"$BIN/cc-player" --mode=demo --api-url="$api" --players=24 --threads=4 --regions=r-one,r-two \
	--ranked-percent=50 --decline-percent=15 --decision-seed=3 --seed="$run" --build="itest-$run" \
	--match-deadline-seconds=20 >"$T_DIR/demo.out" 2>"$T_DIR/demo.err" ||
	fail "demo exited non-zero: $(cat "$T_DIR/demo.out")"
expect_eq "demo stdout lines" 1 "$(wc -l <"$T_DIR/demo.out")"
summary=$(cat "$T_DIR/demo.out")
n='([0-9]+)'
[[ "$summary" =~ ^demo:\ 24\ players,\ 24\ logged\ in,\ $n\ probes,\ 24\ queued,\ $n\ proposals\ seen,\ $n\ accepted\ matches\ \($n\ casual,\ $n\ ranked\),\ $n\ players\ matched,\ $n\ declined,\ $n\ requeued,\ $n\ gave\ up,\ $n\ heartbeats,\ 0\ errors,\ $n\ retries,\ match\ wait\ p50\ [0-9.]+\ s\ p95\ [0-9.]+\ s,\ api\ p50\ [0-9.]+\ ms\ p99\ [0-9.]+\ ms(;\ events=stream:[0-9]+\ poll:[0-9]+\ .*)?$ ]] ||
	fail "demo summary: $summary"
probes=${BASH_REMATCH[1]} proposals=${BASH_REMATCH[2]} matches=${BASH_REMATCH[3]} casual=${BASH_REMATCH[4]}
ranked=${BASH_REMATCH[5]} matched=${BASH_REMATCH[6]} declined=${BASH_REMATCH[7]} requeued=${BASH_REMATCH[8]}
gave_up=${BASH_REMATCH[9]}
for m in "${matchers[@]}"; do kill -0 "$m" 2>/dev/null || fail "a cc-matcher exited during the demo"; done
((probes >= 48)) || fail "demo: $probes probes, expected at least 2 per player"
((declined >= 1)) || fail "demo: decision seed 3 at 15% should decline at least one proposal: $summary"
((matches == casual + ranked && matches >= 1)) || fail "demo: matches do not add up: $summary"
((matched + declined + gave_up == 24)) || fail "demo: every player must end matched, declined or given up: $summary"

# The database of this run (build itest-$run) must tell the same story.
b="build = 'itest-$run'"
expect_eq "tickets by state (MATCHED = players matched, CANCELLED = declined + gave up)" \
	"CANCELLED|$((declined + gave_up)) MATCHED|$matched " \
	"$(sql "SELECT state, count(*) FROM tickets WHERE $b GROUP BY 1 ORDER BY 1" | tr '\n' ' ')"
expect_eq "tickets with RTTs for both regions" 24 \
	"$(sql "SELECT count(*) FROM tickets WHERE $b AND predicted_rtt ? 'r-one' AND predicted_rtt ? 'r-two'")"
expect_eq "matches: casual, ranked, not ALLOCATING" "$casual|$ranked|0" \
	"$(sql "SELECT count(*) FILTER (WHERE playlist = 'casual'), count(*) FILTER (WHERE playlist = 'ranked'),
		count(*) FILTER (WHERE state <> 'ALLOCATING') FROM matches WHERE $b")"
expect_eq "match players = MATCHED tickets, each in its own match" "$matched|$matched" \
	"$(sql "SELECT count(*), count(*) FILTER (WHERE t.state = 'MATCHED' AND t.match_id = mp.match_id)
		FROM match_players mp JOIN matches m ON m.id = mp.match_id JOIN tickets t ON t.id = mp.ticket_id WHERE m.$b")"
expect_eq "proposals: all (= seen), ACCEPTED (= matches), DECLINED (= declined), other (open, expired)" \
	"$proposals|$matches|$declined|0" \
	"$(sql "SELECT count(*), count(*) FILTER (WHERE state = 'ACCEPTED'), count(*) FILTER (WHERE state = 'DECLINED'),
		count(*) FILTER (WHERE state NOT IN ('ACCEPTED', 'DECLINED')) FROM proposals WHERE $b")"
expect_eq "penalties of this run: DECLINE (= declined), other kinds" "$declined|0" \
	"$(sql "SELECT count(*) FILTER (WHERE pe.kind = 'DECLINE'), count(*) FILTER (WHERE pe.kind <> 'DECLINE')
		FROM penalties pe JOIN proposals p ON p.id = pe.source_id WHERE p.$b")"
expect_eq "requeues (ticket.requeued outbox rows)" "$requeued" \
	"$(sql "SELECT count(*) FROM outbox o JOIN tickets t ON t.id = o.resource_id WHERE o.event = 'ticket.requeued' AND t.$b")"
audit=$(psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" -f "$(dirname "$0")/audit.sql")
[[ -z "$audit" ]] || fail "audit query after the demo found violations: $audit"
pass "demo: '$summary' and the database agrees; the audit query is clean"
# The bench's queued players are no matcher's business: stop the matchers first.
for m in "${matchers[@]}"; do kill "$m"; wait "$m" 2>/dev/null || true; done

# 2. Bench, closed loop, then again with the same players. 200 players, not
# fewer: on a table of a few pages SERIALIZABLE promotes row predicate locks
# to page locks and heartbeats of different players start to conflict (see
# the bench notes in scripts/bench.sh).
bench() {
	"$BIN/cc-player" --mode=heartbeat-bench --api-url="$api" --players=200 --threads=4 --regions=r-one \
		--seed="$run" --build="bench-$run" --duration-seconds=1 --warmup-seconds=0 "$@" \
		>"$T_DIR/bench.out" 2>"$T_DIR/bench.err" || fail "bench $* exited non-zero: $(cat "$T_DIR/bench.out")"
	for key in throughput_rps latency_p50_ms latency_p99_ms requests errors setup_errors; do
		grep -qE "^$key=[0-9.]+$" "$T_DIR/bench.out" || fail "bench $*: no $key= line in: $(cat "$T_DIR/bench.out")"
	done
	expect_eq "bench $* errors" 0 "$(sed -n 's/^errors=//p' "$T_DIR/bench.out")"
	expect_eq "bench $* setup_errors" 0 "$(sed -n 's/^setup_errors=//p' "$T_DIR/bench.out")"
	requests=$(sed -n 's/^requests=//p' "$T_DIR/bench.out")
}
bench
[[ $requests -gt 0 ]] || fail "closed-loop bench sent no requests"
first=$requests
bench
total=$(psql -qAtX "$CC_TEST_PG_DSN" -c "SELECT count(*), sum(revision - 1) FROM tickets WHERE build = 'bench-$run'")
# 200 tickets, reused by the second run; every measured heartbeat is one revision.
expect_eq "bench tickets and heartbeats" "200|$((first + requests))" "$total"
pass "closed loop: $first then $requests heartbeats on the same 200 tickets, revisions agree"

# 3. Open loop at 200 req/s for 1 s: paced, not flat out.
bench --rate=200
[[ $requests -ge 150 && $requests -le 210 ]] || fail "open loop at 200/s for 1 s sent $requests requests"
pass "open loop: $requests requests in 1 s at --rate=200"

# 4. Nothing listening: each login is retried for the (short) horizon, then
# an error; exit 1, summary still printed, retries counted apart.
rc=0
"$BIN/cc-player" --mode=demo --api-url="http://127.0.0.1:$(free_port)" --players=2 --threads=1 --timeout-ms=500 \
	--retry-horizon-ms=300 >"$T_DIR/down.out" 2>"$T_DIR/down.err" || rc=$?
expect_eq "demo against a closed port: exit status" 1 "$rc"
[[ $(cat "$T_DIR/down.out") =~ \ 2\ errors,\ ([0-9]+)\ retries ]] && ((BASH_REMATCH[1] >= 2)) ||
	fail "demo against a closed port: expected 2 errors after retries: $(cat "$T_DIR/down.out")"
grep -q 'gave up after' "$T_DIR/down.err" || fail "demo against a closed port: no 'gave up after' in the log"
pass "unreachable API: exit 1, '$(cat "$T_DIR/down.out")'"

# 5. A bad --api-url list is refused at start-up, naming the flag.
rc=0
"$BIN/cc-player" --mode=demo --api-url="http://127.0.0.1:1,ftp://x" >"$T_DIR/bad.out" 2>"$T_DIR/bad.err" || rc=$?
expect_eq "demo with a bad --api-url list: exit status" 2 "$rc"
grep -q -- '--api-url: expected 1-8 comma-separated' "$T_DIR/bad.err" || fail "bad --api-url: $(cat "$T_DIR/bad.err")"
pass "a bad --api-url list is refused at start-up"
