/*
 * pass.c - one matching pass (SPEC 6).
 *
 * A pass runs only while its replica holds the playlist's pass lease. It
 * hands cc_queue_pass_run (game/queue_pass.h: the working set across
 * pages, formation, the cursor) its two kinds of I/O: reading a page (the
 * head from the Redis index when it answers with entries, PostgreSQL when
 * Redis is down or empty; the pages behind it from PostgreSQL by keyset)
 * and claiming formations (queued as the pass forms them, then claimed in
 * one transaction of one statement at its end, CC_CLAIM_BATCH_MAX at a
 * time: flush_claims). Every per-pass failure (database blip,
 * lost claim, nothing to do) ends only this pass: it is logged and
 * counted, and the loop in main.c runs the next one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/arenas.h"
#include "store/formation_claim.h"
#include "sys/clock.h"
#include "sys/hash.h"
#include "sys/log.h"
#include "matcher.h"
#include "store/playlists.h"
#include "store/proposals.h"
#include "sys/banned.h"

/*
 * The matcher's own SQL below (the clock read and the pass lease) touches
 * none of our tables, so it stays here; every statement on a table is in
 * libcommon/store (scripts/check-layers.sh enforces it).
 */
static const char sql_now[] = "SELECT (extract(epoch FROM now()) * 1000)::bigint";

/*
 * The pass lease: one session-level advisory lock per playlist, held for
 * one pass, so only one replica of a playlist passes at a time instead of
 * all of them forming the same matches from the same queue head and losing
 * most of their claims to one another (bench-matcher.sh measured 65-90%
 * lost with 2-4 replicas). A busy replica takes it again as soon as it
 * gives it back, so under load one replica does the work and the others
 * stand by (active/standby, not a share-out: the claims are bounded by
 * PostgreSQL, and one view of the queue head makes the fairest matches);
 * a standby takes over within a poll interval when the active one stops.
 * The same statement bounds how long a stalled replica can keep it:
 * PostgreSQL ends a session idle (in or out of a transaction) for longer
 * than the lease timeout, and the lock goes with the session. (A replica
 * whose connection was re-opened mid-pass finishes that pass without the
 * lease; the claim fence keeps that safe, the lease only saves work.)
 */
static const char sql_lease[] =
	"SELECT set_config('idle_session_timeout', $2, false), "
	"set_config('idle_in_transaction_session_timeout', $2, false), "
	"pg_try_advisory_lock(hashtext('cc-matcher'), hashtext($1))";
static const char sql_unlease[] = "SELECT pg_advisory_unlock(hashtext('cc-matcher'), hashtext($1))";

static void set_ready(struct matcher *m, bool ready, const char *why)
{
	pthread_mutex_lock(&m->lock);
	m->db_ready = ready;
	snprintf(m->db_why, sizeof m->db_why, "%s", ready ? "" : why);
	pthread_mutex_unlock(&m->lock);
}

void matcher_set_db_state(struct matcher *m, int rc)
{
	char why[128];
	if (rc != 0) {
		snprintf(why, sizeof why, "database: %s", cc_strerror(rc));
		set_ready(m, false, why);
	} else {
		set_ready(m, m->tables_why[0] == '\0', m->tables_why);
	}
}

/*
 * The tables that mirror compiled lists: playlists (its missing rows
 * inserted, store/playlists.h) and arenas. Checked on every pass until both
 * hold (a fixed table is picked up without a restart), then not again. Returns 0 with m->tables_why empty
 * (equal) or saying what differs, or a database error.
 */
static int check_tables(struct matcher *m)
{
	size_t added = 0;
	int rc = cc_playlists_sync(m->pg, &added, m->tables_why, sizeof m->tables_why);
	if (rc == 0 && added > 0)
		cc_log_info("playlists_inserted", CC_LOG_INT("rows", added));
	if (rc == 0)
		rc = cc_arenas_check(m->pg, m->tables_why, sizeof m->tables_why); /* store/arenas.h */
	else if (rc == CC_ESTATE || rc == CC_EINVAL)
		rc = 0; /* tables_why says how */
	m->tables_checked = rc == 0 && m->tables_why[0] == '\0';
	return rc;
}

