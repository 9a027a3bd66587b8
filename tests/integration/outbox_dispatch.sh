#!/usr/bin/env bash
# Outbox dispatch with the real binaries: two cc-maintenance processes
# (their outbox sweep, services/maintenance/dispatch.c) drain a backlog of
# 20 aggregates x 200 revisions (more than a batch of 16 heads, fewer than
# two) in which 4 aggregates hold a poison row at revision 100 (65 player
# ids: the table admits it, the envelope check does not), and cc-testkit-api's operator routes list and replay a dead letter:
#  - every valid row is delivered once; each poison row is dead-lettered
#    after --outbox-max-attempts (3) failures, and the rows behind it went on;
#  - per aggregate, delivery positions grow with the revision (positions are
#    commit-ordered, test_outbox_dispatch proves it, so this is delivery order;
#    seen failing, 40 aggregates out of order, with the claim's head test removed),
#    and no row behind a poison row went out before it was dead-lettered;
#  - both processes delivered rows, and their counters add up (delivered,
#    failures, dead letters);
#  - a dead letter listed by GET /v1/admin/outbox/dead-letters, fixed, and
#    replayed is delivered by the running dispatchers, after its aggregate's
#    other rows (a position above theirs).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

AGG=20 REV=200 POISON_REV=100 POISON_EVERY=5 ATTEMPTS=3
scratch_database outbox_dispatch
token=optok-outbox-dispatch-fixture
start_api A --operator-token-file=<(echo "$token")
FLAGS=(--batch=16 --outbox-interval-ms=100 --outbox-retry-ms=10 --outbox-max-attempts=$ATTEMPTS
	--expiry-interval-ms=60000 --stalled-interval-ms=60000 --no-show-interval-ms=60000
	--server-silent-interval-ms=60000 --result-missing-interval-ms=60000 --season-interval-ms=60000
	--retention-interval-ms=60000 --log-level=info)
start_maint M1
start_maint M2
wait_http "$M1_ADMIN/readyz" "$M1_PID" 20
wait_http "$M2_ADMIN/readyz" "$M2_PID" 20

# Seeded once both run, in one transaction: the whole backlog appears at once to both.
sql "CREATE TABLE seed_aggregates AS SELECT k, gen_random_uuid() AS id FROM generate_series(1, $AGG) k" >/dev/null
sql "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
     SELECT 'test.changed', 'test', a.id, r,
       CASE WHEN r = $POISON_REV AND (a.k - 1) % $POISON_EVERY = 0 THEN array_fill(gen_random_uuid(), ARRAY[65])
            ELSE ARRAY[gen_random_uuid()] END, jsonb_build_object('k', a.k)
     FROM generate_series(1, $REV) r, seed_aggregates a ORDER BY r, a.k" >/dev/null
total=$((AGG * REV)) poison=$(( (AGG + POISON_EVERY - 1) / POISON_EVERY ))
want=$((total - poison))
echo "$T_NAME: seeded $total outbox rows, $poison of them poison"


pending() { sql "SELECT count(*) FROM outbox WHERE published_at IS NULL AND dead_lettered_at IS NULL"; }
started=$SECONDS deadline=$((SECONDS + 60))
while (( $(pending) > 0 )); do
	running "$M1_PID" || fail "cc-maintenance M1 exited"
	running "$M2_PID" || fail "cc-maintenance M2 exited"
	((SECONDS < deadline)) || fail "outbox not drained within 60 s: $(pending) rows pending"
	sleep 0.2
done
echo "$T_NAME: drained in $((SECONDS - started)) s"

expect_eq "rows delivered" "$want" "$(sql "SELECT count(*) FROM outbox WHERE published_at IS NOT NULL AND position IS NOT NULL")"
expect_eq "poison rows dead-lettered after $ATTEMPTS attempts, never delivered" "$poison" \
	"$(sql "SELECT count(*) FROM outbox WHERE dead_lettered_at IS NOT NULL AND attempts = $ATTEMPTS
	        AND published_at IS NULL AND revision = $POISON_REV AND cardinality(player_ids) = 65")"
