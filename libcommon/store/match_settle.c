/*
 * match_settle.c - the ways a match ends that the control plane decides.
 * See match_settle.h.
 *
 * Lock order: the match's allocation first, then the match
 * (cc_server_allocation_of_match, then cc_match_get, both FOR UPDATE),
 * then its tickets. The server routes take them in that order already (the
 * workload token names the allocation, which they lock before the match),
 * and the selectors below lock both rows with SKIP LOCKED, never waiting,
 * so a route and a sweep settling one match never wait on each other in a
 * cycle.
 *
 * The selectors' only SQL is the reads of this file; every write is the
 * owner module's.
 */
#include "store/match_settle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/penalty_policy.h"
#include "game/playlist.h"
#include "store/allocations.h"
#include "store/penalties.h"
#include "store/server_routes.h"
#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/banned.h"

/* The rows one settlement locked, in lock order. */
struct settle {
	bool have_alloc;
	struct cc_server_allocation alloc;
	struct cc_match m;
};

static bool state_in(const char *state, const char *const *states)
{
	for (size_t i = 0; states[i]; i++)
		if (strcmp(state, states[i]) == 0)
			return true;
	return false;
}

/* Locks the allocation (when there is one) and then the match. */
static int lock_match(struct cc_pg *pg, const char *match_id, struct settle *st, struct cc_settle_outcome *out)
{
	memset(out, 0, sizeof *out);
	if (!match_id || !cc_uuid_valid(match_id))
		return CC_EINVAL;
	int rc = cc_server_allocation_of_match(pg, match_id, true, &st->alloc);
	st->have_alloc = rc == 0;
	if (rc != 0 && rc != CC_ENOTFOUND)
		return rc;
	if ((rc = cc_match_get(pg, match_id, true, &st->m)) != 0)
		return rc;
	snprintf(out->match_state, sizeof out->match_state, "%s", st->m.state);
	return 0;
}

/*
 * Ends the match's hold on its server: a REQUESTED allocation -> FAILED (no
 * server ever came), an ALLOCATED or PUBLISHED one -> RELEASED (its server
 * is freed by cc-allocator's release sweep, woken by the outbox row); with
 * no allocation row at all (only a stalled ALLOCATING match), a FAILED
 * tombstone, so no allocator replica claims the match later. An allocation
 * already over is left as it is. Every settlement that ends the match
 * calls this, so it also ends the leases still connected, with the
 * match's end reason (issue 20: an ended match leaves nobody connected).
 */
static int free_server(struct cc_pg *pg, struct settle *st, const char *reason)
{
	bool failed = false;
	int rc = cc_server_close_connections(pg, st->m.id, reason, NULL);
	if (rc != 0)
		return rc;
	if (!st->have_alloc)
		return cc_allocation_fail_unclaimed(pg, st->m.id, "local", reason, &failed);
	if (strcmp(st->alloc.state, "REQUESTED") == 0)
		return cc_allocation_fail_requested(pg, st->m.id, reason, &failed, NULL);
	if (strcmp(st->alloc.state, "ALLOCATED") == 0 || strcmp(st->alloc.state, "PUBLISHED") == 0)
		return cc_server_release(pg, &st->alloc, reason);
	return 0;
}

static void finish(struct cc_settle_outcome *out, const struct settle *st)
{
	out->changed = true;
	snprintf(out->match_state, sizeof out->match_state, "%s", st->m.state);
}

/* ---- the settlements ------------------------------------------------------ */

int cc_match_settle_stalled(struct cc_pg *pg, const char *match_id, int64_t ticket_ttl_seconds,
			    struct cc_settle_outcome *out, struct cc_ticket_moves *moves)
{
	static const char *const covered[] = { "ALLOCATING", "PROCESS_READY", "ASSIGNMENT_READY", NULL };
	struct settle st;
	int rc = lock_match(pg, match_id, &st, out);
	if (rc != 0)
		return rc;
	if (!state_in(st.m.state, covered))
		return 0;
	if ((rc = free_server(pg, &st, "stalled")) != 0 || (rc = cc_match_fail(pg, &st.m, "stalled")) != 0 ||
	    (rc = cc_tickets_requeue_match(pg, st.m.id, "stalled", ticket_ttl_seconds, &out->requeued, moves)) != 0)
		return rc;
	finish(out, &st);
	return 0;
}

