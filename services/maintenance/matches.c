/*
 * matches.c - cc-maintenance's match sweeps: each batch takes the due
 * matches from its selector of store/match_settle.h (FOR UPDATE SKIP
 * LOCKED, oldest first) and settles each with the very function cc-api's
 * server routes call, so whichever of them sees a match first settles it
 * and the other finds it settled (out.changed false: nothing written). See
 * maintenance.h.
 *
 * A settlement is a dozen statements (the match, its tickets, the
 * allocation, penalties, outbox rows), so a match batch takes at most
 * MATCH_BATCH_MAX matches whatever --batch says: one transaction stays
 * short enough that a request racing it for one of its matches waits
 * briefly.
 */
#include <stdio.h>
#include <string.h>

#include "maintenance.h"
#include "store/match_settle.h"
#include "sys/log.h"
#include "sys/banned.h"

#define MATCH_BATCH_MAX 50

typedef int (*select_fn)(struct cc_pg *pg, int64_t window_s, int limit, char (*ids)[CC_UUID_BUF], size_t *n,
			 int64_t *lag);

/* How to settle one match: 0 with *o filled, or an error (the batch rolls back). */
typedef int (*settle_fn)(struct cc_pg *pg, const struct maint *m, const char *match_id, struct cc_settle_outcome *o,
			 struct cc_ticket_moves *moves);

static int settle_stalled(struct cc_pg *pg, const struct maint *m, const char *id, struct cc_settle_outcome *o,
			  struct cc_ticket_moves *moves)
{
	return cc_match_settle_stalled(pg, id, m->cfg->ticket_ttl_seconds, o, moves);
}

static int settle_silent(struct cc_pg *pg, const struct maint *m, const char *id, struct cc_settle_outcome *o,
			 struct cc_ticket_moves *moves)
{
	return cc_match_settle_server_lost(pg, id, "server_silent", m->cfg->ticket_ttl_seconds, o, moves);
}

static int settle_no_show(struct cc_pg *pg, const struct maint *m, const char *id, struct cc_settle_outcome *o,
			  struct cc_ticket_moves *moves)
{
	return cc_match_settle_no_show(pg, id, NULL, 0, m->cfg->ticket_ttl_seconds, o, moves);
}

static int settle_result_missing(struct cc_pg *pg, const struct maint *m, const char *id, struct cc_settle_outcome *o,
				 struct cc_ticket_moves *moves)
{
	(void)m;
	return cc_match_settle_result_missing(pg, id, o, moves);
}

/*
 * One batch of a match sweep: selects, settles each, logs each match it
 * changed (after the commit would be better, but a retried attempt logs
 * again only what it changed again; the match id says which). Rows are the
 * matches this batch changed. Each settlement records the tickets it
 * requeued or ended in the batch's moves (maint_moves_take: room for a
 * whole match), which main.c applies to the candidate index after the
 * commit; a batch whose moves are full stops there and the pass goes on.
 */
static int match_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out, const char *sweep,
		       select_fn select, int64_t window_s, settle_fn settle)
{
	static char ids[MATCH_BATCH_MAX][CC_UUID_BUF];
	size_t n = 0;
	bool more = false;
	int64_t lag = -1;
	int limit = m->cfg->batch < MATCH_BATCH_MAX ? (int)m->cfg->batch : MATCH_BATCH_MAX;
	*out = (struct maint_batch){ .lag = -1 };
	int rc = select(pg, window_s, limit, ids, &n, &lag);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct cc_settle_outcome o;
		struct cc_ticket_moves *moves;
		memset(&o, 0, sizeof o);
		if (!maint_moves_take(m, CC_FORMATION_MAX_PLAYERS, &moves)) {
			more = true; /* the rest stay locked until the commit, then the next batch takes them */
			break;
		}
		if ((rc = settle(pg, m, ids[i], &o, moves)) != 0) {
			/* A serialization failure is retried with the whole batch: no news. */
			cc_log_emit(rc == CC_ESERIALIZATION ? CC_LOG_DEBUG : CC_LOG_WARN, "settle_failed",
				    (struct cc_log_field[]){ CC_LOG_STR("sweep", sweep), CC_LOG_STR("match_id", ids[i]),
							     CC_LOG_STR("error", cc_errname(rc)) },
				    3);
			return rc;
		}
		if (!o.changed)
			continue;
		out->rows++;
		cc_log_info("match_settled", CC_LOG_STR("sweep", sweep), CC_LOG_STR("match_id", ids[i]),
			    CC_LOG_STR("state", o.match_state), CC_LOG_INT("requeued", o.requeued),
			    CC_LOG_INT("failed", o.failed), CC_LOG_INT("penalised", o.penalised),
			    CC_LOG_STR("replica", m->replica));
	}
	/* A full pick (at this sweep's own cap) means there may be more: the pass goes on. */
	out->picked = more || (int64_t)n == limit ? m->cfg->batch : (int64_t)n;
	out->lag = lag;
	return 0;
}

int maint_stalled_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return match_batch(pg, m, out, "stalled", cc_matches_due_stalled, m->cfg->stalled_after_seconds,
			   settle_stalled);
}

int maint_server_silent_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return match_batch(pg, m, out, "server_silent", cc_matches_due_server_silent,
			   m->cfg->server_silent_after_seconds, settle_silent);
}

int maint_no_show_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return match_batch(pg, m, out, "no_show", cc_matches_due_no_show, m->cfg->no_show_after_seconds,
			   settle_no_show);
}

int maint_result_missing_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return match_batch(pg, m, out, "result_missing", cc_matches_due_result_missing,
			   m->cfg->result_missing_after_seconds, settle_result_missing);
}