expect_eq "aggregates whose positions do not grow with the revision" 0 \
	"$(sql "SELECT count(*) FROM (SELECT position, lag(position) OVER (PARTITION BY resource_id ORDER BY revision) AS prev
	        FROM outbox WHERE position IS NOT NULL) s WHERE prev >= position")"
expect_eq "rows behind a poison row delivered before it was dead-lettered" 0 \
	"$(sql "SELECT count(*) FROM outbox p JOIN outbox o ON o.resource_id = p.resource_id AND o.id > p.id
	        WHERE p.dead_lettered_at IS NOT NULL AND o.published_at < p.dead_lettered_at")"
metric_sum() { curl -s "$M1_ADMIN/metrics" "$M2_ADMIN/metrics" | awk -v m="$1" '$1 == m { s += $2 } END { printf "%d", s }'; }
of() { curl -s "$1/metrics" | awk -v m="$2" '$1 == m { printf "%d", $2 }'; }
d1=$(of "$M1_ADMIN" cosmic_clash_outbox_delivered_total) d2=$(of "$M2_ADMIN" cosmic_clash_outbox_delivered_total)
echo "$T_NAME: delivered by M1 $d1, by M2 $d2; failed batches: $(curl -s "$M1_ADMIN/metrics" "$M2_ADMIN/metrics" |
	awk '/^cosmic_clash_maintenance_failures_total\{sweep="outbox"\}/ { s += $2 } END { printf "%d", s }')"
(( d1 > 0 && d2 > 0 )) || fail "both dispatchers must have delivered rows (M1 $d1, M2 $d2)"
expect_eq "delivered_total, both processes" "$want" "$(metric_sum cosmic_clash_outbox_delivered_total)"
expect_eq "dead_lettered_total, both processes" "$poison" "$(metric_sum cosmic_clash_outbox_dead_lettered_total)"
expect_eq "delivery_failures_total, both processes" "$((poison * ATTEMPTS))" "$(metric_sum cosmic_clash_outbox_delivery_failures_total)"
pass "$want rows delivered once, in revision order per aggregate, by both processes; $poison poison rows dead-lettered after $ATTEMPTS attempts"

# The operator lists the dead letters, fixes one and replays it; the running dispatchers deliver it.
http GET "$A_URL/v1/admin/outbox/dead-letters" "$token"
expect_http "dead letters" 200
expect_eq "dead letters listed" "$poison" "$(jq '.dead_letters | length' <<<"$BODY")"
id=$(jq -r '.dead_letters[0].id' <<<"$BODY")
sql "UPDATE outbox SET player_ids = player_ids[1:1] WHERE id = $id" >/dev/null
http POST "$A_URL/v1/admin/outbox/dead-letters/$id/replay" "$token" '{"replays":0}'
expect_http "replay $id" 200
deadline=$((SECONDS + 20))
until [[ $(sql "SELECT published_at IS NOT NULL FROM outbox WHERE id = $id") == t ]]; do
	((SECONDS < deadline)) || fail "replayed row $id not delivered within 20 s: $(sql "SELECT attempts, last_error FROM outbox WHERE id = $id")"
	sleep 0.1
done
expect_eq "the replayed row's position is above every other of its aggregate" t \
	"$(sql "SELECT o.position > (SELECT max(position) FROM outbox x WHERE x.resource_id = o.resource_id AND x.id <> o.id)
	        FROM outbox o WHERE o.id = $id")"
http GET "$A_URL/v1/admin/outbox/dead-letters" "$token"
expect_eq "dead letters after the replay" "$((poison - 1))" "$(jq '.dead_letters | length' <<<"$BODY")"
pass "a dead letter replayed through cc-api is delivered by the running cc-maintenance"
