DROP TABLE outbox_purged;
DROP INDEX outbox_by_player;
