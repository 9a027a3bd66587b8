#!/usr/bin/env bash
# Every retention purge deletes exactly the rows past its window and
# nothing a foreign key or a retry still needs: one cc-maintenance --once
# over rows seeded on both sides of each window (sessions expired or
# revoked, probe challenges, published, pending and dead-lettered outbox
# rows, idempotency keys, and the web of tickets and proposals: a ticket
# cancelled while queued, an expired proposal with its accepter and its
# non-responder, an accepted proposal whose match completed, a ticket that
# a stalled match requeued and that later expired). Each seeded row is
# tagged "purge" or "keep" and the survivors are compared tag by tag.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

scratch_database maint_retention
psql -qX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" >"$T_DIR/seed.log" 2>&1 <<'SQL' || fail "seed: $(tail -5 "$T_DIR/seed.log")"
CREATE TABLE expect (kind text, id text, fate text);
INSERT INTO players (steam_id) SELECT (8000000000000 + g)::text FROM generate_series(1, 20) g;
CREATE FUNCTION p(n int) RETURNS uuid LANGUAGE sql AS $$ SELECT id FROM players WHERE steam_id = (8000000000000 + n)::text $$;

-- Sessions: 7 days past expiry or revocation go; younger or live stay.
INSERT INTO sessions (player_id, token_hash, expires_at, revoked_at) VALUES
  (p(1), sha256('s1'), now() - interval '8 days', NULL),
  (p(1), sha256('s2'), now() + interval '1 day', now() - interval '8 days'),
  (p(1), sha256('s3'), now() - interval '1 day', NULL),
  (p(1), sha256('s4'), now() + interval '1 day', now() - interval '1 day'),
  (p(1), sha256('s5'), now() + interval '1 day', NULL);
INSERT INTO expect SELECT 'session', encode(token_hash, 'hex'),
  CASE WHEN token_hash IN (sha256('s1'), sha256('s2')) THEN 'purge' ELSE 'keep' END FROM sessions;

-- Probe challenges: an hour past expiry goes.
INSERT INTO probe_challenges (nonce_hash, player_id, region, issued_at, expires_at, answered_at) VALUES
  (sha256('n1'), p(1), 'eu-west', now() - interval '2 hours', now() - interval '2 hours', NULL),
  (sha256('n2'), p(1), 'eu-west', now() - interval '2 hours', now() - interval '2 hours', now() - interval '2 hours'),
  (sha256('n3'), p(1), 'eu-west', now() - interval '10 minutes', now() - interval '10 minutes', NULL);
INSERT INTO expect SELECT 'probe', encode(nonce_hash, 'hex'), CASE WHEN nonce_hash = sha256('n3') THEN 'keep' ELSE 'purge' END
FROM probe_challenges;

-- Idempotency keys: 48 h.
INSERT INTO idempotency_keys (player_id, key, request_hash, status, response, created_at) VALUES
  (p(1), 'old', 'h', 201, '{}', now() - interval '49 hours'), (p(1), 'young', 'h', 201, '{}', now() - interval '47 hours');
INSERT INTO expect VALUES ('idempotency', 'old', 'purge'), ('idempotency', 'young', 'keep');

-- Outbox: published 24 h, dead letters 30 days, pending never.
CREATE TEMP TABLE ob AS SELECT n, cc_outbox_append('test.event', 'test', p(2), n, ARRAY[p(2)], '{}') AS id
FROM generate_series(1, 6) n;
UPDATE outbox o SET published_at = now() - interval '25 hours' FROM ob WHERE ob.id = o.id AND ob.n = 1;
UPDATE outbox o SET published_at = now() - interval '23 hours' FROM ob WHERE ob.id = o.id AND ob.n = 2;
UPDATE outbox o SET occurred_at = now() - interval '60 days' FROM ob WHERE ob.id = o.id AND ob.n = 3;
UPDATE outbox o SET dead_lettered_at = now() - interval '31 days', attempts = 10 FROM ob WHERE ob.id = o.id AND ob.n = 4;
UPDATE outbox o SET dead_lettered_at = now() - interval '29 days', attempts = 10 FROM ob WHERE ob.id = o.id AND ob.n = 5;
UPDATE outbox o SET published_at = now() - interval '10 days' FROM ob WHERE ob.id = o.id AND ob.n = 6;
INSERT INTO expect SELECT 'outbox', id::text, CASE WHEN n IN (1, 4, 6) THEN 'purge' ELSE 'keep' END FROM ob;

