DROP TABLE backfill_offers;
DELETE FROM state_transitions WHERE machine = 'ticket' AND from_state = 'QUEUED' AND to_state = 'ASSIGNED';
ALTER TABLE match_players DROP COLUMN joined_at;
-- A backfilled slot has two assignments: only the current one survives the way back.
DELETE FROM assignments WHERE replaced_at IS NOT NULL;
DROP INDEX assignments_current_slot;
ALTER TABLE assignments DROP COLUMN replaced_at;
ALTER TABLE assignments ADD CONSTRAINT assignments_match_id_slot_key UNIQUE (match_id, slot);
