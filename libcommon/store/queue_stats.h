/*
 * queue_stats.h - the operator's queue statistics (SPEC 11): a read over
 * tickets and playlists, owned here because it is nobody's transition;
 * and a ticket's wait history for its estimated wait (issue 26): a read
 * over proposals, proposal_participants and tickets. It writes nothing.
 *
 * Runs on pg inside the caller's transaction, if any; returns malloc'd
 * JSON text the caller frees; no PGresult leaves this module.
 */
#ifndef CC_STORE_QUEUE_STATS_H
#define CC_STORE_QUEUE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "game/wait_estimate.h"
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

/* What game/wait_estimate.h needs for one ticket; a plain value. */
struct cc_wait_history {
	bool queued;       /* the ticket's state is QUEUED now */
	double rating;     /* the rating it queued with */
	double waited_s;   /* now() - queued_at, PostgreSQL's clock */
	int64_t now_ms;    /* PostgreSQL's now() of the read, ms since the epoch */
	size_t n;          /* samples, newest first */
	struct cc_wait_sample v[CC_WAIT_SAMPLES_MAX];
};

/*
 * The wait history of ticket_id (a lowercase UUID): one sample per ticket
 * of every proposal of its playlist created in the last
 * CC_WAIT_WINDOW_SECONDS in a region the ticket's predicted_rtt reaches
 * within max_rtt_ms, the newest CC_WAIT_SAMPLES_MAX (newest first; ties
 * by proposal and ticket id). A sample's wait is the proposal's created_at
 * minus that ticket's queued_at, which is kept across requeues, so it is
 * the wait the player had seen when the match was proposed. The rating
 * band is the rule's (game/wait_estimate.h), not filtered here. One
 * statement; uses migration 0019's proposals_recent index. Returns 0,
 * CC_EINVAL (bad UUID), CC_ENOTFOUND (no such ticket) or cc_pg_exec's
 * error.
 */
CC_MUST_CHECK int cc_queue_wait_history(struct cc_pg *pg, const char *ticket_id, double max_rtt_ms,
					struct cc_wait_history *out);

/*
 * The same samples for a queue named by its playlist and the regions a
 * ticket reaches (regions_pg_array, a PostgreSQL text[] literal such as
 * "{\"eu-west\"}"), for a caller that has the ticket's rating and
 * queued_at already and may share one read among many tickets (cc-api's
 * heartbeat). Fills now_ms, n and v; queued, rating and waited_s are the
 * caller's. Returns 0 or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_queue_wait_samples(struct cc_pg *pg, const char *playlist, const char *regions_pg_array,
					struct cc_wait_history *out);

#endif
