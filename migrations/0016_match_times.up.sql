-- When a match started and ended, and why it ended (issue 20): what
-- GET /v1/matches/{match_id} shows a player's post-match screen, and what
-- the connections still open when the match ends are closed with.
--
-- started_at  the first connect moved it ASSIGNMENT_READY -> IN_PROGRESS
--             (cc_match_start); NULL before, and for a match that never
--             got going.
-- ended_at    it became COMPLETED or FAILED (cc_match_complete,
--             cc_match_fail); NULL while it is not over.
-- end_reason  "completed" for COMPLETED (its result was recorded), else
--             the FAILED reason (stalled, no_show, server_silent,
--             server_lost, server_shutdown, result_missing, ...): the
--             match.failed event's payload reason. NULL while not over.
-- All three are written only by store/matches.c, in the transition's own
-- statement.
ALTER TABLE matches
    ADD COLUMN started_at timestamptz,
    ADD COLUMN ended_at   timestamptz,
    ADD COLUMN end_reason text CHECK (end_reason ~ '^[a-z_]{1,32}$');

-- Matches that ended before this migration: their last transition was the
-- terminal one (updated_at), the reason their match.failed event's (when
-- retention kept it), the start their match.in_progress event's.
UPDATE matches m SET ended_at = m.updated_at,
       end_reason = CASE WHEN m.state = 'COMPLETED' THEN 'completed'
                         ELSE coalesce((SELECT o.payload ->> 'reason' FROM outbox o
                                        WHERE o.resource_id = m.id AND o.event = 'match.failed'
                                          AND o.payload ->> 'reason' ~ '^[a-z_]{1,32}$'
                                        ORDER BY o.id DESC LIMIT 1), 'unknown') END
WHERE m.state IN ('COMPLETED', 'FAILED');
-- When retention already purged that event, the earliest connect receipt
-- still on the match's assignments stands in (a reconnect moves a lease's
-- connected_at, so it may be a little late; never early).
UPDATE matches m SET started_at = coalesce(
           (SELECT min(o.occurred_at) FROM outbox o
            WHERE o.resource_id = m.id AND o.event = 'match.in_progress'),
           (SELECT min(s.connected_at) FROM assignments s WHERE s.match_id = m.id))
WHERE m.state IN ('IN_PROGRESS', 'RESULT_PENDING', 'COMPLETED', 'FAILED');

-- Connections the control plane never closed before this migration (issue
-- 20: the result and the settlements now close them in their own
-- transaction): an ended match's still-open leases end at its end, with
-- the reason the ending would have written.
UPDATE assignments s SET connected = false, disconnected_at = m.ended_at,
       disconnect_reason = CASE WHEN m.state = 'COMPLETED' THEN 'match_over' ELSE m.end_reason END
FROM matches m
WHERE m.id = s.match_id AND s.connected AND m.state IN ('COMPLETED', 'FAILED');
