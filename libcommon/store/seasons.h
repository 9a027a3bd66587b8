/*
 * seasons.h - the one owner of the seasons table (SPEC 9): ranked seasons
 * of a fixed length, one row each, season n running [starts_at, ends_at).
 *
 * cc-maintenance's season sweep calls cc_season_roll once no player is
 * due the latest season's reset: the
 * first pass ever inserts season 1 (starting at the UTC midnight of that
 * day), and a pass after the last season ended inserts the next one,
 * starting where the last one ends (so the calendar never drifts, however
 * late the pass). The primary key makes every insert happen once, whichever
 * replica tries: the loser's SERIALIZABLE transaction retries and finds the
 * row. The soft reset a new season brings is store/ratings.h's
 * cc_ratings_season_reset (its season_resets guard).
 *
 * Runs inside the caller's transaction on pg; struct cc_season is a plain value.
 */
#ifndef CC_STORE_SEASONS_H
#define CC_STORE_SEASONS_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

struct cc_season {
	int season;                       /* 1, 2, ...; 0 when there is none */
	char starts_at[CC_PG_RFC3339_BUF]; /* RFC 3339 UTC */
	char ends_at[CC_PG_RFC3339_BUF];
	bool running;                     /* starts_at <= now() < ends_at */
};

/*
 * Makes sure a season is running: inserts season 1 when the table is
 * empty, else the next season (weeks long) when the latest has ended,
 * at most one insert per call (a pass after a long outage catches up one
 * season per call: call again while *rolled). *out receives the latest
 * season afterwards; *rolled (may be NULL) whether this call inserted it.
 * Returns 0, CC_EINVAL (weeks < 1), or cc_pg_exec's error.
 */
int cc_season_roll(struct cc_pg *pg, int64_t weeks, struct cc_season *out, bool *rolled) CC_MUST_CHECK;

/* The latest season (out->season 0 when there is none), whether running or ended. */
int cc_season_latest(struct cc_pg *pg, struct cc_season *out) CC_MUST_CHECK;

/*
 * The season running now (GET /v1/profile/ranked's season_end). Returns 0
 * with *out (out->season 0 and "" times when none is running), or
 * cc_pg_exec's error.
 */
int cc_season_current(struct cc_pg *pg, struct cc_season *out) CC_MUST_CHECK;

#endif
