-- Back to 0006: cc_claim_proposal tests for the name again, the playlist
-- columns get their lists of names back, and the table goes. Fails (and
-- changes nothing) while a row names a playlist other than these two.
CREATE OR REPLACE FUNCTION cc_claim_proposal(
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
DROP FUNCTION cc_playlist_arenas(text);

ALTER TABLE matches DROP CONSTRAINT matches_playlist_fk,
    ADD CONSTRAINT matches_playlist_check CHECK (playlist IN ('casual', 'ranked'));
ALTER TABLE proposals DROP CONSTRAINT proposals_playlist_fk,
    ADD CONSTRAINT proposals_playlist_check CHECK (playlist IN ('casual', 'ranked'));
ALTER TABLE ratings DROP CONSTRAINT ratings_playlist_fk,
    ADD CONSTRAINT ratings_playlist_check CHECK (playlist IN ('casual', 'ranked'));
ALTER TABLE tickets DROP CONSTRAINT tickets_playlist_fk,
    ADD CONSTRAINT tickets_playlist_check CHECK (playlist IN ('casual', 'ranked'));

DROP TABLE playlists;