int cc_match_settle_server_lost(struct cc_pg *pg, const char *match_id, const char *reason,
				int64_t ticket_ttl_seconds, struct cc_settle_outcome *out,
				struct cc_ticket_moves *moves)
{
	struct settle st;
	if (!reason || !cc_charset_valid(reason, 32, CC_CHARSET_LOWER, "_"))
		return CC_EINVAL;
	int rc = lock_match(pg, match_id, &st, out);
	if (rc != 0)
		return rc;
	if (cc_match_state_terminal(st.m.state))
		return 0;
	const struct cc_playlist *pl = cc_playlist_find(st.m.playlist);
	if ((rc = free_server(pg, &st, reason)) != 0 || (rc = cc_match_fail(pg, &st.m, reason)) != 0)
		return rc;
	if (pl && pl->requeue_on_server_loss)
		rc = cc_tickets_requeue_match(pg, st.m.id, reason, ticket_ttl_seconds, &out->requeued, moves);
	else
		rc = cc_tickets_fail_match(pg, st.m.id, reason, &out->failed, moves);
	if (rc != 0)
		return rc;
	finish(out, &st);
	return 0;
}

/* Index of id in the match's roster, or -1. */
static int participant(const struct cc_match *m, const char *id)
{
	for (size_t i = 0; i < m->n_players; i++)
		if (strcmp(m->player_ids[i], id) == 0)
			return (int)i;
	return -1;
}

int cc_match_settle_no_show(struct cc_pg *pg, const char *match_id, const char (*named)[CC_UUID_BUF],
			    size_t n_named, int64_t ticket_ttl_seconds, struct cc_settle_outcome *out,
			    struct cc_ticket_moves *moves)
{
	/* RESULT_PENDING too: a ranked match played out past a no-show is still never rated (SPEC 9). */
	static const char *const covered[] = { "ASSIGNMENT_READY", "IN_PROGRESS", "RESULT_PENDING", NULL };
	char never[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
	size_t n_never = 0;
	struct settle st;
	if (n_named > CC_FORMATION_MAX_PLAYERS || (n_named > 0 && !named))
		return CC_EINVAL;
	int rc = lock_match(pg, match_id, &st, out);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n_named; i++)
		if (participant(&st.m, named[i]) < 0)
			return CC_EINVAL;
	if ((rc = cc_server_never_connected(pg, st.m.id, never, CC_FORMATION_MAX_PLAYERS, &n_never)) != 0)
		return rc;
	/* The no-shows: those named (or, with none named, everyone) who never connected, in roster order. */
	for (size_t i = 0; i < n_never; i++) {
		bool is = n_named == 0;
		for (size_t j = 0; j < n_named && !is; j++)
			is = strcmp(never[i], named[j]) == 0;
		if (is)
			memcpy(out->no_shows[out->n_no_shows++], never[i], CC_UUID_BUF);
	}
	/*
	 * Nobody ever connected: not a no-show but a server nobody could reach
	 * (an infrastructure fault, which never penalises players: SPEC 7), as
	 * the result route judges it too (it rates and penalises nobody). The
	 * match is left to its server's call-off or shutdown, or to the
	 * stalled sweep (FAILED, requeued, no penalty).
	 */
	if (n_never > 0 && n_never >= st.m.n_players) {
		out->n_no_shows = 0;
		return 0;
	}
	if (!state_in(st.m.state, covered) || out->n_no_shows == 0)
		return 0;
	for (size_t i = 0; i < out->n_no_shows; i++) {
		bool recorded = false;
		if ((rc = cc_penalty_record(pg, out->no_shows[i], CC_PENALTY_INITIAL_CONNECT_NO_SHOW, st.m.id,
					    &recorded)) != 0)
			return rc;
		out->penalised += recorded;
	}
	const struct cc_playlist *pl = cc_playlist_find(st.m.playlist);
	if (!pl || !pl->ranked) {
		/* Casual: the bots took the slots; the match plays on, and the result never rates a no-show. */
		out->changed = out->penalised > 0;
		return 0;
	}
	if ((rc = cc_tickets_split_match(pg, st.m.id, (const char (*)[CC_UUID_BUF])out->no_shows, out->n_no_shows,
					 "no_show", ticket_ttl_seconds, &out->failed, &out->requeued, moves)) != 0 ||
	    (rc = free_server(pg, &st, "no_show")) != 0 || (rc = cc_match_fail(pg, &st.m, "no_show")) != 0)
		return rc;
	finish(out, &st);
	return 0;
}

int cc_match_settle_result_missing(struct cc_pg *pg, const char *match_id, struct cc_settle_outcome *out,
				   struct cc_ticket_moves *moves)
{
	struct settle st;
	int rc = lock_match(pg, match_id, &st, out);
	if (rc != 0)
		return rc;
	if (strcmp(st.m.state, "RESULT_PENDING") != 0)
		return 0;
	if ((rc = free_server(pg, &st, "result_missing")) != 0 || (rc = cc_match_fail(pg, &st.m, "result_missing")) != 0 ||
	    (rc = cc_tickets_fail_match(pg, st.m.id, "result_missing", &out->failed, moves)) != 0)
		return rc;
	finish(out, &st);
	return 0;
}

