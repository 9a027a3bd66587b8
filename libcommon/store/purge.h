/*
 * purge.h - the one shape of every retention purge (cc-maintenance,
 * SPEC 9): a bounded DELETE of the oldest rows past a window, each batch
 * picking its rows FOR UPDATE SKIP LOCKED so replicas never wait for each
 * other and never delete a row twice, and an optional count of the rows
 * past the window (the sweep's lag).
 *
 * The statements are the owner module's (idempotency.c, outbox.c,
 * sessions.c, probes.c, tickets.c): this module only runs them, so it
 * names no table. Both take $1 = the window in seconds (float8) and the
 * delete also $2 = the batch limit; the count returns one bigint.
 *
 * Runs inside the caller's transaction on pg; no PGresult leaves it.
 */
#ifndef CC_STORE_PURGE_H
#define CC_STORE_PURGE_H

#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

/*
 * Counts the rows past the window with sql_count when lag is not NULL
 * (*lag), then deletes at most limit of them with sql_delete (*n: how
 * many). Returns 0, CC_EINVAL (limit < 1, older_than_s < 0), or
 * cc_pg_exec's error; *n and *lag are written only on success.
 */
int cc_store_purge(struct cc_pg *pg, const char *sql_count, const char *sql_delete, int64_t older_than_s, int limit,
		   int64_t *n, int64_t *lag) CC_MUST_CHECK;

/*
 * The count half alone, for a purge of several statements (proposals.c):
 * runs sql_count with $1 = older_than_s into *due. Returns 0 or
 * cc_pg_exec's error; *due is written only on success.
 */
int cc_store_purge_due(struct cc_pg *pg, const char *sql_count, int64_t older_than_s, int64_t *due) CC_MUST_CHECK;

#endif
