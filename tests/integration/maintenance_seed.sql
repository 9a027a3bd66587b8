-- maintenance_seed.sql - the backlog tests/integration/maintenance_race.sh
-- gives two cc-maintenance processes (psql -v e=... -v p=... -v s=... -v
-- k=... -v r=...). Proposals are opened by the matcher's own SQL function
-- (cc_claim_proposal, migration 0006); every later state is reached by
-- updates the state-machine triggers check, in the order the real paths
-- take; only the clocks are moved back. Players are tagged by steam_id
-- ranges so the script can count each group:
--   1e12 + i   e  players with an overdue QUEUED ticket (-> EXPIRED once)
--   2e12 + i   2p players in p overdue ranked proposals (the first of each
--              pair accepted: requeued once; the second never answered:
--              EXPIRED with one PROPOSAL_TIMEOUT)
--   3e12 + i   2s players in s matches stalled in ALLOCATING (half with a
--              REQUESTED allocation): both requeued once, no penalty
--   4e12 + i   2k players in k ranked matches in ASSIGNMENT_READY whose
--              connect window is long over; the second of each pair never
--              connected: one INITIAL_CONNECT_NO_SHOW, ticket FAILED; the
--              first requeued once
--   5e12 + i   r players with a ranked rating older than season 1, which
--              ended an hour ago: one soft reset each for season 2
\set ON_ERROR_STOP on

-- e overdue QUEUED tickets.
WITH p AS (INSERT INTO players (steam_id) SELECT (1000000000000 + g)::text FROM generate_series(1, :e) g RETURNING id)
INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, predicted_rtt, expires_at)
SELECT id, 'ranked', 'QUEUED', 'seed', 1, 1500, 350, '{"eu-west": 10}', now() - interval '5 minutes' FROM p;

-- Waiting tickets for the proposals of groups 2, 3 and 4, two per proposal (steam order = pair order).
CREATE TEMP TABLE seed_pairs AS
SELECT grp, n, (grp * 1000000000000 + 2 * n - 1)::text AS steam_a, (grp * 1000000000000 + 2 * n)::text AS steam_b
FROM (SELECT 2 AS grp, generate_series(1, :p) n UNION ALL SELECT 3, generate_series(1, :s)
      UNION ALL SELECT 4, generate_series(1, :k)) x;
INSERT INTO players (steam_id) SELECT steam_a FROM seed_pairs UNION ALL SELECT steam_b FROM seed_pairs;
INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, predicted_rtt, expires_at)
SELECT id, 'ranked', 'QUEUED', 'seed', 1, 1500, 350, '{"eu-west": 10}', now() + interval '1 hour'
FROM players WHERE steam_id IN (SELECT steam_a FROM seed_pairs UNION ALL SELECT steam_b FROM seed_pairs);

ALTER TABLE seed_pairs ADD COLUMN proposal uuid, ADD COLUMN ta uuid, ADD COLUMN tb uuid, ADD COLUMN pa uuid,
    ADD COLUMN pb uuid, ADD COLUMN match uuid;
UPDATE seed_pairs s SET proposal = gen_random_uuid(),
    pa = (SELECT id FROM players WHERE steam_id = s.steam_a), pb = (SELECT id FROM players WHERE steam_id = s.steam_b);
UPDATE seed_pairs s SET ta = (SELECT id FROM tickets WHERE player_id = s.pa), tb = (SELECT id FROM tickets WHERE player_id = s.pb);

-- The matcher's claim, one proposal per pair.
DO $$
DECLARE r record; o record;
BEGIN
    FOR r IN SELECT * FROM seed_pairs ORDER BY grp, n LOOP
        SELECT * INTO o FROM cc_claim_proposal(r.proposal, 'ranked', ARRAY[r.ta, r.tb], ARRAY[0, 1]::smallint[],
            'seed', 1, 'eu-west', 100, 1, 'seed', 10, r.n);
        IF o.outcome <> 'claimed' THEN
            RAISE EXCEPTION 'seed: claim of pair % % was %', r.grp, r.n, o.outcome;
        END IF;
    END LOOP;
END $$;

-- Group 2: the first player accepted, the second never answered; the window passed.
UPDATE proposal_participants pp SET response = 'ACCEPT', responded_at = now() - interval '1 minute'
FROM seed_pairs s WHERE s.grp = 2 AND pp.proposal_id = s.proposal AND pp.player_id = s.pa;
UPDATE proposals p SET expires_at = now() - interval '1 minute' FROM seed_pairs s WHERE s.grp = 2 AND p.id = s.proposal;

-- Groups 3 and 4: everyone accepted; the match is created as cc_match_create does.
UPDATE proposal_participants pp SET response = 'ACCEPT', responded_at = now()
FROM seed_pairs s WHERE s.grp IN (3, 4) AND pp.proposal_id = s.proposal;
UPDATE proposals p SET state = 'ACCEPTED', revision = p.revision + 1, decided_at = now()
FROM seed_pairs s WHERE s.grp IN (3, 4) AND p.id = s.proposal;
INSERT INTO matches (proposal_id, playlist, state, region, arena, build, protocol_version, team_size)
SELECT p.id, p.playlist, 'ALLOCATING', p.region, p.arena, p.build, p.protocol_version, p.team_size
FROM proposals p JOIN seed_pairs s ON s.proposal = p.id WHERE s.grp IN (3, 4);
UPDATE seed_pairs s SET match = m.id FROM matches m WHERE m.proposal_id = s.proposal;
INSERT INTO match_players (match_id, player_id, ticket_id, team)
SELECT s.match, pp.player_id, pp.ticket_id, pp.team FROM seed_pairs s
JOIN proposal_participants pp ON pp.proposal_id = s.proposal WHERE s.grp IN (3, 4);
UPDATE tickets t SET state = 'MATCHED', match_id = s.match, revision = t.revision + 1
FROM seed_pairs s WHERE s.grp IN (3, 4) AND t.proposal_id = s.proposal AND t.state = 'PROPOSED';

