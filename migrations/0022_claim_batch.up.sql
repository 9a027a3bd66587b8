-- 0022: claims a batch of proposals in one statement (issue 24), so a
-- matcher pays one round trip and one commit for every match a pass formed
-- instead of three round trips and a commit each (the commit's WAL flush
-- was most of a claim's cost).
--
-- cc_claim_proposals fences every proposal exactly as cc_claim_proposal
-- (0006, 0007) does, one after the other in request order, inside the
-- caller's one SERIALIZABLE transaction: each ticket FOR UPDATE SKIP LOCKED
-- in uuid order with the same re-checks (cc_ticket_claimable), stopping at
-- the first one that does not come back or repeats a ticket or a player.
-- A ticket an earlier proposal of the batch took counts as not claimable
-- (gone), as it would be once that proposal had moved it to PROPOSED. A
-- proposal that misses writes nothing, as a single lost claim writes
-- nothing, and the batch goes on with the next one.
--
-- Then the rows of every proposal that won, written set-wise (one
-- statement per table instead of some twenty per proposal, which was most
-- of a batch's time: pg_stat_user_functions), with exactly the single
-- claim's contents: the proposal (OPEN, expiring after the window, its
-- arena picked by p_arena_picks[k] from cc_playlist_arenas), one
-- participant row per ticket with the locked row's player, every ticket
-- PROPOSED with the proposal id and revision + 1, and the outbox rows of
-- each proposal in its order ("proposal.opened", revision 1, every player;
-- then "ticket.proposed" per ticket, its new revision, its player, payload
-- {"proposal_id": ...}) with one wake-up (pg_notify('outbox', ''), which
-- PostgreSQL folds per transaction anyway).
--
-- The one difference from n single claims: the locks a lost proposal took
-- before its miss are held until the batch commits (a few ms), not dropped
-- at once; a claim racing it from elsewhere misses them as locked (lost,
-- not gone) and its tickets stay QUEUED for its next pass.
--
-- Every proposal shares playlist, team size, matcher, window and the RTT
-- bound; build, protocol, region, id and arena pick are per proposal.
-- p_ticket_ids and p_teams hold 2 * p_team_size entries per proposal, in
-- proposal order. One row per proposal comes back (k = 1 .. n, request
-- order; not sorted: ORDER BY k) with cc_claim_proposal's outputs. A
-- malformed batch (sizes, NULLs, teams other than 0/1, a negative arena
-- pick, a window under 1 s, a repeated proposal id) is refused with
-- SQLSTATE 22023 before anything is locked.
CREATE FUNCTION cc_claim_proposals(
    p_proposal_ids uuid[], p_playlist text, p_ticket_ids uuid[], p_teams smallint[],
    p_builds text[], p_protocol_versions integer[], p_regions text[], p_max_rtt_ms float8,
    p_team_size integer, p_matcher text, p_window_seconds integer, p_arena_picks bigint[])
RETURNS TABLE (k integer, outcome text, proposal_revision bigint, arena text, lost boolean[], gone boolean[])
LANGUAGE plpgsql AS $$
DECLARE
    n integer := coalesce(cardinality(p_proposal_ids), 0);
    m integer;
    ids uuid[];
    ticket uuid;
    previous uuid;
    player uuid;
    players uuid[];
    missed uuid;
    claimable uuid[];
    eligible text[];
    taken uuid[] := '{}';   -- tickets of the proposals won so far
    won integer[] := '{}';  -- their k
    won_k integer[];
    won_j integer[];
    won_ticket uuid[];
    won_team smallint[];
    moved integer;
BEGIN
    IF n < 1 OR n > 256 OR p_team_size IS NULL OR p_team_size NOT BETWEEN 1 AND 8
       OR array_position(p_proposal_ids, NULL) IS NOT NULL
       OR (SELECT count(DISTINCT x) FROM unnest(p_proposal_ids) AS x) <> n
       OR coalesce(cardinality(p_ticket_ids), 0) <> n * 2 * p_team_size
       OR array_position(p_ticket_ids, NULL) IS NOT NULL
       OR coalesce(cardinality(p_teams), 0) <> n * 2 * p_team_size
       OR EXISTS (SELECT 1 FROM unnest(p_teams) AS t WHERE t IS NULL OR t NOT IN (0, 1))
       OR coalesce(cardinality(p_builds), 0) <> n OR coalesce(cardinality(p_protocol_versions), 0) <> n
       OR coalesce(cardinality(p_regions), 0) <> n OR coalesce(cardinality(p_arena_picks), 0) <> n
       OR EXISTS (SELECT 1 FROM unnest(p_arena_picks) AS a WHERE a IS NULL OR a < 0)
       OR array_ndims(p_ticket_ids) <> 1 OR array_ndims(p_teams) <> 1
       OR p_window_seconds IS NULL OR p_window_seconds < 1 THEN
        RAISE EXCEPTION 'cc_claim_proposals: malformed batch (1..256 proposals of % tickets, every array sized to match, teams 0/1, arena picks >= 0, window >= 1 s)',
            2 * coalesce(p_team_size, 0) USING ERRCODE = '22023';
    END IF;
    m := 2 * p_team_size;
    eligible := cc_playlist_arenas(p_playlist);

    FOR i IN 1 .. n LOOP
        ids := p_ticket_ids[(i - 1) * m + 1 : i * m];
        previous := NULL;
        missed := NULL;
        players := '{}';
        FOREACH ticket IN ARRAY (SELECT array_agg(x ORDER BY x) FROM unnest(ids) AS x) LOOP
            IF ticket = previous OR ticket = ANY (taken) THEN
                missed := ticket;
                EXIT;
            END IF;
            previous := ticket;
            SELECT t.player_id INTO player FROM tickets t
             WHERE t.id = ticket
               AND cc_ticket_claimable(t, p_playlist, p_builds[i], p_protocol_versions[i], p_regions[i], p_max_rtt_ms)
               FOR UPDATE SKIP LOCKED;
            IF NOT FOUND OR player = ANY (players) THEN
                missed := ticket;
                EXIT;
            END IF;
            players := players || player;
        END LOOP;

        k := i;
        outcome := NULL;
        proposal_revision := NULL;
        arena := NULL;
        lost := NULL;
        gone := NULL;
        IF missed IS NOT NULL THEN
            SELECT coalesce(array_agg(t.id), '{}') INTO claimable FROM tickets t
             WHERE t.id = ANY (ids) AND NOT t.id = ANY (taken)
               AND cc_ticket_claimable(t, p_playlist, p_builds[i], p_protocol_versions[i], p_regions[i], p_max_rtt_ms);
            SELECT array_agg(u.id = missed OR NOT u.id = ANY (claimable) ORDER BY u.o),
                   array_agg(NOT u.id = ANY (claimable) ORDER BY u.o)
              INTO lost, gone
              FROM unnest(ids) WITH ORDINALITY AS u(id, o);
            outcome := 'lost';
            RETURN NEXT;
        ELSIF eligible IS NULL THEN
            outcome := 'no_arena';
            RETURN NEXT;
        ELSE
            taken := taken || ids;
            won := won || i;
        END IF;
    END LOOP;

    IF cardinality(won) = 0 THEN
        RETURN;
    END IF;

    INSERT INTO proposals (id, playlist, state, region, arena, build, protocol_version, team_size, matcher, expires_at)
    SELECT p_proposal_ids[w], p_playlist, 'OPEN', p_regions[w], eligible[p_arena_picks[w] % cardinality(eligible) + 1],
           p_builds[w], p_protocol_versions[w], p_team_size, p_matcher, now() + make_interval(secs => p_window_seconds)
      FROM unnest(won) AS w ORDER BY w;

    -- One entry per won ticket: its proposal k, its place j in the request, its team.
    SELECT array_agg(w ORDER BY w, j), array_agg(j ORDER BY w, j), array_agg(p_ticket_ids[(w - 1) * m + j] ORDER BY w, j),
           array_agg(p_teams[(w - 1) * m + j] ORDER BY w, j)
      INTO won_k, won_j, won_ticket, won_team
      FROM unnest(won) AS w, generate_series(1, m) AS j;

    -- player_id comes from the locked ticket rows, never from the caller.
    INSERT INTO proposal_participants (proposal_id, ticket_id, player_id, team)
    SELECT p_proposal_ids[b.k], t.id, t.player_id, b.team
      FROM unnest(won_k, won_j, won_ticket, won_team) AS b(k, j, ticket, team) JOIN tickets t ON t.id = b.ticket ORDER BY b.k, b.j;

    UPDATE tickets t SET state = 'PROPOSED', proposal_id = p_proposal_ids[b.k], revision = t.revision + 1,
                         updated_at = now()
      FROM unnest(won_k, won_j, won_ticket, won_team) AS b(k, j, ticket, team)
     WHERE t.id = b.ticket AND t.state = 'QUEUED';
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved <> cardinality(won) * m THEN
        -- Cannot happen: every ticket row is locked by this transaction.
        RAISE EXCEPTION 'claim batch moved % of % tickets', moved, cardinality(won) * m;
    END IF;

    -- The single claim's outbox rows, in its order, proposal by proposal.
    INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
    SELECT e.event, e.resource_type, e.resource_id, e.revision, e.player_ids, e.payload
      FROM (SELECT b.k, 0 AS j, 'proposal.opened' AS event, 'proposal' AS resource_type,
                   p_proposal_ids[b.k] AS resource_id, 1::bigint AS revision,
                   array_agg(t.player_id ORDER BY b.j) AS player_ids, '{}'::jsonb AS payload
              FROM unnest(won_k, won_j, won_ticket, won_team) AS b(k, j, ticket, team) JOIN tickets t ON t.id = b.ticket GROUP BY b.k
            UNION ALL
            SELECT b.k, b.j, 'ticket.proposed', 'ticket', t.id, t.revision, ARRAY[t.player_id],
                   jsonb_build_object('proposal_id', p_proposal_ids[b.k])
              FROM unnest(won_k, won_j, won_ticket, won_team) AS b(k, j, ticket, team) JOIN tickets t ON t.id = b.ticket) e
     ORDER BY e.k, e.j;
    -- A wake-up, not a message (cc_outbox_append): one per transaction.
    PERFORM pg_notify('outbox', '');

    RETURN QUERY
    SELECT w, 'claimed'::text, p.revision, p.arena, NULL::boolean[], NULL::boolean[]
      FROM unnest(won) AS w JOIN proposals p ON p.id = p_proposal_ids[w];
END $$;
