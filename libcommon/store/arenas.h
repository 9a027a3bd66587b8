/*
 * arenas.h - reads the arenas table (SPEC 6), the one place outside
 * migrations that queries it. The table must equal the compiled list the
 * game server is built from (game/arenas.h): a claim picks its arena from
 * the table (cc_claim_proposal, migration 0006), so a row the game server
 * lacks would send players to a map it cannot load.
 *
 * Runs on pg inside the caller's transaction, if any; writes only into
 * the caller's buffer; no PGresult leaves this module.
 */
#ifndef CC_STORE_ARENAS_H
#define CC_STORE_ARENAS_H

#include <stddef.h>

#include "sys/cc.h"
#include "sys/pg.h"

/*
 * Compares the arenas table with the compiled list. Returns 0 with why
 * empty (equal) or saying where they differ (the first differing arena by
 * name, or the counts), or cc_pg_exec's error (why untouched).
 */
CC_MUST_CHECK int cc_arenas_check(struct cc_pg *pg, char *why, size_t whylen);

#endif
