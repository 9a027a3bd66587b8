-- audit.sql - the matching invariants as one query: every row it returns is
-- a violation (kind, the row concerned, details). Zero rows = healthy.
-- Shared by the integration tests (read the file, run it as is); it only
-- reads, so it may run against a live system too. Every check is linear in
-- the tables (no per-row subquery over a CTE) and every outbox lookup goes
-- through outbox_by_resource (migration 0008): tests/integration/audit_speed.sh
-- holds it under 1 s on 100k outbox rows and 3,000 open proposals.
--
--  1. no ticket is in more than one proposal that is OPEN, or ACCEPTED with
--     its match not over
--  2. every PROPOSED ticket points at an OPEN proposal it participates in
--  3. every OPEN proposal has exactly 2 * team_size participants, team_size
--     per team, whose tickets are PROPOSED with that proposal_id
--  4. participants share the proposal's playlist, build and protocol
--  5. participants are distinct players, and the participant row names the
--     ticket's own player
--  6. every participant's RTT to the proposal's region is <= 100 ms
--  7. a ranked proposal's arena is ranked-eligible
--  8. every proposal was announced: one proposal.opened outbox row, and
--     one ticket.proposed row per participant naming the proposal
-- The match endings (issue 19, store/match_settle.h): each ending moves the
-- match, its tickets and its allocation in one transaction, so these hold
-- in every snapshot:
--  9. no ticket is MATCHED or ASSIGNED in a match that is over (COMPLETED
--     or FAILED): its player could never queue again
-- 10. no match past ALLOCATING and not over runs on an allocation that is
--     over (RELEASED or FAILED): a game nobody serves, or a second server
-- 11. no rating change belongs to a match that did not complete (a FAILED
--     match rates nobody)
-- 12. no match that is over (COMPLETED or FAILED) leaves a connection
--     open: its end (the result, a settlement, the server's shutdown)
--     closes every lease with a disconnect time and reason in its own
--     transaction (issue 20)
WITH live AS (
    -- An ACCEPTED proposal holds its tickets only while its match lives: a
    -- match that failed and requeued them (stalled, a no-show, a server
    -- lost on a playlist that requeues; issue 19) let them be proposed anew.
    SELECT p.* FROM proposals p
    WHERE p.state = 'OPEN'
       OR (p.state = 'ACCEPTED' AND NOT EXISTS (SELECT 1 FROM matches m WHERE m.proposal_id = p.id
                                                  AND m.state IN ('COMPLETED', 'FAILED')))
), part AS (
    SELECT p.id AS proposal_id, p.state AS proposal_state, p.playlist AS p_playlist, p.build AS p_build,
           p.protocol_version AS p_protocol, p.region, p.team_size, pp.team, pp.player_id AS pp_player,
           t.id AS ticket_id, t.player_id AS t_player, t.playlist, t.build, t.protocol_version,
           t.predicted_rtt, t.state AS ticket_state, t.proposal_id AS ticket_proposal
    FROM proposals p
    JOIN proposal_participants pp ON pp.proposal_id = p.id
    JOIN tickets t ON t.id = pp.ticket_id
)
SELECT 'ticket_in_two_live_proposals' AS kind, pp.ticket_id::text AS subject,
       string_agg(pp.proposal_id::text, ',') AS detail
FROM proposal_participants pp JOIN live ON live.id = pp.proposal_id
GROUP BY pp.ticket_id HAVING count(*) > 1

UNION ALL
SELECT 'proposed_ticket_without_open_proposal', t.id::text, coalesce(t.proposal_id::text, 'null')
FROM tickets t
WHERE t.state = 'PROPOSED'
  AND NOT EXISTS (SELECT 1 FROM proposals p
                  JOIN proposal_participants pp ON pp.proposal_id = p.id AND pp.ticket_id = t.id
                  WHERE p.id = t.proposal_id AND p.state = 'OPEN')

UNION ALL
SELECT 'open_proposal_wrong_participants', p.id::text,
       format('team_size %s: participants %s, team0 %s, team1 %s, proposed here %s', p.team_size,
              coalesce(c.n, 0), coalesce(c.team0, 0), coalesce(c.team1, 0), coalesce(c.proposed, 0))
FROM proposals p
LEFT JOIN (SELECT part.proposal_id, count(*) AS n,
                  count(*) FILTER (WHERE part.team = 0) AS team0,
                  count(*) FILTER (WHERE part.team = 1) AS team1,
                  count(*) FILTER (WHERE part.ticket_state = 'PROPOSED'
                                     AND part.ticket_proposal = part.proposal_id) AS proposed
           FROM part WHERE part.proposal_state = 'OPEN' GROUP BY part.proposal_id) c ON c.proposal_id = p.id
WHERE p.state = 'OPEN'
  AND (coalesce(c.n, 0) <> 2 * p.team_size OR coalesce(c.team0, 0) <> p.team_size
       OR coalesce(c.proposed, 0) <> 2 * p.team_size)

UNION ALL
SELECT 'participant_incompatible', part.ticket_id::text,
       format('proposal %s: playlist %s/%s build %s/%s protocol %s/%s', part.proposal_id, part.playlist,
              part.p_playlist, part.build, part.p_build, part.protocol_version, part.p_protocol)
FROM part
WHERE part.playlist <> part.p_playlist OR part.build <> part.p_build OR part.protocol_version <> part.p_protocol

UNION ALL
SELECT 'participant_player_mismatch', part.ticket_id::text,
       format('participant row says %s, ticket says %s', part.pp_player, part.t_player)
FROM part WHERE part.pp_player <> part.t_player

UNION ALL
SELECT 'players_not_distinct', part.proposal_id::text, part.t_player::text
FROM part GROUP BY part.proposal_id, part.t_player HAVING count(*) > 1

UNION ALL
SELECT 'participant_rtt_over_100', part.ticket_id::text,
       format('proposal %s region %s rtt %s', part.proposal_id, part.region,
              coalesce(part.predicted_rtt ->> part.region, 'none'))
FROM part
WHERE CASE WHEN jsonb_typeof(part.predicted_rtt -> part.region) = 'number'
           THEN (part.predicted_rtt ->> part.region)::float8 > 100 ELSE true END

UNION ALL
SELECT 'ranked_arena_not_eligible', p.id::text, p.arena
FROM proposals p JOIN arenas a ON a.name = p.arena
WHERE p.playlist = 'ranked' AND NOT a.ranked_eligible

UNION ALL
SELECT 'proposal_not_announced', p.id::text,
       format('%s proposal.opened rows', (SELECT count(*) FROM outbox o
                                          WHERE o.event = 'proposal.opened' AND o.resource_id = p.id))
FROM proposals p
WHERE (SELECT count(*) FROM outbox o WHERE o.event = 'proposal.opened' AND o.resource_id = p.id) <> 1

UNION ALL
SELECT 'ticket_proposal_not_announced', part.ticket_id::text, part.proposal_id::text
FROM part
WHERE NOT EXISTS (SELECT 1 FROM outbox o
                  WHERE o.event = 'ticket.proposed' AND o.resource_id = part.ticket_id
                    AND o.payload ->> 'proposal_id' = part.proposal_id::text
                    AND o.player_ids = ARRAY[part.t_player])

UNION ALL
SELECT 'ticket_held_by_ended_match', t.id::text, format('%s in match %s, which is %s', t.state, m.id, m.state)
FROM tickets t JOIN matches m ON m.id = t.match_id
WHERE t.state IN ('MATCHED', 'ASSIGNED') AND m.state IN ('COMPLETED', 'FAILED')

UNION ALL
SELECT 'live_match_without_server', m.id::text, format('%s on allocation %s, which is %s', m.state, a.id, a.state)
FROM matches m JOIN allocations a ON a.match_id = m.id
WHERE m.state IN ('PROCESS_READY', 'ASSIGNMENT_READY', 'IN_PROGRESS', 'RESULT_PENDING')
  AND a.state IN ('RELEASED', 'FAILED')

UNION ALL
SELECT 'rating_change_of_unfinished_match', r.match_id::text, format('player %s, match %s', r.player_id, m.state)
FROM rating_changes r JOIN matches m ON m.id = r.match_id
WHERE m.state <> 'COMPLETED'

UNION ALL
SELECT 'connection_open_after_match_end', s.match_id::text,
       format('player %s: connected %s, disconnected_at %s, reason %s; the match is %s', s.player_id, s.connected,
              coalesce(s.disconnected_at::text, 'null'), coalesce(s.disconnect_reason, 'null'), m.state)
FROM assignments s JOIN matches m ON m.id = s.match_id
WHERE m.state IN ('COMPLETED', 'FAILED') AND s.connection_generation > 0
  AND (s.connected OR s.disconnected_at IS NULL OR s.disconnect_reason IS NULL)

ORDER BY 1, 2;
