#!/usr/bin/env bash
# cc-maintenance's alerts and metrics: k8s/prometheus/cosmic-clash-maintenance.rules.yml
# passes `promtool check rules`, and `promtool test rules` proves each alert
# fires on the series it is for and stays quiet on healthy ones; a running
# cc-maintenance serves every metric those rules and the README name, for
# every sweep, in a /metrics page `promtool check metrics` accepts; and it
# is ready once a pass reached PostgreSQL.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus; scripts/ensure-deps.sh installs it)"

rules="$TOP/k8s/prometheus/cosmic-clash-maintenance.rules.yml"
promtool check rules "$rules" >"$T_DIR/check.out" 2>&1 || fail "promtool check rules: $(cat "$T_DIR/check.out")"
(cd "$(dirname "$rules")" && promtool test rules cosmic-clash-maintenance.rules.test.yml) >"$T_DIR/test.out" 2>&1 ||
	fail "promtool test rules: $(cat "$T_DIR/test.out")"
pass "rules: $(grep -c 'alert:' "$rules") alerts checked and unit-tested"

# A database of its own: the sweeps must not settle rows other tests are using.
scratch_database maint_rules
admin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/maint.log" "$BIN/cc-maintenance" --admin-port="$admin" \
	--retention-interval-ms=200 --season-interval-ms=200
pid=$LAST_PID
wait_http "http://127.0.0.1:$admin/readyz" "$pid" 20
# Every sweep has run a pass once its last-pass gauge is there.
sweeps=$(grep -oE 'SWEEP\("[a-z_]+"' "$TOP/services/maintenance/main.c" | sed -E 's/SWEEP\("(.*)"/\1/')
deadline=$((SECONDS + 20))
for s in $sweeps; do
	until curl -s "http://127.0.0.1:$admin/metrics" | grep -q "^cosmic_clash_maintenance_last_pass_timestamp_seconds{sweep=\"$s\"}"; do
		((SECONDS < deadline)) || fail "sweep $s never completed a pass: $(grep -m3 batch_failed "$T_DIR/maint.log")"
		sleep 0.1
	done
done
curl -sf "http://127.0.0.1:$admin/metrics" >"$T_DIR/metrics" || fail "GET /metrics failed"
for m in rows_total lag_rows batch_seconds_count pass_seconds_count last_pass_timestamp_seconds; do
	for s in $sweeps; do
		grep -q "^cosmic_clash_maintenance_${m}{sweep=\"$s\"}" "$T_DIR/metrics" ||
			fail "/metrics lacks cosmic_clash_maintenance_$m for sweep $s"
	done
done
grep -q '^# TYPE cosmic_clash_maintenance_failures_total counter' "$T_DIR/metrics" || fail "failures_total not declared"
promtool check metrics <"$T_DIR/metrics" >"$T_DIR/promtool.out" 2>&1 ||
	fail "promtool check metrics refused /metrics: $(cat "$T_DIR/promtool.out")"
pass "$(wc -w <<<"$sweeps") sweeps each report rows, lag, batch and pass durations and a last pass; promtool accepts /metrics"
