DROP INDEX match_players_by_ticket;
DROP INDEX proposals_unmatched_purge;
DROP INDEX tickets_unmatched_purge;
DROP INDEX sessions_revoked_purge;
DROP INDEX outbox_dead_lettered_purge;
DROP INDEX outbox_published_purge;
ALTER TABLE ratings DROP COLUMN created_at;
DROP TABLE season_resets;
DROP TABLE seasons;
