# services.sh - start, wait for, and stop the background services of a
# script (demo.sh, bench.sh, bench-matcher.sh). Source it after defining
# LOGS (the directory for each service's log) and say() (prints a message).
#
# start_service NAME CMD...   runs CMD in the background, output appended to
#                             $LOGS/NAME.log; sets LAST_PID
# wait_http NAME URL SECONDS  until URL answers 200; fails at once when the
#                             last service started exits (broken, not slow),
#                             or at the deadline (slow), saying which
# stop_services               stops every service, newest first: SIGTERM,
#                             up to 10 s, then SIGKILL
# dump_logs LINES             prints the last LINES lines of every log
# trap_services_exit LINES    on any exit: stop every service and, when the
#                             script failed, print LINES of each log first

SERVICE_NAMES=()
SERVICE_PIDS=()

start_service() {
	local name=$1; shift
	"$@" >>"$LOGS/$name.log" 2>&1 &
	LAST_PID=$!
	SERVICE_NAMES+=("$name")
	SERVICE_PIDS+=("$LAST_PID")
	say "started $name (pid $LAST_PID, log $LOGS/$name.log)"
}

wait_http() {
	local name=$1 url=$2 deadline=$((SECONDS + $3)) pid
	pid=${SERVICE_PIDS[${#SERVICE_PIDS[@]} - 1]}
	while ((SECONDS < deadline)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			say "$name exited before $url answered"
			return 1
		fi
		[[ $(curl -s -o /dev/null -w '%{http_code}' "$url" 2>/dev/null) == 200 ]] && return 0
		sleep 0.05
	done
	say "$name: $url did not answer 200 within $3 s (still running)"
	return 1
}

stop_services() {
	local i pid name
	for ((i = ${#SERVICE_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${SERVICE_PIDS[$i]} name=${SERVICE_NAMES[$i]}
		kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; continue; }
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "$name (pid $pid) ignored SIGTERM for 10 s; killing it"
			kill -9 "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	done
	SERVICE_PIDS=()
	SERVICE_NAMES=()
}

dump_logs() {
	local log
	for log in "$LOGS"/*.log; do
		[[ -f "$log" ]] || continue
		echo "---- $log (last $1 lines) ----" >&2
		tail -n "$1" "$log" >&2
	done
}

trap_services_exit() {
	SERVICES_LOG_LINES=$1
	trap services_on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

services_on_exit() {
	local rc=$?
	trap - EXIT
	if [[ $rc -ne 0 ]]; then
		dump_logs "$SERVICES_LOG_LINES"
		say "FAILED (exit $rc); logs in $LOGS"
	fi
	stop_services
	exit "$rc"
}
