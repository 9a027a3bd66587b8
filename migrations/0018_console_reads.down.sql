DROP INDEX tickets_by_queued_at;
DROP INDEX allocations_failed_by_updated_at;
DROP INDEX allocations_by_created_at;
DROP INDEX matches_by_created_at;
DROP INDEX matches_by_ended_at;
DROP INDEX matches_live_by_state;
