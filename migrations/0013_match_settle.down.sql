DROP INDEX tickets_by_match;
DROP INDEX allocations_live_by_assignment_ready;
DROP INDEX allocations_live_by_heartbeat;
DROP INDEX matches_result_pending_by_age;
DROP INDEX matches_stalled_by_age;
ALTER TABLE allocations DROP COLUMN last_phase, DROP COLUMN last_heartbeat_at;
