#!/usr/bin/env bash
# Two cc-maintenance processes run every sweep at once over a seeded
# backlog of thousands of rows (tests/integration/maintenance_seed.sql:
# overdue tickets, overdue proposals, matches stalled in ALLOCATING, ranked
# no-show matches, players due a season reset) and each row is processed
# exactly once: every expiry, penalty, requeue and soft reset is counted
# in SQL (outbox events per ticket, penalties, season_resets, the ratings
# themselves) and compared with the seeded numbers. A third run (--once)
# afterwards changes nothing. Both processes must have done part of the
# work (their rows_total), or the race was never run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

E=${RACE_E:-2000} P=${RACE_P:-1000} S=${RACE_S:-400} K=${RACE_K:-300} R=${RACE_R:-2000}
scratch_database maint_race
psql -qX -v ON_ERROR_STOP=1 -v e="$E" -v p="$P" -v s="$S" -v k="$K" -v r="$R" "$CC_TEST_PG_DSN" \
	-f "$(dirname "$0")/maintenance_seed.sql" >"$T_DIR/seed.log" 2>&1 || fail "seed: $(tail -5 "$T_DIR/seed.log")"
echo "$T_NAME: seeded $E overdue tickets, $P overdue proposals, $S stalled matches, $K no-show matches, $R players due a reset"

# Short intervals and small batches: many interleaved transactions of both processes.
FLAGS=(--batch=50 --expiry-interval-ms=100 --stalled-interval-ms=100 --no-show-interval-ms=100
	--server-silent-interval-ms=100 --result-missing-interval-ms=100 --season-interval-ms=100
	--retention-interval-ms=1000 --stalled-after-seconds=600 --no-show-after-seconds=45 --log-level=info)
start_maint M1
start_maint M2
wait_http "$M1_ADMIN/readyz" "$M1_PID" 20
wait_http "$M2_ADMIN/readyz" "$M2_PID" 20
# Without --redis-host a replica runs without the candidate index, and says so once.
expect_eq "M1's candidate_index_disabled lines" 1 "$(grep -c '"event":"candidate_index_disabled"' "$T_DIR/M1.log")"

# Drained: nothing is left for any sweep (the lag of every seeded group is 0).
left() {
	sql "SELECT (SELECT count(*) FROM tickets WHERE state = 'QUEUED' AND expires_at <= now())
	      + (SELECT count(*) FROM proposals WHERE state = 'OPEN' AND expires_at <= now())
	      + (SELECT count(*) FROM matches WHERE state NOT IN ('FAILED', 'COMPLETED'))
	      + (SELECT count(*) FROM seed_ratings s WHERE NOT EXISTS (SELECT 1 FROM season_resets r
	           WHERE r.player_id = s.player_id AND r.season = 2))"
}
started=$SECONDS deadline=$((SECONDS + 60))
while (( $(left) > 0 )); do
	running "$M1_PID" || fail "cc-maintenance M1 exited"
	running "$M2_PID" || fail "cc-maintenance M2 exited"
	((SECONDS < deadline)) || fail "backlog not drained within 60 s: $(left) rows left"
	sleep 0.2
done
echo "$T_NAME: drained in $((SECONDS - started)) s"

# The sweeps' rows, not the dispatcher's (it delivers the outbox rows the sweeps write).
rows_of() { curl -s "$1/metrics" | awk '/^cosmic_clash_maintenance_rows_total/ && !/sweep="outbox"/ { s += $2 } END { printf "%d", s }'; }
m1=$(rows_of "$M1_ADMIN") m2=$(rows_of "$M2_ADMIN")
echo "$T_NAME: rows processed: M1 $m1, M2 $m2"
(( m1 > 0 && m2 > 0 )) || fail "both processes must have done part of the work (M1 $m1, M2 $m2)"
# A batch that failed (a serialization failure past its retries) rolled back whole: a later pass redoes it.
failures=$(curl -s "$M1_ADMIN/metrics" "$M2_ADMIN/metrics" | awk '/^cosmic_clash_maintenance_failures_total/ { print $1 "=" $2 }' | tr '\n' ' ')
echo "$T_NAME: failed batches (rolled back, redone by a later pass): ${failures:-none}"

