/*
 * pass.c - one matching pass (SPEC 6).
 *
 * A pass runs only while its replica holds the playlist's pass lease. It
 * hands cc_queue_pass_run (game/queue_pass.h: the working set across
 * pages, formation, the cursor) its two kinds of I/O: reading a page (the
 * head from the Redis index when it answers with entries, PostgreSQL when
 * Redis is down or empty; the pages behind it from PostgreSQL by keyset)
 * and claiming a formation (one transaction). Every per-pass failure (database blip,
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

/* What a pass's reads found, for its report. */
struct pass_reads {
	struct matcher *m;
	const char *source; /* of the head page: "redis" or "postgres" */
};

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
		if (rc == 0)
			count_read(m, pr->source, page->n);
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

/*
 * Claims the pending formations in one transaction (store/formation_claim.h:
 * one statement, each match its own fence and outbox rows), then counts,
 * logs and updates the index for each. Lost matches cost nothing but their
 * place: their tickets stay QUEUED and the next pass (which starts at once:
 * this one formed) forms them again. Returns 0, or an error that ends the
 * pass (the database, or no eligible arena).
 */
static int flush_claims(struct matcher *m)
{
	const char *playlist = m->cfg->playlist;
	size_t n = m->n_pending;
	if (n == 0)
		return 0;
	m->n_pending = 0;
	for (size_t i = 0; i < n; i++) {
		struct matcher_pending *pe = &m->pending[i];
		struct cc_claim_request *req = &m->batch_req[i];
		memset(req, 0, sizeof *req);
		req->playlist = playlist;
		req->matcher = m->id;
		req->window_seconds = (int)m->cfg->proposal_window_seconds;
		req->team_size = (int)(pe->f.n_players / 2);
		req->build = pe->build;
		req->protocol_version = pe->protocol_version;
		req->region = pe->f.region;
		req->max_rtt_ms = m->params.max_rtt_ms;
		req->n = pe->f.n_players;
		for (size_t k = 0; k < pe->f.n_players; k++) {
			req->ticket_id[k] = pe->ticket_id[k];
			req->team[k] = pe->f.team[k];
		}
	}
	int rc = cc_formation_claim_batch(m->pg, m->batch_req, n, m->batch_res, m->batch_rc);
	if (rc == CC_ERETRY_EXHAUSTED) {
		/* Could not serialize: every match of the batch lost; their tickets are untouched. */
		const char *lv[] = { playlist, "retry_exhausted" }, *lv_b[] = { playlist, "failed" };
		cc_metric_add(m->metrics.claim_conflicts, lv, (double)n);
		cc_metric_add(m->metrics.claim_batches, lv_b, 1);
		m->batch_lost += (unsigned)n;
		cc_log_info("claim_lost", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_INT("matches", n));
		return 0;
	}
	if (rc != 0) {
		const char *lv_b[] = { playlist, "failed" };
		cc_metric_add(m->metrics.claim_batches, lv_b, 1);
		cc_log_warn("claim_failed", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_INT("matches", n), CC_LOG_STR("sqlstate", cc_pg_sqlstate(m->pg)),
			    CC_LOG_STR("detail", cc_pg_error_message(m->pg)));
		return rc;
	}
	size_t claimed = 0, lost = 0;
	int worst = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cc_claim_request *req = &m->batch_req[i];
		const struct cc_claim_result *res = &m->batch_res[i];
		const struct cc_formation *f = &m->pending[i].f;
		if (m->batch_rc[i] == 0) {
			claimed++;
			cc_log_info("proposal_opened", CC_LOG_STR("proposal_id", res->proposal_id),
				    CC_LOG_STR("playlist", playlist), CC_LOG_STR("region", f->region),
				    CC_LOG_STR("arena", res->arena), CC_LOG_INT("players", f->n_players),
				    CC_LOG_DBL("worst_rtt_ms", f->worst_rtt_ms), CC_LOG_DBL("rating_spread", f->rating_spread),
				    CC_LOG_DBL("team0_mean", f->team_mean[0]), CC_LOG_DBL("team1_mean", f->team_mean[1]),
				    CC_LOG_INT("batch", n));
			index_forget(m, req, NULL);
		} else if (m->batch_rc[i] == CC_ECONFLICT) {
			/* Lost the race for some tickets: the gone ones leave the index, the rest wait for the next pass. */
			lost++;
			size_t n_lost = 0;
			for (size_t k = 0; k < req->n; k++)
				n_lost += res->lost[k];
			cc_log_info("claim_lost", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(CC_ECONFLICT)),
				    CC_LOG_INT("lost", n_lost), CC_LOG_INT("batch", n));
			index_forget(m, req, res->gone);
		} else {
			worst = m->batch_rc[i]; /* CC_ENOTFOUND: no eligible arena (configuration) */
		}
	}
	const char *lv[] = { playlist }, *lv_c[] = { playlist, "lost" };
	const char *lv_b[] = { playlist, lost == 0 ? "all" : claimed == 0 ? "none" : "partial" };
	cc_metric_add(m->metrics.proposals, lv, (double)claimed);
	cc_metric_add(m->metrics.claim_conflicts, lv_c, (double)lost);
	cc_metric_add(m->metrics.claim_batches, lv_b, 1);
	m->batch_claimed += (unsigned)claimed;
	m->batch_lost += (unsigned)lost;
	if (worst != 0)
		cc_log_warn("claim_failed", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(worst)),
			    CC_LOG_STR("detail", "no eligible arena for the playlist"));
	return worst;
}