/* Opens the work connection the first time; later drops reconnect inside cc_pg. */
static int ensure_connected(struct matcher *m)
{
	char err[256] = "";
	if (m->pg)
		return 0;
	int rc = cc_pg_connect(m->cfg->svc.database_url, &m->pg_opt, &m->pg, err, sizeof err);
	if (rc != 0)
		cc_log_emit(m->failed_passes == 0 ? CC_LOG_WARN : CC_LOG_DEBUG, "database_connect_failed",
			    (struct cc_log_field[]){ CC_LOG_STR("error", cc_errname(rc)), CC_LOG_STR("reason", err) }, 2);
	return rc;
}

static int read_now(struct matcher *m, int64_t *now_ms)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(m->pg, sql_now, 0, NULL, &res);
	if (rc == 0)
		rc = cc_pg_get_int64(res, 0, 0, now_ms);
	PQclear(res);
	return rc;
}

/*
 * Drops index entries whose heartbeat deadline has passed (they sort first,
 * as the oldest, and would otherwise fill every read window) and compacts
 * the rest of out[0..n). Returns how many usable candidates remain.
 */
static size_t drop_expired(struct matcher *m, struct cc_candidate *out, size_t n, int64_t now_ms)
{
	size_t kept = 0;
	bool index_up = true;
	for (size_t i = 0; i < n; i++) {
		if (out[i].expires_at_ms > now_ms) {
			if (kept != i)
				out[kept] = out[i];
			kept++;
		} else if (index_up) {
			index_up = cc_candidate_index_remove(m->index, m->cfg->playlist, out[i].ticket_id) == 0;
		}
	}
	return kept;
}

/* Counts one page read. */
static void count_read(struct matcher *m, const char *source, size_t n)
{
	const char *lv[] = { m->cfg->playlist, source };
	cc_metric_add(m->metrics.reads, lv, 1);
	cc_metric_add(m->metrics.candidates, lv, (double)n);
}

/* What a pass's claims came to (its formations are counted formed when queued). */
struct pass_claims {
	unsigned lost;    /* queued formations that did not commit */
	unsigned batches; /* batches claimed while the pass was still forming (it was full) */
};

/* What a pass's reads and claims found, for its report. */
struct pass_reads {
	struct matcher *m;
	const char *source;       /* of the head page: "redis" or "postgres" */
	struct pass_claims claims; /* this pass's batches */
};

/*
 * Drops the candidates whose tickets a formation of this pass already holds
 * (queued for the batch, not claimed yet: still QUEUED in PostgreSQL and
 * the index) and compacts the rest of out[0..n). The page's more and last
 * stay the source's, so the keyset goes on past them. Returns how many remain.
 */
static size_t drop_pending(const struct matcher *m, struct cc_candidate *out, size_t n)
{
	enum { SLOTS = 1024 }; /* > CC_CLAIM_BATCH_MAX * CC_FORMATION_MAX_PLAYERS: probes stay short */
	const char *slot[SLOTS] = { 0 };
	size_t kept = 0;
	if (m->n_pending == 0)
		return n;
	for (size_t i = 0; i < m->n_pending; i++)
		for (size_t k = 0; k < m->pending[i].f.n_players; k++) {
			const char *id = m->pending[i].ticket_id[k];
			size_t h = cc_hash_fnv1a32(id, strlen(id)) % SLOTS;
			while (slot[h])
				h = (h + 1) % SLOTS;
			slot[h] = id;
		}
	for (size_t i = 0; i < n; i++) {
		const char *id = out[i].ticket_id;
		size_t h = cc_hash_fnv1a32(id, strlen(id)) % SLOTS;
		bool held = false;
		while (slot[h] && !(held = strcmp(slot[h], id) == 0))
			h = (h + 1) % SLOTS;
		if (held)
			continue;
		if (kept != i)
			out[kept] = out[i];
		kept++;
	}
	return kept;
}

