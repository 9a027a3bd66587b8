-- The matcher's claim (SPEC 6) as one server-side function, so a claim is
-- one statement inside its SERIALIZABLE transaction instead of about 19
-- round trips (bench-matcher.sh measured the round trips, not the work, as
-- what capped proposals per second). cc_outbox_append is the one place an
-- outbox row and its notification are written, from C and from here; the
-- outbox table's CHECKs and its own checks refuse a malformed envelope
-- (SQLSTATE 22023 for what the table cannot check), so a SQL writer cannot
-- skip what libcommon/outbox.c validates.

CREATE FUNCTION cc_outbox_append(p_event text, p_resource_type text, p_resource_id uuid,
                                 p_revision bigint, p_player_ids uuid[], p_payload jsonb)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    new_id bigint;
BEGIN
    IF p_player_ids IS NULL OR array_position(p_player_ids, NULL) IS NOT NULL
       OR cardinality(p_player_ids) > 64 THEN
        RAISE EXCEPTION 'cc_outbox_append: player_ids must be at most 64 ids, none of them null'
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload)
    VALUES (p_event, p_resource_type, p_resource_id, p_revision, p_player_ids,
            coalesce(p_payload, '{}'::jsonb))
    RETURNING id INTO new_id;
    -- A wake-up, not a message: readers take the pending rows from the table.
    -- PostgreSQL folds a transaction's identical notifications into one, and
    -- one per row (with its id) made a claim with 7 rows 3x slower (pgbench).
    PERFORM pg_notify('outbox', '');
    RETURN new_id;
END $$;

-- Whether a ticket row can still join a proposal in p_region: everything a
-- stale candidate (read from Redis, or earlier in the pass) might have wrong.
CREATE FUNCTION cc_ticket_claimable(t tickets, p_playlist text, p_build text, p_protocol_version integer,
                                    p_region text, p_max_rtt_ms float8)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT t.playlist = p_playlist AND t.state = 'QUEUED' AND t.expires_at > now()
       AND t.build = p_build AND t.protocol_version = p_protocol_version
       AND CASE WHEN jsonb_typeof(t.predicted_rtt -> p_region) = 'number'
                THEN (t.predicted_rtt ->> p_region)::float8 <= p_max_rtt_ms ELSE false END
$$;

-- The claim: the caller runs it inside BEGIN ISOLATION LEVEL SERIALIZABLE
-- and commits or rolls back (libcommon/formation_claim.c). A malformed
-- request (sizes, NULLs, teams other than 0/1, a negative arena pick) is
-- refused with SQLSTATE 22023 before anything is locked.
--
-- The fence locks each ticket FOR UPDATE SKIP LOCKED in uuid order and stops
-- at the first one that does not come back (held by another claim, or no
-- longer claimable), or that repeats a ticket or a player. One global lock
-- order plus giving up at the first miss means that of two claims racing
-- over overlapping tickets exactly one commits; a single statement over the
-- whole set would skip and carry on, and both could lose.
--
-- outcome 'lost': nothing was written; lost[k] / gone[k] (in request order)
-- say which tickets missed and which of them a plain read no longer finds
-- claimable (gone for good rather than merely locked). The caller rolls back.
-- outcome 'no_arena': no arena is eligible (configuration).
-- outcome 'claimed': the proposal (OPEN, expiring after the window), its
-- participants with their teams, every ticket PROPOSED with the proposal id
-- and revision + 1, and the outbox rows proposal.opened (every player) and
-- ticket.proposed (one per ticket, payload {"proposal_id": ...}) are written.
-- The arena is arenas[p_arena_pick mod n + 1] over the eligible arenas in
-- name order (ranked: ranked_eligible; casual: all).
CREATE FUNCTION cc_claim_proposal(
    p_proposal_id uuid, p_playlist text, p_ticket_ids uuid[], p_teams smallint[],
    p_build text, p_protocol_version integer, p_region text, p_max_rtt_ms float8,
    p_team_size integer, p_matcher text, p_window_seconds integer, p_arena_pick bigint,
    OUT outcome text, OUT proposal_revision bigint, OUT arena text,
    OUT lost boolean[], OUT gone boolean[])
LANGUAGE plpgsql AS $$
DECLARE
    ticket uuid;
    previous uuid;
    player uuid;
    players uuid[] := '{}';
    missed uuid;
    claimable uuid[];
    eligible text[];
    moved_ids uuid[];
    moved_revisions bigint[];
    moved_players uuid[];
