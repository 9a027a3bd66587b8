-- 0023: the playlist's backfill cut-off (casual: 60 s, game/playlist.h)
-- holds for every offer of a vacancy, not only the first (issue 26: "a
-- match in its last minute is not offered"). The vacated report knows how
-- much play is left; an offer passed on after a decline or an expiry did
-- not, so the last minute could be offered. offer_until is the instant
-- after which the vacancy is offered to nobody: set by the vacated report
-- to now() + (remaining_seconds - cut-off) and carried over, unchanged,
-- to every offer that passes the vacancy on (libcommon/store/backfill.c,
-- cc_backfill_offer_next). A game server's repeated report sets it afresh
-- from its own clock.
--
-- An offer made before offer_until is still answered within its own window
-- (expires_at), which may end after offer_until.
--
-- Offers made before this migration never knew the match's clock: theirs
-- is their own created_at, so none of them is passed on (the game
-- server's next report, every 12 s while the slot is a bot's, decides
-- from the remaining time it reports).
ALTER TABLE backfill_offers ADD COLUMN offer_until timestamptz;
UPDATE backfill_offers SET offer_until = created_at;
ALTER TABLE backfill_offers ALTER COLUMN offer_until SET NOT NULL;
ALTER TABLE backfill_offers ADD CONSTRAINT backfill_offers_offer_until_check CHECK (offer_until >= created_at);
