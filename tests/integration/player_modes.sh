#!/usr/bin/env bash
# cc-player against a real cc-testkit-api: the demo's summary line matches
# what the database holds afterwards; the heartbeat bench runs closed and
# open loop with no errors and prints its key=value report; a second bench
# with the same seed reuses its players; and an unreachable API is reported
# as errors with a non-zero exit, not as a clean run.
source "$(dirname "$0")/lib.sh"

port=$(free_port); admin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/api.log" \
	"$BIN/cc-testkit-api" --port="$port" --admin-port="$admin" --regions=r-one,r-two --ticket-ttl-seconds=600
pid=$LAST_PID
wait_http "http://127.0.0.1:$admin/readyz" "$pid" 20
api="http://127.0.0.1:$port"
run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/demo.err" "$T_DIR/bench.err")

# 1. Demo: 12 players, 3 heartbeats each, every 4th cancels.
"$BIN/cc-player" --mode=demo --api-url="$api" --players=12 --threads=4 --regions=r-one,r-two \
	--seed="$run" --build="itest-$run" >"$T_DIR/demo.out" 2>"$T_DIR/demo.err" ||
	fail "demo exited non-zero: $(cat "$T_DIR/demo.out")"
expect_eq "demo stdout lines" 1 "$(wc -l <"$T_DIR/demo.out")"
summary=$(cat "$T_DIR/demo.out")
[[ "$summary" =~ ^demo:\ 12\ players,\ 12\ logged\ in,\ 24\ probes,\ 12\ queued,\ 36\ heartbeats,\ 3\ cancelled,\ 0\ errors,\ [0-9]+\ retries,\ p50\ [0-9.]+\ ms,\ p99\ [0-9.]+\ ms$ ]] ||
	fail "demo summary: $summary"
# The tickets of this run (build itest-$run): 9 QUEUED at revision 4 (created + 3
# heartbeats), 3 CANCELLED at revision 5, each with RTTs for both regions.
seen=$(psql -qAtX "$CC_TEST_PG_DSN" -c "SELECT state, revision, count(*) FROM tickets WHERE build = 'itest-$run'
	AND predicted_rtt ? 'r-one' AND predicted_rtt ? 'r-two' GROUP BY 1, 2 ORDER BY 1" | tr '\n' ' ')
expect_eq "tickets in the database after the demo" "CANCELLED|5|3 QUEUED|4|9 " "$seen"
pass "demo: '$summary' and the database agrees"

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

# 4. Nothing listening: errors, exit 1, summary still printed.
rc=0
"$BIN/cc-player" --mode=demo --api-url="http://127.0.0.1:$(free_port)" --players=2 --threads=1 --timeout-ms=500 \
	>"$T_DIR/down.out" 2>"$T_DIR/down.err" || rc=$?
expect_eq "demo against a closed port: exit status" 1 "$rc"
grep -q ' 2 errors' "$T_DIR/down.out" || fail "demo against a closed port: $(cat "$T_DIR/down.out")"
pass "unreachable API: exit 1, '$(cat "$T_DIR/down.out")'"
