/*
 * sweeps.c - cc-maintenance's expiry, season and retention sweeps: each
 * batch function is one call of its owner's store function (the one the
 * request paths use, or the owner's purge), inside the framework's
 * SERIALIZABLE transaction (main.c). See maintenance.h.
 *
 * A sweep counts its lag (rows past the window) only in the first batch of
 * a pass (m->pass_batch == 0): a count over a million-row backlog on every
 * batch would cost more than the deletes. Later batches report -1 and the
 * framework shows the first count minus the rows done since.
 */
#include <stdio.h>
#include <string.h>

#include "maintenance.h"
#include "store/idempotency.h"
#include "store/outbox.h"
#include "store/probes.h"
#include "store/proposals.h"
#include "store/ratings.h"
#include "store/seasons.h"
#include "store/sessions.h"
#include "store/tickets.h"
#include "sys/log.h"
#include "sys/banned.h"

/* The batch limit as an int (the table caps --batch far below INT_MAX). */
static int limit_of(const struct maint *m)
{
	return (int)m->cfg->batch;
}

/* &lag when this batch should count it, else NULL. */
static int64_t *lag_wanted(const struct maint *m, int64_t *lag)
{
	return m->pass_batch == 0 ? lag : NULL;
}

static void reset(struct maint_batch *out)
{
	*out = (struct maint_batch){ .lag = -1 };
}

/* ---- expiry ------------------------------------------------------------------ */

/*
 * Overdue QUEUED tickets -> EXPIRED: the lazy expiry's change and event
 * (store/tickets.h). With an index, in calls of at most one moves chunk
 * (CC_TICKET_MOVES_MAX tickets) inside the batch's transaction, so no
 * expired ticket is left out of the moves that remove it from the index.
 */
int maint_expire_tickets_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	int n = 0, limit = limit_of(m);
	int64_t lag = -1;
	bool more = false; /* stopped with rows possibly left: the pass goes on */
	reset(out);
	while (n < limit) {
		struct cc_ticket_moves *moves;
		if (!maint_moves_take(m, CC_TICKET_MOVES_MAX, &moves)) {
			more = true;
			break;
		}
		int want = limit - n, k = 0;
		if (moves && want > CC_TICKET_MOVES_MAX)
			want = CC_TICKET_MOVES_MAX;
		int rc = cc_tickets_expire_overdue(pg, want, &k, n == 0 ? lag_wanted(m, &lag) : NULL, moves);
		if (rc != 0)
			return rc;
		n += k;
		if (k < want)
			break; /* none left */
	}
	out->rows = n;
	out->picked = more || n == limit ? m->cfg->batch : n;
	out->lag = lag;
	return 0;
}

/*
 * Overdue OPEN proposals -> EXPIRED with the timeout rule (SPEC 7), through
 * cc_proposals_expire_overdue: the function cc-matcher runs in its pass and
 * the read and response paths run one proposal at a time. With an index it
 * records the moves (the requeued accepters go back into the index after
 * the commit, the expired non-responders leave it); the store stops before
 * a proposal that might not fit a chunk, so the batch calls it again with
 * the next chunk until --batch proposals or none are left.
 *
 * Only proposals overdue by more than --expiry-grace-seconds (5). The
 * grace was added when this process kept no index (a requeue it made was
 * hidden from a Redis-fed matcher until the next heartbeat); with
 * --redis-host that is no longer so, but the grace stays: cc-matcher's
 * pass expires the same proposals the moment they are due, through the
 * same function at SERIALIZABLE. The row lock and the OPEN re-check mean a
 * proposal is never expired twice, but two expirers over one due set
 * conflict (maintenance_race.sh: two replicas, a failed expire_proposals
 * batch now and then), and a conflict costs the matcher's pass a retry.
 * With the grace this sweep takes only what no matcher expired (its
 * playlist's matcher is down), and a cc-maintenance run without Redis
 * beside Redis-fed matchers still hides no accepter.
 */