/*
 * Reads the head of the queue (the oldest limit candidates) into out. The
 * index is tried first; "down" (an error) and "empty" (0 entries) both
 * fall back to PostgreSQL, but only "empty" repopulates the index:
 * rebuilding a Redis that is down would just fail again, and must never
 * stand between PostgreSQL and a match. An index holding nothing but
 * expired entries counts as empty.
 */
static int read_head(struct pass_reads *pr, size_t limit, struct cc_candidate *out, struct cc_queue_page *page)
{
	struct matcher *m = pr->m;
	const char *playlist = m->cfg->playlist;
	size_t n = 0;
	int irc = CC_EUNAVAILABLE;
	if (m->index) {
		irc = cc_candidate_index_read(m->index, playlist, limit, out, &n);
		if (irc == 0 && n > 0) {
			page->more = n == limit;
			snprintf(page->last, sizeof page->last, "%s", out[n - 1].ticket_id);
			int rc = read_now(m, &page->now_ms);
			if (rc != 0)
				return rc;
			if ((page->n = drop_expired(m, out, n, page->now_ms)) > 0) {
				pr->source = "redis";
				return 0;
			}
		}
		const char *lv[] = { playlist, irc == 0 ? "empty" : "down" };
		cc_metric_add(m->metrics.redis_fallbacks, lv, 1);
		if (irc != 0)
			cc_log_debug("candidate_index_unavailable", CC_LOG_STR("error", cc_errname(irc)));
	}
	pr->source = "postgres";
	int rc = cc_candidates_load(m->pg, playlist, NULL, limit, out, &n, &page->now_ms);
	if (rc != 0)
		return rc;
	page->n = n;
	page->more = n == limit;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	if (irc != 0 || n == 0)
		return 0;
	int brc = cc_candidate_index_rebuild(m->index, playlist, out, n);
	cc_log_info("candidate_index_rebuilt", CC_LOG_INT("candidates", n), CC_LOG_STR("result", cc_errname(brc)));
	return 0;
}

/*
 * The read callback of cc_queue_pass_run: the head page (read_head), or
 * the page after a ticket from PostgreSQL by keyset (a rebuild indexes
 * only the head, so deeper pages are never the index's).
 */
static int read_page(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
		     struct cc_queue_page *page)
{
	struct pass_reads *pr = ctx;
	struct matcher *m = pr->m;
	int rc;
	if (!after) {
		rc = read_head(pr, limit, out, page);
		if (rc == 0) {
			count_read(m, pr->source, page->n);
			page->n = drop_pending(m, out, page->n);
		}
		return rc;
	}
	size_t n = 0;
	rc = cc_candidates_load(m->pg, m->cfg->playlist, after, limit, out, &n, &page->now_ms);
	if (rc != 0)
		return rc;
	page->n = n;
	page->more = n == limit;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	count_read(m, "postgres", n);
	page->n = drop_pending(m, out, n);
	return 0;
}

/* Drops tickets from the index after a claim (best effort: entries may be stale anyway). */
static void index_forget(struct matcher *m, const struct cc_claim_request *req, const bool *which)
{
	if (!m->index)
		return;
	for (size_t k = 0; k < req->n; k++) {
		if (which && !which[k])
			continue;
		int rc = cc_candidate_index_remove(m->index, m->cfg->playlist, req->ticket_id[k]);
		if (rc != 0) {
			cc_log_debug("candidate_index_remove_failed", CC_LOG_STR("error", cc_errname(rc)));
			return; /* Redis is down: the rest would fail too */
		}
	}
}

/* One request per pending formation, pointing into m->pending. */
static void pending_request(struct matcher *m, const struct matcher_pending *p, struct cc_claim_request *req)
{
	memset(req, 0, sizeof *req);
	req->playlist = m->cfg->playlist;
	req->matcher = m->id;
	req->window_seconds = (int)m->cfg->proposal_window_seconds;
	req->team_size = (int)(p->f.n_players / 2);
	req->build = p->build;
	req->protocol_version = p->protocol_version;
	req->region = p->f.region;
	req->max_rtt_ms = m->params.max_rtt_ms;
	req->n = p->f.n_players;
	for (size_t k = 0; k < p->f.n_players; k++) {
		req->ticket_id[k] = p->ticket_id[k];
		req->team[k] = p->f.team[k];
	}
}

