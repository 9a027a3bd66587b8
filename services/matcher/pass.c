/*
 * pass.c - one matching pass (SPEC 6).
 *
 * A pass runs only while its replica holds the playlist's pass lease. It
 * reads the oldest candidates (the Redis index when it answers with
 * entries; PostgreSQL when Redis is down or empty), prepares the formation
 * workspace with PostgreSQL's now(), and lets cc_formation_pass form and
 * claim until nothing more forms; when that full head page formed nothing
 * it goes on to the pages behind it (scan_deeper). Every per-pass failure (database blip,
 * lost claim, nothing to do) ends only this pass: it is logged and
 * counted, and the loop in main.c runs the next one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "game/arenas.h"
#include "store/formation_claim.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "matcher.h"
#include "store/playlists.h"
#include "store/proposals.h"
#include "sys/banned.h"

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
 * The arenas table must equal the compiled list the game server is built
 * from (libcommon/arenas.c, SPEC 6): a claim picks its arena from the
 * table, so a row the game server lacks would send players to a map it
 * cannot load. Checked on every pass until it holds (a fixed table is
 * picked up without a restart), then not again. Returns 0 with
 * m->tables_why empty (equal) or saying where they differ, or
 * cc_pg_exec's error.
 */
static int check_arenas(struct matcher *m)
{
	static const char sql[] = "SELECT name, ranked_eligible FROM arenas ORDER BY name";
	PGresult *res = NULL;
	size_t n = 0;
	(void)cc_arenas(&n);
	int rc = cc_pg_exec(m->pg, sql, 0, NULL, &res);
	if (rc != 0)
		return rc;
	m->tables_why[0] = '\0';
	int rows = PQntuples(res);
	for (int i = 0; i < rows && !m->tables_why[0]; i++) {
		const char *name = PQgetvalue(res, i, 0); /* [a-z][a-z0-9_]{0,31}: a CHECK keeps it so */
		const struct cc_arena *a = cc_arena_find(name);
		if (!a || a->ranked_eligible != (strcmp(PQgetvalue(res, i, 1), "t") == 0))
			snprintf(m->tables_why, sizeof m->tables_why, "arenas table differs from the compiled list at %s",
				 name);
	}
	if (!m->tables_why[0] && (size_t)rows != n)
		snprintf(m->tables_why, sizeof m->tables_why, "arenas table holds %d arenas, the compiled list %zu", rows,
			 n);
	PQclear(res);
	return 0;
}

/*
 * The tables that mirror compiled lists: playlists (its missing rows
 * inserted, store/playlists.h) and arenas. Checked on every pass until both
 * hold, then not again, as check_arenas. Returns 0 with m->tables_why empty
 * (equal) or saying what differs, or a database error.
 */
