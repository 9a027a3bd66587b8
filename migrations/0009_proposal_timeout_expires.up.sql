-- SPEC 7 (issue 14): when a proposal times out, each non-responder's ticket
-- ends EXPIRED at once (with its one PROPOSAL_TIMEOUT) instead of being
-- requeued, so a client that has gone away never holds live players twice.
-- The move PROPOSED -> EXPIRED becomes legal; store/tickets.c makes it
-- (cc_tickets_expire_unanswered). Must equal contracts/v1/state-transitions.json.
INSERT INTO state_transitions (machine, from_state, to_state) VALUES ('ticket', 'PROPOSED', 'EXPIRED');
