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

# t_cleanup [STATUS]: the EXIT trap. A script with a trap of its own passes
# its saved $? as STATUS: re-raising it with `(exit $status)` under set -e
# would end that trap before t_cleanup ran, leaving every process behind.
t_cleanup() {
	local rc=${1:-$?}
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

# running PID: the process exists and has not exited (a zombie has: daemons
# such as a restarted postmaster are reaped by init in its own time).
running() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

# fail MESSAGE: stop the test with a verdict.
fail() { echo "$T_NAME: FAIL: $*"; exit 1; }
pass() { echo "$T_NAME: ok: $*"; }

# expect_eq WHAT EXPECTED SEEN
expect_eq() { [[ "$2" == "$3" ]] || fail "$1: expected '$2', saw '$3'"; }

# free_port: a loopback TCP port nobody uses right now, below the kernel's
# ephemeral range (scripts/lib/ports.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/ports.sh"

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

# ---- cc-api helpers ---------------------------------------------------------

# start_api NAME [FLAGS...]: starts cc-testkit-api (or $API_BIN) on free ports;
# sets <NAME>_URL, <NAME>_ADMIN and <NAME>_PID.
start_api() {
	local name=$1; shift
	local port admin
	port=$(free_port); admin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/$name.log" \
		"${API_BIN:-$BIN/cc-testkit-api}" --port="$port" --admin-port="$admin" "$@"
	wait_http "http://127.0.0.1:$admin/healthz" "$LAST_PID" 20
	printf -v "${name}_URL" 'http://127.0.0.1:%s' "$port"
	printf -v "${name}_ADMIN" 'http://127.0.0.1:%s' "$admin"
	printf -v "${name}_PID" '%s' "$LAST_PID"
}

# http METHOD URL [TOKEN] [BODY] [EXTRA CURL ARGS...]: sets STATUS and BODY.
http() {
	local method=$1 url=$2 token=${3:-} body=${4:-}; shift 4 2>/dev/null || shift $#
	local args=(-s -o "$T_DIR/http.body" -w '%{http_code}' -X "$method")
	[[ -n "$token" ]] && args+=(-H "Authorization: Bearer $token")
	[[ -n "$body" ]] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	STATUS=$(curl "${args[@]}" "$@" "$url")
	BODY=$(<"$T_DIR/http.body")
}

# expect_http WHAT STATUS [CODE]: checks the last http call.
expect_http() {
	[[ "$STATUS" == "$2" ]] || fail "$1: expected HTTP $2, saw $STATUS with body $BODY"
	if [[ -n "${3:-}" ]]; then
		local code; code=$(jq -r '.error.code // empty' <<<"$BODY" 2>/dev/null || true)
		[[ "$code" == "$3" ]] || fail "$1: expected error code $3, saw '$code' in $BODY"
	fi
}

# login URL TICKET: prints a session token (testkit login).
login() {
	http POST "$1/v1/session/steam" "" "{\"ticket\":\"$2\"}"
	expect_http "login $2" 200
	jq -r .session_token <<<"$BODY"
}

# http_inproc METHOD URL TOKEN [BODY]: one HTTP/1.1 request from this shell
# itself (bash's /dev/tcp, read and parsed with builtins: no process is
# started); sets STATUS and BODY. For probes, whose RTT the server measures.
http_inproc() {
	local method=$1 url=$2 token=$3 body=${4:-} hostport path fd line len=0 LC_ALL=C
	hostport=${url#http://}; path=/${hostport#*/}; hostport=${hostport%%/*}
	exec {fd}<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
	printf '%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
		"$method" "$path" "$hostport" "$token" "${#body}" "$body" >&"$fd"
	IFS=' ' read -r -u "$fd" _ STATUS _ || true
	while IFS= read -r -u "$fd" line && [[ $line != $'\r' && -n $line ]]; do
		[[ ${line,,} =~ ^content-length:\ *([0-9]+) ]] && len=${BASH_REMATCH[1]}
	done
	BODY=""
	((len == 0)) || read -r -N "$len" -u "$fd" BODY || true
	exec {fd}>&-
}

# probe URL TOKEN REGION: answers a probe challenge as a client would, from
# one process: the server measures the RTT from issue to answer, and two
# curl start-ups in between measured 71-102 ms, then 115-300 ms with both
# cores busy, past SPEC 6's 100 ms, so matchers stopped pairing the players.
# From this shell it is a few ms; a loaded machine can still stall it, so it
# re-probes (at most 10 times) until one measures under 50 ms.
probe() {
	local nonce="" rtt=""
	for _ in $(seq 10); do
		http_inproc POST "$1/v1/probes/$3/challenge" "$2"
		expect_http "probe challenge $3" 201
		[[ $BODY =~ \"nonce\"[[:space:]]*:[[:space:]]*\"([^\"]+)\" ]] || fail "probe challenge $3: no nonce in $BODY"
		nonce=${BASH_REMATCH[1]}
		http_inproc POST "$1/v1/probes/$3/answer" "$2" "{\"nonce\":\"$nonce\"}"
		expect_http "probe answer $3" 200
		[[ $BODY =~ \"rtt_ms\"[[:space:]]*:[[:space:]]*([0-9.eE+-]+) ]] || fail "probe answer $3: no rtt_ms in $BODY"
		rtt=${BASH_REMATCH[1]}
		[[ ${rtt%%.*} =~ ^[0-9]+$ ]] && ((${rtt%%.*} < 50)) && return 0
	done
	echo "$T_NAME: note: probe RTT stayed at or above 50 ms (last $rtt ms)" >&2
}

# sql QUERY: one value from the test database.
sql() { psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" -c "$1"; }