BEGIN
    IF p_team_size IS NULL OR p_team_size NOT BETWEEN 1 AND 8
       OR p_ticket_ids IS NULL OR cardinality(p_ticket_ids) <> 2 * p_team_size
       OR array_position(p_ticket_ids, NULL) IS NOT NULL
       OR p_teams IS NULL OR cardinality(p_teams) <> cardinality(p_ticket_ids)
       OR EXISTS (SELECT 1 FROM unnest(p_teams) AS t WHERE t IS NULL OR t NOT IN (0, 1))
       OR p_arena_pick IS NULL OR p_arena_pick < 0 OR p_window_seconds IS NULL OR p_window_seconds < 1 THEN
        RAISE EXCEPTION 'cc_claim_proposal: malformed request (team size, ticket or team arrays, arena pick or window)'
            USING ERRCODE = '22023';
    END IF;
    FOREACH ticket IN ARRAY (SELECT array_agg(x ORDER BY x) FROM unnest(p_ticket_ids) AS x) LOOP
        IF ticket = previous THEN
            missed := ticket;
            EXIT;
        END IF;
        previous := ticket;
        SELECT t.player_id INTO player FROM tickets t
         WHERE t.id = ticket
           AND cc_ticket_claimable(t, p_playlist, p_build, p_protocol_version, p_region, p_max_rtt_ms)
           FOR UPDATE SKIP LOCKED;
        IF NOT FOUND OR player = ANY (players) THEN
            missed := ticket;
            EXIT;
        END IF;
        players := players || player;
    END LOOP;

    IF missed IS NOT NULL THEN
        SELECT coalesce(array_agg(t.id), '{}') INTO claimable FROM tickets t
         WHERE t.id = ANY (p_ticket_ids)
           AND cc_ticket_claimable(t, p_playlist, p_build, p_protocol_version, p_region, p_max_rtt_ms);
        SELECT array_agg(u.id = missed OR NOT u.id = ANY (claimable) ORDER BY u.k),
               array_agg(NOT u.id = ANY (claimable) ORDER BY u.k)
          INTO lost, gone
          FROM unnest(p_ticket_ids) WITH ORDINALITY AS u(id, k);
        outcome := 'lost';
        RETURN;
    END IF;

    SELECT array_agg(a.name ORDER BY a.name) INTO eligible FROM arenas a
     WHERE a.ranked_eligible OR p_playlist <> 'ranked';
    IF eligible IS NULL THEN
        outcome := 'no_arena';
        RETURN;
    END IF;
    arena := eligible[p_arena_pick % cardinality(eligible) + 1];

    INSERT INTO proposals (id, playlist, state, region, arena, build, protocol_version, team_size,
                           matcher, expires_at)
    VALUES (p_proposal_id, p_playlist, 'OPEN', p_region, arena, p_build, p_protocol_version, p_team_size,
            p_matcher, now() + make_interval(secs => p_window_seconds))
    RETURNING revision INTO proposal_revision;

    -- player_id comes from the locked ticket rows, never from the caller.
    INSERT INTO proposal_participants (proposal_id, ticket_id, player_id, team)
    SELECT p_proposal_id, t.id, t.player_id, u.team
      FROM unnest(p_ticket_ids, p_teams) AS u(ticket_id, team) JOIN tickets t ON t.id = u.ticket_id;

    WITH moved AS (
        UPDATE tickets SET state = 'PROPOSED', proposal_id = p_proposal_id, revision = revision + 1,
                           updated_at = now()
         WHERE id = ANY (p_ticket_ids) AND state = 'QUEUED'
        RETURNING id, revision, player_id)
    SELECT array_agg(id), array_agg(revision), array_agg(player_id)
      INTO moved_ids, moved_revisions, moved_players FROM moved;
    IF coalesce(cardinality(moved_ids), 0) <> cardinality(p_ticket_ids) THEN
        -- Cannot happen: every ticket row is locked by this transaction.
        RAISE EXCEPTION 'claim moved % of % tickets', coalesce(cardinality(moved_ids), 0),
                        cardinality(p_ticket_ids);
    END IF;

    PERFORM cc_outbox_append('proposal.opened', 'proposal', p_proposal_id, proposal_revision, moved_players, NULL);
    FOR k IN 1 .. cardinality(moved_ids) LOOP
        PERFORM cc_outbox_append('ticket.proposed', 'ticket', moved_ids[k], moved_revisions[k],
                                 ARRAY[moved_players[k]], jsonb_build_object('proposal_id', p_proposal_id));
    END LOOP;
    outcome := 'claimed';
END $$;
