-- 0017: the WebSocket stream's resume (issue 22) reads one player's
-- delivered rows after a position: cc_outbox_since, "player_ids @> {p} AND
-- position > P ORDER BY position". Without this index the only way in is
-- outbox_by_position, walking every delivered row of every player after P
-- (a resume from near the retention edge reads the whole retained outbox,
-- for each reconnecting player); with it the read is the player's own
-- retained rows (tens per match). Partial: only delivered rows are ever
-- resumed, so pending and dead-lettered rows cost the index nothing until
-- the dispatcher gives them a position.
CREATE INDEX outbox_by_player ON outbox USING gin (player_ids) WHERE position IS NOT NULL;

-- The highest position the retention purge has deleted (0: none). A resume
-- from P is complete exactly when P >= it, whatever order the purge took
-- rows in (it goes by published_at, which is not position order) and
-- however many purgers ran at once: cc_outbox_resume_window. One row,
-- raised by every purge batch in the batch's own transaction.
CREATE TABLE outbox_purged (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    position  bigint NOT NULL DEFAULT 0 CHECK (position >= 0)
);
INSERT INTO outbox_purged DEFAULT VALUES;
-- Rows published (with a position) and purged before this migration are
-- unknown: assume everything below the oldest retained position went.
UPDATE outbox_purged SET position = coalesce((SELECT min(position) - 1 FROM outbox WHERE position IS NOT NULL),
    (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM outbox_position));