-- Tickets and proposals (30 days).
INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, predicted_rtt, expires_at)
SELECT p(n), 'ranked', 'QUEUED', 'ret', 1, 1500, 350, '{"eu-west": 10}', now() + interval '1 hour' FROM generate_series(3, 12) n;
CREATE FUNCTION t(n int) RETURNS uuid LANGUAGE sql AS $$ SELECT id FROM tickets WHERE player_id = p(n) ORDER BY created_at DESC LIMIT 1 $$;
-- (a) p3 cancelled while QUEUED 31 days ago: goes; (b) p4 a day ago: stays.
UPDATE tickets SET state = 'CANCELLED', revision = revision + 1 WHERE id IN (t(3), t(4));
UPDATE tickets SET updated_at = now() - interval '31 days' WHERE id = t(3);
UPDATE tickets SET updated_at = now() - interval '1 day' WHERE id = t(4);
INSERT INTO expect VALUES ('ticket', t(3)::text, 'purge'), ('ticket', t(4)::text, 'keep');
-- (c) proposal c: p5 accepted (requeued, then cancelled), p6 never answered (EXPIRED in it), 31 days ago: all go.
-- (d) proposal d: p7 and p8 accepted, the match completed 31 days ago: all stay (match history).
-- (e) proposal e: p9 and p10 accepted, the match stalled (both requeued), then p9 expired 31 days ago: stays (match_players).
-- (f) proposal f: p11 accepted, p12 never answered, decided only 29 days ago: stays.
DO $$
DECLARE o record; pc uuid := gen_random_uuid(); pd uuid := gen_random_uuid(); pe uuid := gen_random_uuid(); pf uuid := gen_random_uuid();
BEGIN
  SELECT * INTO o FROM cc_claim_proposal(pc, 'ranked', ARRAY[t(5), t(6)], ARRAY[0, 1]::smallint[], 'ret', 1, 'eu-west', 100, 1, 'ret', 10, 0);
  SELECT * INTO o FROM cc_claim_proposal(pd, 'ranked', ARRAY[t(7), t(8)], ARRAY[0, 1]::smallint[], 'ret', 1, 'eu-west', 100, 1, 'ret', 10, 0);
  SELECT * INTO o FROM cc_claim_proposal(pe, 'ranked', ARRAY[t(9), t(10)], ARRAY[0, 1]::smallint[], 'ret', 1, 'eu-west', 100, 1, 'ret', 10, 0);
  SELECT * INTO o FROM cc_claim_proposal(pf, 'ranked', ARRAY[t(11), t(12)], ARRAY[0, 1]::smallint[], 'ret', 1, 'eu-west', 100, 1, 'ret', 10, 0);
  INSERT INTO expect VALUES ('proposal', pc::text, 'purge'), ('proposal', pd::text, 'keep'), ('proposal', pe::text, 'keep'),
    ('proposal', pf::text, 'keep');
END $$;
CREATE FUNCTION prop_of(n int) RETURNS uuid LANGUAGE sql AS $$ SELECT proposal_id FROM proposal_participants WHERE player_id = p(n) LIMIT 1 $$;
-- (c)
UPDATE proposal_participants SET response = 'ACCEPT' WHERE player_id = p(5);
UPDATE proposals SET state = 'EXPIRED', revision = revision + 1, decided_at = now() - interval '31 days' WHERE id = prop_of(5);
UPDATE tickets SET state = 'EXPIRED', revision = revision + 1, updated_at = now() - interval '31 days' WHERE id = t(6);
UPDATE tickets SET state = 'QUEUED', proposal_id = NULL, revision = revision + 1 WHERE id = t(5);
UPDATE tickets SET state = 'CANCELLED', revision = revision + 1, updated_at = now() - interval '31 days' WHERE id = t(5);
INSERT INTO expect VALUES ('ticket', t(5)::text, 'purge'), ('ticket', t(6)::text, 'purge');
-- (d) and (e): accepted, matched.
UPDATE proposal_participants SET response = 'ACCEPT' WHERE player_id IN (p(7), p(8), p(9), p(10));
UPDATE proposals SET state = 'ACCEPTED', revision = revision + 1, decided_at = now() - interval '31 days' WHERE id IN (prop_of(7), prop_of(9));
INSERT INTO matches (proposal_id, playlist, state, region, arena, build, protocol_version, team_size)
SELECT id, playlist, 'ALLOCATING', region, arena, build, protocol_version, team_size FROM proposals WHERE id IN (prop_of(7), prop_of(9));
INSERT INTO match_players (match_id, player_id, ticket_id, team)
SELECT m.id, pp.player_id, pp.ticket_id, pp.team FROM matches m JOIN proposal_participants pp ON pp.proposal_id = m.proposal_id;
UPDATE tickets t SET state = 'MATCHED', match_id = m.id, revision = t.revision + 1 FROM matches m WHERE t.proposal_id = m.proposal_id;
UPDATE matches SET state = 'FAILED', revision = revision + 1, updated_at = now() - interval '31 days' WHERE proposal_id = prop_of(7);
UPDATE tickets SET state = 'FAILED', revision = revision + 1, updated_at = now() - interval '31 days' WHERE id IN (t(7), t(8));
-- (e): the stalled match requeued both (match_id cleared, as cc_tickets_requeue_match does); p9 then expired.
UPDATE matches SET state = 'FAILED', revision = revision + 1 WHERE proposal_id = prop_of(9);
UPDATE tickets SET state = 'QUEUED', match_id = NULL, proposal_id = NULL, revision = revision + 1 WHERE id IN (t(9), t(10));
UPDATE tickets SET state = 'EXPIRED', revision = revision + 1, updated_at = now() - interval '31 days' WHERE id = t(9);
INSERT INTO expect VALUES ('ticket', t(7)::text, 'keep'), ('ticket', t(8)::text, 'keep'), ('ticket', t(9)::text, 'keep'),
  ('ticket', t(10)::text, 'keep');