int maint_expire_proposals_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	int n = 0, limit = limit_of(m);
	int64_t lag = -1;
	bool more = false;
	reset(out);
	int rc = m->pass_batch == 0 ? cc_proposals_overdue_count(pg, m->cfg->expiry_grace_seconds, &lag) : 0;
	while (rc == 0 && n < limit) {
		struct cc_ticket_moves *moves;
		if (!maint_moves_take(m, CC_PROPOSAL_MAX_PARTICIPANTS, &moves)) {
			more = true;
			break;
		}
		int k = 0;
		rc = cc_proposals_expire_overdue(pg, m->cfg->expiry_grace_seconds, limit - n, &k, moves);
		n += k;
		if (!moves || k == 0 || !cc_proposals_moves_full(moves))
			break; /* it stopped for want of proposals, not of room */
	}
	if (rc == 0)
		out->rows = n, out->picked = more || n == limit ? m->cfg->batch : n, out->lag = lag;
	return rc;
}

/* ---- seasons ----------------------------------------------------------------- */

/*
 * Applies the soft reset of the latest season to a batch of players
 * (store/ratings.h: the season_resets guard makes it once per player per
 * season); once no player is due, rolls the season over when it ended
 * (store/seasons.h). A roll goes on at once (the batch reports a full
 * pick) with the new season's resets, so a service that was down for
 * several seasons catches up season by season, each one's resets complete
 * before the next season starts.
 */
int maint_season_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	struct cc_season s;
	bool rolled = false;
	int64_t n = 0, lag = -1;
	reset(out);
	int rc = cc_season_latest(pg, &s);
	if (rc != 0)
		return rc;
	if (s.season >= 2 && (rc = cc_ratings_season_reset(pg, s.season, limit_of(m), &n, lag_wanted(m, &lag))) != 0)
		return rc;
	if (s.season < 2)
		lag = 0; /* season 1 (or none) has nothing to reset */
	if (n < m->cfg->batch) { /* this season's resets are done: is it over? */
		if ((rc = cc_season_roll(pg, m->cfg->season_weeks, &s, &rolled)) != 0)
			return rc;
		if (rolled)
			cc_log_info("season_started", CC_LOG_INT("season", s.season), CC_LOG_STR("starts_at", s.starts_at),
				    CC_LOG_STR("ends_at", s.ends_at), CC_LOG_STR("replica", m->replica));
	}
	out->rows = n;
	out->lag = lag;
	out->picked = rolled ? m->cfg->batch : n;
	return 0;
}

/* ---- retention ------------------------------------------------------------------ */

typedef int (*purge_fn)(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag);

static int purge(struct cc_pg *pg, struct maint *m, struct maint_batch *out, purge_fn fn, int64_t window_s)
{
	int64_t n = 0, lag = -1;
	reset(out);
	int rc = fn(pg, window_s, limit_of(m), &n, lag_wanted(m, &lag));
	if (rc == 0)
		out->rows = out->picked = n, out->lag = lag;
	return rc;
}

int maint_purge_idempotency_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return purge(pg, m, out, cc_idempotency_purge, m->cfg->idempotency_retention_hours * 3600);
}

int maint_purge_outbox_published_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return purge(pg, m, out, cc_outbox_purge_published, m->cfg->outbox_published_retention_hours * 3600);
}

int maint_purge_outbox_dead_letters_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return purge(pg, m, out, cc_outbox_purge_dead_letters, m->cfg->outbox_dead_letter_retention_days * 86400);
}

int maint_purge_sessions_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return purge(pg, m, out, cc_sessions_purge_dead, m->cfg->session_retention_hours * 3600);
}

int maint_purge_probes_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return purge(pg, m, out, cc_probes_purge_expired, m->cfg->probe_retention_minutes * 60);
}

/* Proposals that never made a match, with the tickets that ended in them (store/proposals.h). */
int maint_purge_proposals_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	int64_t n = 0, tickets = 0, lag = -1;
	reset(out);
	int rc = cc_proposals_purge_unmatched(pg, m->cfg->finished_retention_days * 86400, limit_of(m), &n, &tickets,
					      lag_wanted(m, &lag));
	if (rc == 0)
		out->rows = out->picked = n, out->lag = lag;
	return rc;
}

/* Tickets that ended while QUEUED, never in a proposal (runs after the proposal purge in the table). */
int maint_purge_tickets_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	return purge(pg, m, out, cc_tickets_purge_unmatched, m->cfg->finished_retention_days * 86400);
}
