-- Allocation, rosters, server registration and results (SPEC 8, 9).
--
-- The chain after an accepted proposal, and who writes what:
--   cc-allocator (store/allocations.c, store/game_servers.c, store/rosters.c)
--     claims an ALLOCATING match by inserting its one allocation row
--     (REQUESTED), asks a provider for a server, persists the endpoint
--     (ALLOCATED) before anything else, then publishes the roster: one
--     assignment per participant plus the roster manifest and its digest
--     (PUBLISHED), all in one transaction. A crash between any two steps
--     resumes from the durable state: an ALLOCATED row is republished, a
--     REQUESTED row whose claim lapsed is taken over by any replica.
--   cc-api server routes (store/server_routes.c, store/results.c), called
--     by the game server with its workload token, move the match
--     ALLOCATING -> PROCESS_READY -> ASSIGNMENT_READY -> IN_PROGRESS ->
--     RESULT_PENDING -> COMPLETED; the tickets follow (MATCHED -> ASSIGNED
--     -> COMPLETED); the result moves ratings exactly once (match_results
--     and rating_changes are the durable guards).
-- Every row here has one owner module; no other code writes it.

-- A game server the control plane knows: a local child process on a
-- loopback port, or an Agones GameServer recorded when it was allocated.
CREATE TABLE game_servers (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9._-]{1,128}$'),
    provider      text NOT NULL CHECK (provider IN ('local', 'agones')),
    region        text NOT NULL,
    address       text NOT NULL CHECK (length(address) BETWEEN 1 AND 253),
    port          integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
    state         text NOT NULL,            -- checked by game_servers_enforce_transition
    allocation_id uuid UNIQUE,              -- the allocation it serves; NULL unless ALLOCATED
    owner         text,                     -- local: the allocator instance whose child it is
    pid           integer,                  -- local: the child's pid (diagnostics)
    revision      bigint NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, address, port),
    CHECK ((state = 'ALLOCATED') = (allocation_id IS NOT NULL))
);
CREATE INDEX game_servers_idle ON game_servers (provider, region, port) WHERE state = 'IDLE';

-- One allocation per match. The endpoint columns are written once, by the
-- step that moves REQUESTED -> ALLOCATED, before any other effect.
CREATE TABLE allocations (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    match_id            uuid NOT NULL UNIQUE REFERENCES matches (id),
    state               text NOT NULL,      -- checked by allocations_enforce_transition
    revision            bigint NOT NULL DEFAULT 1,
    provider            text NOT NULL CHECK (provider IN ('local', 'agones')),
    server_id           text REFERENCES game_servers (id),
    address             text CHECK (length(address) BETWEEN 1 AND 253),
    port                integer CHECK (port BETWEEN 1 AND 65535),
    node_name           text,
    workload_expires_at timestamptz NOT NULL, -- the workload token's expiry (signed into it)
    claimed_by          text,               -- the allocator replica working on it
    claim_until         timestamptz,        -- after this any replica may take it over
    attempts            integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at     timestamptz NOT NULL DEFAULT now(), -- no-capacity backoff
    failure_reason      text,
    -- Written by the server routes (register / shutdown):
    image_digest        text,
    server_protocol     integer,
    process_ready_at    timestamptz,
    assignment_ready_at timestamptz,
    shutdown_at         timestamptz,
    shutdown_reason     text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK (state IN ('REQUESTED', 'FAILED') OR (server_id IS NOT NULL AND address IS NOT NULL AND port IS NOT NULL))
);
CREATE INDEX allocations_pending ON allocations (next_attempt_at) WHERE state IN ('REQUESTED', 'ALLOCATED');
-- A server serves at most one live allocation: the durable no-double-booking guard.
CREATE UNIQUE INDEX allocations_one_live_per_server ON allocations (server_id)
    WHERE state IN ('ALLOCATED', 'PUBLISHED');
ALTER TABLE game_servers ADD CONSTRAINT game_servers_allocation_fk
    FOREIGN KEY (allocation_id) REFERENCES allocations (id);