/* ---- the sweeps' selectors -------------------------------------------------- */

/*
 * Each selector is a pick (ids, oldest first, at most $2, FOR UPDATE
 * SKIP LOCKED of the match and its allocation: the settlement locks both,
 * so the sweep holds them before it settles and never waits behind a
 * route) and a count of the same
 * predicate without locks (the lag). $1 is the window in seconds.
 * Migration 0013's partial indexes serve each predicate.
 */
#define AGE(col) col " < now() - make_interval(secs => $1::float8)"
#define STALLED "m.state IN ('ALLOCATING', 'PROCESS_READY', 'ASSIGNMENT_READY') AND " AGE("m.updated_at")
#define HEARD "coalesce(a.last_heartbeat_at, a.assignment_ready_at)"
/*
 * A server is silent when it has not been heard for the window while the
 * control plane hears others (any live allocation heard within the
 * window): cc-maintenance reads only PostgreSQL, so when cc-api or its
 * network is down every server looks silent at once, and failing every
 * live match for a control-plane outage would punish the players for it.
 * A fleet-wide silence ends a match only after SILENT_FLEET_WINDOWS
 * windows (a lone match whose pod vanished is still ended, later).
 * RESULT_PENDING is the result-missing sweep's: its window outlasts the
 * result's retries, which a cc-api outage also stretches.
 */
#define SILENT_FLEET_WINDOWS "4"
#define SILENT                                                                                            \
	"a.state = 'PUBLISHED' AND m.state = 'IN_PROGRESS' AND " AGE(HEARD) " AND (" HEARD                     \
	"  < now() - make_interval(secs => $1::float8 * " SILENT_FLEET_WINDOWS ") OR EXISTS (SELECT 1 FROM "   \
	"  allocations o WHERE o.state = 'PUBLISHED' AND coalesce(o.last_heartbeat_at, o.assignment_ready_at) " \
	"  >= now() - make_interval(secs => $1::float8)))"
#define NO_SHOW                                                                                          \
	"a.state = 'PUBLISHED' AND " AGE("a.assignment_ready_at") " AND m.state IN ('ASSIGNMENT_READY', "     \
	"'IN_PROGRESS', 'RESULT_PENDING') AND EXISTS (SELECT 1 FROM assignments c WHERE c.match_id = m.id "                       \
	"  AND c.connection_generation > 0) AND EXISTS (SELECT 1 FROM assignments s WHERE s.match_id = m.id "     \
	"  AND s.connection_generation = 0 AND NOT EXISTS (SELECT 1 FROM penalties p "                          \
	"    WHERE p.player_id = s.player_id AND p.kind = 'INITIAL_CONNECT_NO_SHOW' AND p.source_id = m.id))"
#define MISSING "m.state = 'RESULT_PENDING' AND " AGE("m.updated_at")
#define PICK_TAIL " LIMIT $2::int FOR UPDATE OF m, a SKIP LOCKED"

/*
 * A stalled match may have no allocation row yet, so its pick locks the
 * matches alone (an outer join's nullable side cannot be locked), and
 * sql_stalled_allocations then locks their allocations, SKIP LOCKED as
 * well: a match whose allocation another transaction holds (a server
 * route, which locks the allocation and then the match) is left out of
 * this pass. Its match stays locked by us until our commit, so that route
 * waits for us, and we never wait for it.
 */
static const char sql_stalled_pick[] =
	"SELECT m.id FROM matches m WHERE " STALLED " ORDER BY m.updated_at LIMIT $2::int FOR UPDATE OF m SKIP LOCKED";
static const char sql_stalled_allocations[] =
	"WITH locked AS (SELECT a.match_id FROM allocations a WHERE a.match_id = ANY ($1::uuid[]) "
	"  FOR UPDATE SKIP LOCKED) "
	"SELECT x.id FROM unnest($1::uuid[]) WITH ORDINALITY AS x(id, ord) "
	"WHERE x.id IN (SELECT match_id FROM locked) "
	"  OR NOT EXISTS (SELECT 1 FROM allocations a WHERE a.match_id = x.id) ORDER BY x.ord";
static const char sql_stalled_lag[] = "SELECT count(*) FROM matches m WHERE " STALLED;

static const char sql_silent_pick[] =
	"SELECT m.id FROM allocations a JOIN matches m ON m.id = a.match_id "
	"WHERE " SILENT " ORDER BY " HEARD PICK_TAIL;