/*
 * Claims every pending formation in one batch (store cc_formation_claim_batch:
 * one transaction, one statement, each formation with the single claim's
 * fence and outbox rows), then logs, counts and forgets each one as a
 * single claim did. A lost formation's tickets already left this pass's
 * working set; the next pass (at once: this one formed) reads them again if
 * they are still queued. Returns 0, or the error that failed the whole
 * batch (nothing was written; logged here).
 */
static int flush_claims(struct matcher *m, struct pass_claims *pc)
{
	const char *playlist = m->cfg->playlist;
	size_t n = m->n_pending;
	struct cc_claim_request reqs[CC_CLAIM_BATCH_MAX]; /* about 20 KiB: the worker thread's stack holds it */
	struct cc_claim_result res[CC_CLAIM_BATCH_MAX];
	int rcs[CC_CLAIM_BATCH_MAX];

	if (n == 0)
		return 0;
	m->n_pending = 0;
	for (size_t i = 0; i < n; i++)
		pending_request(m, &m->pending[i], &reqs[i]);
	int rc = cc_formation_claim_batch(m->pg, reqs, n, res, rcs);
	if (rc == CC_ERETRY_EXHAUSTED) {
		/* Could not serialize: every formation of it is lost for this pass. */
		const char *lv[] = { playlist, "retry_exhausted" };
		cc_metric_add(m->metrics.claim_conflicts, lv, (double)n);
		cc_log_info("claim_lost", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_INT("proposals", n));
		pc->lost += (unsigned)n;
		return 0;
	}
	if (rc != 0) {
		cc_log_warn("claim_failed", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_STR("sqlstate", cc_pg_sqlstate(m->pg)),
			    CC_LOG_STR("detail", cc_pg_error_message(m->pg)), CC_LOG_INT("proposals", n));
		pc->lost += (unsigned)n;
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		const struct cc_formation *f = &m->pending[i].f;
		if (rcs[i] == 0) {
			const char *lv[] = { playlist };
			cc_metric_add(m->metrics.proposals, lv, 1);
			cc_log_info("proposal_opened", CC_LOG_STR("proposal_id", res[i].proposal_id),
				    CC_LOG_STR("playlist", playlist), CC_LOG_STR("region", f->region),
				    CC_LOG_STR("arena", res[i].arena), CC_LOG_INT("players", f->n_players),
				    CC_LOG_DBL("worst_rtt_ms", f->worst_rtt_ms),
				    CC_LOG_DBL("rating_spread", f->rating_spread),
				    CC_LOG_DBL("team0_mean", f->team_mean[0]), CC_LOG_DBL("team1_mean", f->team_mean[1]));
			index_forget(m, &reqs[i], NULL);
			continue;
		}
		pc->lost++;
		if (rcs[i] == CC_ENOTFOUND) {
			cc_log_warn("claim_failed", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rcs[i])));
			continue;
		}
		/* Lost the race: the ones gone for good leave the index. */
		const char *lv[] = { playlist, "lost" };
		cc_metric_add(m->metrics.claim_conflicts, lv, 1);
		size_t n_lost = 0;
		for (size_t k = 0; k < reqs[i].n; k++)
			n_lost += res[i].lost[k];
		cc_log_info("claim_lost", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rcs[i])),
			    CC_LOG_INT("lost", n_lost));
		index_forget(m, &reqs[i], res[i].gone);
	}
	return 0;
}

/*
 * The claim callback of cc_queue_pass_run: queues the formation for the
 * pass's batch (flushed here when full, and at the end of the pass). It
 * answers "claimed" for every queued formation, so formation takes its
 * tickets out of the working set either way.
 */
