-- 0018: the operator console's reads (issue 27, store/console_reads.c), run
-- every 2 s by each open console. Without these the overview and the match
-- list walk whole tables that only grow (matches, allocations, tickets):
--   matches_live_by_state   live matches by state (a handful of rows);
--   matches_by_ended_at     matches ended in the last 15 minutes;
--   matches_by_created_at   the match list, newest first, and the series;
--   allocations_by_created_at  allocations requested in the last 15 minutes;
--   allocations_failed_by_updated_at  failures per 30 s bucket;
--   tickets_by_queued_at    the queue-depth series (tickets queued in the last day):
--                           BRIN, because a btree on queued_at alone is one the
--                           planner prefers over tickets_queued_by_age for
--                           cc-matcher's candidate read once the queue is deep
--                           (bench/matcher's plan check caught it at depth 3000);
--                           a BRIN index serves the range and never the ORDER BY.
CREATE INDEX matches_live_by_state ON matches (state) WHERE state NOT IN ('COMPLETED', 'FAILED');
CREATE INDEX matches_by_ended_at ON matches (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX matches_by_created_at ON matches (created_at);
CREATE INDEX allocations_by_created_at ON allocations (created_at);
CREATE INDEX allocations_failed_by_updated_at ON allocations (updated_at) WHERE state = 'FAILED';
CREATE INDEX tickets_by_queued_at ON tickets USING brin (queued_at);