static int check_tables(struct matcher *m)
{
	size_t added = 0;
	int rc = cc_playlists_sync(m->pg, &added, m->tables_why, sizeof m->tables_why);
	if (rc == 0 && added > 0)
		cc_log_info("playlists_inserted", CC_LOG_INT("rows", added));
	if (rc == 0)
		rc = check_arenas(m);
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
 * the rest. Returns how many usable candidates remain.
 */
static size_t drop_expired(struct matcher *m, size_t n, int64_t now_ms)
{
	size_t kept = 0;
	bool index_up = true;
	for (size_t i = 0; i < n; i++) {
		if (m->cands[i].expires_at_ms > now_ms) {
			if (kept != i)
				m->cands[kept] = m->cands[i];
			kept++;
		} else if (index_up) {
			index_up = cc_candidate_index_remove(m->index, m->cfg->playlist, m->cands[i].ticket_id) == 0;
		}
	}
	return kept;
}

/*
 * Reads the head of the queue (the oldest read_limit candidates) into
 * m->cands; *read is how many entries the source returned before expired
 * ones were dropped. The index is tried first; "down" (an error) and
 * "empty" (0 entries) both fall back to PostgreSQL, but only "empty"
 * repopulates the index: rebuilding a Redis that is down would just fail
 * again, and must never stand between PostgreSQL and a match. An index
 * holding nothing but expired entries counts as empty.
 */
static int read_head(struct matcher *m, size_t *n, size_t *read, int64_t *now_ms, const char **source)
{
	const char *playlist = m->cfg->playlist;
	int irc = CC_EUNAVAILABLE;
	if (m->index) {
		irc = cc_candidate_index_read(m->index, playlist, m->read_limit, m->cands, n);
		if (irc == 0 && *n > 0) {
			*read = *n;
			int rc = read_now(m, now_ms);
			if (rc != 0)
				return rc;
			if ((*n = drop_expired(m, *n, *now_ms)) > 0) {
				*source = "redis";
				return 0;
			}
		}
		const char *lv[] = { playlist, irc == 0 ? "empty" : "down" };
		cc_metric_add(m->metrics.redis_fallbacks, lv, 1);
		if (irc != 0)
			cc_log_debug("candidate_index_unavailable", CC_LOG_STR("error", cc_errname(irc)));
	}
	*source = "postgres";
	int rc = cc_candidates_load(m->pg, playlist, NULL, m->read_limit, m->cands, n, now_ms);
	*read = *n;
	if (rc != 0 || irc != 0 || *n == 0)
		return rc;
	int brc = cc_candidate_index_rebuild(m->index, playlist, m->cands, *n);
	cc_log_info("candidate_index_rebuilt", CC_LOG_INT("candidates", *n), CC_LOG_STR("result", cc_errname(brc)));
	return rc;
}

/* Counts one page read. */
static void count_read(struct matcher *m, const char *source, size_t n)
{
	const char *lv[] = { m->cfg->playlist, source };
	cc_metric_add(m->metrics.reads, lv, 1);
	cc_metric_add(m->metrics.candidates, lv, (double)n);
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

/* The claim callback of cc_formation_pass: one transaction per formation. */
static int claim(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	struct matcher *m = ctx;
	const char *playlist = m->cfg->playlist;
	struct cc_claim_request req;
	struct cc_claim_result res;

	cc_claim_request_from(&req, f, m->cands, playlist, m->id, (int)m->cfg->proposal_window_seconds,
			      m->params.max_rtt_ms);
	int rc = cc_formation_claim(m->pg, &req, &res);
	if (rc == 0) {
		const char *lv[] = { playlist };
		cc_metric_add(m->metrics.proposals, lv, 1);
		cc_log_info("proposal_opened", CC_LOG_STR("proposal_id", res.proposal_id),
			    CC_LOG_STR("playlist", playlist), CC_LOG_STR("region", f->region),
			    CC_LOG_STR("arena", res.arena), CC_LOG_INT("players", f->n_players),
			    CC_LOG_DBL("worst_rtt_ms", f->worst_rtt_ms), CC_LOG_DBL("rating_spread", f->rating_spread),
			    CC_LOG_DBL("team0_mean", f->team_mean[0]), CC_LOG_DBL("team1_mean", f->team_mean[1]));
		index_forget(m, &req, NULL);
		return 0;
	}
	if (rc == CC_ECONFLICT || rc == CC_ERETRY_EXHAUSTED) {
		/* Lost the race (or could not serialize): drop the lost ones for this pass. */
		const char *lv[] = { playlist, rc == CC_ECONFLICT ? "lost" : "retry_exhausted" };
		cc_metric_add(m->metrics.claim_conflicts, lv, 1);
		size_t n_lost = 0;
		for (size_t k = 0; k < req.n && rc == CC_ECONFLICT; k++) {
			lost[k] = res.lost[k];
			n_lost += res.lost[k];
		}
		cc_log_info("claim_lost", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_INT("lost", rc == CC_ECONFLICT ? n_lost : req.n));
		if (rc == CC_ECONFLICT)
			index_forget(m, &req, res.gone);
		return CC_ECONFLICT;
	}
	cc_log_warn("claim_failed", CC_LOG_STR("playlist", playlist), CC_LOG_STR("error", cc_errname(rc)),
		    CC_LOG_STR("sqlstate", cc_pg_sqlstate(m->pg)), CC_LOG_STR("detail", cc_pg_error_message(m->pg)));
	return rc;
}

/* Forms and claims over the page in m->cands[0..n); adds its outcome to *total. */
static int form_page(struct matcher *m, size_t n, int64_t now_ms, struct cc_formation_pass_stats *total)
{
	struct cc_formation_pass_stats st;
	if (cc_formation_prepare(&m->ws, m->cands, n, now_ms, &m->params) != 0)
		CC_BUG("formation parameters were validated at start-up");
	int rc = cc_formation_pass(&m->ws, claim, m, &st);
	total->formed += st.formed;
	total->refused_not_enough += st.refused_not_enough;
	total->refused_no_region += st.refused_no_region;
	total->lost_claims += st.lost_claims;
	total->out_of_attempts |= st.out_of_attempts;
	return rc;
}

/*
 * After a full head page that formed nothing: the pages behind it, from
 * PostgreSQL by keyset (each page starts after the last ticket of the one
 * before), until one forms matches, the queue ends, or
 * MATCHER_PAGES_PER_PASS pages were read. A pass sees only read_limit
 * candidates at once (SPEC 6), so without this a head of that many tickets
 * that cannot match one another would hide everyone behind it.
 *
 * Every pass starts again at the head and scans in queue order, so the
 * oldest tickets match first and as soon as they can. Only a wall deeper
 * than one pass reaches leaves a cursor: the next pass goes on from there
 * (after its head page), and comes straight back to a page past the wall
 * while that page keeps forming matches; reaching the end clears it.
 * A failed page (error, out of claim attempts) leaves the cursor alone.
 * *n_read counts the candidates read.
 */
static int scan_deeper(struct matcher *m, const char *head_last, struct cc_formation_pass_stats *total,
		       size_t *n_read)
{
	bool from_cursor = m->cursor[0] != '\0';
	char after[CC_UUID_BUF], start[CC_UUID_BUF];
	snprintf(after, sizeof after, "%s", from_cursor ? m->cursor : head_last);
	for (int page = 0; page < MATCHER_PAGES_PER_PASS; page++) {
		size_t n = 0, formed = total->formed;
		int64_t now_ms = 0;
		int rc = cc_candidates_load(m->pg, m->cfg->playlist, after, m->read_limit, m->cands, &n, &now_ms);
		if (rc != 0)
			return rc;
		count_read(m, "postgres", n);
		*n_read += n;
		if (n == 0) {
			m->cursor[0] = '\0'; /* past the end */
			return 0;
		}
		snprintf(start, sizeof start, "%s", after);
		snprintf(after, sizeof after, "%s", m->cands[n - 1].ticket_id);
		if ((rc = form_page(m, n, now_ms, total)) != 0 || total->out_of_attempts)
			return rc;
		if (total->formed > formed) {
			if (from_cursor)
				snprintf(m->cursor, sizeof m->cursor, "%s", start);
			return 0;
		}
		if (n < m->read_limit) {
			m->cursor[0] = '\0'; /* the end of the queue */
			return 0;
		}
	}
	snprintf(m->cursor, sizeof m->cursor, "%s", after);
	return 0;
}

/* Counts and logs a pass's outcome. */
static void pass_report(struct matcher *m, int rc, const char *source, size_t n,
			const struct cc_formation_pass_stats *st, double seconds)
{
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
		CC_LOG_INT("candidates", n),
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
	int ttl; /* requeued tickets' fresh heartbeat deadline */
	int n;   /* proposals expired by this attempt */
};

static int expire_run(struct cc_pg *pg, void *arg)
{
	struct expire_ctx *ex = arg;
	ex->n = 0;
	return cc_proposals_expire_overdue(pg, EXPIRE_BATCH, ex->ttl, &ex->n);
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
	struct cc_formation_pass_stats st = { 0 };
	const char *source = "postgres";
	size_t n = 0, read = 0;
	int64_t now_ms = 0;
	bool ran = false, leased = false;

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
	struct expire_ctx ex = { .ttl = (int)m->cfg->ticket_ttl_seconds };
	if ((rc = cc_pg_run_serializable(m->pg, expire_run, &ex)) != 0)
		goto out;
	if (ex.n > 0) {
		const char *lv_exp[] = { m->cfg->playlist };
		cc_metric_add(m->metrics.expired, lv_exp, ex.n);
	}

	if ((rc = read_head(m, &n, &read, &now_ms, &source)) != 0)
		goto out;
	count_read(m, source, n);
	ran = true;
	if (n > 0) {
		char head_last[CC_UUID_BUF];
		snprintf(head_last, sizeof head_last, "%s", m->cands[n - 1].ticket_id);
		rc = form_page(m, n, now_ms, &st);
		if (rc == 0 && !st.out_of_attempts && st.formed == 0 && read == m->read_limit)
			rc = scan_deeper(m, head_last, &st, &n);
	}
	/* A pass that formed matches may have left more: the next one starts at once. */
	m->run_again = rc == 0 && st.formed > 0;
out:
	if (rc != 0 && m->pg)
		(void)cc_pg_rollback(m->pg); /* acknowledge a connection lost mid-transaction */
	if (leased)
		give_lease(m);
	/* Reaching PostgreSQL is what readiness means; a lost claim is not an outage. */
	matcher_set_db_state(m, rc == CC_EUNAVAILABLE || rc == CC_ETIMEOUT || !m->pg ? rc : 0);
	pass_report(m, rc, source, n, ran ? &st : NULL, cc_clock_seconds() - t0);
	return rc;
}
