/*
 * store/match_settle.c against the harness PostgreSQL (each test in its own
 * freshly migrated scratch database): the four ways a match ends that
 * cc-api's server routes and cc-maintenance's sweeps share, and the
 * sweeps' selectors.
 *
 * Matches are created the way production creates them (tickets seeded
 * QUEUED, the matcher's claim, every player's accept through
 * store/proposals), and moved on by the store functions the server routes
 * call (store/matches, store/tickets, store/server_routes); the
 * allocator's rows (allocation, game server, roster, assignments) are
 * seeded with SQL, as cc-allocator would leave them.
 *
 *  - each settlement's end state: match, tickets (state, expiry, match
 *    left), allocation, penalties, outbox events, ratings untouched; a
 *    second call changes nothing (no row, no event)
 *  - a race: threads on their own connections settling the same matches
 *    at once, as cc-api (no_show with the named player) and as the sweep
 *    (selector + settle): each penalty once, each requeue once
 *  - the selectors: only matches past their window, the lag, and two
 *    concurrent transactions never get the same id
 *  - the selectors' plans over a few thousand matches use migration 0013's
 *    indexes (EXPLAIN EXECUTE of the statements exactly as prepared)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "support.h"
#include "sys/crypto.h"
#include "sys/migrate.h"
#include "sys/pg.h"
#include "store/allocations.h"
#include "store/formation_claim.h"
#include "store/game_servers.h"
#include "store/match_settle.h"
#include "store/matches.h"
#include "store/proposals.h"
#include "store/server_routes.h"
#include "store/tickets.h"
#include "sys/banned.h"

#define TTL 90 /* the requeued tickets' fresh expiry, seconds */

static char db_name[64];
static char db_dsn[1024];
static PGconn *db;
static struct cc_pg *pg; /* the store functions' connection */
static int next_port = 20000;

/* ---- SQL ------------------------------------------------------------------------------ */

