-- 0020: parties (issue 26). A party is a leader and up to a few members
-- who queue together; store/parties.h owns both tables. A player is in at
-- most one party (cc_party_members_one_per_player), the party row's
-- revision fences every change to it or its members (the REST routes'
-- compare-and-set), and a ticket queued by the party names it in party_id
-- (store/tickets.h moves the party's tickets together).
CREATE TABLE cc_parties (
    id        uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    leader    uuid NOT NULL REFERENCES players (id),
    -- Shared with friends to join without an invitation; unique among live parties.
    join_code text NOT NULL UNIQUE CHECK (join_code ~ '^[A-Z2-9]{8}$'),
    revision  bigint NOT NULL DEFAULT 1 CHECK (revision >= 1),
    -- The playlist of the party's latest queue request (NULL: never queued).
    playlist  text REFERENCES playlists (name),
    created   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cc_party_members (
    party_id         uuid NOT NULL REFERENCES cc_parties (id) ON DELETE CASCADE,
    player_id        uuid NOT NULL REFERENCES players (id),
    -- The member's client, declared on create/join: the queue checks each
    -- member's own protocol version and requires one build for the party.
    protocol_version integer NOT NULL CHECK (protocol_version >= 1),
    build            text NOT NULL CHECK (build ~ '^[A-Za-z0-9._-]{1,64}$'),
    joined_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (party_id, player_id)
);
CREATE UNIQUE INDEX cc_party_members_one_per_player ON cc_party_members (player_id);

-- Invitations by player id; joining (or the party's end) removes them.
CREATE TABLE cc_party_invites (
    party_id   uuid NOT NULL REFERENCES cc_parties (id) ON DELETE CASCADE,
    player_id  uuid NOT NULL REFERENCES players (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (party_id, player_id)
);

-- No foreign key: a disbanded party's row is deleted, its finished tickets stay.
-- party_size: how many tickets the party queued (all in one transaction);
-- formation (game/formation.h) forms a party only when all of them are there.
ALTER TABLE tickets ADD COLUMN party_id uuid,
    ADD COLUMN party_size smallint NOT NULL DEFAULT 1 CHECK (party_size BETWEEN 1 AND 8),
    ADD CONSTRAINT tickets_party_size_solo CHECK (party_id IS NOT NULL OR party_size = 1);
CREATE INDEX tickets_active_by_party ON tickets (party_id)
    WHERE party_id IS NOT NULL AND state IN ('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED');
