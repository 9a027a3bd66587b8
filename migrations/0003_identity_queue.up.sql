-- Identity, sessions, bans, ratings, queue tickets, region probes,
-- idempotency keys, penalties and the transactional outbox (SPEC 2-5).

-- A Steam account keeps its player id (steam_id is unique), so ratings,
-- penalties and bans follow it across logins.
ALTER TABLE players
    ADD COLUMN steam_id     text UNIQUE CHECK (steam_id ~ '^[0-9]{1,20}$'),
    ADD COLUMN banned_until timestamptz,
    ADD COLUMN ban_reason   text CHECK (char_length(ban_reason) BETWEEN 1 AND 256);

-- Durable sessions: only the SHA-256 of the bearer token is stored, so a
-- database dump cannot be replayed as logins. Checked on every request, so
-- any replica honours a revocation at once.
CREATE TABLE sessions (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    player_id  uuid NOT NULL REFERENCES players (id),
    token_hash bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX sessions_live_by_player ON sessions (player_id) WHERE revoked_at IS NULL;
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- Glicko-2 state per player and playlist; casual is the hidden rating.
-- games counts rated games of that playlist (ranked_games = ranked row).
CREATE TABLE ratings (
    player_id  uuid NOT NULL REFERENCES players (id),
    playlist   text NOT NULL CHECK (playlist IN ('casual', 'ranked')),
    rating     double precision NOT NULL DEFAULT 1500,
    deviation  double precision NOT NULL DEFAULT 350 CHECK (deviation > 0),
    volatility double precision NOT NULL DEFAULT 0.06 CHECK (volatility > 0),
    games      integer NOT NULL DEFAULT 0 CHECK (games >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (player_id, playlist)
);

-- Tickets carry what the matcher needs without joins: the rating read in
-- the enqueue transaction and the RTT evidence (always a JSON object).
ALTER TABLE tickets
    ADD COLUMN build            text NOT NULL CHECK (build ~ '^[A-Za-z0-9._-]{1,64}$'),
    ADD COLUMN protocol_version integer NOT NULL CHECK (protocol_version >= 1),
    ADD COLUMN rating           double precision NOT NULL,
    ADD COLUMN deviation        double precision NOT NULL,
    ADD COLUMN predicted_rtt    jsonb NOT NULL DEFAULT '{}'::jsonb
                                CHECK (jsonb_typeof(predicted_rtt) = 'object'),
    ADD COLUMN proposal_id      uuid,
    ADD COLUMN match_id         uuid,
    ADD COLUMN queued_at        timestamptz NOT NULL DEFAULT now();
ALTER TABLE tickets ALTER COLUMN expires_at SET NOT NULL;
CREATE INDEX tickets_queued_by_age ON tickets (playlist, queued_at) WHERE state = 'QUEUED';
CREATE INDEX tickets_by_player ON tickets (player_id, created_at DESC);

-- An identical replay of POST /v1/queue returns the stored answer; the same
-- key with another body is a conflict. Purged by maintenance past every
-- client retry horizon.
CREATE TABLE idempotency_keys (
    player_id    uuid NOT NULL REFERENCES players (id),
    key          text NOT NULL CHECK (key ~ '^[A-Za-z0-9_-]{1,128}$'),
    request_hash text NOT NULL,
    status       integer NOT NULL,
    response     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (player_id, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

-- Single-use probe nonces (stored hashed). RTT = answered_at - issued_at,
-- both PostgreSQL's clock, so no client-reported latency reaches placement.
CREATE TABLE probe_challenges (
    nonce_hash  bytea PRIMARY KEY CHECK (octet_length(nonce_hash) = 32),
    player_id   uuid NOT NULL REFERENCES players (id),
    region      text NOT NULL,
    issued_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at  timestamptz NOT NULL,
    answered_at timestamptz
);
CREATE INDEX probe_challenges_by_expiry ON probe_challenges (expires_at);

CREATE TABLE region_rtts (
    player_id   uuid NOT NULL REFERENCES players (id),
    region      text NOT NULL,
    rtt_ms      double precision NOT NULL CHECK (rtt_ms >= 0),
    measured_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (player_id, region)
);

-- Penalties; (player_id, kind, source_id) unique makes each one exactly-once
-- however many requests race to record it.
CREATE TABLE penalties (
    id             bigserial PRIMARY KEY,
    player_id      uuid NOT NULL REFERENCES players (id),
    kind           text NOT NULL CHECK (kind IN ('DECLINE', 'PROPOSAL_TIMEOUT',
                                                'INITIAL_CONNECT_NO_SHOW', 'EARLY_LEAVE')),
    source_id      uuid NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    cooldown_until timestamptz NOT NULL,
    UNIQUE (player_id, kind, source_id)
);
CREATE INDEX penalties_by_player ON penalties (player_id, cooldown_until DESC);

-- The transactional outbox (SPEC 2): written in the same transaction as the
-- change it announces; every envelope field is required.
CREATE TABLE outbox (
    id               bigserial PRIMARY KEY,
    event            text NOT NULL CHECK (event ~ '^[a-z][a-z0-9_.]{0,63}$'),
    resource_type    text NOT NULL CHECK (resource_type ~ '^[a-z][a-z0-9_]{0,31}$'),
    resource_id      uuid NOT NULL,
    revision         bigint NOT NULL CHECK (revision >= 1),
    occurred_at      timestamptz NOT NULL DEFAULT now(),
    player_ids       uuid[] NOT NULL,
    payload          jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(payload) = 'object'),
    published_at     timestamptz,
    attempts         integer NOT NULL DEFAULT 0,
    dead_lettered_at timestamptz,
    last_error       text
);
CREATE INDEX outbox_pending ON outbox (id) WHERE published_at IS NULL AND dead_lettered_at IS NULL;