static int claim(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	struct pass_reads *pr = ctx;
	struct matcher *m = pr->m;
	(void)lost;
	if (m->n_pending == CC_CLAIM_BATCH_MAX) {
		pr->claims.batches++;
		int rc = flush_claims(m, &pr->claims);
		if (rc != 0)
			return rc;
	}
	struct matcher_pending *p = &m->pending[m->n_pending++];
	const struct cc_candidate *anchor = &m->qp.cands[f->index[0]];
	p->f = *f;
	_Static_assert(sizeof p->build == sizeof anchor->build, "build buffers differ");
	memcpy(p->build, anchor->build, sizeof p->build);
	p->protocol_version = anchor->protocol_version;
	for (size_t k = 0; k < f->n_players; k++)
		memcpy(p->ticket_id[k], m->qp.cands[f->index[k]].ticket_id, sizeof p->ticket_id[k]);
	return 0;
}

/* Counts and logs a pass's outcome. */
static void pass_report(struct matcher *m, int rc, const char *source, const struct cc_queue_pass_stats *qst,
			int runs, double seconds)
{
	const struct cc_formation_pass_stats *st = qst ? &qst->formation : NULL;
	const char *playlist = m->cfg->playlist;
	const char *lv_result[] = { playlist, rc == 0 ? "ok" : "error" };
	const char *lv[] = { playlist };
	cc_metric_add(m->metrics.passes, lv_result, 1);
	cc_metric_observe(m->metrics.pass_seconds, lv, seconds);
	if (st) {
		const char *lv_ne[] = { playlist, "not_enough" }, *lv_nr[] = { playlist, "no_common_region" };
		cc_metric_add(m->metrics.refusals, lv_ne, st->refused_not_enough);
		cc_metric_add(m->metrics.refusals, lv_nr, st->refused_no_region);
	}
	if (rc != 0) {
		/* A database outage fails every pass: warn on the first and then once a minute or so. */
		m->failed_passes++;
		struct cc_log_field failed[] = {
			CC_LOG_STR("playlist", playlist),
			CC_LOG_STR("error", cc_errname(rc)),
			CC_LOG_STR("sqlstate", m->pg ? cc_pg_sqlstate(m->pg) : ""),
			CC_LOG_INT("consecutive", m->failed_passes),
			CC_LOG_DBL("seconds", seconds),
		};
		cc_log_emit(m->failed_passes == 1 || m->failed_passes % 120 == 0 ? CC_LOG_WARN : CC_LOG_DEBUG,
			    "pass_failed", failed, CC_ARRAY_LEN(failed));
		return;
	}
	if (m->failed_passes > 0) {
		cc_log_info("pass_recovered", CC_LOG_STR("playlist", playlist), CC_LOG_INT("failed_passes", m->failed_passes));
		m->failed_passes = 0;
	}
	struct cc_log_field fields[] = {
		CC_LOG_STR("playlist", playlist),
		CC_LOG_STR("source", source),
		CC_LOG_INT("candidates", qst ? qst->read : 0),
		CC_LOG_INT("runs", runs),
		CC_LOG_INT("pages", qst ? qst->pages : 0),
		CC_LOG_INT("working_set", qst ? qst->working : 0),
		CC_LOG_BOOL("cursor", m->qp.cursor[0] != '\0'),
		CC_LOG_INT("formed", st ? st->formed : 0),
		CC_LOG_INT("refused_not_enough", st ? st->refused_not_enough : 0),
		CC_LOG_INT("refused_no_region", st ? st->refused_no_region : 0),
		CC_LOG_INT("lost_claims", st ? st->lost_claims : 0),
		CC_LOG_BOOL("out_of_attempts", st ? st->out_of_attempts : false),
		CC_LOG_INT("swept", st ? st->swept : 0),                              /* of formed: the rating sweep's */
		CC_LOG_DBL("arrival_rate_per_second", qst ? qst->arrival_rate_per_s : 0), /* what the tolerance widened with */
		CC_LOG_DBL("seconds", seconds),
	};
	/* Quiet when nothing happened: an idle matcher passes twice a second. */
	cc_log_emit(st && (st->formed || st->lost_claims) ? CC_LOG_INFO : CC_LOG_DEBUG, "pass", fields,
		    CC_ARRAY_LEN(fields));
}

