-- Casual backfill (SPEC 9, issue 26): a human slot whose reservation lapsed
-- is offered to one queued ticket at a time; an accepted offer seats the
-- newcomer on that slot with the slot's generation raised, so the leaver's
-- join token no longer matches the roster. Written only by
-- libcommon/store/backfill.c (offers) and the owners it calls.

-- The leaver's assignment stays (its lease history, its result line); a
-- slot has one CURRENT assignment: the one not yet replaced.
ALTER TABLE assignments DROP CONSTRAINT assignments_match_id_slot_key;
ALTER TABLE assignments ADD COLUMN replaced_at timestamptz;
CREATE UNIQUE INDEX assignments_current_slot ON assignments (match_id, slot) WHERE replaced_at IS NULL;

-- A backfilled participant: joined_at is when its offer was accepted (NULL
-- for the players the match formed with).
ALTER TABLE match_players ADD COLUMN joined_at timestamptz;

-- An ACCEPTED -> assigned ticket that never went through a proposal.
INSERT INTO state_transitions (machine, from_state, to_state) VALUES ('ticket', 'QUEUED', 'ASSIGNED');

-- One offer of one vacated slot (match, slot, generation: the vacated
-- assignment's generation) to one ticket. The partial unique indexes are
-- the SQL fences of the races: one live (OPEN or ACCEPTED) offer per
-- vacancy (two vacated reports, two accepts), one OPEN offer per ticket,
-- and a ticket is offered a vacancy at most once (a decline is final).
CREATE TABLE backfill_offers (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    match_id          uuid NOT NULL REFERENCES matches (id),
    slot              smallint NOT NULL CHECK (slot BETWEEN 0 AND 15),
    team              smallint NOT NULL CHECK (team IN (0, 1)),
    generation        integer NOT NULL CHECK (generation >= 1), -- the vacated assignment's; the accept seats generation + 1
    vacated_player_id uuid NOT NULL REFERENCES players (id),
    ticket_id         uuid NOT NULL REFERENCES tickets (id),
    player_id         uuid NOT NULL REFERENCES players (id),
    state             text NOT NULL CHECK (state IN ('OPEN', 'ACCEPTED', 'DECLINED', 'EXPIRED')),
    revision          bigint NOT NULL DEFAULT 1,
    created_at        timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL,
    responded_at      timestamptz,
    UNIQUE (match_id, slot, generation, ticket_id)
);
CREATE UNIQUE INDEX backfill_offers_live_vacancy ON backfill_offers (match_id, slot, generation)
    WHERE state IN ('OPEN', 'ACCEPTED');
CREATE UNIQUE INDEX backfill_offers_open_ticket ON backfill_offers (ticket_id) WHERE state = 'OPEN';
CREATE INDEX backfill_offers_by_player ON backfill_offers (player_id, created_at DESC);
