#!/usr/bin/env bash
# Ticket expiry through the routes that name a ticket (heartbeat, GET,
# cancel) and through enqueue: a QUEUED ticket past its deadline becomes
# EXPIRED (revision +1, one ticket.expired outbox row) and is answered as
# closed, whatever revision the client sent; a live ticket's heartbeat
# pushes the deadline by the TTL; a stale revision is revision_conflict.
# Deadlines are moved into the past in the database instead of waiting.
source "$(dirname "$0")/lib.sh"

start_api A --regions=eu-west --ticket-ttl-seconds=120
run=$RANDOM$RANDOM

# queued NAME: a logged-in, probed player with a QUEUED ticket; sets TOK, ID.
queued() {
	TOK=$(login "$A_URL" "expiry-$1-$run")
	probe "$A_URL" "$TOK" eu-west
	http POST "$A_URL/v1/queue" "$TOK" '{"playlist":"casual","protocol_version":1,"build":"b1"}' \
		-H "Idempotency-Key: expiry-$1"
	expect_http "$1: create" 201
	ID=$(jq -r .id <<<"$BODY")
}
overdue() { sql "UPDATE tickets SET expires_at = now() - interval '1 second' WHERE id = '$1'" >/dev/null; }
row() { sql "SELECT state || ' ' || revision FROM tickets WHERE id = '$1'"; }
expired_events() { sql "SELECT count(*) || ' ' || coalesce(max(revision), 0) FROM outbox WHERE resource_id = '$1' AND event = 'ticket.expired'"; }

# 1. A live heartbeat: 200, next revision, deadline pushed to about now + 120 s.
queued live
http POST "$A_URL/v1/queue/$ID/heartbeat" "$TOK" '{"revision":1}'
expect_http "live heartbeat" 200
expect_eq "live heartbeat: state and revision" "QUEUED 2" "$(jq -r '.state + " " + (.revision|tostring)' <<<"$BODY")"
expect_eq "live heartbeat: seconds to the deadline" t \
	"$(sql "SELECT expires_at BETWEEN now() + interval '110 s' AND now() + interval '121 s' FROM tickets WHERE id = '$ID'")"
http POST "$A_URL/v1/queue/$ID/heartbeat" "$TOK" '{"revision":1}'
expect_http "stale heartbeat" 409 revision_conflict
pass "live heartbeat moves the revision and deadline; a stale one is revision_conflict"

# 2. Overdue, right revision or wrong: ticket_closed, EXPIRED once, announced once.
for rev in 2 7; do
	overdue "$ID"
	http POST "$A_URL/v1/queue/$ID/heartbeat" "$TOK" "{\"revision\":$rev}"
	expect_http "heartbeat at $rev on an overdue ticket" 409 ticket_closed
	grep -q EXPIRED <<<"$BODY" || fail "the answer does not say EXPIRED: $BODY"
	expect_eq "overdue heartbeat at $rev: ticket" "EXPIRED 3" "$(row "$ID")"
	expect_eq "overdue heartbeat at $rev: ticket.expired rows and revision" "1 3" "$(expired_events "$ID")"
done
pass "an overdue heartbeat expires the ticket once and answers ticket_closed"

# 3. GET on an overdue ticket shows it EXPIRED; cancel answers ticket_closed.
queued get
overdue "$ID"
http GET "$A_URL/v1/queue/$ID" "$TOK"
expect_http "GET overdue" 200
expect_eq "GET overdue: state and revision" "EXPIRED 2" "$(jq -r '.state + " " + (.revision|tostring)' <<<"$BODY")"
expect_eq "GET overdue: ticket.expired rows" "1 2" "$(expired_events "$ID")"
queued cancel
overdue "$ID"
http POST "$A_URL/v1/queue/$ID/cancel" "$TOK" '{"revision":1}'
expect_http "cancel overdue" 409 ticket_closed
expect_eq "cancel overdue: ticket" "EXPIRED 2" "$(row "$ID")"
pass "GET and cancel expire an overdue ticket first"

# 4. Enqueue while the old ticket is overdue: the old one expires, a new one is made.
queued again
old=$ID
overdue "$old"
http POST "$A_URL/v1/queue" "$TOK" '{"playlist":"casual","protocol_version":1,"build":"b1"}' -H "Idempotency-Key: expiry-again-2"
expect_http "enqueue over an overdue ticket" 201
expect_eq "the overdue ticket" "EXPIRED 2" "$(row "$old")"
expect_eq "the new ticket" "QUEUED 1" "$(row "$(jq -r .id <<<"$BODY")")"
pass "enqueue expires the player's overdue ticket and queues a new one"

# 5. The heartbeat's one-statement path (session read + compare-and-set) answers as the
#    transactional one: each session refusal, another player's ticket, a closed ticket,
#    a bad body behind a bad session (the session is answered first), and no outbox row
#    for a live heartbeat.
queued session
sid=$ID stok=$TOK
http POST "$A_URL/v1/queue/$sid/heartbeat" "unknown-token-$run" '{"revision":1}'
expect_http "heartbeat, unknown session" 401 unauthorized
http POST "$A_URL/v1/queue/$sid/heartbeat" "unknown-token-$run" '{"revision":"x"}'
expect_http "heartbeat, unknown session and a bad body" 401 unauthorized
http POST "$A_URL/v1/queue/$sid/heartbeat" "$stok" '{"revision":"x"}'
expect_http "heartbeat, a bad body" 400 invalid_request
queued other
http POST "$A_URL/v1/queue/$sid/heartbeat" "$TOK" '{"revision":1}'
expect_http "heartbeat on another player's ticket" 404 not_found
http POST "$A_URL/v1/queue/$sid/heartbeat" "$stok" '{"revision":1}'
expect_http "heartbeat, live" 200
expect_eq "a live heartbeat writes no outbox row" 0 \
	"$(sql "SELECT count(*) FROM outbox WHERE resource_id = '$sid' AND event NOT IN ('ticket.queued')")"
pid="(SELECT player_id FROM tickets WHERE id = '$sid')"
sql "UPDATE players SET banned_until = now() + interval '1 hour' WHERE id = $pid" >/dev/null
http POST "$A_URL/v1/queue/$sid/heartbeat" "$stok" '{"revision":2}'
expect_http "heartbeat, banned" 403 banned
expect_eq "a banned player's heartbeat changes nothing" "QUEUED 2" "$(row "$sid")"
sql "UPDATE players SET banned_until = NULL WHERE id = $pid" >/dev/null
http POST "$A_URL/v1/queue/$sid/heartbeat" "$stok" '{"revision":2}'
expect_http "heartbeat, ban lifted" 200
sql "UPDATE tickets SET state = 'CANCELLED' WHERE id = '$ID'" >/dev/null
http POST "$A_URL/v1/queue/$ID/heartbeat" "$TOK" '{"revision":1}'
expect_http "heartbeat on a closed ticket" 409 ticket_closed
sql "UPDATE sessions SET revoked_at = now() WHERE player_id = $pid" >/dev/null
http POST "$A_URL/v1/queue/$sid/heartbeat" "$stok" '{"revision":3}'
expect_http "heartbeat, revoked session" 401 session_expired
expect_eq "a revoked session's heartbeat changes nothing" "QUEUED 3" "$(row "$sid")"
pass "heartbeat answers: unknown session (also before a bad body), bad body, another player's ticket, live (no outbox row), closed, banned, revoked"
