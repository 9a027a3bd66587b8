-- Proposals, matches and arenas (SPEC 6-8). A proposal groups the tickets a
-- matcher claimed; when every participant accepts, a match is created in
-- ALLOCATING for the allocator.

-- The arena list shared by the control plane and the game server (both
-- compiled from libcommon/arenas.c; a test proves this table equals it).
CREATE TABLE arenas (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,31}$'),
    ranked_eligible boolean NOT NULL
);
INSERT INTO arenas (name, ranked_eligible) VALUES
    ('aurora_ring', true),
    ('cinder_vault', true),
    ('glacier_dome', true),
    ('nebula_forge', true),
    ('junkyard_drift', false);

CREATE TABLE proposals (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    playlist         text NOT NULL CHECK (playlist IN ('casual', 'ranked')),
    state            text NOT NULL,               -- checked by proposals_enforce_transition
    revision         bigint NOT NULL DEFAULT 1,
    region           text NOT NULL,
    arena            text NOT NULL REFERENCES arenas (name),
    build            text NOT NULL,
    protocol_version integer NOT NULL,
    team_size        integer NOT NULL CHECK (team_size BETWEEN 1 AND 8),
    matcher          text NOT NULL,               -- which matcher replica formed it (diagnostics)
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,        -- created_at + the 10 s response window
    decided_at       timestamptz
);
CREATE INDEX proposals_open_by_expiry ON proposals (expires_at) WHERE state = 'OPEN';

CREATE TABLE proposal_participants (
    proposal_id  uuid NOT NULL REFERENCES proposals (id),
    ticket_id    uuid NOT NULL REFERENCES tickets (id),
    player_id    uuid NOT NULL REFERENCES players (id),
    team         smallint NOT NULL CHECK (team IN (0, 1)),
    response     text CHECK (response IN ('ACCEPT', 'DECLINE')),
    responded_at timestamptz,
    PRIMARY KEY (proposal_id, ticket_id),
    UNIQUE (proposal_id, player_id)
);
CREATE INDEX proposal_participants_by_ticket ON proposal_participants (ticket_id);

CREATE TABLE matches (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    proposal_id      uuid NOT NULL UNIQUE REFERENCES proposals (id),
    playlist         text NOT NULL CHECK (playlist IN ('casual', 'ranked')),
    state            text NOT NULL,               -- checked by matches_enforce_transition
    revision         bigint NOT NULL DEFAULT 1,
    region           text NOT NULL,
    arena            text NOT NULL REFERENCES arenas (name),
    build            text NOT NULL,
    protocol_version integer NOT NULL,
    team_size        integer NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX matches_allocating ON matches (created_at) WHERE state = 'ALLOCATING';

CREATE TABLE match_players (
    match_id  uuid NOT NULL REFERENCES matches (id),
    player_id uuid NOT NULL REFERENCES players (id),
    ticket_id uuid NOT NULL REFERENCES tickets (id),
    team      smallint NOT NULL CHECK (team IN (0, 1)),
    PRIMARY KEY (match_id, player_id)
);

ALTER TABLE tickets
    ADD CONSTRAINT tickets_proposal_fk FOREIGN KEY (proposal_id) REFERENCES proposals (id),
    ADD CONSTRAINT tickets_match_fk FOREIGN KEY (match_id) REFERENCES matches (id);
CREATE INDEX tickets_by_proposal ON tickets (proposal_id) WHERE proposal_id IS NOT NULL;

-- Penalty escalation counts offences in a rolling window by player.
CREATE INDEX penalties_by_player_kind_time ON penalties (player_id, created_at DESC);

CREATE TRIGGER proposals_enforce_transition
    AFTER INSERT OR UPDATE OF state ON proposals
    FOR EACH ROW EXECUTE FUNCTION cc_enforce_transition('proposal');
CREATE TRIGGER matches_enforce_transition
    AFTER INSERT OR UPDATE OF state ON matches
    FOR EACH ROW EXECUTE FUNCTION cc_enforce_transition('match');

-- Must equal contracts/v1/state-transitions.json (tests compare them).
INSERT INTO state_transitions (machine, from_state, to_state) VALUES
    ('proposal', '',     'OPEN'),
    ('proposal', 'OPEN', 'ACCEPTED'),
    ('proposal', 'OPEN', 'DECLINED'),
    ('proposal', 'OPEN', 'EXPIRED'),
    ('match', '',                 'ALLOCATING'),
    ('match', 'ALLOCATING',       'PROCESS_READY'),
    ('match', 'ALLOCATING',       'FAILED'),
    ('match', 'PROCESS_READY',    'ASSIGNMENT_READY'),
    ('match', 'PROCESS_READY',    'FAILED'),
    ('match', 'ASSIGNMENT_READY', 'IN_PROGRESS'),
    ('match', 'ASSIGNMENT_READY', 'FAILED'),
    ('match', 'IN_PROGRESS',      'RESULT_PENDING'),
    ('match', 'IN_PROGRESS',      'FAILED'),
    ('match', 'RESULT_PENDING',   'COMPLETED'),
    ('match', 'RESULT_PENDING',   'FAILED');