#define EXPIRE_BATCH 64 /* overdue proposals settled per pass at most */

struct expire_ctx {
	int limit;                    /* proposals this transaction may expire */
	bool moves_wanted;            /* an index to refresh */
	int n;                        /* proposals expired by this attempt */
	struct cc_ticket_moves moves; /* the tickets they moved, for the index after the commit */
};

static int expire_run(struct cc_pg *pg, void *arg)
{
	struct expire_ctx *ex = arg;
	ex->n = 0;
	cc_ticket_moves_reset(&ex->moves);
	return cc_proposals_expire_overdue(pg, 0, ex->limit, &ex->n, ex->moves_wanted ? &ex->moves : NULL);
}

/*
 * Puts the tickets an expiry requeued back into the index (any playlist's:
 * the sweep settles them all) and drops the ones it ended, after the
 * commit. Without this, a requeued accepter keeps its old place in
 * PostgreSQL but is missing from the index, whose head page then hides it
 * behind newer tickets until its next heartbeat refreshes the entry.
 * Failures are counted and logged by the shared apply (candidate_index.h),
 * as in cc-api and cc-maintenance.
 */
static void index_apply(struct matcher *m, const struct cc_ticket_moves *moves)
{
	(void)cc_candidate_index_apply_moves(m->index, moves, m->metrics.index_errors);
}

/* Takes the pass lease: 0 with *held telling whether this replica has it, or cc_pg_exec's error. */
static int take_lease(struct matcher *m, bool *held)
{
	char timeout[24];
	PGresult *res = NULL;
	snprintf(timeout, sizeof timeout, "%lld", (long long)m->cfg->lease_timeout_ms);
	const char *p[] = { m->cfg->playlist, timeout };
	int rc = cc_pg_exec(m->pg, sql_lease, 2, p, &res);
	if (rc == 0)
		*held = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 2), "t") == 0;
	PQclear(res);
	return rc;
}

/* Gives the lease back (best effort: a lost connection has already dropped it). */
static void give_lease(struct matcher *m)
{
	const char *p[] = { m->cfg->playlist };
	PGresult *res = NULL;
	int rc = cc_pg_exec(m->pg, sql_unlease, 1, p, &res);
	if (rc != 0)
		cc_log_debug("pass_lease_release_failed", CC_LOG_STR("error", cc_errname(rc)));
	PQclear(res);
}

#define MATCHER_RUNS_PER_BATCH 16 /* queue runs one pass may make to fill its batch */

/* Adds run b's figures to a (the pass's). */
static void stats_add(struct cc_queue_pass_stats *a, const struct cc_queue_pass_stats *b)
{
	a->formation.formed += b->formation.formed;
	a->formation.refused_not_enough += b->formation.refused_not_enough;
	a->formation.refused_no_region += b->formation.refused_no_region;
	a->formation.lost_claims += b->formation.lost_claims;
	a->formation.excluded += b->formation.excluded;
	a->formation.out_of_attempts |= b->formation.out_of_attempts;
	a->pages += b->pages;
	a->read += b->read;
	a->working = a->working > b->working ? a->working : b->working;
	a->reached_end = b->reached_end;
	a->left_cursor = b->left_cursor;
}

