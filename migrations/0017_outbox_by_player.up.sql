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
