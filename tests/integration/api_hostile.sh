#!/usr/bin/env bash
# cc-api (the real binary) against hostile clients (issue 13 items 1 and 2):
#  - one address holding its connection cap is refused 429
#    too_many_connections while a second address (127.0.0.2) is served;
#  - a body trickled a byte every 200 ms is cut at --http-body-timeout-ms
#    (408 request_timeout), not when the client stops;
#  - probe challenges of one player are limited across two replicas through
#    Redis (429 rate_limited, Retry-After, counted in the metrics);
#  - with Redis stopped both replicas keep serving and still limit, each on
#    its own; with Redis back the bucket is shared again;
#  - with keep-alive on (the default), the second request of a kept
#    connection passes the same front: slowloris on the second head (408 at
#    the header deadline counted from the first answer), an oversized second
#    head (431), an HTTP/2 preface, a header line without a colon and
#    Content-Length: -1 as the second request, a trickled second body (408),
#    a pipelined malformed request (never served), kept connections against
#    the per-address cap; and no answer of any of these is HTML (the HTTP
#    library's own pages).
source "$(dirname "$0")/lib.sh"

H="$TOP/tests/harness"
redis=(--redis-host="$CC_TEST_REDIS_HOST" --redis-port="$CC_TEST_REDIS_PORT")
# Whatever failed, Redis is left running for the next script.
restore_redis() {
	local rc=$?
	"$H/redis-ctl.sh" start >/dev/null 2>&1 || true
	set +e
	(exit "$rc")
	t_cleanup
}
trap restore_redis EXIT

CAP=4 BODY_MS=1500 PROBES=5
start_api A --regions=eu-west --max-connections-per-address=$CAP --http-body-timeout-ms=$BODY_MS \
	--rate-probe-per-player=$PROBES "${redis[@]}"
