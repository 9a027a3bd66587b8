-- 0019: a ticket's estimated wait (issue 26) reads the newest proposals of
-- its playlist in the regions it reaches, formed in the last 15 minutes
-- (store/queue_stats.c, cc_queue_wait_history), on every ticket answer of
-- cc-api. Without this index that read scans every proposal ever kept;
-- with it, one range per region, newest first. The samples themselves need
-- no table of their own: proposals.created_at, proposal_participants and
-- tickets.queued_at (kept across requeues) already hold every wait.
CREATE INDEX proposals_recent ON proposals (playlist, region, created_at DESC);
