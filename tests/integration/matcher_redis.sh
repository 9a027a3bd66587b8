#!/usr/bin/env bash
# Redis is an accelerator that may vanish (SPEC 6): with its own Redis, a
# cc-api and a casual cc-matcher share the candidate index; a FLUSHALL is
# repaired by the next pass (rebuilt from PostgreSQL), and killing Redis
# mid-run does not stop proposals being formed.
source "$(dirname "$0")/lib.sh"

rport=$(free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$T_DIR" >"$T_DIR/redis.log" 2>&1 &
T_PIDS+=("$!"); T_LOGS+=("$T_DIR/redis.log"); redis_pid=$!
for _ in $(seq 200); do [[ $(redis-cli -p "$rport" ping 2>/dev/null) == PONG ]] && break; sleep 0.02; done
[[ $(redis-cli -p "$rport" ping 2>/dev/null) == PONG ]] || fail "own Redis did not start"

start_api A --regions=eu-west --redis-host=127.0.0.1 --redis-port="$rport"
madmin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" --playlist=casual \
	--poll-interval-ms=100 --redis-host=127.0.0.1 --redis-port="$rport" --redis-timeout-ms=100 --admin-port="$madmin"
matcher_pid=$LAST_PID
wait_http "http://127.0.0.1:$madmin/healthz" "$matcher_pid" 20

BUILD="mredis-$RANDOM"
# queue N: N fresh casual players of this test's build.
queue() {
	for _ in $(seq "$1"); do
		local t; t=$(login "$A_URL" "mredis-$RANDOM$RANDOM")
		probe "$A_URL" "$t" eu-west
		http POST "$A_URL/v1/queue" "$t" "{\"playlist\":\"casual\",\"protocol_version\":1,\"build\":\"$BUILD\"}" -H "Idempotency-Key: k"
		expect_http "queue" 201
	done
}
proposed() { sql "SELECT count(*) FROM tickets WHERE build = '$BUILD' AND state = 'PROPOSED'"; }
# await WHAT EXPECTED CMD...: polls CMD until it prints EXPECTED (deadline 20 s).
await() {
	local what=$1 want=$2 seen="" deadline=$((SECONDS + 20)); shift 2
	while ((SECONDS < deadline)); do
		kill -0 "$matcher_pid" 2>/dev/null || fail "cc-matcher exited while waiting for $what"
		seen=$("$@")
		[[ "$seen" == "$want" ]] && return 0
		sleep 0.1
	done
	fail "$what: expected '$want' within 20 s, last saw '$seen'"
}

queue 9
await "one casual match from 9 players (Redis up)" 6 proposed
zkey="cc:cand:casual:z"
# own_in_index: this test's tickets in the index. Earlier scripts share the
# database and may leave fresh casual tickets that a rebuild indexes too.
own_in_index() {
	local ids; ids=$(redis-cli -p "$rport" zrange "$zkey" 0 -1 | paste -sd, -)
	sql "SELECT count(*) FROM tickets WHERE build = '$BUILD' AND id::text = ANY(string_to_array('$ids', ','))"
}
await "the 3 unmatched in the index" 3 own_in_index
pass "Redis up: 6 of 9 proposed, the 3 left over are in the index"

redis-cli -p "$rport" flushall >/dev/null
await "index rebuilt by a pass after FLUSHALL" 3 own_in_index
pass "FLUSHALL repaired: the next pass rebuilt the index from PostgreSQL"

kill -9 "$redis_pid"; wait "$redis_pid" 2>/dev/null || true
queue 3
await "a second match with Redis dead" 12 proposed
grep -q '"source":"postgres"\|redis' "$T_DIR/matcher.log" || true
fallbacks=$(curl -s "http://127.0.0.1:$madmin/metrics" | awk '/^cosmic_clash_matcher_redis_fallbacks_total/ {s += $NF} END {print s + 0}')
[[ $fallbacks -gt 0 ]] || fail "no Redis fallback counted, so the match did not prove the PostgreSQL path"
pass "Redis killed: proposals still formed through PostgreSQL ($fallbacks fallbacks counted)"

violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$violations" ]] || fail "audit found violations: $violations"