start_api B --regions=eu-west --rate-probe-per-player=$PROBES "${redis[@]}"
port=${A_URL##*:}

# ---- 1. one address at its connection cap, another still served -------------------
HELD=()
for _ in $(seq $CAP); do
	exec {fd}<>"/dev/tcp/127.0.0.1/$port"
	printf 'G' >&"$fd" # one byte of a head, then silence
	HELD+=("$fd")
done
over=$(curl -s -m 10 -D "$T_DIR/over.h" -o "$T_DIR/over.b" -w '%{http_code}' "$A_URL/v1/profile/ranked" || true)
[[ $over == 429 ]] || fail "connection $((CAP + 1)) from 127.0.0.1 answered '$over' (want 429): $(cat "$T_DIR/over.b" 2>/dev/null)"
expect_eq "its code" too_many_connections "$(jq -r .error.code "$T_DIR/over.b")"
grep -qi '^x-request-id: ' "$T_DIR/over.h" || fail "the 429 has no X-Request-Id: $(cat "$T_DIR/over.h")"
other=$(curl -s -m 10 --interface 127.0.0.2 -o "$T_DIR/other.b" -w '%{http_code}' -H 'Content-Type: application/json' \
	--data-binary '{"ticket":"hostile-other-address"}' "$A_URL/v1/session/steam" || true)
[[ $other == 200 ]] || fail "127.0.0.2 was not served while 127.0.0.1 held its cap: '$other' $(cat "$T_DIR/other.b" 2>/dev/null)"
for fd in "${HELD[@]}"; do exec {fd}>&-; done
# The server sees those closes on its next poll: wait for that as a state.
deadline=$((SECONDS + 10))
until [[ $(curl -s -m 5 -o /dev/null -w '%{http_code}' "$A_URL/v1/profile/ranked") == 401 ]]; do
	((SECONDS < deadline)) || fail "127.0.0.1 still refused 10 s after closing its held connections"
	sleep 0.05
done
pass "127.0.0.1 at its cap of $CAP connections: 429 too_many_connections; 127.0.0.2 served meanwhile"

# ---- 2. a trickled body cut at its deadline --------------------------------------
exec {fd}<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/session/steam HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n' >&"$fd"
start=$EPOCHREALTIME status_line="" sent=0
while :; do
	if IFS= read -r -t 0.2 -u "$fd" status_line; then break; fi
	elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	((elapsed < 15000)) || fail "a trickled body was still open after 15 s (deadline $BODY_MS ms)"
	printf 'a' >&"$fd" 2>/dev/null || break # the server closed: the reset is the cut
	sent=$((sent + 1))
done
cut_ms=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
exec {fd}>&-
((cut_ms >= BODY_MS - 100 && cut_ms < BODY_MS + 2500)) ||
	fail "the trickled body was cut after $cut_ms ms, deadline $BODY_MS ms (status line '$status_line')"
[[ -z $status_line || $status_line == *" 408 "* ]] || fail "the cut answered '$status_line', not 408"
pass "a body trickled a byte every 200 ms ($sent bytes) was cut after $cut_ms ms (deadline $BODY_MS ms): ${status_line:-reset}"

# ---- 3. rate limits shared through Redis, per process without it ------------------
tok=$(login "$A_URL" "hostile-rl-$RANDOM$RANDOM")
# challenge URL: one challenge; sets STATUS BODY.
challenge() { http POST "$1/v1/probes/eu-west/challenge" "$tok" ""; }
codes=""
for i in $(seq $PROBES); do
	base=$A_URL; ((i % 2)) || base=$B_URL
	challenge "$base"
	codes+="$STATUS "
done
[[ $codes == "201 201 201 201 201 " ]] || fail "the first $PROBES challenges over both replicas answered $codes"
challenge "$B_URL"
expect_http "challenge $((PROBES + 1)), on replica B after the bucket emptied on both" 429 rate_limited
retry=$(jq -r .error.retry_after_seconds <<<"$BODY")
((retry >= 1 && retry <= 12)) || fail "retry_after_seconds $retry for $PROBES a minute"
metric=$(curl -s "$B_ADMIN/metrics" | grep '^cosmic_clash_api_rate_limited_total{action="probe_challenge",scope="player",backend="redis"}' || true)
[[ -n $metric ]] || fail "no cosmic_clash_api_rate_limited_total for the refusal: $(curl -s "$B_ADMIN/metrics" | grep rate_limited)"
pass "probe challenges: $PROBES a minute per player shared by replicas A and B through Redis; 429 rate_limited (Retry-After $retry s), counted"

"$H/redis-ctl.sh" stop || fail "redis-ctl.sh stop failed"
tok=$(login "$A_URL" "hostile-rl-down-$RANDOM$RANDOM")
codes=""
for i in $(seq $((PROBES + 1))); do challenge "$A_URL"; codes+="$STATUS "; done
[[ $codes == "201 201 201 201 201 429 " ]] || fail "replica A with Redis down answered $codes (want $PROBES x 201, then 429)"
challenge "$B_URL"
expect_http "replica B with Redis down keeps a bucket of its own" 201
metrics=$(curl -s "$A_ADMIN/metrics") # read whole: grep -q on a pipe would SIGPIPE curl under pipefail
grep -q '^cosmic_clash_api_rate_limited_total{action="probe_challenge",scope="player",backend="local"}' <<<"$metrics" ||
	fail "the local refusal was not counted with backend=local: $(grep rate_limited <<<"$metrics")"
pass "Redis down: both replicas serve; each limits on its own ($codes)"

"$H/redis-ctl.sh" start || fail "redis-ctl.sh start failed"
# Redis is retried at most every 500 ms per connection: wait (as a state) until a fresh
# player's bucket is one bucket over both replicas again.
deadline=$((SECONDS + 20))
shared=""
while ((SECONDS < deadline)) && [[ -z $shared ]]; do
	tok=$(login "$A_URL" "hostile-rl-back-$RANDOM$RANDOM")
	codes=""
	for i in $(seq $((PROBES + 1))); do
		base=$A_URL; ((i % 2)) || base=$B_URL
		challenge "$base"
		codes+="$STATUS "
	done
	[[ $codes == "201 201 201 201 201 429 " ]] && shared=yes
done
[[ -n $shared ]] || fail "with Redis back the replicas did not share a bucket again within 20 s (last: $codes)"
pass "Redis back: the bucket is shared by both replicas again"

# ---- 4. keep-alive: the second request of a kept connection passes the same front ------
KHEAD_MS=1500 KBODY_MS=1500 KCAP=3
start_api K --regions=eu-west --http-header-timeout-ms=$KHEAD_MS --http-body-timeout-ms=$KBODY_MS \
	--max-connections-per-address=$KCAP
kport=${K_URL##*:}
# kept CASE: one raw connection: a valid first request, its answer read whole, then the case's
# second request; prints a JSON line {first, first_close, reply, ms, eof} (ms: first answer -> end).
kept() {
	python3 - "$kport" "$1" <<'EOF'
import json, socket, sys, time
port, case = int(sys.argv[1]), sys.argv[2]
first = b"GET /v1/profile/ranked HTTP/1.1\r\nHost: k\r\n\r\n"
cases = {
    "slow_head": (b"GET /v1/profile/ranked HTTP/1.1\r\nX-Slow: ", True),
    "slow_body": (b"POST /v1/session/steam HTTP/1.1\r\nHost: k\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n", True),
    "big_head": (b"GET /v1/profile/ranked HTTP/1.1\r\nHost: k\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(4000)) + b"\r\n", False),
    "huge_header": (b"GET /v1/profile/ranked HTTP/1.1\r\nX-Big: " + b"a" * 300000 + b"\r\n\r\n", False),
    "h2": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", False),
    "no_colon": (b"GET /v1/profile/ranked HTTP/1.1\r\nHost: k\r\nNoColon\r\n\r\n", False),
    "cl_minus": (b"POST /v1/session/steam HTTP/1.1\r\nHost: k\r\nContent-Length: -1\r\n\r\n", False),
    "second_ok": (b"GET /v1/profile/ranked HTTP/1.1\r\nHost: k\r\n\r\n", False),
    "pipelined": (b"GET /v1/profile/ranked HTTP/1.1\r\nHost: k\r\n\r\nGET /x HTTP/1.1\r\nNoColon\r\n\r\n", False),
}
second, trickle = cases[case]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(first)
buf = b""
while b"\r\n\r\n" not in buf:
    buf += s.recv(65536)
head, _, rest = buf.partition(b"\r\n\r\n")
length = 0
for line in head.split(b"\r\n"):
    if line.lower().startswith(b"content-length:"):
        length = int(line.split(b":")[1])
while len(rest) < length:
    rest += s.recv(65536)
t0 = time.monotonic()
try:
    s.sendall(second)
except OSError:
    pass
reply, eof = b"", False
s.settimeout(0.1)
while time.monotonic() - t0 < 10:
    try:
        chunk = s.recv(65536)
    except socket.timeout:
        if trickle and not reply:
            try:
                s.send(b"a")
            except OSError:
                eof = True
                break
        if not trickle and reply.count(b"\r\n\r\n") and case == "second_ok":
            break
        continue
    except OSError:
        eof = True
        break
    if not chunk:
        eof = True
        break
    reply += chunk
print(json.dumps({"first": int(head.split()[1]), "first_close": b"connection: close" in head.lower(),
                  "reply": reply.decode("latin-1"), "ms": int((time.monotonic() - t0) * 1000), "eof": eof}))
EOF
}
# kept_expect CASE STATUS CODE: the second answer is STATUS in the SPEC shape with CODE, not HTML.
kept_expect() {
	local out reply body
	out=$(kept "$1") || fail "kept $1: the client failed"
	[[ $(jq -r .first <<<"$out") == 401 && $(jq -r .first_close <<<"$out") == false ]] ||
		fail "kept $1: the first request was not answered on a kept connection: $out"
	reply=$(jq -r .reply <<<"$out")
	grep -qiE '<html|text/html|<title' <<<"$reply" && fail "kept $1: an HTML answer: $reply"
	[[ $reply == "HTTP/1.1 $2 "* ]] || fail "kept $1: want $2, got: ${reply:0:400}"
	body=${reply#*$'\r\n\r\n'}
	[[ $(jq -r .error.code <<<"$body" 2>/dev/null) == "$3" ]] || fail "kept $1: want code $3: ${reply:0:400}"
	grep -qi $'^x-request-id: ' <<<"${reply//$'\r'/}" || fail "kept $1: no X-Request-Id: ${reply:0:400}"
	KEPT_MS=$(jq -r .ms <<<"$out")
}
kept_expect second_ok 401 unauthorized
kept_expect h2 505 http_version_not_supported
kept_expect no_colon 400 malformed_request
kept_expect cl_minus 400 malformed_request
kept_expect big_head 431 headers_too_large
kept_expect huge_header 431 headers_too_large
pass "kept connection, second request: a normal one served; HTTP/2 preface 505, no colon and Content-Length: -1 400, 4,000 headers and a 300 KB header 431, all in the SPEC shape, none HTML"
kept_expect slow_head 408 request_timeout
((KEPT_MS >= KHEAD_MS - 150 && KEPT_MS < KHEAD_MS + 2500)) ||
	fail "slowloris on the second head cut after $KEPT_MS ms (deadline $KHEAD_MS ms from the first answer)"
pass "slowloris on the second request of a kept connection: 408 request_timeout after $KEPT_MS ms (deadline $KHEAD_MS ms)"
out=$(kept slow_body)
reply=$(jq -r .reply <<<"$out") ms=$(jq -r .ms <<<"$out")
grep -qiE '<html|text/html' <<<"$reply" && fail "trickled second body: an HTML answer: $reply"
[[ -z $reply || $reply == "HTTP/1.1 408 "* ]] || fail "trickled second body answered: ${reply:0:300}"
((ms >= KBODY_MS - 150 && ms < KBODY_MS + 2500)) || fail "the trickled second body was cut after $ms ms (deadline $KBODY_MS ms)"
pass "a trickled body of the second request: cut after $ms ms (deadline $KBODY_MS ms): ${reply:0:12}"
out=$(kept pipelined)
reply=$(jq -r .reply <<<"$out")
grep -qiE '<html|text/html' <<<"$reply" && fail "pipelined: an HTML answer: $reply"
[[ $reply == "HTTP/1.1 401 "* && $(jq -r .eof <<<"$out") == true ]] ||
	fail "pipelined: want the first 401 and then the end: ${reply:0:400}"
[[ $(grep -c '^HTTP/1.1 ' <<<"${reply//$'\r'/}") == 1 ]] || fail "pipelined: the unchecked request was answered: $reply"
ms=$(jq -r .ms <<<"$out")
((ms < KHEAD_MS / 2)) || fail "pipelined: the connection ended only after $ms ms (the front should see the unchecked bytes at once)"
pass "a malformed request pipelined behind a kept one is never served (no HTML): the connection ends after the first answer"

# Kept connections hold their slots: KCAP kept, the next one is refused 429.
HELD=()
for _ in $(seq $KCAP); do
	exec {fd}<>"/dev/tcp/127.0.0.1/$kport"
	printf 'GET /v1/profile/ranked HTTP/1.1\r\nHost: k\r\n\r\n' >&"$fd"
	IFS= read -r -t 5 -u "$fd" line || fail "a kept connection got no answer"
	[[ $line == "HTTP/1.1 401 "* ]] || fail "a kept connection answered '$line'"
	HELD+=("$fd")
done
over=$(curl -s -m 10 -o "$T_DIR/kover.b" -w '%{http_code}' "$K_URL/v1/profile/ranked" || true)
[[ $over == 429 ]] || fail "with $KCAP kept connections open, another answered '$over' (want 429): $(cat "$T_DIR/kover.b" 2>/dev/null)"
for fd in "${HELD[@]}"; do exec {fd}>&-; done
pass "$KCAP kept (idle) connections hold their address's slots: the next connection is 429 too_many_connections"
