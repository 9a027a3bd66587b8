-- The backfilled closes of 0016's up stay (a closed lease of an ended
-- match is true either way); the columns go.
ALTER TABLE matches DROP COLUMN end_reason, DROP COLUMN ended_at, DROP COLUMN started_at;
