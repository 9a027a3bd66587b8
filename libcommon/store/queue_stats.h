/*
 * queue_stats.h - the operator's queue statistics (SPEC 11): a read over
 * tickets and playlists, owned here because it is nobody's transition.
 * It writes nothing.
 *
 * Runs on pg inside the caller's transaction, if any; returns malloc'd
 * JSON text the caller frees; no PGresult leaves this module.
 */
#ifndef CC_STORE_QUEUE_STATS_H
#define CC_STORE_QUEUE_STATS_H

#include "sys/cc.h"
#include "sys/pg.h"

/*
 * The contract's QueueStats object in *json: generated_at and one entry
 * {playlist, region, depth, oldest_age_seconds} per configured playlist x
 * region (depth 0 where nobody waits), sorted by playlist then region.
 * regions_pg_array is the served regions as a PostgreSQL text[] literal
 * ("{eu,na}"); a QUEUED ticket counts in a region its predicted_rtt
 * names. Returns 0, CC_ENOMEM, CC_ENOTFOUND (no row back) or cc_pg_exec's
 * error.
 */
CC_MUST_CHECK int cc_queue_stats_json(struct cc_pg *pg, const char *regions_pg_array, char **json);

#endif
