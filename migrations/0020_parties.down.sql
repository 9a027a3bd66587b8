DROP INDEX tickets_active_by_party;
ALTER TABLE tickets DROP COLUMN party_size, DROP COLUMN party_id;
DROP TABLE cc_party_invites;
DROP TABLE cc_party_members;
DROP TABLE cc_parties;
