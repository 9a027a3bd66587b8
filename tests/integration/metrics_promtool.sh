#!/usr/bin/env bash
# A running cc-api serves /healthz, /readyz and a /metrics page that
# `promtool check metrics` accepts, after it has counted real requests.
source "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus; scripts/ensure-deps.sh installs it)"

port=$(free_port); admin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/api.log" \
	"$BIN/cc-api" --port="$port" --admin-port="$admin"
pid=$LAST_PID
wait_http "http://127.0.0.1:$admin/healthz" "$pid" 20

ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin/readyz")
expect_eq "/readyz status with the database up" 200 "$ready"
for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port/no/such/route"; done

curl -sf "http://127.0.0.1:$admin/metrics" >"$T_DIR/metrics" || fail "GET /metrics failed"
grep -q '^cosmic_clash_http_requests_total{.*status="404"' "$T_DIR/metrics" ||
	fail "the 404s were not counted; /metrics was: $(cat "$T_DIR/metrics")"
promtool check metrics <"$T_DIR/metrics" >"$T_DIR/promtool.out" 2>&1 ||
	fail "promtool check metrics refused /metrics: $(cat "$T_DIR/promtool.out")"
pass "/metrics ($(wc -l <"$T_DIR/metrics") lines) passes promtool check metrics"
