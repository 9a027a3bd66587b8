/*
 * tier_bands.h - reads the tier_bands table (SPEC 9), the one place that
 * table is queried; game/tiers.h parses and validates what it holds.
 */
#ifndef CC_STORE_TIER_BANDS_H
#define CC_STORE_TIER_BANDS_H

#include <stddef.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/tiers.h"

/*
 * Reads SELECT name, min_rating FROM tier_bands ORDER BY min_rating (ties
 * by name, so messages are stable) on pg and hands the rows to
 * cc_tier_bands_parse(). On success *out is a malloc'd array of *n bands
 * (ascending) the caller free()s: the rows, or a copy of the compiled
 * default when the table is empty. Returns 0; CC_EINVAL for a malformed
 * table, err naming every problem (a service must refuse to start);
 * CC_ENOMEM; or cc_pg_exec's error (e.g. CC_EDB when the table does not
 * exist), err quoting the server. *out and *n are untouched on failure.
 */
CC_MUST_CHECK int cc_tier_bands_load(struct cc_pg *pg, struct cc_tier_band **out, size_t *n, char *err,
				     size_t errlen);

#endif
