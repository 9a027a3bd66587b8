#!/usr/bin/env bash
# The service skeleton (sys/service.h) in the real binaries: cc-api and
# cc-matcher become ready, then stop on SIGTERM and on SIGINT with exit
# status 0, logging one "stopping" line that names the signal, within a
# deadline (their loops' naps are cut short, never waited out).
source "$(dirname "$0")/lib.sh"

# stops NAME PID SIGNAL LOG: sends SIGNAL, waits up to 20 s for the exit,
# expects status 0 and the "stopping" line.
stops() {
	local name=$1 pid=$2 sig=$3 log=$4 num rc=0 deadline=$((SECONDS + 20))
	num=$(kill -l "$sig")
	kill -s "$sig" "$pid"
	while kill -0 "$pid" 2>/dev/null; do
		((SECONDS < deadline)) || fail "$name did not exit within 20 s of SIG$sig; log: $(tail -5 "$log")"
		sleep 0.05
	done
	wait "$pid" || rc=$?
	expect_eq "$name exit status after SIG$sig" 0 "$rc"
	grep -q "\"event\":\"stopping\",\"signal\":$num" "$log" ||
		fail "$name logged no stopping line for signal $num; log: $(tail -5 "$log")"
	pass "$name: ready, then SIG$sig -> exit 0 with a stopping line"
}

for sig in TERM INT; do
	start_api "API_$sig"
	admin_var="API_${sig}_ADMIN" pid_var="API_${sig}_PID"
	wait_http "${!admin_var}/readyz" "${!pid_var}" 30
	stops cc-testkit-api "${!pid_var}" "$sig" "$T_DIR/API_$sig.log"

	admin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-$sig.log" "$BIN/cc-matcher" --playlist=casual \
		--admin-port="$admin" --poll-interval-ms=60000 --lease-timeout-ms=120000
	pid=$LAST_PID
	wait_http "http://127.0.0.1:$admin/readyz" "$pid" 30
	# A minute's poll interval: only a nap the stop cuts short lets it exit in time.
	stops cc-matcher "$pid" "$sig" "$T_DIR/matcher-$sig.log"
done
