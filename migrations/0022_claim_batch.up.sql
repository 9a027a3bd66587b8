-- 0022: claims a batch of proposals in one statement (issue 24), so a
-- matcher pays one round trip and one commit for every match a pass formed
-- instead of three round trips and a commit each (the commit's WAL flush
-- was most of a claim's cost).
--
-- cc_claim_proposals runs cc_claim_proposal (0006, 0007) once per
-- proposal, in order, inside the caller's one SERIALIZABLE transaction:
-- every proposal gets exactly the single claim's fence (FOR UPDATE SKIP
-- LOCKED in uuid order, stopping at the first miss, the same re-checks),
-- the same rows (proposal, participants, tickets PROPOSED at revision + 1)
-- and the same outbox rows. A proposal that misses writes nothing, as a
-- single lost claim writes nothing, and the batch goes on with the next
-- one: a later proposal naming a ticket an earlier one of the same batch
-- took misses it (the ticket is no longer QUEUED) and reports it gone.
-- The one difference from a lost single claim: the locks a lost proposal
-- took before its miss are held until the batch commits (a few ms), not
-- dropped at once; a claim racing it from elsewhere misses them as locked
-- (lost, not gone) and its tickets stay QUEUED for its next pass.
--
-- Every proposal shares playlist, team size, matcher, window and the RTT
-- bound; build, protocol, region, id and arena pick are per proposal.
-- p_ticket_ids and p_teams hold 2 * p_team_size entries per proposal, in
-- proposal order. One row per proposal comes back, k = 1 .. n in request
-- order, with cc_claim_proposal's outputs. A malformed batch (array sizes,
-- NULLs) is refused with SQLSTATE 22023 before anything is locked; a
-- malformed proposal inside it is refused by cc_claim_proposal the same way.
CREATE FUNCTION cc_claim_proposals(
    p_proposal_ids uuid[], p_playlist text, p_ticket_ids uuid[], p_teams smallint[],
    p_builds text[], p_protocol_versions integer[], p_regions text[], p_max_rtt_ms float8,
    p_team_size integer, p_matcher text, p_window_seconds integer, p_arena_picks bigint[])
RETURNS TABLE (k integer, outcome text, proposal_revision bigint, arena text, lost boolean[], gone boolean[])
LANGUAGE plpgsql AS $$
DECLARE
    n integer := coalesce(cardinality(p_proposal_ids), 0);
    m integer;
    c record;
BEGIN
    IF n < 1 OR n > 256 OR p_team_size IS NULL OR p_team_size NOT BETWEEN 1 AND 8
       OR array_position(p_proposal_ids, NULL) IS NOT NULL
       OR coalesce(cardinality(p_ticket_ids), 0) <> n * 2 * p_team_size
       OR coalesce(cardinality(p_teams), 0) <> n * 2 * p_team_size
       OR coalesce(cardinality(p_builds), 0) <> n OR coalesce(cardinality(p_protocol_versions), 0) <> n
       OR coalesce(cardinality(p_regions), 0) <> n OR coalesce(cardinality(p_arena_picks), 0) <> n
       OR array_ndims(p_ticket_ids) <> 1 OR array_ndims(p_teams) <> 1 THEN
        RAISE EXCEPTION 'cc_claim_proposals: malformed batch (1..256 proposals, % tickets each, every array sized to match)',
            2 * coalesce(p_team_size, 0) USING ERRCODE = '22023';
    END IF;
    m := 2 * p_team_size;
    FOR i IN 1 .. n LOOP
        SELECT * INTO c FROM cc_claim_proposal(p_proposal_ids[i], p_playlist,
            p_ticket_ids[(i - 1) * m + 1 : i * m], p_teams[(i - 1) * m + 1 : i * m],
            p_builds[i], p_protocol_versions[i], p_regions[i], p_max_rtt_ms, p_team_size, p_matcher,
            p_window_seconds, p_arena_picks[i]);
        k := i;
        outcome := c.outcome;
        proposal_revision := c.proposal_revision;
        arena := c.arena;
        lost := c.lost;
        gone := c.gone;
        RETURN NEXT;
    END LOOP;
END $$;
