-- Seasons and the retention purges of cc-maintenance (SPEC 9, issue 19).
--
-- A season is a row: season n runs [starts_at, ends_at). cc-maintenance's
-- season sweep inserts season 1 (starting at the UTC midnight of its first
-- pass) when the table is empty, and the next season (starting where the
-- last one ends, --season-weeks long) once the last one has ended; the
-- primary key makes each insert happen once whichever replica tries.
-- Written only by store/seasons.c; GET /v1/profile/ranked shows the end of
-- the season running now.
CREATE TABLE seasons (
    season    integer PRIMARY KEY CHECK (season >= 1),
    starts_at timestamptz NOT NULL,
    ends_at   timestamptz NOT NULL,
    CHECK (ends_at > starts_at)
);

-- The soft reset a player's profile-playlist rating got on entering a
-- season: the primary key is the exactly-once guard (a rerun or a second
-- replica inserts nothing and so changes nothing), the numbers are the
-- audit. Written only by store/ratings.c, in the transaction that resets
-- the rating.
CREATE TABLE season_resets (
    player_id        uuid NOT NULL REFERENCES players (id),
    season           integer NOT NULL REFERENCES seasons (season),
    playlist         text NOT NULL REFERENCES playlists (name),
    rating_before    double precision NOT NULL,
    deviation_before double precision NOT NULL,
    rating_after     double precision NOT NULL,
    deviation_after  double precision NOT NULL,
    reset_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (player_id, season)
);

-- A rating row made during a season is not reset when that season began:
-- the reset applies to the rows that existed at the season's start. Rows
-- already here existed before any season row (seasons start after this
-- migration ran).
ALTER TABLE ratings ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

-- The purges' bounded scans, oldest first (idempotency_keys_by_age,
-- sessions_by_expiry and probe_challenges_by_expiry exist already).
CREATE INDEX outbox_published_purge ON outbox (published_at) WHERE published_at IS NOT NULL;
CREATE INDEX outbox_dead_lettered_purge ON outbox (dead_lettered_at) WHERE dead_lettered_at IS NOT NULL;
CREATE INDEX sessions_revoked_purge ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX tickets_unmatched_purge ON tickets (updated_at)
    WHERE state IN ('EXPIRED', 'CANCELLED') AND match_id IS NULL;
CREATE INDEX proposals_unmatched_purge ON proposals (decided_at) WHERE state IN ('DECLINED', 'EXPIRED');
-- A ticket or proposal purge checks that no match row needs it.
CREATE INDEX match_players_by_ticket ON match_players (ticket_id);