-- Group 3: stalled in ALLOCATING for 20 minutes; the odd ones have their REQUESTED allocation.
INSERT INTO allocations (match_id, state, provider, workload_expires_at)
SELECT match, 'REQUESTED', 'local', now() + interval '2 hours' FROM seed_pairs WHERE grp = 3 AND n % 2 = 1;
UPDATE matches m SET updated_at = now() - interval '20 minutes' FROM seed_pairs s WHERE s.grp = 3 AND m.id = s.match;

-- Group 4: allocated on a server of its own, published, registered; the
-- first player connected, the second never did; the window ended 5 minutes ago.
INSERT INTO allocations (match_id, state, provider, workload_expires_at)
SELECT match, 'REQUESTED', 'local', now() + interval '2 hours' FROM seed_pairs WHERE grp = 4;
INSERT INTO game_servers (id, provider, region, address, port, state, allocation_id, owner)
SELECT 'seed-' || s.n, 'local', 'eu-west', '127.0.0.1', 20000 + s.n, 'ALLOCATED', a.id, 'seed'
FROM seed_pairs s JOIN allocations a ON a.match_id = s.match WHERE s.grp = 4;
UPDATE allocations a SET state = 'ALLOCATED', server_id = 'seed-' || s.n, address = '127.0.0.1', port = 20000 + s.n
FROM seed_pairs s WHERE s.grp = 4 AND a.match_id = s.match;
UPDATE allocations a SET state = 'PUBLISHED' FROM seed_pairs s WHERE s.grp = 4 AND a.match_id = s.match;
INSERT INTO rosters (match_id, allocation_id, key_id, digest, manifest)
SELECT s.match, a.id, 'seed', repeat('0', 64), '{}' FROM seed_pairs s JOIN allocations a ON a.match_id = s.match
WHERE s.grp = 4;
INSERT INTO assignments (match_id, player_id, slot, team, join_token, expires_at)
SELECT s.match, mp.player_id, mp.team, mp.team, 'seed', now() + interval '1 hour'
FROM seed_pairs s JOIN match_players mp ON mp.match_id = s.match WHERE s.grp = 4;
UPDATE assignments x SET connection_generation = 1, connected = true, connected_at = now() - interval '5 minutes'
FROM seed_pairs s WHERE s.grp = 4 AND x.match_id = s.match AND x.player_id = s.pa;
UPDATE matches m SET state = 'PROCESS_READY', revision = m.revision + 1 FROM seed_pairs s WHERE s.grp = 4 AND m.id = s.match;
UPDATE matches m SET state = 'ASSIGNMENT_READY', revision = m.revision + 1 FROM seed_pairs s WHERE s.grp = 4 AND m.id = s.match;
UPDATE tickets t SET state = 'ASSIGNED', revision = t.revision + 1 FROM seed_pairs s WHERE s.grp = 4 AND t.match_id = s.match;
UPDATE allocations a SET process_ready_at = now() - interval '5 minutes', assignment_ready_at = now() - interval '5 minutes'
FROM seed_pairs s WHERE s.grp = 4 AND a.match_id = s.match;
UPDATE matches m SET updated_at = now() - interval '5 minutes' FROM seed_pairs s WHERE s.grp = 4 AND m.id = s.match;

-- Group 5: ranked ratings from before season 1, which ended an hour ago.
WITH p AS (INSERT INTO players (steam_id) SELECT (5000000000000 + g)::text FROM generate_series(1, :r) g RETURNING id, steam_id)
INSERT INTO ratings (player_id, playlist, rating, deviation, volatility, games, created_at)
SELECT id, 'ranked', 1000 + (steam_id::bigint % 1000), 60 + (steam_id::bigint % 200), 0.06, 20, now() - interval '200 days' FROM p;
INSERT INTO seasons (season, starts_at, ends_at) VALUES (1, now() - interval '12 weeks 1 hour', now() - interval '1 hour');

-- What the script compares with afterwards.
CREATE TABLE seed_expect AS
SELECT (SELECT array_agg(proposal) FROM seed_pairs WHERE grp = 2) AS g2_proposals,
       (SELECT array_agg(ta) FROM seed_pairs WHERE grp = 2) AS g2_accepters,
       (SELECT array_agg(tb) FROM seed_pairs WHERE grp = 2) AS g2_silent,
       (SELECT array_agg(match) FROM seed_pairs WHERE grp = 3) AS g3_matches,
       (SELECT array_agg(match) FROM seed_pairs WHERE grp = 4) AS g4_matches,
       (SELECT array_agg(pb) FROM seed_pairs WHERE grp = 4) AS g4_no_shows,
       (SELECT array_agg(ta) FROM seed_pairs WHERE grp = 4) AS g4_present;
CREATE TABLE seed_ratings AS SELECT player_id, rating, deviation FROM ratings WHERE playlist = 'ranked';
ANALYZE;