static PGresult *sqlp(const char *sql, int n, const char *const *params)
{
	PGresult *res = PQexecParams(db, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	ck_assert_msg(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s\n  failed: %s", sql, PQerrorMessage(db));
	return res;
}

static long long ll1(const char *sql, const char *param)
{
	const char *p[] = { param };
	PGresult *res = sqlp(sql, param ? 1 : 0, p);
	ck_assert_msg(PQntuples(res) == 1, "%s: %d rows", sql, PQntuples(res));
	long long v = PQgetisnull(res, 0, 0) ? 0 : strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

static void text1(const char *sql, const char *param, char *out, size_t len)
{
	const char *p[] = { param };
	PGresult *res = sqlp(sql, param ? 1 : 0, p);
	snprintf(out, len, "%s", PQntuples(res) && !PQgetisnull(res, 0, 0) ? PQgetvalue(res, 0, 0) : "");
	PQclear(res);
}

/* ---- scratch database ------------------------------------------------------------------- */

static void scratch_setup(void)
{
	static int counter;
	const char *admin = cc_test_env("CC_TEST_PG_ADMIN_DSN");
	const char *slash = strrchr(admin, '/');
	char sql[128], mig_dir[4096], err[256];
	ck_assert_msg(slash && strcmp(slash, "/postgres") == 0, "CC_TEST_PG_ADMIN_DSN should end in /postgres");
	snprintf(db_name, sizeof db_name, "settle_%d_%d", (int)getpid(), counter++);
	snprintf(db_dsn, sizeof db_dsn, "%.*s/%s", (int)(slash - admin), admin, db_name);
	PGconn *adm = PQconnectdb(admin);
	ck_assert_msg(PQstatus(adm) == CONNECTION_OK, "admin connect: %s", PQerrorMessage(adm));
	snprintf(sql, sizeof sql, "CREATE DATABASE %s", db_name);
	PGresult *res = PQexec(adm, sql);
	ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(adm));
	PQclear(res);
	PQfinish(adm);
	const char *top = getenv("CC_TOP");
	snprintf(mig_dir, sizeof mig_dir, "%s/migrations", top && *top ? top : ".");
	struct cc_migrate_options opt = { .dsn = db_dsn, .dir = mig_dir, .lock_timeout_ms = 10000 };
	struct cc_migrate_error merr;
	int applied = 0;
	int rc = cc_migrate_up(&opt, &applied, &merr);
	ck_assert_msg(rc == 0, "migrations: %s: %s", cc_errname(rc), merr.message);
	db = PQconnectdb(db_dsn);
	ck_assert_msg(PQstatus(db) == CONNECTION_OK, "connect: %s", PQerrorMessage(db));
	PQsetNoticeProcessor(db, NULL, NULL);
	ck_assert_int_eq(cc_crypto_init(), 0);
	rc = cc_pg_connect(db_dsn, NULL, &pg, err, sizeof err);
	ck_assert_msg(rc == 0, "connect: %s", err);
}

static void scratch_teardown(void)
{
	cc_pg_free(pg);
	pg = NULL;
	PQfinish(db);
	db = NULL;
	PGconn *adm = PQconnectdb(cc_test_env("CC_TEST_PG_ADMIN_DSN"));
	char sql[128];
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db_name);
	PQclear(PQexec(adm, sql));
	PQfinish(adm);
}

/* ---- matches: the production path, then the server routes' store functions ------------ */

struct respond_tx {
	const char *proposal_id, *player_id;
	struct cc_match match;
	enum cc_proposal_verdict verdict;
};

static int respond_tx(struct cc_pg *c, void *arg)
{
	struct respond_tx *t = arg;
	return cc_proposal_respond(c, t->proposal_id, t->player_id, true, 1, 600, &t->verdict, NULL, &t->match);
}

/* A match of playlist (team_size a side) in ALLOCATING; its id into out. */
static void create_match(const char *playlist, int team_size, char out[CC_UUID_BUF])
{
	struct cc_claim_request req;
	struct cc_claim_result res;
	int n = 2 * team_size;
	char tickets[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF], players[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
	char count[8];
	snprintf(count, sizeof count, "%d", n);
	const char *p[] = { count, playlist };
	PGresult *r = sqlp("WITH p AS (INSERT INTO players (id) SELECT gen_random_uuid() FROM generate_series(1, $1::int) "
			   "RETURNING id) "
			   "INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, "
			   "  predicted_rtt, queued_at, expires_at) "
			   "SELECT p.id, $2, 'QUEUED', 'settle', 1, 1500, 120, '{\"eu\": 20}', now(), "
			   "  now() + interval '1 hour' FROM p RETURNING id, player_id",
			   2, p);
	ck_assert_int_eq(PQntuples(r), n);
	memset(&req, 0, sizeof req);
	req.playlist = playlist;
	req.matcher = "test";
	req.window_seconds = 30;
	req.team_size = team_size;
	req.build = "settle";
	req.protocol_version = 1;
	req.region = "eu";
	req.max_rtt_ms = 100;
	req.n = (size_t)n;
	for (int k = 0; k < n; k++) {
		snprintf(tickets[k], sizeof tickets[k], "%s", PQgetvalue(r, k, 0));
		snprintf(players[k], sizeof players[k], "%s", PQgetvalue(r, k, 1));
		req.ticket_id[k] = tickets[k];
		req.team[k] = (uint8_t)(k % 2);
	}
	PQclear(r);
	int rc = cc_formation_claim(pg, &req, &res);
	ck_assert_msg(rc == 0, "claim: %s", cc_errname(rc));
	out[0] = '\0';
	for (int k = 0; k < n; k++) {
		struct respond_tx t = { .proposal_id = res.proposal_id, .player_id = players[k] };
		rc = cc_pg_run_serializable(pg, respond_tx, &t);
		ck_assert_msg(rc == 0 && t.verdict == CC_PROPOSAL_OK, "accept %d: %s verdict %d", k, cc_errname(rc),
			      (int)t.verdict);
		if (t.match.id[0])
			snprintf(out, CC_UUID_BUF, "%s", t.match.id);
	}
	ck_assert_msg(cc_uuid_valid(out), "the last accept created no match");
}

/* How far advance() takes a match. */
enum stage {
	S_ALLOCATING,    /* no allocation row yet */
	S_REQUESTED,     /* ALLOCATING, allocation REQUESTED */
	S_ALLOCATED,     /* ALLOCATING, allocation ALLOCATED (a server) */
	S_PROCESS_READY, /* PROCESS_READY */
	S_ASSIGNMENT_READY, /* PUBLISHED, assignments, tickets ASSIGNED */
	S_IN_PROGRESS,   /* the first `connected` players connected */
	S_RESULT_PENDING,
};

struct advance_tx {
	const char *match_id;
	enum stage to;
	int connected;
	int port;
};

static int exec(struct cc_pg *c, const char *sql, int n, const char *const *p)
{
	return cc_pg_exec(c, sql, n, p, NULL);
}

static int advance_run(struct cc_pg *c, void *arg)
{
	struct advance_tx *t = arg;
	struct cc_match m;
	struct cc_server_allocation a;
	char port[16], server[64];
	int rc;
	snprintf(port, sizeof port, "%d", t->port);
	snprintf(server, sizeof server, "gs-%d", t->port);
	const char *pm[] = { t->match_id };
	const char *ps[] = { t->match_id, server, port };
	if ((rc = cc_match_get(c, t->match_id, true, &m)) != 0)
		return rc;
	if (t->to >= S_REQUESTED &&
	    (rc = exec(c, "INSERT INTO allocations (match_id, state, provider, workload_expires_at) "
			  "VALUES ($1, 'REQUESTED', 'local', now() + interval '1 hour')", 1, pm)) != 0)
		return rc;
	if (t->to >= S_ALLOCATED &&
	    ((rc = exec(c, "INSERT INTO game_servers (id, provider, region, address, port, state, allocation_id, owner) "
			   "SELECT $2, 'local', 'eu', '127.0.0.1', $3::int, 'ALLOCATED', a.id, 'test' "
			   "FROM allocations a WHERE a.match_id = $1", 3, ps)) != 0 ||
	     (rc = exec(c, "UPDATE allocations SET state = 'ALLOCATED', server_id = $2, address = '127.0.0.1', "
			   "port = $3::int WHERE match_id = $1", 3, ps)) != 0))
		return rc;
	if (t->to >= S_PROCESS_READY &&
	    ((rc = cc_server_allocation_of_match(c, t->match_id, true, &a)) != 0 ||
	     (rc = cc_server_record_process_ready(c, &a, 1, "sha256:test")) != 0 ||
	     (rc = cc_match_mark_process_ready(c, &m)) != 0))
		return rc;
	if (t->to >= S_ASSIGNMENT_READY &&
	    ((rc = exec(c, "INSERT INTO rosters (match_id, allocation_id, key_id, digest, manifest) "
			   "SELECT $1, a.id, 'k', repeat('a', 64), '{}' FROM allocations a WHERE a.match_id = $1",
			   1, pm)) != 0 ||
	     (rc = exec(c, "INSERT INTO assignments (match_id, player_id, slot, team, join_token, expires_at) "
			   "SELECT mp.match_id, mp.player_id, (row_number() OVER (ORDER BY mp.team, mp.player_id)) - 1, "
			   "  mp.team, 'token', now() + interval '1 hour' FROM match_players mp WHERE mp.match_id = $1",
			   1, pm)) != 0 ||
	     (rc = exec(c, "UPDATE allocations SET state = 'PUBLISHED' WHERE match_id = $1", 1, pm)) != 0 ||
	     (rc = cc_server_record_assignment_ready(c, &a)) != 0 || (rc = cc_match_mark_assignment_ready(c, &m)) != 0 ||
	     (rc = cc_tickets_assign(c, t->match_id, NULL, NULL)) != 0))
		return rc;
	if (t->to >= S_IN_PROGRESS) {
		for (int k = 0; k < t->connected && (size_t)k < m.n_players; k++) {
			struct cc_server_connection conn;
			char cid[32];
			snprintf(cid, sizeof cid, "conn-%d", k);
			if ((rc = cc_server_connection_get(c, t->match_id, m.player_ids[k], true, &conn)) != 0 ||
			    (rc = cc_server_connect(c, &conn, cid)) != 0)
				return rc;
		}
		if ((rc = cc_match_start(c, &m)) != 0)
			return rc;
	}
	if (t->to >= S_RESULT_PENDING && (rc = cc_match_await_result(c, &m)) != 0)
		return rc;
	return 0;
}

static void advance(const char *match_id, enum stage to, int connected)
{
	struct advance_tx t = { .match_id = match_id, .to = to, .connected = connected, .port = next_port++ };
	int rc = cc_pg_run_serializable(pg, advance_run, &t);
	ck_assert_msg(rc == 0, "advance to %d: %s %s", (int)to, cc_errname(rc), cc_pg_error_message(pg));
}

/* A match of playlist brought to stage; its id into out. */
static void match_at(const char *playlist, int team_size, enum stage to, int connected, char out[CC_UUID_BUF])
{
	create_match(playlist, team_size, out);
	if (to > S_ALLOCATING)
		advance(out, to, connected);
}

/* ---- settlements as a caller runs them ------------------------------------------------ */

enum how { STALLED, SERVER_LOST, NO_SHOW, RESULT_MISSING };

struct settle_tx {
	enum how how;
	const char *match_id;
	const char *reason;
	const char (*named)[CC_UUID_BUF];
	size_t n_named;
	struct cc_settle_outcome out;
	struct cc_ticket_moves moves;
};

static int settle_run(struct cc_pg *c, void *arg)
{
	struct settle_tx *t = arg;
	cc_ticket_moves_reset(&t->moves);
	switch (t->how) {
	case STALLED:
		return cc_match_settle_stalled(c, t->match_id, TTL, &t->out, &t->moves);
	case SERVER_LOST:
		return cc_match_settle_server_lost(c, t->match_id, t->reason, TTL, &t->out, &t->moves);
	case NO_SHOW:
		return cc_match_settle_no_show(c, t->match_id, t->named, t->n_named, TTL, &t->out, &t->moves);
	case RESULT_MISSING:
		return cc_match_settle_result_missing(c, t->match_id, &t->out, &t->moves);
	}
	return CC_EINVAL;
}

static struct cc_settle_outcome settle_on(struct cc_pg *c, enum how how, const char *match_id, const char *reason,
					  const char (*named)[CC_UUID_BUF], size_t n_named, int want_rc)
{
	struct settle_tx t = { .how = how, .match_id = match_id, .reason = reason, .named = named, .n_named = n_named };
	int rc = cc_pg_run_serializable(c, settle_run, &t);
	ck_assert_msg(rc == want_rc, "settle %d of %s: %s (want %s) %s", (int)how, match_id, cc_errname(rc),
		      cc_errname(want_rc), cc_pg_error_message(c));
	return t.out;
}

static struct cc_settle_outcome settle(enum how how, const char *match_id, const char *reason)
{
	return settle_on(pg, how, match_id, reason, NULL, 0, 0);
}

/* ---- what the rows say --------------------------------------------------------------- */

static void match_state(const char *m, char *out)
{
	text1("SELECT state FROM matches WHERE id = $1", m, out, CC_MATCH_STATE_BUF);
}

static long long tickets_in(const char *m, const char *state)
{
	const char *p[] = { m, state };
	PGresult *res = sqlp("SELECT count(*) FROM tickets t JOIN match_players mp ON mp.ticket_id = t.id "
			     "WHERE mp.match_id = $1 AND t.state = $2",
			     2, p);
	long long v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

/* Outbox rows of event about the match, its tickets or its allocation (payload reason, when given). */
static long long events(const char *m, const char *event, const char *reason)
{
	const char *p[] = { m, event, reason };
	PGresult *res = sqlp("SELECT count(*) FROM outbox o WHERE o.event = $2 AND ($3::text IS NULL OR o.payload->>'reason' = $3) "
			     "AND (o.resource_id = $1 OR o.resource_id IN (SELECT ticket_id FROM match_players WHERE match_id = $1) "
			     "  OR o.resource_id IN (SELECT id FROM allocations WHERE match_id = $1))",
			     3, p);
	long long v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

static long long all_events(const char *m)
{
	return ll1("SELECT count(*) FROM outbox o WHERE o.resource_id = $1 "
		   "OR o.resource_id IN (SELECT ticket_id FROM match_players WHERE match_id = $1) "
		   "OR o.resource_id IN (SELECT id FROM allocations WHERE match_id = $1)",
		   m);
}

static long long ticket_revisions(const char *m)
{
	return ll1("SELECT sum(t.revision) FROM tickets t JOIN match_players mp ON mp.ticket_id = t.id WHERE mp.match_id = $1",
		   m);
}

static void allocation_state(const char *m, char *state, char *reason)
{
	char both[128];
	text1("SELECT state || ' ' || coalesce(shutdown_reason, failure_reason, '-') FROM allocations WHERE match_id = $1",
	      m, both, sizeof both);
	char *sp = strchr(both, ' ');
	if (!sp) {
		state[0] = reason[0] = '\0';
		return;
	}
	*sp = '\0';
	snprintf(state, 16, "%.15s", both);
	snprintf(reason, 40, "%.39s", sp + 1);
}

/* Ratings untouched: no rating row and no rating change for any participant. */
static void ratings_untouched(const char *m)
{
	ck_assert_int_eq(ll1("SELECT count(*) FROM ratings r JOIN match_players mp ON mp.player_id = r.player_id "
			     "WHERE mp.match_id = $1", m), 0);
	ck_assert_int_eq(ll1("SELECT count(*) FROM rating_changes WHERE match_id = $1", m), 0);
}

static long long penalties_of(const char *m)
{
	return ll1("SELECT count(*) FROM penalties WHERE source_id = $1", m);
}

/* Every ticket of m QUEUED, out of the match, with the fresh expiry. */
static void all_requeued(const char *m, long long n)
{
	ck_assert_int_eq(tickets_in(m, "QUEUED"), n);
	ck_assert_int_eq(ll1("SELECT count(*) FROM tickets t JOIN match_players mp ON mp.ticket_id = t.id "
			     "WHERE mp.match_id = $1 AND t.state = 'QUEUED' AND t.match_id IS NULL AND t.proposal_id IS NULL "
			     "AND t.expires_at > now() + interval '80 seconds'", m), n);
}

/* ---- stalled ------------------------------------------------------------------------------ */

static void check_stalled(enum stage at, const char *want_alloc, const char *want_event)
{
	char m[CC_UUID_BUF], st[CC_MATCH_STATE_BUF], astate[16], areason[40];
	match_at("casual", 3, at, 0, m);
	struct cc_settle_outcome o = settle(STALLED, m, NULL);
	ck_assert_msg(o.changed, "stage %d: not settled", (int)at);
	ck_assert_str_eq(o.match_state, "FAILED");
	ck_assert_int_eq(o.requeued, 6);
	ck_assert_int_eq(o.failed, 0);
	ck_assert_int_eq(o.penalised, 0);
	match_state(m, st);
	ck_assert_str_eq(st, "FAILED");
	all_requeued(m, 6);
	allocation_state(m, astate, areason);
	ck_assert_msg(strcmp(astate, want_alloc) == 0 && strcmp(areason, "stalled") == 0,
		      "stage %d: allocation %s %s, want %s stalled", (int)at, astate, areason, want_alloc);
	ck_assert_int_eq(events(m, "match.failed", "stalled"), 1);
	ck_assert_int_eq(events(m, "ticket.requeued", "stalled"), 6);
	ck_assert_int_eq(events(m, want_event, NULL), 1);
	ck_assert_int_eq(penalties_of(m), 0);
	ratings_untouched(m);
	/* Again: nothing. */
	long long ev = all_events(m), rev = ticket_revisions(m);
	o = settle(STALLED, m, NULL);
	ck_assert(!o.changed);
	ck_assert_str_eq(o.match_state, "FAILED");
	ck_assert_int_eq(all_events(m), ev);
	ck_assert_int_eq(ticket_revisions(m), rev);
}

START_TEST(test_stalled_in_each_state_fails_requeues_and_frees)
{
	check_stalled(S_ALLOCATING, "FAILED", "allocation.failed"); /* the tombstone */
	check_stalled(S_REQUESTED, "FAILED", "allocation.failed");
	check_stalled(S_ALLOCATED, "RELEASED", "allocation.released");
	check_stalled(S_PROCESS_READY, "RELEASED", "allocation.released");
	check_stalled(S_ASSIGNMENT_READY, "RELEASED", "allocation.released");
	/* A match that got going is not stalled. */
	char m[CC_UUID_BUF], st[CC_MATCH_STATE_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 2, m);
	long long ev = all_events(m);
	struct cc_settle_outcome o = settle(STALLED, m, NULL);
	ck_assert(!o.changed);
	ck_assert_str_eq(o.match_state, "IN_PROGRESS");
	match_state(m, st);
	ck_assert_str_eq(st, "IN_PROGRESS");
	ck_assert_int_eq(all_events(m), ev);
	ck_assert_int_eq(tickets_in(m, "ASSIGNED"), 6);
}
END_TEST

/* ---- server lost ------------------------------------------------------------------------- */

START_TEST(test_server_lost_fails_unrated_and_unpenalised)
{
	char m[CC_UUID_BUF], st[CC_MATCH_STATE_BUF], astate[16], areason[40];
	match_at("ranked", 1, S_IN_PROGRESS, 2, m);
	struct cc_settle_outcome o = settle(SERVER_LOST, m, "server_silent");
	ck_assert(o.changed);
	ck_assert_str_eq(o.match_state, "FAILED");
	ck_assert_int_eq(o.failed, 2); /* ranked does not requeue on server loss */
	ck_assert_int_eq(o.requeued, 0);
	match_state(m, st);
	ck_assert_str_eq(st, "FAILED");
	ck_assert_int_eq(tickets_in(m, "FAILED"), 2);
	allocation_state(m, astate, areason);
	ck_assert_str_eq(astate, "RELEASED");
	ck_assert_str_eq(areason, "server_silent");
	ck_assert_int_eq(events(m, "match.failed", "server_silent"), 1);
	ck_assert_int_eq(events(m, "ticket.failed", "server_silent"), 2);
	ck_assert_int_eq(events(m, "allocation.released", NULL), 1);
	ck_assert_int_eq(penalties_of(m), 0);
	ratings_untouched(m);
	long long ev = all_events(m);
	o = settle(SERVER_LOST, m, "server_lost");
	ck_assert(!o.changed);
	ck_assert_int_eq(all_events(m), ev);
	/* Casual in RESULT_PENDING, and a malformed reason. */
	match_at("casual", 3, S_RESULT_PENDING, 6, m);
	o = settle(SERVER_LOST, m, "server_lost");
	ck_assert(o.changed);
	ck_assert_int_eq(tickets_in(m, "FAILED"), 6);
	match_at("casual", 3, S_IN_PROGRESS, 1, m);
	settle_on(pg, SERVER_LOST, m, "Server Lost", NULL, 0, CC_EINVAL);
	match_state(m, st);
	ck_assert_str_eq(st, "IN_PROGRESS");
}
END_TEST

/* ---- no-shows ------------------------------------------------------------------------------ */

START_TEST(test_ranked_no_show_calls_the_match_off)
{
	char m[CC_UUID_BUF], st[CC_MATCH_STATE_BUF], astate[16], areason[40], shower[CC_UUID_BUF], noshow[CC_UUID_BUF];
	match_at("ranked", 1, S_IN_PROGRESS, 1, m); /* the first participant connected, the second never */
	text1("SELECT mp.player_id FROM match_players mp JOIN assignments s USING (match_id, player_id) "
	      "WHERE mp.match_id = $1 AND s.connection_generation > 0", m, shower, sizeof shower);
	text1("SELECT mp.player_id FROM match_players mp JOIN assignments s USING (match_id, player_id) "
	      "WHERE mp.match_id = $1 AND s.connection_generation = 0", m, noshow, sizeof noshow);
	/* Naming only the one who connected: nobody is a no-show, nothing changes. */
	long long ev = all_events(m);
	struct cc_settle_outcome o = settle_on(pg, NO_SHOW, m, NULL, (const char (*)[CC_UUID_BUF])shower, 1, 0);
	ck_assert(!o.changed);
	ck_assert_int_eq(o.n_no_shows, 0);
	ck_assert_int_eq(all_events(m), ev);
	/* Naming someone outside the roster is refused. */
	char stranger[CC_UUID_BUF];
	text1("SELECT gen_random_uuid()", NULL, stranger, sizeof stranger);
	settle_on(pg, NO_SHOW, m, NULL, (const char (*)[CC_UUID_BUF])stranger, 1, CC_EINVAL);
	/* The sweep (none named): the no-show is penalised, the other requeued, the match called off. */
	o = settle_on(pg, NO_SHOW, m, NULL, NULL, 0, 0);
	ck_assert(o.changed);
	ck_assert_str_eq(o.match_state, "FAILED");
	ck_assert_int_eq(o.n_no_shows, 1);
	ck_assert_str_eq(o.no_shows[0], noshow);
	ck_assert_int_eq(o.penalised, 1);
	ck_assert_int_eq(o.failed, 1);
	ck_assert_int_eq(o.requeued, 1);
	match_state(m, st);
	ck_assert_str_eq(st, "FAILED");
	const char *pn[] = { m, noshow, shower };
	ck_assert_int_eq(ll1("SELECT count(*) FROM penalties WHERE kind = 'INITIAL_CONNECT_NO_SHOW' AND source_id = $1", m), 1);
	PGresult *r = sqlp("SELECT (SELECT count(*) FROM penalties WHERE source_id = $1 AND player_id = $2), "
			   "(SELECT t.state FROM tickets t JOIN match_players mp ON mp.ticket_id = t.id WHERE mp.match_id = $1 AND mp.player_id = $2), "
			   "(SELECT t.state FROM tickets t JOIN match_players mp ON mp.ticket_id = t.id WHERE mp.match_id = $1 AND mp.player_id = $3), "
			   "(SELECT t.expires_at > now() + interval '80 seconds' FROM tickets t JOIN match_players mp ON mp.ticket_id = t.id "
			   "   WHERE mp.match_id = $1 AND mp.player_id = $3)",
			   3, pn);
	ck_assert_str_eq(PQgetvalue(r, 0, 0), "1");
	ck_assert_str_eq(PQgetvalue(r, 0, 1), "FAILED");
	ck_assert_str_eq(PQgetvalue(r, 0, 2), "QUEUED");
	ck_assert_str_eq(PQgetvalue(r, 0, 3), "t");
	PQclear(r);
	allocation_state(m, astate, areason);
	ck_assert_str_eq(astate, "RELEASED");
	ck_assert_str_eq(areason, "no_show");
	ck_assert_int_eq(events(m, "match.failed", "no_show"), 1);
	ck_assert_int_eq(events(m, "ticket.failed", "no_show"), 1);
	ck_assert_int_eq(events(m, "ticket.requeued", "no_show"), 1);
	ratings_untouched(m);
	/* cc-api naming the no-show after the sweep settled it: nothing more. */
	ev = all_events(m);
	o = settle_on(pg, NO_SHOW, m, NULL, (const char (*)[CC_UUID_BUF])noshow, 1, 0);
	ck_assert(!o.changed);
	ck_assert_int_eq(o.n_no_shows, 1); /* still who never connected */
	ck_assert_int_eq(o.penalised, 0);
	ck_assert_int_eq(all_events(m), ev);
	ck_assert_int_eq(penalties_of(m), 1);
	/*
	 * Nobody connected (ASSIGNMENT_READY): a server nobody could reach, an
	 * infrastructure fault (SPEC 7), not two no-shows: nothing changes,
	 * whether the sweep asks or the server names them all; the stalled
	 * sweep later fails it with everyone requeued unpenalised.
	 */
	match_at("ranked", 1, S_ASSIGNMENT_READY, 0, m);
	ev = all_events(m);
	o = settle_on(pg, NO_SHOW, m, NULL, NULL, 0, 0);
	ck_assert(!o.changed);
	ck_assert_int_eq(o.n_no_shows, 0);
	ck_assert_int_eq(o.penalised, 0);
	char both[2][CC_UUID_BUF];
	text1("SELECT player_id FROM match_players WHERE match_id = $1 ORDER BY player_id LIMIT 1", m, both[0], CC_UUID_BUF);
	text1("SELECT player_id FROM match_players WHERE match_id = $1 ORDER BY player_id DESC LIMIT 1", m, both[1], CC_UUID_BUF);
	o = settle_on(pg, NO_SHOW, m, NULL, (const char (*)[CC_UUID_BUF])both, 2, 0);
	ck_assert(!o.changed);
	ck_assert_int_eq(o.penalised, 0);
	ck_assert_int_eq(penalties_of(m), 0);
	ck_assert_int_eq(tickets_in(m, "FAILED"), 0);
	ck_assert_int_eq(all_events(m), ev);
	match_state(m, st);
	ck_assert_str_eq(st, "ASSIGNMENT_READY");
	o = settle(STALLED, m, NULL);
	ck_assert(o.changed);
	ck_assert_int_eq(o.requeued, 2);
	ck_assert_int_eq(penalties_of(m), 0);
}
END_TEST

START_TEST(test_casual_no_show_is_only_penalised)
{
	char m[CC_UUID_BUF], st[CC_MATCH_STATE_BUF], astate[16], areason[40];
	match_at("casual", 3, S_IN_PROGRESS, 2, m); /* 2 of 6 connected */
	struct cc_settle_outcome o = settle_on(pg, NO_SHOW, m, NULL, NULL, 0, 0);
	ck_assert(o.changed);
	ck_assert_str_eq(o.match_state, "IN_PROGRESS");
	ck_assert_int_eq(o.n_no_shows, 4);
	ck_assert_int_eq(o.penalised, 4);
	ck_assert_int_eq(o.requeued, 0);
	ck_assert_int_eq(o.failed, 0);
	match_state(m, st);
	ck_assert_str_eq(st, "IN_PROGRESS");
	ck_assert_int_eq(tickets_in(m, "ASSIGNED"), 6);
	allocation_state(m, astate, areason);
	ck_assert_str_eq(astate, "PUBLISHED");
	ck_assert_int_eq(ll1("SELECT count(*) FROM penalties WHERE kind = 'INITIAL_CONNECT_NO_SHOW' AND source_id = $1", m), 4);
	ratings_untouched(m);
	long long ev = all_events(m);
	o = settle_on(pg, NO_SHOW, m, NULL, NULL, 0, 0);
	ck_assert(!o.changed);
	ck_assert_int_eq(o.penalised, 0);
	ck_assert_int_eq(penalties_of(m), 4);
	ck_assert_int_eq(all_events(m), ev);
}
END_TEST

/* ---- result missing ---------------------------------------------------------------------- */

START_TEST(test_result_missing_fails_and_frees)
{
	char m[CC_UUID_BUF], st[CC_MATCH_STATE_BUF], astate[16], areason[40];
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	struct cc_settle_outcome o = settle(RESULT_MISSING, m, NULL); /* not RESULT_PENDING: nothing */
	ck_assert(!o.changed);
	char m2[CC_UUID_BUF];
	match_at("casual", 3, S_RESULT_PENDING, 6, m2);
	o = settle(RESULT_MISSING, m2, NULL);
	ck_assert(o.changed);
	ck_assert_str_eq(o.match_state, "FAILED");
	ck_assert_int_eq(o.failed, 6);
	match_state(m2, st);
	ck_assert_str_eq(st, "FAILED");
	ck_assert_int_eq(tickets_in(m2, "FAILED"), 6);
	allocation_state(m2, astate, areason);
	ck_assert_str_eq(astate, "RELEASED");
	ck_assert_str_eq(areason, "result_missing");
	ck_assert_int_eq(events(m2, "match.failed", "result_missing"), 1);
	ck_assert_int_eq(events(m2, "ticket.failed", "result_missing"), 6);
	ck_assert_int_eq(penalties_of(m2), 0);
	ratings_untouched(m2);
	long long ev = all_events(m2);
	o = settle(RESULT_MISSING, m2, NULL);
	ck_assert(!o.changed);
	ck_assert_int_eq(all_events(m2), ev);
	match_state(m, st);
	ck_assert_str_eq(st, "IN_PROGRESS");
}
END_TEST

/* ---- selectors ------------------------------------------------------------------------------ */

typedef int (*selector_fn)(struct cc_pg *, int64_t, int, char (*)[CC_UUID_BUF], size_t *, int64_t *);

static bool has(char (*ids)[CC_UUID_BUF], size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ids[i], id) == 0)
			return true;
	return false;
}

/* Ages m's clocks (updated_at, assignment_ready_at, last heartbeat) by s seconds. */
static void age(const char *m, int s)
{
	char secs[16];
	snprintf(secs, sizeof secs, "%d", s);
	const char *p[] = { m, secs };
	PQclear(sqlp("UPDATE matches SET updated_at = updated_at - make_interval(secs => $2::int) WHERE id = $1", 2, p));
	PQclear(sqlp("UPDATE allocations SET assignment_ready_at = assignment_ready_at - make_interval(secs => $2::int), "
		     "last_heartbeat_at = last_heartbeat_at - make_interval(secs => $2::int) WHERE match_id = $1",
		     2, p));
}

struct select_tx {
	selector_fn fn;
	int64_t window;
	int limit;
	char ids[64][CC_UUID_BUF];
	size_t n;
	int64_t lag;
};

static int select_run(struct cc_pg *c, void *arg)
{
	struct select_tx *t = arg;
	return t->fn(c, t->window, t->limit, t->ids, &t->n, &t->lag);
}

static void select_once(struct select_tx *t)
{
	int rc = cc_pg_run_serializable(pg, select_run, t);
	ck_assert_msg(rc == 0, "select: %s %s", cc_errname(rc), cc_pg_error_message(pg));
}

START_TEST(test_selectors_take_only_what_is_due)
{
	char stalled_old[CC_UUID_BUF], stalled_new[CC_UUID_BUF], stalled_unalloc[CC_UUID_BUF];
	char silent_old[CC_UUID_BUF], silent_beat[CC_UUID_BUF], noshow_old[CC_UUID_BUF], noshow_all[CC_UUID_BUF];
	char pending_old[CC_UUID_BUF], pending_new[CC_UUID_BUF];
	match_at("casual", 3, S_PROCESS_READY, 0, stalled_old);
	age(stalled_old, 300);
	match_at("casual", 3, S_ALLOCATING, 0, stalled_unalloc);
	age(stalled_unalloc, 200);
	match_at("casual", 3, S_ASSIGNMENT_READY, 0, stalled_new);
	match_at("ranked", 1, S_IN_PROGRESS, 1, silent_old);
	age(silent_old, 100);
	match_at("ranked", 1, S_IN_PROGRESS, 2, silent_beat);
	age(silent_beat, 100);
	const char *pb[] = { silent_beat };
	PQclear(sqlp("UPDATE allocations SET last_heartbeat_at = now() WHERE match_id = $1", 1, pb)); /* still heard */
	match_at("casual", 3, S_IN_PROGRESS, 6, noshow_all); /* everyone connected */
	age(noshow_all, 100);
	match_at("casual", 3, S_RESULT_PENDING, 6, pending_old);
	age(pending_old, 100);
	match_at("casual", 3, S_RESULT_PENDING, 6, pending_new);
	snprintf(noshow_old, sizeof noshow_old, "%s", silent_old); /* one of two never connected */

	struct select_tx t = { .fn = cc_matches_due_stalled, .window = 120, .limit = 10 };
	select_once(&t);
	ck_assert_int_eq(t.n, 2);
	ck_assert_str_eq(t.ids[0], stalled_old); /* oldest first, with an allocation or without one */
	ck_assert_str_eq(t.ids[1], stalled_unalloc);
	ck_assert_int_eq(t.lag, 2);
	t.limit = 1;
	select_once(&t);
	ck_assert_int_eq(t.n, 1);
	ck_assert_str_eq(t.ids[0], stalled_old);
	ck_assert_int_eq(t.lag, 2);

	t = (struct select_tx){ .fn = cc_matches_due_server_silent, .window = 60, .limit = 10 };
	select_once(&t);
	ck_assert_int_eq(t.n, 2); /* silent_old, noshow_all: no heartbeat for 100 s while silent_beat is heard */
	ck_assert(has(t.ids, t.n, silent_old) && has(t.ids, t.n, noshow_all));
	ck_assert(!has(t.ids, t.n, silent_beat));
	ck_assert(!has(t.ids, t.n, pending_old)); /* RESULT_PENDING: the result-missing sweep's */
	ck_assert_int_eq(t.lag, 2);


	/* Nobody ever connected: a server nobody could reach, never a no-show (left to the stalled sweep). */
	char unreached[CC_UUID_BUF];
	match_at("ranked", 1, S_ASSIGNMENT_READY, 0, unreached);
	age(unreached, 100);
	t = (struct select_tx){ .fn = cc_matches_due_no_show, .window = 60, .limit = 10 };
	select_once(&t);
	ck_assert_int_eq(t.n, 1);
	ck_assert_str_eq(t.ids[0], noshow_old);
	ck_assert_int_eq(t.lag, 1);

	t = (struct select_tx){ .fn = cc_matches_due_result_missing, .window = 60, .limit = 10 };
	select_once(&t);
	ck_assert_int_eq(t.n, 1);
	ck_assert_str_eq(t.ids[0], pending_old);
	ck_assert_int_eq(t.lag, 1);

	/* A casual no-show is selected until it is penalised, then never again. */
	char casual[CC_UUID_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 3, casual);
	age(casual, 100);
	t = (struct select_tx){ .fn = cc_matches_due_no_show, .window = 60, .limit = 10 };
	select_once(&t);
	ck_assert(has(t.ids, t.n, casual));
	settle_on(pg, NO_SHOW, casual, NULL, NULL, 0, 0);
	select_once(&t);
	ck_assert(!has(t.ids, t.n, casual));

	/*
	 * Nobody heard for the window (cc-api down: every server looks silent at
	 * once; TEST FIXTURE: every live allocation's last word 100 s old): no
	 * match is failed for it until four windows have passed.
	 */
	PQclear(sqlp("UPDATE allocations SET last_heartbeat_at = least(last_heartbeat_at, now() - interval '100 seconds'), "
		     "assignment_ready_at = least(assignment_ready_at, now() - interval '100 seconds') WHERE state = 'PUBLISHED'",
		     0, NULL));
	t = (struct select_tx){ .fn = cc_matches_due_server_silent, .window = 60, .limit = 10 };
	select_once(&t);
	ck_assert_msg(t.n == 0, "a fleet-wide silence of 100 s (window 60 s) failed %zu matches", t.n);
	ck_assert_int_eq(t.lag, 0);
	const char *so[] = { silent_old };
	PQclear(sqlp("UPDATE allocations SET assignment_ready_at = now() - interval '250 seconds', "
		     "last_heartbeat_at = now() - interval '250 seconds' WHERE match_id = $1", 1, so));
	select_once(&t);
	ck_assert_int_eq(t.n, 1); /* past 4 windows the silence ends it anyway */
	ck_assert_str_eq(t.ids[0], silent_old);

	/* Refused arguments. */
	size_t n;
	int64_t lag;
	char ids[1][CC_UUID_BUF];
	ck_assert_int_eq(cc_matches_due_stalled(pg, 60, 0, ids, &n, &lag), CC_EINVAL);
	ck_assert_int_eq(cc_matches_due_stalled(pg, -1, 1, ids, &n, &lag), CC_EINVAL);
}
END_TEST

/* Two open transactions select at once: SKIP LOCKED gives them disjoint ids. */
START_TEST(test_concurrent_selectors_never_share_an_id)
{
	char err[256];
	char m[8][CC_UUID_BUF];
	for (int i = 0; i < 8; i++) {
		match_at("casual", 3, i % 2 ? S_ALLOCATING : S_REQUESTED, 0, m[i]);
		age(m[i], 300 + i);
	}
	struct cc_pg *a = NULL, *b = NULL;
	ck_assert_int_eq(cc_pg_connect(db_dsn, NULL, &a, err, sizeof err), 0);
	ck_assert_int_eq(cc_pg_connect(db_dsn, NULL, &b, err, sizeof err), 0);
	char ia[8][CC_UUID_BUF], ib[8][CC_UUID_BUF];
	size_t na = 0, nb = 0;
	int64_t la = 0, lb = 0;
	ck_assert_int_eq(cc_pg_exec(a, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL), 0);
	ck_assert_int_eq(cc_pg_exec(b, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL), 0);
	ck_assert_int_eq(cc_matches_due_stalled(a, 120, 5, ia, &na, &la), 0);
	ck_assert_int_eq(cc_matches_due_stalled(b, 120, 5, ib, &nb, &lb), 0);
	ck_assert_int_eq(na, 5);
	ck_assert_int_eq(nb, 3);
	ck_assert_int_eq(la, 8);
	ck_assert_int_eq(lb, 8);
	for (size_t i = 0; i < na; i++)
		ck_assert_msg(!has(ib, nb, ia[i]), "both transactions got %s", ia[i]);
	ck_assert_int_eq(cc_pg_rollback(a), 0);
	ck_assert_int_eq(cc_pg_rollback(b), 0);
	/*
	 * A route holds the oldest match's allocation (as caller_allocation
	 * does): the stalled selector leaves that match out instead of
	 * waiting for it, and the other selectors' joined picks skip it too.
	 */
	const char *p0[] = { m[0] };
	ck_assert_int_eq(cc_pg_exec(b, "BEGIN", 0, NULL, NULL), 0);
	ck_assert_int_eq(cc_pg_exec(b, "SELECT 1 FROM allocations WHERE match_id = $1 FOR UPDATE", 1, p0, NULL), 0);
	ck_assert_int_eq(cc_pg_exec(a, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL), 0);
	ck_assert_int_eq(cc_matches_due_stalled(a, 120, 8, ia, &na, &la), 0);
	ck_assert_int_eq(na, 7);
	ck_assert(!has(ia, na, m[0]));
	ck_assert_int_eq(la, 8);
	ck_assert_int_eq(cc_pg_rollback(a), 0);
	ck_assert_int_eq(cc_pg_rollback(b), 0);
	/* The joined selectors (match and allocation locked together): silent servers, no-shows, missing results. */
	static const selector_fn joined[] = { cc_matches_due_server_silent, cc_matches_due_no_show,
					      cc_matches_due_result_missing };
	for (int i = 0; i < 6; i++) {
		char x[CC_UUID_BUF];
		match_at("ranked", 1, i % 2 ? S_IN_PROGRESS : S_RESULT_PENDING, 1, x);
		age(x, 500); /* past 4 windows: silent whether or not the rest of the fleet is heard */
	}
	static const size_t due[] = { 3, 6, 3 }; /* silent: the IN_PROGRESS ones (RESULT_PENDING is the result sweep's); no-show: all six */
	for (size_t f = 0; f < 3; f++) {
		ck_assert_int_eq(cc_pg_exec(a, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL), 0);
		ck_assert_int_eq(cc_pg_exec(b, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL), 0);
		ck_assert_int_eq(joined[f](a, 120, 2, ia, &na, &la), 0);
		ck_assert_int_eq(joined[f](b, 120, 8, ib, &nb, &lb), 0);
		ck_assert_msg(na == 2 && nb == due[f] - 2 && la == (int64_t)due[f] && lb == (int64_t)due[f],
			      "selector %zu: %zu and %zu picked, lag %lld and %lld, want 2 and %zu of %zu", f, na, nb,
			      (long long)la, (long long)lb, due[f] - 2, due[f]);
		for (size_t i = 0; i < na; i++)
			ck_assert_msg(!has(ib, nb, ia[i]), "selector %zu: both transactions got %s", f, ia[i]);
		ck_assert_int_eq(cc_pg_rollback(a), 0);
		ck_assert_int_eq(cc_pg_rollback(b), 0);
	}
	cc_pg_free(a);
	cc_pg_free(b);
}
END_TEST

/* ---- the race ---------------------------------------------------------------------------- */

#define RACE_MATCHES 8
#define RACERS 6

static char race_ids[RACE_MATCHES][CC_UUID_BUF];
static char race_noshow[RACE_MATCHES][CC_UUID_BUF];

struct sweep_tx {
	enum how how;
	int settled;
};

/* The sweep's pass: select a batch, settle each in the same transaction. */
static int sweep_run(struct cc_pg *c, void *arg)
{
	struct sweep_tx *t = arg;
	char ids[4][CC_UUID_BUF];
	size_t n = 0;
	int64_t lag = 0;
	struct cc_settle_outcome o;
	t->settled = 0;
	int rc = t->how == NO_SHOW ? cc_matches_due_no_show(c, 60, 4, ids, &n, &lag)
				   : cc_matches_due_stalled(c, 120, 4, ids, &n, &lag);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = t->how == NO_SHOW ? cc_match_settle_no_show(c, ids[i], NULL, 0, TTL, &o, NULL)
				       : cc_match_settle_stalled(c, ids[i], TTL, &o, NULL);
		t->settled += o.changed;
	}
	return rc;
}

struct racer {
	int index;
	enum how how;
	int failures;
	char err[256];
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct cc_pg *c = NULL;
	if (cc_pg_connect(db_dsn, NULL, &c, r->err, sizeof r->err) != 0) {
		r->failures++;
		return NULL;
	}
	if (r->index % 2 == 0) {
		/* As cc-api: every match, in an order of its own, naming its no-show (or the stalled call). */
		for (int k = 0; k < RACE_MATCHES; k++) {
			int i = (k + r->index) % RACE_MATCHES;
			struct settle_tx t = { .how = r->how, .match_id = race_ids[i],
					       .named = (const char (*)[CC_UUID_BUF])race_noshow[i], .n_named = 1 };
			/*
			 * cc-api answers a spent budget 503 retry_exhausted, retryable, and
			 * the game server sends its report again: the racer does the same
			 * (a loaded CI machine spent one against the sweep racers).
			 */
			int rc = CC_ERETRY_EXHAUSTED;
			for (int attempt = 0; attempt < 10 && rc == CC_ERETRY_EXHAUSTED; attempt++) {
				t = (struct settle_tx){ .how = r->how, .match_id = race_ids[i],
							.named = (const char (*)[CC_UUID_BUF])race_noshow[i], .n_named = 1 };
				rc = cc_pg_run_serializable(c, settle_run, &t);
			}
			if (rc != 0) {
				snprintf(r->err, sizeof r->err, "settle: %s %s", cc_errname(rc), cc_pg_error_message(c));
				r->failures++;
			}
		}
	} else {
		/* As a sweep replica: passes until nothing is due. */
		for (int pass = 0; pass < 50; pass++) {
			struct sweep_tx t = { .how = r->how };
			int rc = cc_pg_run_serializable(c, sweep_run, &t);
			/*
			 * A batch that spent its retries is what cc-maintenance counts as a
			 * failed batch and takes again at its next pass (a loaded CI machine
			 * exhausted one against the API racers): the racer does the same. The
			 * outcome checks after the race prove nothing was settled twice or lost.
			 */
			if (rc == CC_ERETRY_EXHAUSTED)
				continue;
			if (rc != 0) {
				snprintf(r->err, sizeof r->err, "sweep: %s %s", cc_errname(rc), cc_pg_error_message(c));
				r->failures++;
			}
			if (rc == 0 && t.settled == 0)
				break;
		}
	}
	cc_pg_free(c);
	return NULL;
}

/* Lines in the harness's PostgreSQL log (CC_TEST_PG_LOG), so a race can look at what it added. */
static long log_lines(void)
{
	FILE *f = fopen(cc_test_env("CC_TEST_PG_LOG"), "r");
	long n = 0;
	int c;
	ck_assert_msg(f, "cannot read CC_TEST_PG_LOG");
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* The first "deadlock detected" line after line `from`, or "" (into out). */
static void deadlock_since(long from, char *out, size_t len)
{
	FILE *f = fopen(cc_test_env("CC_TEST_PG_LOG"), "r");
	char line[2048];
	long n = 0;
	out[0] = '\0';
	ck_assert_msg(f, "cannot read CC_TEST_PG_LOG");
	while (fgets(line, sizeof line, f))
		if (++n > from && strstr(line, "deadlock detected")) {
			snprintf(out, len, "%s", line);
			break;
		}
	fclose(f);
}

/*
 * The racers: even ones as cc-api (the settlement's own lock order, the
 * routes': allocation, then match), odd ones as sweep replicas (selector
 * SKIP LOCKED, then settle). Nobody fails, and PostgreSQL detects no
 * deadlock between them.
 */
static void race(enum how how)
{
	pthread_t th[RACERS];
	struct racer rs[RACERS];
	char dead[2048];
	long from = log_lines();
	for (int i = 0; i < RACERS; i++) {
		rs[i] = (struct racer){ .index = i, .how = how };
		ck_assert_int_eq(pthread_create(&th[i], NULL, racer_main, &rs[i]), 0);
	}
	for (int i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(rs[i].failures == 0, "racer %d: %d failures, last: %s", i, rs[i].failures, rs[i].err);
	}
	deadlock_since(from, dead, sizeof dead);
	ck_assert_msg(!dead[0], "PostgreSQL detected a deadlock while the settlements raced: %s", dead);
}

START_TEST(test_race_no_show_from_api_and_sweeps)
{
	for (int i = 0; i < RACE_MATCHES; i++) {
		match_at("ranked", 1, S_IN_PROGRESS, 1, race_ids[i]);
		age(race_ids[i], 100);
		text1("SELECT s.player_id FROM assignments s WHERE s.match_id = $1 AND s.connection_generation = 0",
		      race_ids[i], race_noshow[i], CC_UUID_BUF);
	}
	race(NO_SHOW);
	for (int i = 0; i < RACE_MATCHES; i++) {
		const char *m = race_ids[i];
		char st[CC_MATCH_STATE_BUF];
		match_state(m, st);
		ck_assert_str_eq(st, "FAILED");
		ck_assert_int_eq(penalties_of(m), 1);
		ck_assert_int_eq(events(m, "match.failed", NULL), 1);
		ck_assert_int_eq(events(m, "ticket.requeued", NULL), 1);
		ck_assert_int_eq(events(m, "ticket.failed", NULL), 1);
		ck_assert_int_eq(events(m, "allocation.released", NULL), 1);
		ck_assert_int_eq(tickets_in(m, "QUEUED"), 1);
		ratings_untouched(m);
	}
	ck_assert_int_eq(ll1("SELECT count(*) FROM penalties", NULL), RACE_MATCHES);
}
END_TEST

START_TEST(test_race_stalled_from_many_callers)
{
	for (int i = 0; i < RACE_MATCHES; i++) {
		match_at("casual", 3, (enum stage)(i % 5), 0, race_ids[i]);
		age(race_ids[i], 300);
		race_noshow[i][0] = '\0';
	}
	race(STALLED);
	for (int i = 0; i < RACE_MATCHES; i++) {
		const char *m = race_ids[i];
		char st[CC_MATCH_STATE_BUF];
		match_state(m, st);
		ck_assert_str_eq(st, "FAILED");
		ck_assert_int_eq(events(m, "match.failed", NULL), 1);
		ck_assert_int_eq(events(m, "ticket.requeued", NULL), 6);
		ck_assert_int_eq(ll1("SELECT count(*) FROM allocations WHERE match_id = $1", m), 1);
		all_requeued(m, 6);
	}
	ck_assert_int_eq(ll1("SELECT count(*) FROM penalties", NULL), 0);
}
END_TEST

/* ---- the allocator, under a match called off --------------------------------------------------- */

struct claim_tx {
	struct cc_allocation rows[8];
	size_t n;
};

static int claim_run(struct cc_pg *c, void *arg)
{
	struct claim_tx *t = arg;
	struct cc_allocation_claim req = { .provider = "local", .replica = "r1", .owner = "test", .lease_ms = 60000,
					   .workload_ttl_s = 3600, .limit = 4 };
	return cc_allocations_claim(c, &req, t->rows, 8, &t->n);
}

struct local_tx {
	const char *id;
	struct cc_allocation out[1];
	size_t allocated, held;
};

static int local_run(struct cc_pg *c, void *arg)
{
	struct local_tx *t = arg;
	const char *ids[] = { t->id };
	return cc_allocations_allocate_local(c, "test", "r1", ids, 1, t->out, 1, &t->allocated, &t->held);
}

static int register_run(struct cc_pg *c, void *arg)
{
	struct cc_game_server *gs = arg;
	return cc_game_server_register_local(c, "local-test-1", "eu", "127.0.0.1", 7100, "test", 1, gs);
}

static int set_allocated_run(struct cc_pg *c, void *arg)
{
	struct cc_allocation *a = arg;
	struct cc_game_server gs = { .id = "local-test-1", .address = "127.0.0.1", .port = 7100 };
	return cc_allocation_set_allocated(c, a->id, "r1", &gs, NULL, a);
}

static int publish_run(struct cc_pg *c, void *arg)
{
	struct cc_allocation *a = arg;
	return cc_allocation_set_published(c, a->id, a);
}

struct release_tx {
	char ids[4][CC_GAME_SERVER_ID_BUF];
	size_t n;
};

static int release_run(struct cc_pg *c, void *arg)
{
	struct release_tx *t = arg;
	return cc_game_servers_release_finished(c, "test", t->ids, 4, &t->n);
}

/*
 * What cc-allocator's steps find when a sweep called the match off under
 * them (services/allocator/work.c, local.c, publish.c re-check the row
 * under its lock): a replica still holding the claim of a REQUESTED row
 * that failed gets no server for it (the batch sees it no longer held: the
 * lost-claim outcome), nor the endpoint; an ALLOCATED row that was
 * released is not published, and its local server is freed by the release
 * sweep; the called-off matches are never claimed again.
 */
START_TEST(test_allocator_steps_lose_a_called_off_match)
{
	struct cc_game_server gs;
	char m1[CC_UUID_BUF], m2[CC_UUID_BUF], st[16], why[40];
	ck_assert_int_eq(cc_pg_run_serializable(pg, register_run, &gs), 0);
	create_match("casual", 3, m1);
	struct claim_tx ct = { .n = 0 };
	ck_assert_int_eq(cc_pg_run_locked(pg, claim_run, &ct), 0);
	ck_assert_int_eq(ct.n, 1);
	struct cc_allocation held = ct.rows[0];
	ck_assert_str_eq(held.match_id, m1);
	/* The sweep fails the stalled match while r1 holds its REQUESTED row. */
	ck_assert(settle(STALLED, m1, NULL).changed);
	struct local_tx lt = { .id = held.id };
	ck_assert_int_eq(cc_pg_run_locked(pg, local_run, &lt), 0);
	ck_assert_int_eq(lt.allocated, 0);
	ck_assert_int_eq(lt.held, 0); /* local_allocate_batch: ALLOC_LOST, nothing kept */
	ck_assert_int_eq(cc_pg_run_locked(pg, set_allocated_run, &held), CC_ECONFLICT);
	text1("SELECT state FROM game_servers WHERE id = 'local-test-1'", NULL, st, sizeof st);
	ck_assert_str_eq(st, "IDLE");
	allocation_state(m1, st, why);
	ck_assert_str_eq(st, "FAILED");

	/* An allocation that got its server is released instead; publishing it is refused, the server freed. */
	create_match("casual", 3, m2);
	ct.n = 0;
	ck_assert_int_eq(cc_pg_run_locked(pg, claim_run, &ct), 0);
	ck_assert_int_eq(ct.n, 1);
	lt = (struct local_tx){ .id = ct.rows[0].id };
	ck_assert_int_eq(cc_pg_run_locked(pg, local_run, &lt), 0);
	ck_assert_int_eq(lt.allocated, 1);
	ck_assert(settle(STALLED, m2, NULL).changed);
	struct cc_allocation a2 = lt.out[0];
	ck_assert_int_eq(cc_pg_run_locked(pg, publish_run, &a2), CC_ECONFLICT);
	allocation_state(m2, st, why);
	ck_assert_str_eq(st, "RELEASED");
	struct release_tx rt = { .n = 0 };
	ck_assert_int_eq(cc_pg_run_locked(pg, release_run, &rt), 0);
	ck_assert_int_eq(rt.n, 1);
	ck_assert_str_eq(rt.ids[0], "local-test-1");
	text1("SELECT state FROM game_servers WHERE id = 'local-test-1'", NULL, st, sizeof st);
	ck_assert_str_eq(st, "IDLE");
	/* Nothing of theirs is claimable again. */
	ct.n = 0;
	ck_assert_int_eq(cc_pg_run_locked(pg, claim_run, &ct), 0);
	ck_assert_int_eq(ct.n, 0);
}
END_TEST

/* ---- plans ----------------------------------------------------------------------------------- */

/*
 * A few thousand matches, nearly all over (as in a system that has run for
 * a while), a few due for each sweep; the selectors' statements, exactly
 * as match_settle.c prepared them on this connection, must be planned
 * with migration 0013's indexes and no sequential scan of matches or
 * allocations.
 */
START_TEST(test_selector_plans_use_their_indexes)
{
	char err[256];
	/* 4000 finished matches with a FAILED allocation each, seeded in bulk. */
	PQclear(sqlp("WITH p AS (INSERT INTO proposals (playlist, state, region, arena, build, protocol_version, team_size, "
		     "  matcher, expires_at) SELECT 'casual', 'OPEN', 'eu', 'aurora_ring', 'b', 1, 3, 'seed', now() "
		     "  FROM generate_series(1, 4000) RETURNING id) "
		     "INSERT INTO matches (proposal_id, playlist, state, region, arena, build, protocol_version, team_size) "
		     "SELECT id, 'casual', 'ALLOCATING', 'eu', 'aurora_ring', 'b', 1, 3 FROM p",
		     0, NULL));
	PQclear(sqlp("INSERT INTO allocations (match_id, state, provider, workload_expires_at) "
		     "SELECT id, 'REQUESTED', 'local', now() FROM matches", 0, NULL));
	PQclear(sqlp("UPDATE allocations SET state = 'FAILED'", 0, NULL));
	PQclear(sqlp("UPDATE matches SET state = 'FAILED'", 0, NULL));
	/* A few live ones of each kind. */
	char m[CC_UUID_BUF];
	for (int i = 0; i < 3; i++) {
		match_at("casual", 3, S_PROCESS_READY, 0, m);
		age(m, 300);
		match_at("ranked", 1, S_IN_PROGRESS, 1, m);
		age(m, 300);
		match_at("casual", 3, S_RESULT_PENDING, 6, m);
		age(m, 300);
	}
	PQclear(sqlp("ANALYZE", 0, NULL));

	struct cc_pg_options opt = { .prepare_statements = true };
	struct cc_pg *c = NULL;
	ck_assert_int_eq(cc_pg_connect(db_dsn, &opt, &c, err, sizeof err), 0);
	static const selector_fn fns[] = { cc_matches_due_stalled, cc_matches_due_server_silent, cc_matches_due_no_show,
					   cc_matches_due_result_missing };
	static const char *const want_index[] = { "matches_stalled_by_age", "allocations_live_by_heartbeat",
						  "allocations_live_by_assignment_ready", "matches_result_pending_by_age" };
	static const size_t want_due[] = { 3, 3, 3, 3 }; /* silent: the IN_PROGRESS ones (past 4 windows: heard or not) */
	for (size_t f = 0; f < 4; f++) {
		struct select_tx t = { .fn = fns[f], .window = 60, .limit = 10 };
		ck_assert_int_eq(cc_pg_run_serializable(c, select_run, &t), 0);
		ck_assert_msg(t.n == want_due[f], "selector %zu: %zu due, want %zu", f, t.n, want_due[f]);
	}
	PGresult *res = NULL;
	ck_assert_int_eq(cc_pg_exec(c, "SELECT name, statement FROM pg_prepared_statements "
				       "WHERE statement LIKE '%now() - make_interval(secs => $1::float8)%' ORDER BY name",
				    0, NULL, &res),
			 0);
	int found[4] = { 0, 0, 0, 0 };
	ck_assert_int_ge(PQntuples(res), 8); /* 4 picks, 4 lags */
	for (int i = 0; i < PQntuples(res); i++) {
		const char *name = PQgetvalue(res, i, 0), *stmt = PQgetvalue(res, i, 1);
		bool lag = strncmp(stmt, "SELECT count(*)", 15) == 0;
		char sql[128];
		snprintf(sql, sizeof sql, lag ? "EXPLAIN EXECUTE %s('60')" : "EXPLAIN EXECUTE %s('60', '10')", name);
		PGresult *plan = NULL;
		ck_assert_msg(cc_pg_exec(c, sql, 0, NULL, &plan) == 0, "%s: %s", sql, cc_pg_error_message(c));
		char text[8192] = "";
		size_t used = 0;
		for (int k = 0; k < PQntuples(plan); k++)
			used += (size_t)snprintf(text + used, used < sizeof text ? sizeof text - used : 0, "%s\n",
						 PQgetvalue(plan, k, 0));
		PQclear(plan);
		ck_assert_msg(!strstr(text, "Seq Scan on matches") && !strstr(text, "Seq Scan on allocations"),
			      "%s\n%s", stmt, text);
		for (size_t f = 0; f < 4; f++)
			if (strstr(text, want_index[f]))
				found[f]++;
	}
	PQclear(res);
	for (size_t f = 0; f < 4; f++)
		ck_assert_msg(found[f] >= 2, "index %s used by %d statements, want pick and lag", want_index[f], found[f]);
	cc_pg_free(c);
}
END_TEST

/* ---- the leases an ending closes (issue 20) ------------------------------------------- */

/* Leases of m still connected. */
static long long open_leases(const char *m)
{
	return ll1("SELECT count(*) FROM assignments WHERE match_id = $1 AND connected", m);
}

/* Leases of m that were opened and closed with reason, each with its disconnect time. */
static long long closed_with(const char *m, const char *reason)
{
	const char *p[] = { m, reason };
	PGresult *res = sqlp("SELECT count(*) FROM assignments WHERE match_id = $1 AND connection_generation > 0 "
			     "AND NOT connected AND disconnected_at IS NOT NULL AND disconnect_reason = $2",
			     2, p);
	long long v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

/* The match's end as migration 0016 records it: "started ended reason" ('-' for NULL). */
static void match_times(const char *m, char *out, size_t len)
{
	text1("SELECT CASE WHEN started_at IS NULL THEN '-' ELSE 'started' END || ' ' || "
	      "CASE WHEN ended_at IS NULL THEN '-' ELSE 'ended' END || ' ' || coalesce(end_reason, '-') "
	      "FROM matches WHERE id = $1", m, out, len);
}

struct close_tx {
	const char *match_id, *reason;
	int closed;
};

static int close_run(struct cc_pg *c, void *arg)
{
	struct close_tx *t = arg;
	return cc_server_close_connections(c, t->match_id, t->reason, &t->closed);
}

START_TEST(test_every_ending_closes_the_open_leases)
{
	char m[CC_UUID_BUF], times[96], left[CC_UUID_BUF];
	/* Server lost: both leases close "server_silent"; one that had ended keeps its own reason. */
	match_at("ranked", 1, S_IN_PROGRESS, 2, m);
	match_times(m, times, sizeof times);
	ck_assert_str_eq(times, "started - -");
	text1("SELECT player_id FROM match_players WHERE match_id = $1 ORDER BY team LIMIT 1", m, left, sizeof left);
	const char *pl[] = { m, left };
	PQclear(sqlp("UPDATE assignments SET connected = false, disconnected_at = now(), disconnect_reason = 'left' "
		     "WHERE match_id = $1 AND player_id = $2", 2, pl));
	ck_assert_int_eq(open_leases(m), 1);
	settle(SERVER_LOST, m, "server_silent");
	ck_assert_int_eq(open_leases(m), 0);
	ck_assert_int_eq(closed_with(m, "server_silent"), 1);
	ck_assert_int_eq(closed_with(m, "left"), 1);
	match_times(m, times, sizeof times);
	ck_assert_str_eq(times, "started ended server_silent");

	/* Result missing: all six close "result_missing". */
	match_at("casual", 3, S_RESULT_PENDING, 6, m);
	ck_assert_int_eq(open_leases(m), 6);
	settle(RESULT_MISSING, m, NULL);
	ck_assert_int_eq(open_leases(m), 0);
	ck_assert_int_eq(closed_with(m, "result_missing"), 6);
	match_times(m, times, sizeof times);
	ck_assert_str_eq(times, "started ended result_missing");

	/* Ranked no-show: the one who came closes "no_show"; the no-show's lease was never opened. */
	match_at("ranked", 1, S_IN_PROGRESS, 1, m);
	settle_on(pg, NO_SHOW, m, NULL, NULL, 0, 0);
	ck_assert_int_eq(open_leases(m), 0);
	ck_assert_int_eq(closed_with(m, "no_show"), 1);
	ck_assert_int_eq(ll1("SELECT count(*) FROM assignments WHERE match_id = $1 AND connection_generation = 0 "
			     "AND disconnected_at IS NULL AND disconnect_reason IS NULL", m), 1);
	match_times(m, times, sizeof times);
	ck_assert_str_eq(times, "started ended no_show");

	/* Casual no-show: the match plays on, so its players stay connected. */
	match_at("casual", 3, S_IN_PROGRESS, 2, m);
	struct cc_settle_outcome o = settle_on(pg, NO_SHOW, m, NULL, NULL, 0, 0);
	ck_assert(o.changed);
	ck_assert_int_eq(open_leases(m), 2);
	match_times(m, times, sizeof times);
	ck_assert_str_eq(times, "started - -");

	/* Stalled with a lease open (a connect whose start was lost): closed "stalled"; never started. */
	match_at("casual", 3, S_ASSIGNMENT_READY, 0, m);
	PQclear(sqlp("UPDATE assignments SET connected = true, connection_generation = 1, connection_id = 'c', "
		     "connected_at = now() WHERE match_id = $1 AND slot = 0", 1, (const char *const[]){ m }));
	settle(STALLED, m, NULL);
	ck_assert_int_eq(open_leases(m), 0);
	ck_assert_int_eq(closed_with(m, "stalled"), 1);
	match_times(m, times, sizeof times);
	ck_assert_str_eq(times, "- ended stalled");

	/* The owner's function itself: a malformed reason writes nothing; a match with none open closes none. */
	match_at("casual", 3, S_IN_PROGRESS, 3, m);
	struct close_tx t = { .match_id = m, .reason = "Match Over" };
	ck_assert_int_eq(cc_pg_run_serializable(pg, close_run, &t), CC_EINVAL);
	ck_assert_int_eq(open_leases(m), 3);
	t.reason = "match_over";
	ck_assert_int_eq(cc_pg_run_serializable(pg, close_run, &t), 0);
	ck_assert_int_eq(t.closed, 3);
	ck_assert_int_eq(closed_with(m, "match_over"), 3);
	ck_assert_int_eq(cc_pg_run_serializable(pg, close_run, &t), 0);
	ck_assert_int_eq(t.closed, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("match_settle");
	TCase *tc = tcase_create("settle");
	tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stalled_in_each_state_fails_requeues_and_frees);
	tcase_add_test(tc, test_server_lost_fails_unrated_and_unpenalised);
	tcase_add_test(tc, test_ranked_no_show_calls_the_match_off);
	tcase_add_test(tc, test_casual_no_show_is_only_penalised);
	tcase_add_test(tc, test_result_missing_fails_and_frees);
	tcase_add_test(tc, test_selectors_take_only_what_is_due);
	tcase_add_test(tc, test_concurrent_selectors_never_share_an_id);
	tcase_add_test(tc, test_race_no_show_from_api_and_sweeps);
	tcase_add_test(tc, test_race_stalled_from_many_callers);
	tcase_add_test(tc, test_selector_plans_use_their_indexes);
	tcase_add_test(tc, test_allocator_steps_lose_a_called_off_match);
	tcase_add_test(tc, test_every_ending_closes_the_open_leases);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
