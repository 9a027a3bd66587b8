#!/usr/bin/env bash
# cc-maintenance keeps the Redis candidate index in step with its sweeps
# (--redis-host), as cc-api does after a request: over a seeded backlog
# (maintenance_seed.sql: overdue tickets, overdue proposals, matches
# stalled in ALLOCATING, ranked no-show matches) every ticket a sweep
# requeued is in cc:cand:ranked:{h,z} with PostgreSQL's values as soon as
# its batch committed (nobody heartbeats here, so nothing else could put
# it there), and every ticket a sweep ended (EXPIRED, FAILED), planted in
# the index beforehand, is gone from it. Then Redis is stopped: the
# stalled sweep still settles two more matches within its interval plus
# one Redis timeout, no batch fails, the process stays ready, and
# cosmic_clash_maintenance_candidate_index_errors_total{op} counts each
# change it could not make.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

# E > MAINT_MOVES_CHUNKS (32) x CC_TICKET_MOVES_MAX (40) with --batch=2000: the expiry batch runs out of
# move buffers, ends early, and the pass goes on with a second batch (the log's "batches":2).
E=1400 P=3 S=4 K=2
scratch_database maint_index
psql -qX -v ON_ERROR_STOP=1 -v e="$E" -v p="$P" -v s="$S" -v k="$K" -v r=0 "$CC_TEST_PG_DSN" \
	-f "$(dirname "$0")/maintenance_seed.sql" >"$T_DIR/seed.log" 2>&1 || fail "seed: $(tail -5 "$T_DIR/seed.log")"
# Two stalled matches are held back (not stalled yet) for the Redis-down part.
sql "CREATE TABLE held AS SELECT unnest(g3_matches[1:2]) AS id FROM seed_expect;
     UPDATE matches SET updated_at = now() WHERE id IN (SELECT id FROM held)" >/dev/null

# A Redis of the test's own: it is stopped halfway.
rport=$(free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$T_DIR" >"$T_DIR/redis.log" 2>&1 &
T_PIDS+=("$!"); T_LOGS+=("$T_DIR/redis.log"); redis_pid=$!
R=(redis-cli -h 127.0.0.1 -p "$rport")
wait_until "own Redis answers PING" 10 '[[ $("${R[@]}" ping 2>/dev/null) == PONG ]]'
H=cc:cand:ranked:h Z=cc:cand:ranked:z

# Stale entries for every ticket the sweeps will end: the index must lose them.
ending=$(sql "SELECT t.id FROM tickets t JOIN players p ON p.id = t.player_id
	WHERE p.steam_id::bigint BETWEEN 1000000000001 AND 1999999999999
	UNION ALL SELECT unnest(g2_silent) FROM seed_expect
	UNION ALL SELECT mp.ticket_id FROM match_players mp, seed_expect e WHERE mp.player_id = ANY(e.g4_no_shows)")
for id in $ending; do printf 'HSET %s %s stale\nZADD %s 1 %s\n' "$H" "$id" "$Z" "$id"; done | "${R[@]}" >/dev/null
expect_eq "stale entries planted" "$((E + P + K)) $((E + P + K))" "$("${R[@]}" HLEN "$H") $("${R[@]}" ZCARD "$Z")"

FLAGS=(--redis-host=127.0.0.1 --redis-port="$rport" --redis-timeout-ms=200 --batch=2000
	--expiry-interval-ms=200 --stalled-interval-ms=200 --no-show-interval-ms=200 --server-silent-interval-ms=200
	--result-missing-interval-ms=200 --stalled-after-seconds=600 --no-show-after-seconds=45 --log-level=info)
start_maint M
wait_http "$M_ADMIN/readyz" "$M_PID" 20
grep -q '"event":"candidate_index_enabled"' "$T_DIR/M.log" || fail "no candidate_index_enabled line in M.log"

# ---- Redis up: every requeue is in the index at once, every ended ticket gone -------------
requeued=$((2 * (S - 2) + P + K)) ended=$((E + P + K))
settled() { sql "SELECT (SELECT count(*) FROM tickets WHERE state = 'QUEUED') || ' ' ||
	(SELECT count(*) FROM tickets WHERE state IN ('EXPIRED', 'FAILED'))"; }
wait_until "the sweeps requeue $requeued and end $ended tickets" 30 '[[ $(settled) == "$requeued $ended" ]]'
t_settled=$(date +%s%N)

# index_matches: the index holds exactly the QUEUED tickets, each with its row's values (as
# index_api.sh), the zset scored by each one's "q" (queued_at); the last look in index.{want,got}.
index_matches() {
	sql "SELECT coalesce(json_object_agg(id, json_build_object('v', 1, 'p', player_id, 'b', build, 'pv', protocol_version,
		'r', rating, 'd', deviation, 'q', (extract(epoch FROM queued_at) * 1000)::bigint,
		'e', (extract(epoch FROM expires_at) * 1000)::bigint, 'rtt', predicted_rtt)), '{}') FROM tickets WHERE state = 'QUEUED'" |
		jq -S . >"$T_DIR/index.want"
	{ "${R[@]}" HGETALL "$H" | paste - - | jq -R 'split("\t") | {(.[0]): (.[1] | fromjson? // .)}' | jq -s 'add // {}' |
		jq -S . >"$T_DIR/index.got"; } 2>/dev/null || return 1
	cmp -s "$T_DIR/index.want" "$T_DIR/index.got" || return 1
	[[ $("${R[@]}" ZRANGE "$Z" 0 -1 WITHSCORES | paste - - | jq -R 'split("\t") | {(.[0]): {q: (.[1] | tonumber)}}' | jq -s -S 'add // {}') == \
		$(jq -S 'map_values({q})' "$T_DIR/index.want") ]]
}
until index_matches; do
	(($(date +%s%N) - t_settled < 2000000000)) || { diff "$T_DIR/index.want" "$T_DIR/index.got" | head -40 || true
		fail "the index does not hold exactly the $requeued requeued tickets with their rows' values 2 s after they settled"; }
	sleep 0.05