int matcher_pass(struct matcher *m)
{
	double t0 = cc_clock_seconds();
	struct cc_queue_pass_stats qst;
	struct pass_reads pr = { .m = m, .source = "postgres" };
	bool ran = false, leased = false;
	int runs = 0; /* queue runs made (cc_queue_pass_run) */

	memset(&qst, 0, sizeof qst);

	m->run_again = false;
	int rc = ensure_connected(m);
	if (rc == 0 && !m->tables_checked && (rc = check_tables(m)) == 0 && m->tables_why[0]) {
		/* Static misconfiguration: not ready, and no pass, until the table is fixed. */
		cc_log_emit(m->failed_passes % 120 == 0 ? CC_LOG_ERROR : CC_LOG_DEBUG, "tables_mismatch",
			    (struct cc_log_field[]){ CC_LOG_STR("reason", m->tables_why) }, 1);
		rc = CC_ESTATE;
	}
	if (rc == 0)
		rc = take_lease(m, &leased);
	if (rc != 0)
		goto out;
	m->standby = !leased;
	if (!leased) {
		/* Another replica is passing: this one is a standby until its turn. */
		matcher_set_db_state(m, 0);
		const char *lv[] = { m->cfg->playlist, "standby" };
		cc_metric_add(m->metrics.passes, lv, 1);
		return 0;
	}

	/*
	 * Timed-out proposals are settled first, so their tickets are back in
	 * the queue before we read it. Any replica (and cc-api's readers) may
	 * race us: the decision is compare-and-set and penalties are
	 * exactly-once, so whoever wins, each non-responder is penalised once.
	 */
	struct expire_ctx ex = { .moves_wanted = m->index != NULL };
	int expired = 0;
	do { /* transactions of as many proposals as moves can hold, EXPIRE_BATCH in all */
		ex.limit = EXPIRE_BATCH - expired;
		if ((rc = cc_pg_run_serializable(m->pg, expire_run, &ex)) != 0)
			goto out;
		expired += ex.n;
		index_apply(m, &ex.moves);
	} while (ex.moves_wanted && ex.n > 0 && cc_proposals_moves_full(&ex.moves) && expired < EXPIRE_BATCH);
	if (expired > 0) {
		const char *lv_exp[] = { m->cfg->playlist };
		cc_metric_add(m->metrics.expired, lv_exp, expired);
	}

	ran = true;
	m->n_pending = 0;
	rc = cc_queue_pass_run(&m->qp, &m->pass_cfg, read_page, claim, &pr, &qst);
	/*
	 * A run that formed ends at once (queue_pass.h); while runs keep forming
	 * and the batch has room, run again over what the formations left (the
	 * reads skip their tickets), so one batch claims up to
	 * CC_CLAIM_BATCH_MAX matches however small the head page is. A batch
	 * that filled up ends the pass after this run (short passes keep the
	 * expiry sweep and the lease hand-over as frequent as before).
	 */
	runs = 1;
	while (rc == 0 && qst.formation.formed > 0 && runs < MATCHER_RUNS_PER_BATCH && pr.claims.batches == 0 &&
	       m->n_pending > 0 && m->n_pending < CC_CLAIM_BATCH_MAX) {
		struct cc_queue_pass_stats more;
		unsigned formed = qst.formation.formed;
		runs++;
		rc = cc_queue_pass_run(&m->qp, &m->pass_cfg, read_page, claim, &pr, &more);
		stats_add(&qst, &more);
		if (qst.formation.formed == formed)
			break;
	}
	/* What the pass formed is claimed now, in one batch (also after a failed read). */
	int frc = flush_claims(m, &pr.claims);
	rc = rc != 0 ? rc : frc;
	/* A pass that formed matches may have left more: the next one starts at once. */
	m->run_again = rc == 0 && qst.formation.formed > 0;
	qst.formation.lost_claims += pr.claims.lost;
	qst.formation.formed -= pr.claims.lost < qst.formation.formed ? pr.claims.lost : qst.formation.formed;
out:
	if (rc != 0 && m->pg)
		(void)cc_pg_rollback(m->pg); /* acknowledge a connection lost mid-transaction */
	if (leased)
		give_lease(m);
	/* Reaching PostgreSQL is what readiness means; a lost claim is not an outage. */
	matcher_set_db_state(m, rc == CC_EUNAVAILABLE || rc == CC_ETIMEOUT || !m->pg ? rc : 0);
	pass_report(m, rc, pr.source, ran ? &qst : NULL, runs, cc_clock_seconds() - t0);
	return rc;
}
