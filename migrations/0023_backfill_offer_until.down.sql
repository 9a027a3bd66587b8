ALTER TABLE backfill_offers DROP CONSTRAINT backfill_offers_offer_until_check;
ALTER TABLE backfill_offers DROP COLUMN offer_until;