done
echo "$T_NAME: index in step $(( ($(date +%s%N) - t_settled) / 1000000 )) ms after PostgreSQL showed every ticket settled"
grep -q '"event":"pass","sweep":"expire_tickets","rows":1400,"batches":2,' "$T_DIR/M.log" ||
	fail "the expiry of $E tickets did not take two batches (32 move buffers of 40 in the first): $(grep '"sweep":"expire_tickets"' "$T_DIR/M.log" | head -3)"
curl -s "$M_ADMIN/metrics" >"$T_DIR/metrics.1"
if grep '^cosmic_clash_maintenance_candidate_index_errors_total{' "$T_DIR/metrics.1"; then
	fail "index errors counted while Redis was up"
fi
pass "Redis up: $requeued requeued tickets (stalled, proposal timeout, no-show) put with PostgreSQL's values, $ended ended ones removed, no error"

# ---- Redis stopped: the sweeps still settle; each change it could not make is counted --------
kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true
[[ $("${R[@]}" ping 2>/dev/null) != PONG ]] || fail "Redis still answers after it was stopped"
# One requeued ticket overdue (the expiry sweep removes it), the held matches stalled.
overdue=$(sql "SELECT id FROM tickets WHERE state = 'QUEUED' ORDER BY id LIMIT 1")
t0=$(date +%s%N)
sql "UPDATE tickets SET expires_at = now() - interval '1 second' WHERE id = '$overdue';
     UPDATE matches SET updated_at = now() - interval '20 minutes' WHERE id IN (SELECT id FROM held)" >/dev/null
down_done() { [[ $(sql "SELECT count(*) FROM matches WHERE id IN (SELECT id FROM held) AND state = 'FAILED'") == 2 &&
	$(sql "SELECT state FROM tickets WHERE id = '$overdue'") == EXPIRED ]]; }
wait_until "with Redis stopped, the held matches FAILED and the overdue ticket EXPIRED" 10 down_done
took=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "held matches' players requeued" 4 "$(sql "SELECT count(*) FROM match_players mp JOIN tickets t ON t.id = mp.ticket_id
	WHERE mp.match_id IN (SELECT id FROM held) AND t.state = 'QUEUED'")"
# The sweep's interval (200 ms) plus one Redis timeout (200 ms), with room for a loaded machine.
((took < 3000)) || fail "with Redis stopped the sweeps took $took ms to settle"
errors() { curl -s "$M_ADMIN/metrics" | awk -v op="$1" 'index($0, "cosmic_clash_maintenance_candidate_index_errors_total{op=\"" op "\"}") == 1 { print $2 }'; }
wait_until "the index errors counted (4 puts, 1 remove)" 5 '[[ "$(errors put) $(errors remove)" == "4 1" ]]'
curl -s "$M_ADMIN/metrics" >"$T_DIR/metrics.2"
if grep -E '^cosmic_clash_maintenance_failures_total\{' "$T_DIR/metrics.2"; then
	fail "a batch failed with Redis stopped"
fi
[[ $(curl -s -o /dev/null -w '%{http_code}' "$M_ADMIN/readyz") == 200 ]] || fail "cc-maintenance not ready with Redis stopped"
running "$M_PID" || fail "cc-maintenance exited with Redis stopped"
logged=$(grep -c '"event":"candidate_index_refresh_failed"' "$T_DIR/M.log" || true)
((logged >= 1 && logged <= 2)) || fail "candidate_index_refresh_failed logged $logged times for 5 failures (rate limit: once per 10 s)"
pass "Redis stopped: 2 stalled matches and 1 expiry settled in $took ms, no batch failed, errors counted (put 4, remove 1), logged $logged time(s)"