-- The roster manifest: what the game server admits. digest is SHA-256 (hex)
-- over the canonical roster bytes (contracts/join-token.md), so a truncated
-- roster is detected even when each entry verifies.
CREATE TABLE rosters (
    match_id      uuid PRIMARY KEY REFERENCES matches (id),
    allocation_id uuid NOT NULL UNIQUE REFERENCES allocations (id),
    key_id        text NOT NULL,            -- the join key that signed its tokens
    digest        text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    manifest      jsonb NOT NULL CHECK (jsonb_typeof(manifest) = 'object'),
    published_at  timestamptz NOT NULL DEFAULT now()
);

-- One assignment per participant: the slot it plays and its join token.
CREATE TABLE assignments (
    match_id              uuid NOT NULL,
    player_id             uuid NOT NULL,
    slot                  smallint NOT NULL CHECK (slot BETWEEN 0 AND 15),
    team                  smallint NOT NULL CHECK (team IN (0, 1)),
    generation            integer NOT NULL DEFAULT 1 CHECK (generation >= 1), -- signed into the token; bumped on re-issue
    join_token            text NOT NULL,
    expires_at            timestamptz NOT NULL,       -- the join token's expiry
    -- The connection lease (POST /v1/servers/{id}/connect, /disconnect):
    connection_generation integer NOT NULL DEFAULT 0 CHECK (connection_generation >= 0),
    connected             boolean NOT NULL DEFAULT false,
    connected_at          timestamptz,
    disconnected_at       timestamptz,
    disconnect_reason     text,
    PRIMARY KEY (match_id, player_id),
    UNIQUE (match_id, slot),
    FOREIGN KEY (match_id, player_id) REFERENCES match_players (match_id, player_id)
);

-- The result a match completed with. The primary key is the exactly-once
-- guard; request_hash tells an identical replay (200) from a conflict (409).
CREATE TABLE match_results (
    match_id      uuid PRIMARY KEY REFERENCES matches (id),
    allocation_id uuid NOT NULL REFERENCES allocations (id),
    score_team0   integer NOT NULL CHECK (score_team0 >= 0),
    score_team1   integer NOT NULL CHECK (score_team1 >= 0),
    request_hash  text NOT NULL CHECK (request_hash ~ '^[0-9a-f]{64}$'),
    body          jsonb NOT NULL CHECK (jsonb_typeof(body) = 'object'),
    recorded_at   timestamptz NOT NULL DEFAULT now()
);

-- Each rating a result moved, before and after: one row per player per
-- match, so a rating can never move twice for one match.
CREATE TABLE rating_changes (
    match_id          uuid NOT NULL REFERENCES match_results (match_id),
    player_id         uuid NOT NULL REFERENCES players (id),
    playlist          text NOT NULL REFERENCES playlists (name),
    rating_before     double precision NOT NULL,
    deviation_before  double precision NOT NULL,
    volatility_before double precision NOT NULL,
    rating_after      double precision NOT NULL,
    deviation_after   double precision NOT NULL,
    volatility_after  double precision NOT NULL,
    PRIMARY KEY (match_id, player_id)
);

CREATE TRIGGER game_servers_enforce_transition
    AFTER INSERT OR UPDATE OF state ON game_servers
    FOR EACH ROW EXECUTE FUNCTION cc_enforce_transition('game_server');
CREATE TRIGGER allocations_enforce_transition
    AFTER INSERT OR UPDATE OF state ON allocations
    FOR EACH ROW EXECUTE FUNCTION cc_enforce_transition('allocation');

-- Must equal contracts/v1/state-transitions.json (tests compare them).
INSERT INTO state_transitions (machine, from_state, to_state) VALUES
    ('allocation', '',          'REQUESTED'),
    ('allocation', 'REQUESTED', 'ALLOCATED'),
    ('allocation', 'REQUESTED', 'FAILED'),
    ('allocation', 'ALLOCATED', 'PUBLISHED'),
    ('allocation', 'ALLOCATED', 'RELEASED'),
    ('allocation', 'ALLOCATED', 'FAILED'),
    ('allocation', 'PUBLISHED', 'RELEASED'),
    ('allocation', 'PUBLISHED', 'FAILED'),
    ('game_server', '',          'IDLE'),
    ('game_server', '',          'ALLOCATED'),
    ('game_server', 'IDLE',      'ALLOCATED'),
    ('game_server', 'IDLE',      'DEAD'),
    ('game_server', 'ALLOCATED', 'IDLE'),
    ('game_server', 'ALLOCATED', 'DEAD'),
    ('game_server', 'DEAD',      'IDLE');
