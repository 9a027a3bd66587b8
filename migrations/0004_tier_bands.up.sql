-- Ranked tier bands (SPEC 9), seeded with exactly the compiled default of
-- libcommon/tiers.c (tests/integration/test_tiers.c keeps the two equal).
-- An operator may edit the rows; an empty table means the compiled default.
-- The rules a band list must follow (names [A-Z0-9_], never PROVISIONAL,
-- finite thresholds) are checked in one place, cc_tier_bands_validate, when
-- a service starts: a malformed table stops start-up with every problem
-- named. The table itself keeps names and thresholds unique.
CREATE TABLE tier_bands (
    name       text PRIMARY KEY,
    min_rating double precision NOT NULL UNIQUE
);

INSERT INTO tier_bands (name, min_rating) VALUES
    ('BRONZE', 0),
    ('SILVER', 1200),
    ('GOLD', 1500),
    ('PLATINUM', 1800),
    ('DIAMOND', 2100),
    ('CHAMPION', 2400);
