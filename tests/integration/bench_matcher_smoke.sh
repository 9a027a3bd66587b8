#!/usr/bin/env bash
# bench_matcher_smoke.sh - scripts/bench-matcher.sh, scaled down, on its own
# scratch database: the benchmarks and the queue simulation keep running as
# the schema and the claim evolve, and what they check holds: the candidate
# read uses tickets_queued_by_age, racing matcher loops leave no audit
# violation (tests/integration/audit.sql), the pgbench references propose
# 6 tickets per committed claim (the batched one per proposal of a batch), and the simulation is deterministic for a
# seed and prints a recommendation. Numbers are not judged here: a loaded
# test machine says nothing about speed.
source "$(dirname "$0")/lib.sh"
: "${CC_TEST_PG_ADMIN_DSN:?run under tests/harness/with-services.sh}"

# The bench binaries are not part of tests-build; build them (a no-op when current).
make -C "$TOP" -s --no-print-directory build/bench/matcher build/bench/queue_sim ||
	fail "could not build the bench binaries"

psql=$CC_TEST_PG_BIN/psql
db="bench_smoke_$$"
dsn="${CC_TEST_PG_ADMIN_DSN%/*}/$db"
# Drops the scratch database, then lib.sh's cleanup with the test's own exit status.
drop_db() {
	local rc=$?
	trap - ERR
	"$psql" -qAtX "$CC_TEST_PG_ADMIN_DSN" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	(exit "$rc")
	t_cleanup
}
trap drop_db EXIT
"$psql" -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_ADMIN_DSN" -c "CREATE DATABASE $db" >/dev/null
COSMIC_CLASH_DATABASE_URL="$dsn" COSMIC_CLASH_MIGRATIONS_DIR="$TOP/migrations" "$BIN/cc-migrate" up \
	>"$T_DIR/migrate.log" 2>&1 || fail "cc-migrate up: $(cat "$T_DIR/migrate.log")"

out=$T_DIR/bench.out
T_LOGS+=("$out")
rc=0
# Its summary rows go to a table of its own, not build/bench-results/summary.tsv.
CC_TEST_PG_DSN="$dsn" CC_BENCH_DEPTHS="1000 3000" CC_BENCH_TICKETS=1200 CC_BENCH_SECONDS=1 \
	CC_BENCH_MATCHERS="1 3" BENCH_SUMMARY="$T_DIR/summary.tsv" timeout 600 "$TOP/scripts/bench-matcher.sh" >"$out" 2>&1 || rc=$?
# Its own checks (plans, audits, the reference's work) fail it; show why, minus plans and tables.
[[ $rc -eq 0 ]] || fail "bench-matcher.sh exited $rc:$(grep -v -e '^    |' -e '^ *[0-9]' "$out" | sed 's/^/\n    /')"

for want in "formation pass depth=3000 casual: " "formation pass depth=3000 ranked: " \
	"formation pass depth=3000 ranked sweep: " "pass cpu depth=3000 ranked, sweep beside greedy (same run): " \
	"proposals/s claim loops=1 (no lease): " "proposals/s claim loops=3 (no lease): " \
	"proposals/s cc-matcher binary, 1 replica at its defaults: " \
	"proposals/s cc-matcher binary, 2 replicas at its defaults: " "recommendation (ranked): --tolerance-start="; do
	grep -qF -- "$want" "$out" || fail "no line starting '$want' in the output:$(sed 's/^/\n    /' "$out")"
done
expect_eq "reads planned on tickets_queued_by_age" 6 "$(grep -c 'uses tickets_queued_by_age: yes' "$out")"
expect_eq "audits (after the last level) found clean" 1 "$(grep -c '^proposals/s claim loops=3 (no lease): .*audit clean' "$out")"
grep -q 'pgbench same txn: [1-9]' "$out" || fail "the pgbench reference measured nothing: $(grep pgbench "$out")"
grep -q 'pgbench same batched statement, [1-9][0-9]* proposals a transaction, 1 client: [1-9]' "$out" ||
	fail "the batched pgbench reference measured nothing: $(grep 'cc-matcher binary' "$out")"
# make bench's summary rows (scripts/bench-summary.sh print): each target's figure, once.
for want in "one matching pass, 3000 queued (CPU)" "pass CPU, sweep rule (default), 3000 queued" \
	"proposals/s, one cc-matcher at its defaults" "proposals/s, one cc-matcher vs the same SQL"; do
	expect_eq "summary rows '$want'" 1 "$(awk -F'\t' -v f="$want" 'NF == 5 && $1 == f && $2 ~ /^[0-9]/' "$T_DIR/summary.tsv" | wc -l)"
done
pass "bench-matcher.sh: every figure printed, reads indexed, audits clean, summary rows recorded"

# Same seed, same output; another seed, another one.
sim() { "$TOP/build/bench/queue_sim" --once --hours=1 --rate=1 "$@"; }
[[ "$(sim --seed=7)" == "$(sim --seed=7)" ]] || fail "queue_sim --seed=7 printed two different results"
[[ "$(sim --seed=7)" != "$(sim --seed=8)" ]] || fail "queue_sim --seed=7 and --seed=8 printed the same result"
pass "queue_sim is deterministic for a seed"