-- (f)
UPDATE proposal_participants SET response = 'ACCEPT' WHERE player_id = p(11);
UPDATE proposals SET state = 'EXPIRED', revision = revision + 1, decided_at = now() - interval '29 days' WHERE id = prop_of(11);
UPDATE tickets SET state = 'EXPIRED', revision = revision + 1, updated_at = now() - interval '29 days' WHERE id = t(12);
UPDATE tickets SET state = 'QUEUED', proposal_id = NULL, revision = revision + 1 WHERE id = t(11);
INSERT INTO expect VALUES ('ticket', t(11)::text, 'keep'), ('ticket', t(12)::text, 'keep');
SQL

survivors() {
	sql "SELECT e.kind || ':' || e.fate || ':' || CASE
	        WHEN e.kind = 'session' THEN EXISTS (SELECT 1 FROM sessions WHERE encode(token_hash, 'hex') = e.id)
	        WHEN e.kind = 'probe' THEN EXISTS (SELECT 1 FROM probe_challenges WHERE encode(nonce_hash, 'hex') = e.id)
	        WHEN e.kind = 'idempotency' THEN EXISTS (SELECT 1 FROM idempotency_keys WHERE key = e.id)
	        WHEN e.kind = 'outbox' THEN EXISTS (SELECT 1 FROM outbox WHERE id = e.id::bigint)
	        WHEN e.kind = 'ticket' THEN EXISTS (SELECT 1 FROM tickets WHERE id = e.id::uuid)
	        WHEN e.kind = 'proposal' THEN EXISTS (SELECT 1 FROM proposals WHERE id = e.id::uuid) END
	      FROM expect e ORDER BY 1" | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }'
}
before=$(survivors)
echo "$T_NAME: seeded: $before"
# Everything exists before the pass (kind:fate:true).
[[ $before != *":false"* ]] || fail "a seeded row is missing before the purge: $before"

# One pass of every sweep, in batches of 2 (so each purge runs several batches).
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" "$BIN/cc-maintenance" --once --admin-port=0 --batch=2 --log-level=info \
	>"$T_DIR/maint.log" 2>&1 || { tail -20 "$T_DIR/maint.log"; fail "cc-maintenance --once exited non-zero"; }
after=$(survivors)
echo "$T_NAME: after one pass: $after"
expect_eq "rows past their windows gone, the rest kept" \
	"idempotency:keep:true=1 idempotency:purge:false=1 outbox:keep:true=3 outbox:purge:false=3 probe:keep:true=1 probe:purge:false=2 proposal:keep:true=3 proposal:purge:false=1 session:keep:true=3 session:purge:false=2 ticket:keep:true=7 ticket:purge:false=3 " \
	"$after"
expect_eq "the expired proposal's participants went with it" "0" \
	"$(sql "SELECT count(*) FROM proposal_participants pp JOIN expect e ON e.kind = 'proposal' AND e.fate = 'purge' AND pp.proposal_id = e.id::uuid")"
pass "each purge took exactly its rows (batches of 2: several batches a sweep); foreign keys and live rows untouched"