/*
 * The claim callback of cc_queue_pass_run: the formation joins the pending
 * batch (copied: the working set moves between rounds). A pass reads on
 * until it has formed --claim-batch matches (queue_pass min_formed), and
 * its last round may form more: matcher_pass claims them all after the
 * pass, in one transaction (one commit a pass), unless the batch reaches
 * CC_CLAIM_BATCH_MAX first. To the pass, a pending match counts as claimed (its
 * tickets leave the working set).
 */
static int claim(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	struct matcher *m = ((struct pass_reads *)ctx)->m;
	(void)lost;
	struct matcher_pending *pe = &m->pending[m->n_pending++];
	const struct cc_candidate *anchor = &m->qp.cands[f->index[0]];
	pe->f = *f;
	memcpy(pe->build, anchor->build, sizeof pe->build); /* both NUL-terminated arrays of one size */
	pe->protocol_version = anchor->protocol_version;
	for (size_t k = 0; k < f->n_players; k++)
		memcpy(pe->ticket_id[k], m->qp.cands[f->index[k]].ticket_id, sizeof pe->ticket_id[k]);
	if (m->n_pending >= CC_CLAIM_BATCH_MAX)
		return flush_claims(m); /* the buffer is full: the rest of the round goes in the next batch */
	return 0;
}

/* Counts and logs a pass's outcome. */
static void pass_report(struct matcher *m, int rc, const char *source, const struct cc_queue_pass_stats *qst,
			double seconds)
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
		CC_LOG_INT("pages", qst ? qst->pages : 0),
		CC_LOG_INT("working_set", qst ? qst->working : 0),
		CC_LOG_BOOL("cursor", m->qp.cursor[0] != '\0'),
		CC_LOG_INT("formed", st ? st->formed : 0),
		CC_LOG_INT("refused_not_enough", st ? st->refused_not_enough : 0),
		CC_LOG_INT("refused_no_region", st ? st->refused_no_region : 0),
		CC_LOG_INT("lost_claims", st ? st->lost_claims : 0),
		CC_LOG_BOOL("out_of_attempts", st ? st->out_of_attempts : false),
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

int matcher_pass(struct matcher *m)
{
	double t0 = cc_clock_seconds();
	struct cc_queue_pass_stats qst;
	struct pass_reads pr = { .m = m, .source = "postgres" };
	bool ran = false, leased = false;

	memset(&qst, 0, sizeof qst);

	m->run_again = false;
	int rc = ensure_connected(m);
	if (rc == 0 && !m->tables_checked && (rc = check_tables(m)) == 0 && m->tables_why[0]) {
		/* Static misconfiguration: not ready, and no pass, until the table is fixed. */
		cc_log_emit(m->failed_passes % 120 == 0 ? CC_LOG_ERROR : CC_LOG_DEBUG, "tables_mismatch",
			    (struct cc_log_field[]){ CC_LOG_STR("reason", m->tables_why) }, 1);
		rc = CC_ESTATE;
	}
	if (rc == 0 && !m->cfg->pass_lease) {
		leased = true; /* --pass-lease=false: every replica passes (tests of the claim race) */
	} else if (rc == 0 && m->lease_held) {
		leased = true; /* kept from the last pass, which formed matches (give_lease_after) */
	} else if (rc == 0) {
		rc = take_lease(m, &leased);
		m->lease_since_ms = cc_clock_ms();
	}
	m->lease_held = false;
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
	m->batch_claimed = m->batch_lost = 0;
	rc = cc_queue_pass_run(&m->qp, &m->pass_cfg, read_page, claim, &pr, &qst);
	/* What the pass formed and did not claim yet: claimed now, whatever ended the pass. */
	int frc = flush_claims(m);
	if (rc == 0)
		rc = frc;
	/* The pass counted pending matches as formed; the batches say how many were lost. */
	qst.formation.formed = m->batch_claimed;
	qst.formation.lost_claims += m->batch_lost;
	/* A pass that formed matches (or lost some) may have left more: the next one starts at once. */
	m->run_again = rc == 0 && (m->batch_claimed > 0 || m->batch_lost > 0);
out:
	if (rc != 0 && m->pg)
		(void)cc_pg_rollback(m->pg); /* acknowledge a connection lost mid-transaction */
	/*
	 * A replica that goes straight on to its next pass keeps the lease
	 * (a standby would not get it in between anyway: this replica takes it
	 * back at once), for at most a lease timeout's third, so that the
	 * set_config of take_lease runs again now and then and a lease lost
	 * with a re-opened connection is noticed; otherwise it gives it back.
	 */
	if (leased && m->cfg->pass_lease) {
		if (rc == 0 && m->run_again && cc_clock_ms() - m->lease_since_ms < m->cfg->lease_timeout_ms / 3)
			m->lease_held = true;
		else
			give_lease(m);
	}
	/* Reaching PostgreSQL is what readiness means; a lost claim is not an outage. */
	matcher_set_db_state(m, rc == CC_EUNAVAILABLE || rc == CC_ETIMEOUT || !m->pg ? rc : 0);
	pass_report(m, rc, pr.source, ran ? &qst : NULL, cc_clock_seconds() - t0);
	return rc;
}
