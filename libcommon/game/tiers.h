/*
 * tiers.h - ranked tier bands: a rating maps to the highest band whose
 * threshold it reaches. A player with fewer than CC_TIER_PROVISIONAL_GAMES
 * ranked games is PROVISIONAL, which is a status, never a band.
 *
 * cc_tier_default_bands() is the compiled default (SPEC 9: the tier_bands
 * table is seeded with it and an empty table falls back to it).
 * cc_tier_bands_load() (store/tier_bands.h) reads the table at start-up; a malformed table is an
 * error the service must refuse to start on. The rules a band list must
 * follow live in one place, cc_tier_bands_validate(); the table itself only
 * enforces unique names and thresholds.
 *
 * Ownership: the default is static; cc_tier_bands_parse() hands the caller a
 * malloc'd array to free(). Nothing else allocates.
 */
#ifndef CC_TIERS_H
#define CC_TIERS_H

#include <stddef.h>

#include "sys/cc.h"

#define CC_TIER_PROVISIONAL_GAMES 10
#define CC_TIER_NAME_MAX 32
#define CC_TIER_BANDS_MAX 64 /* bands in one list (and rows read from the table) */

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

/*
 * Checks a band list cc_tier_for() may use: 1..CC_TIER_BANDS_MAX bands;
 * each name NUL-terminated within CC_TIER_NAME_MAX bytes, non-empty, only
 * [A-Z0-9_], and not PROVISIONAL in any case (a status, never a band); no
 * two bands share a name or a threshold; thresholds finite and ascending.
 * Returns 0, or CC_EINVAL with err (if not NULL and errlen > 0) holding one
 * line that names every problem found, e.g. "band 3 \"PROVISIONAL\":
 * PROVISIONAL is a status, not a band; bands \"A\" and \"B\" share the
 * threshold 1500". Names are quoted with control and non-ASCII bytes
 * escaped, so a stored name cannot forge a log line.
 */
CC_MUST_CHECK int cc_tier_bands_validate(const struct cc_tier_band *bands, size_t n, char *err, size_t errlen);

/*
 * Turns rows of the tier_bands table (name and min_rating as text, NULL
 * for SQL NULL; rows ascending by min_rating) into bands. On success *out
 * is a malloc'd array of *n bands the caller free()s: the rows, or a copy
 * of the compiled default when rows is 0 (SPEC 9: an empty table means the
 * default). Returns 0; CC_EINVAL for a malformed table (more than
 * CC_TIER_BANDS_MAX rows, a NULL or unparsable cell, a name too long, or
 * anything cc_tier_bands_validate refuses), err naming every problem; or
 * CC_ENOMEM. *out and *n are untouched on failure. store/tier_bands.h
 * reads the rows.
 */
CC_MUST_CHECK int cc_tier_bands_parse(size_t rows, const char *const names[], const char *const ratings[],
				      struct cc_tier_band **out, size_t *n, char *err, size_t errlen);

#endif
