#!/usr/bin/env bash
# cc-api (the real binary) against hostile clients (issue 13 items 1 and 2):
#  - one address holding its connection cap is refused 429
#    too_many_connections while a second address (127.0.0.2) is served;
#  - a body trickled a byte every 200 ms is cut at --http-body-timeout-ms
#    (408 request_timeout), not when the client stops;
#  - probe challenges of one player are limited across two replicas through
#    Redis (429 rate_limited, Retry-After, counted in the metrics);
#  - with Redis stopped both replicas keep serving and still limit, each on
#    its own; with Redis back the bucket is shared again.
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
