# lib.sh - sourced by the integration scripts. Failures say what ran, what
# was expected and what was seen, and show the logs before anything is
# cleaned up.
set -Eeuo pipefail

TOP=${CC_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BIN="$TOP/build/bin"
T_NAME=$(basename "$0")
T_DIR=$(mktemp -d "${CC_TEST_TMP:-${TMPDIR:-/tmp}}/${T_NAME%.sh}.XXXXXX")
T_PIDS=()
T_LOGS=()

t_cleanup() {
	local rc=$?
	for pid in "${T_PIDS[@]:-}"; do
		[[ -n "$pid" ]] || continue
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${T_PIDS[@]:-}"; do
		[[ -n "$pid" ]] || continue
		wait "$pid" 2>/dev/null || true
	done
	if [[ $rc -ne 0 ]]; then
		for log in "${T_LOGS[@]:-}"; do
			[[ -n "$log" && -f "$log" ]] || continue
			echo "---- $T_NAME: $log (last 40 lines) ----"
			tail -n 40 "$log"
		done
	fi
	rm -rf "$T_DIR"
	exit $rc
}
trap t_cleanup EXIT
trap 'echo "$T_NAME: FAILED at line $LINENO: $BASH_COMMAND (exit $?)"' ERR

# fail MESSAGE: stop the test with a verdict.
fail() { echo "$T_NAME: FAIL: $*"; exit 1; }
pass() { echo "$T_NAME: ok: $*"; }

# expect_eq WHAT EXPECTED SEEN
expect_eq() { [[ "$2" == "$3" ]] || fail "$1: expected '$2', saw '$3'"; }

# free_port: a loopback TCP port nobody listens on right now.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 30000))
		[[ -z $(ss -Htan "( sport = :$p )" 2>/dev/null) ]] && { echo "$p"; return 0; }
	done
	fail "no free port found"
}

# start_bg LOG CMD...: starts CMD in the background, remembers it for cleanup.
start_bg() {
	local log=$1; shift
	T_LOGS+=("$log")
	"$@" >"$log" 2>&1 &
	T_PIDS+=("$!")
	LAST_PID=$!
}

# wait_http URL PID SECONDS: polls until URL answers 200; fails at once if PID
# exits (broken, not slow), or after the deadline (slow), saying which.
wait_http() {
	local url=$1 pid=$2 deadline=$((SECONDS + ${3:-20}))
	while ((SECONDS < deadline)); do
		kill -0 "$pid" 2>/dev/null || fail "process $pid exited before $url answered"
		[[ $(curl -s -o /dev/null -w '%{http_code}' "$url" 2>/dev/null) == 200 ]] && return 0
		sleep 0.05
	done
	fail "$url did not answer 200 within ${3:-20}s (process $pid still running)"
}