static const char sql_silent_lag[] =
	"SELECT count(*) FROM allocations a JOIN matches m ON m.id = a.match_id WHERE " SILENT;

static const char sql_no_show_pick[] =
	"SELECT m.id FROM allocations a "
	"JOIN matches m ON m.id = a.match_id WHERE " NO_SHOW " ORDER BY a.assignment_ready_at" PICK_TAIL;
static const char sql_no_show_lag[] =
	"SELECT count(*) FROM allocations a JOIN matches m ON m.id = a.match_id WHERE " NO_SHOW;

static const char sql_missing_pick[] =
	"SELECT m.id FROM matches m JOIN allocations a ON a.match_id = m.id "
	"WHERE " MISSING " ORDER BY m.updated_at" PICK_TAIL;
static const char sql_missing_lag[] = "SELECT count(*) FROM matches m WHERE " MISSING;

#define SELECT_LIMIT_MAX 10000

/* Runs a one-column statement of ids into ids (appending at *n, room for cap). */
static int ids_of(struct cc_pg *pg, const char *sql, int np, const char *const *p, char (*ids)[CC_UUID_BUF],
		  size_t cap, size_t *n)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, np, p, &res);
	for (int i = 0; rc == 0 && i < PQntuples(res) && *n < cap; i++)
		snprintf(ids[(*n)++], CC_UUID_BUF, "%s", PQgetvalue(res, i, 0));
	PQclear(res);
	return rc;
}

/*
 * The selector: the pick (at most limit ids, oldest first, locked), then,
 * when lock_allocations is not NULL, that statement over the picked ids
 * (they as a uuid[]), whose answer is the final list; then the lag.
 */
static int select_due(struct cc_pg *pg, const char *pick, const char *lock_allocations, const char *lag_sql,
		      int64_t window_s, int limit, char (*ids)[CC_UUID_BUF], size_t *n, int64_t *lag)
{
	char window[24], lim[16];
	*n = 0;
	*lag = 0;
	if (window_s < 0 || limit < 1 || limit > SELECT_LIMIT_MAX || !ids)
		return CC_EINVAL;
	snprintf(window, sizeof window, "%lld", (long long)window_s);
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = { window, lim };
	int rc = ids_of(pg, pick, 2, p, ids, (size_t)limit, n);
	if (rc == 0 && lock_allocations && *n > 0) {
		char *arr = malloc(*n * (CC_UUID_BUF + 1) + 3);
		size_t u = 0;
		if (!arr)
			return CC_ENOMEM;
		arr[u++] = '{';
		for (size_t i = 0; i < *n; i++)
			u += (size_t)snprintf(arr + u, CC_UUID_BUF + 2, "%s%s", i ? "," : "", ids[i]);
		arr[u++] = '}';
		arr[u] = '\0';
		const char *pa[] = { arr };
		*n = 0;
		rc = ids_of(pg, lock_allocations, 1, pa, ids, (size_t)limit, n);
		free(arr);
	}
	if (rc == 0) {
		const char *pl[] = { window };
		char *text = NULL;
		if ((rc = cc_pg_exec_text(pg, lag_sql, 1, pl, &text)) == 0)
			*lag = strtoll(text, NULL, 10);
		free(text);
	}
	return rc;
}

int cc_matches_due_stalled(struct cc_pg *pg, int64_t older_than_s, int limit, char (*ids)[CC_UUID_BUF],
			   size_t *n, int64_t *lag)
{
	return select_due(pg, sql_stalled_pick, sql_stalled_allocations, sql_stalled_lag, older_than_s, limit, ids, n,
			  lag);
}

int cc_matches_due_server_silent(struct cc_pg *pg, int64_t silent_s, int limit, char (*ids)[CC_UUID_BUF],
				 size_t *n, int64_t *lag)
{
	return select_due(pg, sql_silent_pick, NULL, sql_silent_lag, silent_s, limit, ids, n, lag);
}

int cc_matches_due_no_show(struct cc_pg *pg, int64_t window_s, int limit, char (*ids)[CC_UUID_BUF], size_t *n,
			   int64_t *lag)
{
	return select_due(pg, sql_no_show_pick, NULL, sql_no_show_lag, window_s, limit, ids, n, lag);
}

int cc_matches_due_result_missing(struct cc_pg *pg, int64_t window_s, int limit, char (*ids)[CC_UUID_BUF],
				  size_t *n, int64_t *lag)
{
	return select_due(pg, sql_missing_pick, NULL, sql_missing_lag, window_s, limit, ids, n, lag);
}
