#!/usr/bin/env bash
# The enqueue rules that are decided inside the database, each through the
# API with the deciding row set up in SQL:
#  - the ticket's rating is the ratings row of that playlist, read in the
#    enqueue transaction (ranked 2100/80 seeded), else 1500/350;
#  - RTT evidence older than --probe-freshness-seconds does not count (422
#    no_region_probed), evidence inside it does;
#  - the idempotency hash covers playlist, protocol_version and build: one
#    key with any of them changed is 409 idempotency_conflict; a replay after
#    the ticket was cancelled returns the original answer and makes no ticket;
#  - a refused enqueue stores nothing under its key: the key works later;
#  - a ban that runs out lets the player log in again, while the sessions the
#    ban revoked stay revoked.
source "$(dirname "$0")/lib.sh"

FRESH=60
start_api A --regions=eu-west --probe-freshness-seconds="$FRESH" --operator-token-file=<(echo optok-queue-rules-fixture)
run=$RANDOM$RANDOM
q_casual='{"playlist":"casual","protocol_version":1,"build":"b1"}'
q_ranked='{"playlist":"ranked","protocol_version":1,"build":"b1"}'

player_of() { sql "SELECT player_id FROM sessions WHERE token_hash = sha256(convert_to('$1', 'UTF8'))"; }
# enqueue TOKEN KEY BODY: POST /v1/queue (sets STATUS, BODY).
enqueue() { http POST "$A_URL/v1/queue" "$1" "$3" -H "Idempotency-Key: $2"; }
cancel() {
	http POST "$A_URL/v1/queue/$2/cancel" "$1" "{\"revision\":$3}"
	expect_http "cancel $2" 200
}

# 1. The rating comes from the ratings row of the ticket's playlist.
tok=$(login "$A_URL" "rules-rated-$run")
probe "$A_URL" "$tok" eu-west
player=$(player_of "$tok")
sql "INSERT INTO ratings (player_id, playlist, rating, deviation, games) VALUES ('$player', 'ranked', 2100, 80, 40)" >/dev/null
enqueue "$tok" rated-ranked "$q_ranked"
expect_http "ranked enqueue with a ratings row" 201
id=$(jq -r .id <<<"$BODY")
expect_eq "ranked ticket's rating and deviation" "2100 80" "$(sql "SELECT rating || ' ' || deviation FROM tickets WHERE id = '$id'")"
cancel "$tok" "$id" 1
enqueue "$tok" rated-casual "$q_casual"
expect_http "casual enqueue without a casual ratings row" 201
id=$(jq -r .id <<<"$BODY")
expect_eq "casual ticket's rating and deviation (defaults)" "1500 350" "$(sql "SELECT rating || ' ' || deviation FROM tickets WHERE id = '$id'")"
pass "the ticket's rating is the player's ratings row of that playlist (2100/80), else 1500/350"

# 2. RTT evidence is fresh for --probe-freshness-seconds.
tok=$(login "$A_URL" "rules-stale-$run")
probe "$A_URL" "$tok" eu-west
player=$(player_of "$tok")
sql "UPDATE region_rtts SET measured_at = now() - make_interval(secs => $FRESH + 1) WHERE player_id = '$player'" >/dev/null
enqueue "$tok" stale "$q_casual"
expect_http "enqueue with evidence $((FRESH + 1)) s old" 422 no_region_probed
expect_eq "tickets after the refusal" 0 "$(sql "SELECT count(*) FROM tickets WHERE player_id = '$player'")"
sql "UPDATE region_rtts SET measured_at = now() - make_interval(secs => $FRESH - 10) WHERE player_id = '$player'" >/dev/null
enqueue "$tok" stale "$q_casual"
expect_http "enqueue with evidence $((FRESH - 10)) s old, same key as the refused one" 201
pass "RTT evidence older than $FRESH s is no evidence (422 no_region_probed); younger is; the refused key stored nothing"

