-- Players and their queue tickets, minimal: later migrations add columns.

CREATE TABLE players (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    display_name text
);

CREATE TABLE tickets (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    player_id  uuid NOT NULL REFERENCES players (id),
    playlist   text NOT NULL CHECK (playlist IN ('casual', 'ranked')),
    state      text NOT NULL,           -- checked by tickets_enforce_transition
    revision   bigint NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz
);

-- One active ticket per player (SPEC 4): the active states are exactly the
-- non-terminal ones of the ticket machine.
CREATE UNIQUE INDEX tickets_one_active_per_player ON tickets (player_id)
    WHERE state IN ('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED');

CREATE TRIGGER tickets_enforce_transition
    AFTER INSERT OR UPDATE OF state ON tickets
    FOR EACH ROW EXECUTE FUNCTION cc_enforce_transition('ticket');

-- Must equal contracts/v1/state-transitions.json (tests compare them).
INSERT INTO state_transitions (machine, from_state, to_state) VALUES
    ('ticket', '',         'QUEUED'),
    ('ticket', 'QUEUED',   'PROPOSED'),
    ('ticket', 'QUEUED',   'CANCELLED'),
    ('ticket', 'QUEUED',   'EXPIRED'),
    ('ticket', 'PROPOSED', 'MATCHED'),
    ('ticket', 'PROPOSED', 'QUEUED'),
    ('ticket', 'PROPOSED', 'CANCELLED'),
    ('ticket', 'MATCHED',  'ASSIGNED'),
    ('ticket', 'MATCHED',  'QUEUED'),
    ('ticket', 'MATCHED',  'FAILED'),
    ('ticket', 'ASSIGNED', 'COMPLETED'),
    ('ticket', 'ASSIGNED', 'QUEUED'),
    ('ticket', 'ASSIGNED', 'FAILED');
