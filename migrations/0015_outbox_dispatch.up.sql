-- Outbox dispatch (issue 19, SPEC 9): what cc-maintenance's dispatcher
-- (services/maintenance/dispatch.c over libcommon/store/outbox.c) needs
-- beyond 0003's published_at, attempts, dead_lettered_at and last_error.
--
-- next_attempt_at: a row whose delivery failed waits until then (NULL: due
--   now). While it waits, the rows behind it of the same resource_id wait
--   too (the head of an aggregate is its lowest pending id, due or not).
-- position: where the row went out on the "cc_events" NOTIFY channel,
--   taken from outbox_position at delivery under one transaction-level
--   advisory lock, so positions grow in commit order across dispatcher
--   replicas: a reader that saw position P has seen every row delivered
--   before it, and "position > P" is exactly what it has not seen (the
--   resume of the events stream, issue 22). A replayed dead letter gets a
--   new position when it goes out again. Gaps are normal (rolled back
--   batches).
-- replays, replayed_at: how many times an operator replayed the row out of
--   the dead letters (the fence of POST /v1/admin/outbox/dead-letters/{id}/replay)
--   and when last.
ALTER TABLE outbox
    ADD COLUMN next_attempt_at timestamptz,
    ADD COLUMN position bigint,
    ADD COLUMN replays integer NOT NULL DEFAULT 0 CHECK (replays >= 0),
    ADD COLUMN replayed_at timestamptz;

CREATE SEQUENCE outbox_position AS bigint;

-- The dispatcher's "is there an earlier pending row of this aggregate?"
-- probe: only pending rows, so it stays as small as the backlog.
CREATE INDEX outbox_pending_by_resource ON outbox (resource_id, id)
    WHERE published_at IS NULL AND dead_lettered_at IS NULL;

-- Delivered rows by position (the events stream's resume reads from here).
CREATE UNIQUE INDEX outbox_by_position ON outbox (position) WHERE position IS NOT NULL;

-- The operator's dead-letter list, newest first, and its gauge.
CREATE INDEX outbox_dead_letters ON outbox (id) WHERE dead_lettered_at IS NOT NULL;