# 3. The idempotency hash covers every field; replays outlive the ticket.
tok=$(login "$A_URL" "rules-idem-$run")
probe "$A_URL" "$tok" eu-west
player=$(player_of "$tok")
enqueue "$tok" idem '{"playlist":"casual","protocol_version":1,"build":"b1"}'
expect_http "first enqueue" 201
first=$BODY
id=$(jq -r .id <<<"$first")
for body in '{"playlist":"casual","protocol_version":1,"build":"b2"}' \
	'{"playlist":"casual","protocol_version":2,"build":"b1"}' \
	'{"playlist":"ranked","protocol_version":1,"build":"b1"}'; do
	enqueue "$tok" idem "$body"
	expect_http "same key, body $body" 409 idempotency_conflict
done
cancel "$tok" "$id" 1
enqueue "$tok" idem '{"playlist":"casual","protocol_version":1,"build":"b1"}'
expect_http "replay after the ticket was cancelled" 201
# The replay is the stored ticket with a fresh estimated wait (openapi: POST /v1/queue 201), as contract-test.js compares it.
sans_estimate='del(.estimated_wait_seconds, .estimated_wait_method)'
expect_eq "replayed answer (without its fresh estimate)" "$(jq -cS "$sans_estimate" <<<"$first")" "$(jq -cS "$sans_estimate" <<<"$BODY")"
expect_eq "replayed answer carries an estimate" "true" "$(jq 'has("estimated_wait_seconds") and has("estimated_wait_method")' <<<"$BODY")"
expect_eq "tickets of the player after the replay" 1 "$(sql "SELECT count(*) FROM tickets WHERE player_id = '$player'")"
pass "one key with another build, protocol or playlist: 409 idempotency_conflict; a replay after cancel: the original 201, no new ticket"

# 4. A refused enqueue (active ticket) leaves its key unused.
enqueue "$tok" second "$q_casual"
expect_http "enqueue next to an active ticket" 201
id=$(jq -r .id <<<"$BODY")
enqueue "$tok" third "$q_casual"
expect_http "enqueue while ticket $id is active" 409 active_ticket_exists
cancel "$tok" "$id" 1
enqueue "$tok" third "$q_casual"
expect_http "the refused key, once the active ticket is gone" 201
expect_eq "idempotency rows left as placeholders" 0 "$(sql "SELECT count(*) FROM idempotency_keys WHERE status = 0")"
pass "a 409 active_ticket_exists stores nothing under its key; no placeholder survives"

# An authenticated request with no other effect: 404 for a ticket nobody has.
whoami() { http GET "$A_URL/v1/queue/00000000-0000-4000-8000-000000000000" "$1" ""; }

# 5. A ban runs out: new logins work, the revoked sessions stay revoked.
ticket="rules-ban-$run"
tok=$(login "$A_URL" "$ticket")
player=$(player_of "$tok")
until=$(sql "SELECT to_char((now() + interval '3 seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
http POST "$A_URL/v1/admin/players/$player/ban" optok-queue-rules-fixture "{\"until\":\"$until\",\"reason\":\"short ban\"}"
expect_http "ban until $until" 200
whoami "$tok"
expect_http "the banned player's session" 403 banned
http POST "$A_URL/v1/session/steam" "" "{\"ticket\":\"$ticket\"}"
expect_http "login while banned" 403 banned
# The ban ends by PostgreSQL's clock; wait for it, then log in at once.
deadline=$((SECONDS + 15))
until [[ $(sql "SELECT banned_until <= now() FROM players WHERE id = '$player'") == t ]]; do
	((SECONDS < deadline)) || fail "the ban until $until had not ended by PostgreSQL's clock after 15 s"
	sleep 0.1
done
tok2=$(login "$A_URL" "$ticket")
whoami "$tok2"
expect_http "the new session after the ban ended" 404 not_found
whoami "$tok"
expect_http "the session the ban revoked, after the ban ended" 401 session_expired
pass "a ban until now + 3 s: 403 at once; after it ends a new login works and the old session stays revoked"
