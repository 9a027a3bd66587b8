/*
 * tiers.h - ranked tier bands: a rating maps to the highest band whose
 * threshold it reaches. A player with fewer than CC_TIER_PROVISIONAL_GAMES
 * ranked games is PROVISIONAL, which is a status, never a band.
 *
 * cc_tier_default_bands() is the compiled default (SPEC 9: the tier_bands
 * table is seeded with it and an empty table falls back to it).
 */
#ifndef CC_TIERS_H
#define CC_TIERS_H

#include <stddef.h>

#include "cc.h"

#define CC_TIER_PROVISIONAL_GAMES 10
#define CC_TIER_NAME_MAX 32

struct cc_tier_band {
	char name[CC_TIER_NAME_MAX + 1]; /* "GOLD" */
	double min_rating;               /* inclusive lower threshold */
};

/* The compiled default bands, ascending by threshold; *n receives the count. */
const struct cc_tier_band *cc_tier_default_bands(size_t *n);

/*
 * Returns the band name for rating among bands (ascending, n >= 1), or
 * "PROVISIONAL" when ranked_games < CC_TIER_PROVISIONAL_GAMES. A rating below
 * the first threshold gets the first band.
 */
const char *cc_tier_for(const struct cc_tier_band *bands, size_t n, double rating, long ranked_games);

#endif
