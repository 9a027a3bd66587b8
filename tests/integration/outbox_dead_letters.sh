#!/usr/bin/env bash
# The operator's dead-letter routes over real HTTP (cc-testkit-api):
#  - GET /v1/admin/outbox/dead-letters lists dead letters newest first, with
#    event, resource, attempts and last_error, paged by limit and before;
#  - POST /v1/admin/outbox/dead-letters/{id}/replay, fenced by the replays
#    the operator saw: the row is pending again (attempts 0, replays + 1),
#    the same request again changes nothing (200, "replayed": false), a
#    stale fence is 409 revision_conflict, a row that is not a dead letter
#    409 invalid_state, five identical concurrent requests replay once;
#  - bad input is 400 invalid_request, an unknown id 404, no token 401.
# The dead letters are planted with SQL as the dispatcher leaves them
# (dead_lettered_at, attempts, last_error): the dispatcher's own path to
# them is tests/integration/test_outbox_dispatch.c.
source "$(dirname "$0")/lib.sh"

token=optok-dead-letters-fixture
start_api A --operator-token-file=<(echo "$token")
LIST="$A_URL/v1/admin/outbox/dead-letters"

# plant_dead [RESOURCE]: a dead-lettered row (of RESOURCE, else a fresh one); prints its id.
plant_dead() {
	sql "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, attempts, dead_lettered_at, last_error)
	     VALUES ('test.poisoned', 'test', ${1:+'$1'::uuid}${1:-gen_random_uuid()}, 1, array_fill(gen_random_uuid(), ARRAY[65]), 5, now(),
	             'invalid envelope: player_ids must be at most 64 ids') RETURNING id"
}
replay() { http POST "$LIST/$1/replay" "$token" "$2"; }

# 1. Listed newest first, paged.
d1=$(plant_dead); d2=$(plant_dead); d3=$(plant_dead)
http GET "$LIST?limit=2" "$token"
expect_http "list, limit 2" 200
expect_eq "first page ids" "$d3 $d2" "$(jq -r '[.dead_letters[].id] | join(" ")' <<<"$BODY")"
expect_eq "first entry" "test.poisoned test 5 65 0" \
	"$(jq -r '.dead_letters[0] | "\(.event) \(.resource_type) \(.attempts) \(.player_count) \(.replays)"' <<<"$BODY")"
[[ $(jq -r '.dead_letters[0].last_error' <<<"$BODY") == *"player_ids"* ]] || fail "last_error not listed: $BODY"
next=$(jq -r .next_before <<<"$BODY")
expect_eq "next_before" "$d2" "$next"
http GET "$LIST?limit=2&before=$next" "$token"
expect_http "second page" 200
[[ $(jq -r '.dead_letters[0].id' <<<"$BODY") == "$d1" ]] || fail "second page does not start at $d1: $BODY"
http GET "$LIST?before=$d1" "$token"
expect_http "page before the oldest planted" 200
[[ $(jq -r "[.dead_letters[].id | select(. >= $d1)] | length" <<<"$BODY") == 0 ]] || fail "before=$d1 listed ids >= $d1: $BODY"
pass "dead letters listed newest first with event, resource, attempts, last_error; paged by limit and before"

# 2. Bad input and no token.
for q in limit=0 limit=101 limit=abc limit=-1 "limit=" before=0 before=x before=-5 before=1234567890123456789012; do
	http GET "$LIST?$q" "$token"
	expect_http "list ?$q" 400 invalid_request
done
http GET "$LIST"
expect_http "list without the operator token" 401 unauthorized
for id in abc 0 -1 1.5 99999999999999999999; do
	replay "$id" '{"replays":0}'
	expect_http "replay of id '$id'" 400 invalid_request
done
for body in '{}' '{"replays":-1}' '{"replays":"0"}' '{"replays":0,"force":true}' '{"replays":1.5}' '[]'; do
	replay "$d1" "$body"
	expect_http "replay with body $body" 400 invalid_request
done
replay "$d1" '{"replays":'
expect_http "replay with truncated JSON" 400 invalid_json
replay "$d1" '{"replays":0}' ; STATUS_NOAUTH=$STATUS
http POST "$LIST/$d1/replay" "" '{"replays":0}'
expect_http "replay without the operator token" 401 unauthorized
expect_eq "the earlier replay with the token" 200 "$STATUS_NOAUTH"
pass "bad limit, before, id and body are 400; no token is 401"

# 3. Unknown ids: none at all, and a row that was never dead-lettered.
replay 999999999999999 '{"replays":0}'
expect_http "replay of an unknown id" 404 not_found
pending=$(sql "SELECT cc_outbox_append('test.fine', 'test', gen_random_uuid(), 1, ARRAY[gen_random_uuid()], NULL)")
replay "$pending" '{"replays":0}'
expect_http "replay of a row that was never dead-lettered" 404 not_found
pass "unknown ids are 404"

# 4. Replay once, fenced; the same request again is a no-op.
expect_eq "d1 after its replay in section 2 (cleared, attempts, replays, due now)" "t 0 1 1" \
	"$(sql "SELECT dead_lettered_at IS NULL, attempts, replays, (next_attempt_at IS NULL)::int FROM outbox WHERE id = $d1" | tr '|' ' ')"
replay "$d1" '{"replays":0}'
expect_http "the same replay again" 200
expect_eq "the repeat's answer" "pending 1 false" "$(jq -r '"\(.state) \(.replays) \(.replayed)"' <<<"$BODY")"
expect_eq "replays after the repeat" 1 "$(sql "SELECT replays FROM outbox WHERE id = $d1")"
replay "$d1" '{"replays":4}'
expect_http "replay with a stale fence" 409 revision_conflict
replay "$d1" '{"replays":1}'
expect_http "replay of a row that is pending again" 409 invalid_state
http GET "$LIST?limit=100" "$token"
[[ $(jq -r "[.dead_letters[].id | select(. == $d1)] | length" <<<"$BODY") == 0 ]] || fail "the replayed row is still listed"
# Dead-lettered again (as the dispatcher would), it takes the next fence.
sql "UPDATE outbox SET dead_lettered_at = now(), attempts = 5 WHERE id = $d1" >/dev/null
replay "$d1" '{"replays":1}'
expect_http "second replay, fence 1" 200
expect_eq "second replay's answer" "pending 2 true 0" "$(jq -r '"\(.state) \(.replays) \(.replayed) \(.attempts)"' <<<"$BODY")"
pass "a replay clears the dead letter once per fence (repeat 200 no-op, stale 409 revision_conflict, pending 409 invalid_state)"

# 5. Five identical concurrent replays: one replays, all answer 200.
curls=()
for i in 1 2 3 4 5; do
	curl -s -o "$T_DIR/c$i.body" -w '%{http_code}\n' -X POST -H "Authorization: Bearer $token" \
		-H 'Content-Type: application/json' --data-binary '{"replays":0}' "$LIST/$d2/replay" >"$T_DIR/c$i.status" &
	curls+=("$!")
done
wait "${curls[@]}"
statuses=$(cat "$T_DIR"/c?.status | sort | uniq -c | tr -s ' ' | sed 's/^ //')
expect_eq "statuses of 5 concurrent replays" "5 200" "$statuses"
expect_eq "answers that replayed" 1 "$(cat "$T_DIR"/c?.body | jq -s '[.[] | select(.replayed)] | length')"
expect_eq "replays of the row" 1 "$(sql "SELECT replays FROM outbox WHERE id = $d2")"
pass "five identical concurrent replays: all 200, one replayed, replays = 1"
