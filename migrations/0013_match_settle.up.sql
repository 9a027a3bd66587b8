-- The match endings cc-api and cc-maintenance share (store/match_settle.h,
-- issue 19): the game server's liveness signal and the indexes the
-- sweeps' selectors read.
--
-- POST /v1/servers/{id}/heartbeat (store/server_routes.c, the only writer
-- of both columns) records when the allocation's game server last reported
-- and in which phase. A match IN_PROGRESS or RESULT_PENDING whose server's
-- last heartbeat (before the first: its assignment_ready_at) is older than
-- the silence window is ended by cc-maintenance as server lost.
ALTER TABLE allocations
    ADD COLUMN last_heartbeat_at timestamptz,
    ADD COLUMN last_phase        text CHECK (last_phase IN ('loading', 'playing', 'ended'));

-- cc_matches_due_stalled: a match stuck before IN_PROGRESS, oldest first.
CREATE INDEX matches_stalled_by_age ON matches (updated_at)
    WHERE state IN ('ALLOCATING', 'PROCESS_READY', 'ASSIGNMENT_READY');
-- cc_matches_due_result_missing: the server said it ended, no result came.
CREATE INDEX matches_result_pending_by_age ON matches (updated_at) WHERE state = 'RESULT_PENDING';
-- cc_matches_due_server_silent: a live allocation by the age of its server's last word.
CREATE INDEX allocations_live_by_heartbeat ON allocations ((coalesce(last_heartbeat_at, assignment_ready_at)))
    WHERE state = 'PUBLISHED';
-- cc_matches_due_no_show: a live allocation by the start of its connect window.
CREATE INDEX allocations_live_by_assignment_ready ON allocations (assignment_ready_at) WHERE state = 'PUBLISHED';
-- The tickets of one match (every cc_tickets_* of a match, and the settlements'
-- requeues); without it each of those statements scans every ticket ever made.
CREATE INDEX tickets_by_match ON tickets (match_id) WHERE match_id IS NOT NULL;