check() {
	# Expired tickets: each of group 1 once, each group-2 non-responder once.
	expect_eq "group 1: tickets EXPIRED" "$E" "$(sql "SELECT count(*) FROM tickets t JOIN players p ON p.id = t.player_id
		WHERE p.steam_id::bigint BETWEEN 1000000000001 AND 1999999999999 AND t.state = 'EXPIRED' AND t.revision = 2")"
	expect_eq "group 1: one ticket.expired each" "$E" "$(sql "SELECT count(*) FROM (SELECT o.resource_id FROM outbox o
		JOIN tickets t ON t.id = o.resource_id JOIN players p ON p.id = t.player_id
		WHERE p.steam_id::bigint BETWEEN 1000000000001 AND 1999999999999 AND o.event = 'ticket.expired'
		GROUP BY 1 HAVING count(*) = 1) x")"
	expect_eq "group 2: proposals EXPIRED" "$P" "$(sql "SELECT count(*) FROM proposals p, seed_expect e
		WHERE p.id = ANY(e.g2_proposals) AND p.state = 'EXPIRED'")"
	expect_eq "group 2: one PROPOSAL_TIMEOUT per non-responder" "$P $P" "$(sql "SELECT count(*) || ' ' || count(DISTINCT t.player_id)
		FROM penalties x JOIN tickets t ON t.player_id = x.player_id, seed_expect e
		WHERE t.id = ANY(e.g2_silent) AND x.kind = 'PROPOSAL_TIMEOUT'")"
	expect_eq "group 2: non-responders EXPIRED once" "$P" "$(sql "SELECT count(*) FROM tickets t, seed_expect e
		WHERE t.id = ANY(e.g2_silent) AND t.state = 'EXPIRED'
		AND (SELECT count(*) FROM outbox o WHERE o.resource_id = t.id AND o.event = 'ticket.expired') = 1")"
	expect_eq "group 2: accepters requeued once" "$P" "$(sql "SELECT count(*) FROM tickets t, seed_expect e
		WHERE t.id = ANY(e.g2_accepters) AND t.state = 'QUEUED'
		AND (SELECT count(*) FROM outbox o WHERE o.resource_id = t.id AND o.event = 'ticket.requeued') = 1")"
	expect_eq "group 3: matches FAILED stalled" "$S" "$(sql "SELECT count(*) FROM matches m, seed_expect e
		WHERE m.id = ANY(e.g3_matches) AND m.state = 'FAILED'")"
	expect_eq "group 3: both players requeued once, no penalty" "$((2 * S)) 0" "$(sql "SELECT count(*) FILTER (WHERE t.state = 'QUEUED'
		AND (SELECT count(*) FROM outbox o WHERE o.resource_id = t.id AND o.event = 'ticket.requeued') = 1) || ' ' ||
		(SELECT count(*) FROM penalties x JOIN match_players q ON q.player_id = x.player_id, seed_expect f WHERE q.match_id = ANY(f.g3_matches))
		FROM match_players mp JOIN tickets t ON t.id = mp.ticket_id, seed_expect e WHERE mp.match_id = ANY(e.g3_matches)")"
	# Half had a REQUESTED allocation (-> FAILED); the rest get a FAILED tombstone, so a late allocator claims nothing.
	expect_eq "group 3: allocations FAILED" "$S" "$(sql "SELECT count(*) FROM allocations a, seed_expect e
		WHERE a.match_id = ANY(e.g3_matches) AND a.state = 'FAILED'")"
	expect_eq "group 4: matches FAILED no_show" "$K" "$(sql "SELECT count(*) FROM matches m, seed_expect e
		WHERE m.id = ANY(e.g4_matches) AND m.state = 'FAILED'")"
	expect_eq "group 4: one INITIAL_CONNECT_NO_SHOW per no-show, none for the others" "$K $K 0" "$(sql "SELECT
		count(*) FILTER (WHERE x.player_id = ANY(e.g4_no_shows)) || ' ' ||
		count(DISTINCT x.player_id) FILTER (WHERE x.player_id = ANY(e.g4_no_shows)) || ' ' ||
		count(*) FILTER (WHERE NOT x.player_id = ANY(e.g4_no_shows))
		FROM penalties x JOIN match_players mp ON mp.player_id = x.player_id, seed_expect e
		WHERE mp.match_id = ANY(e.g4_matches) AND x.kind = 'INITIAL_CONNECT_NO_SHOW'")"
	expect_eq "group 4: present players requeued once" "$K" "$(sql "SELECT count(*) FROM tickets t, seed_expect e
		WHERE t.id = ANY(e.g4_present) AND t.state = 'QUEUED'
		AND (SELECT count(*) FROM outbox o WHERE o.resource_id = t.id AND o.event = 'ticket.requeued') = 1")"
	expect_eq "group 4: allocations RELEASED" "$K" "$(sql "SELECT count(*) FROM allocations a, seed_expect e
		WHERE a.match_id = ANY(e.g4_matches) AND a.state = 'RELEASED'")"
	expect_eq "seasons: season 2 created once, starting where season 1 ends" "2 true" "$(sql "SELECT max(season) || ' ' ||
		bool_and(season = 1 OR starts_at = (SELECT ends_at FROM seasons WHERE season = 1)) FROM seasons")"
	expect_eq "seasons: one reset per player, the rating pulled halfway once" "$R $R $R" "$(sql "SELECT count(*) || ' ' ||
		count(*) FILTER (WHERE abs(r.rating - (1500 + (s.rating - 1500) * 0.5)) < 1e-9
		                   AND r.deviation = least(350, greatest(s.deviation, 200))) || ' ' ||
		(SELECT count(*) FROM outbox WHERE event = 'rating.season_reset')
		FROM seed_ratings s JOIN ratings r ON r.player_id = s.player_id AND r.playlist = 'ranked'
		JOIN season_resets x ON x.player_id = s.player_id AND x.season = 2")"
}
check
pass "two replicas: $E expiries, $P proposal timeouts, $S stalled and $K no-show matches, $R season resets, each once"

kill "$M1_PID" "$M2_PID"
wait "$M1_PID" "$M2_PID" 2>/dev/null || true
# A rerun finds nothing left to do and changes nothing.
before=$(sql "SELECT count(*) FROM outbox")
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" "$BIN/cc-maintenance" --once --admin-port=0 "${FLAGS[@]}" \
	>"$T_DIR/once.log" 2>&1 || { cat "$T_DIR/once.log"; fail "cc-maintenance --once exited $?"; }
expect_eq "outbox rows after a rerun" "$before" "$(sql "SELECT count(*) FROM outbox")"
check
pass "a rerun (--once) changed nothing"
