DROP INDEX outbox_by_player;
