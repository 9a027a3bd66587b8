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
	BODY=$(cat "$T_DIR/http.body")
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

# http_on FD METHOD PATH TOKEN [BODY]: one HTTP/1.1 request on the open
# keep-alive connection FD, from bash itself (no process start-up between
# two requests); sets STATUS and BODY from the Content-Length response.
http_on() {
	local fd=$1 line len=0
	printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' \
		"$2" "$3" "$4" "${#5}" "$5" >&"$fd"
	IFS= read -r -t 20 -u "$fd" line || fail "$2 $3: no answer on the probe connection"
	[[ $line =~ ^HTTP/1\.[01]\ ([0-9]{3}) ]] || fail "$2 $3: not an HTTP status line: $line"
	STATUS=${BASH_REMATCH[1]}
	while IFS= read -r -t 20 -u "$fd" line; do
		line=${line%$'\r'}
		[[ -z $line ]] && break
		[[ ${line,,} =~ ^content-length:\ *([0-9]+) ]] && len=${BASH_REMATCH[1]}
	done
	BODY=
	((len == 0)) || IFS= read -r -t 20 -N "$len" -u "$fd" BODY || fail "$2 $3: body shorter than $len bytes"
}

# probe URL TOKEN REGION: answers probe challenges until one measures under
# 50 ms (at most 20 tries), as a real client re-probes. Challenge and answer
# go over one connection from bash: with a curl process for each, the RTT
# spanned two process start-ups, which a loaded machine pushed past the
# matcher's 100 ms limit.
probe() {
	local nonce rtt fd hostport=${1#http://}
	for _ in $(seq 20); do
		exec {fd}<>"/dev/tcp/${hostport%%:*}/${hostport##*:}" || fail "probe: cannot connect to $1"
		http_on "$fd" POST "/v1/probes/$3/challenge" "$2" ""
		expect_http "probe challenge $3" 201
		[[ $BODY =~ \"nonce\"\ *:\ *\"([^\"]+)\" ]] || fail "probe challenge $3: no nonce in $BODY"
		nonce=${BASH_REMATCH[1]}
		http_on "$fd" POST "/v1/probes/$3/answer" "$2" "{\"nonce\":\"$nonce\"}"
		exec {fd}>&-
		expect_http "probe answer $3" 200
		rtt=$(jq -r .rtt_ms <<<"$BODY")
		if awk -v r="$rtt" 'BEGIN { exit !(r < 50) }'; then return 0; fi
	done
	echo "$T_NAME: note: probe RTT stayed at or above 50 ms (last $rtt ms)" >&2
}

# sql QUERY: one value from the test database.
sql() { psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" -c "$1"; }
