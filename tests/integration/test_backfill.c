/*
 * store/backfill.c against the harness PostgreSQL (each test in its own
 * freshly migrated scratch database): who a vacated casual slot is
 * offered to, and the races the SQL fences (SPEC 9, issue 26).
 *
 * Matches are created as test_match_settle.c creates them (tickets seeded
 * QUEUED, the matcher's claim, every accept through store/proposals, the
 * allocator's rows seeded with SQL) and brought to IN_PROGRESS.
 *
 *  - the rule: the oldest QUEUED ticket of the match's playlist, build,
 *    protocol, with an RTT to its region within the limit, not in the
 *    match, ties by ticket id; a declined ticket is never offered the
 *    vacancy again (the next one is)
 *  - the playlist's cut-off (offer_until, migration 0023) holds for every
 *    offer: a decline or an expiry past it passes the vacancy to nobody,
 *    before it to the next ticket; an offer made before it is still
 *    accepted within its window
 *  - races, each run many times with threads on their own connections:
 *    many vacated reports of one vacancy make exactly one offer; accepts,
 *    declines and expiries of one offer settle it exactly once; two
 *    vacancies racing for one ticket leave it at most one OPEN offer;
 *    two complete accepts (ticket, match_players, seat, settle) of one
 *    vacancy seat exactly one player
 *  - the lock order (store/README.md "Lock order (matches and backfill
 *    offers)"): an expiry, a decline or an accept of an offer racing the
 *    vacated report that expires it, the interleaving forced, never
 *    deadlock (before cc_backfill_lock took the match first, 20 of 20
 *    rounds of each did)
 */
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
#include "store/backfill.h"
#include "store/formation_claim.h"
#include "store/game_servers.h"
#include "store/matches.h"
#include "store/proposals.h"
#include "store/rosters.h"
#include "store/server_routes.h"
#include "store/tickets.h"
#include "sys/banned.h"

#define RUNS 12   /* each race, this many times */
#define RACERS 6

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

/* ---- scratch database ------------------------------------------------------------------- */

static void scratch_setup(void)
{
	static int counter;
	const char *admin = cc_test_env("CC_TEST_PG_ADMIN_DSN");
	const char *slash = strrchr(admin, '/');
	char sql[128], mig_dir[4096], err[256];
	ck_assert_msg(slash && strcmp(slash, "/postgres") == 0, "CC_TEST_PG_ADMIN_DSN should end in /postgres");
	snprintf(db_name, sizeof db_name, "backfill_%d_%d", (int)getpid(), counter++);
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


/* ---- backfill fixtures ----------------------------------------------------------------- */

/* A QUEUED casual ticket (build, region RTT, queued secs_ago seconds ago); its id into out. */
static void queued(const char *build, const char *rtt_json, int secs_ago, char out[CC_UUID_BUF])
{
	char ago[16];
	snprintf(ago, sizeof ago, "%d", secs_ago);
	const char *p[] = { build, rtt_json, ago };
	PGresult *r = sqlp("WITH p AS (INSERT INTO players DEFAULT VALUES RETURNING id) "
			   "INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, "
			   "  predicted_rtt, queued_at, expires_at) "
			   "SELECT p.id, 'casual', 'QUEUED', $1, 1, 1500, 120, $2::jsonb, now() - make_interval(secs => $3::int), "
			   "  now() + interval '1 hour' FROM p RETURNING id",
			   3, p);
	snprintf(out, CC_UUID_BUF, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
}

/* Slot 0's current player and generation of match m. */
static void slot0(const char *m, char player[CC_UUID_BUF], int *gen)
{
	const char *p[] = { m };
	PGresult *r = sqlp("SELECT player_id, generation FROM assignments WHERE match_id = $1 AND slot = 0 "
			   "AND replaced_at IS NULL", 1, p);
	ck_assert_int_eq(PQntuples(r), 1);
	snprintf(player, CC_UUID_BUF, "%s", PQgetvalue(r, 0, 0));
	*gen = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
	PQclear(r);
}

static const struct cc_backfill_rules rules = { .window_seconds = 10, .max_rtt_ms = 100 };

struct report_tx {
	const char *match_id;
	const char *player_id;
	int generation;
	int64_t offer_for; /* remaining play - cut-off, as servers.c passes it */
	bool offered, live;
	enum cc_backfill_outcome outcome;
	struct cc_backfill_offer offer;
};

/* What POST /v1/servers/{id}/vacated runs (servers.c vacated_run), minus the HTTP. */
static int report_run(struct cc_pg *c, void *arg)
{
	struct report_tx *t = arg;
	bool current = false;
	int team = -1;
	t->offered = t->live = false;
	int rc = cc_backfill_vacancy(c, t->match_id, 0, t->player_id, t->generation, &current, &team, &t->live, &t->offer);
	if (rc != 0 || t->live)
		return rc;
	if (!current || team < 0)
		return CC_ESTATE;
	rc = cc_backfill_offer_next(c, t->match_id, 0, team, t->generation, t->player_id, &rules, &t->offer_for, &t->outcome,
				    &t->offer);
	t->offered = rc == 0 && t->outcome == CC_BACKFILL_OFFERED;
	return rc;
}

/* A vacated report of match m's slot 0, offer_for seconds of play before the cut-off. */
static struct report_tx report_for(const char *m, int64_t offer_for)
{
	struct report_tx t = { .match_id = m, .offer_for = offer_for };
	char player[CC_UUID_BUF];
	slot0(m, player, &t.generation);
	t.player_id = player;
	int rc = cc_pg_run_serializable(pg, report_run, &t);
	t.player_id = NULL; /* the caller's copy outlives this frame */
	ck_assert_msg(rc == 0, "report: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	return t;
}

static struct report_tx report(const char *m)
{
	return report_for(m, 3600);
}

struct settle_tx {
	const char *offer_id, *player_id, *state;
	bool won;
};

static int settle_run(struct cc_pg *c, void *arg)
{
	struct settle_tx *t = arg;
	struct cc_backfill_offer o;
	t->won = false;
	int rc = cc_backfill_lock(c, t->offer_id, t->player_id, &o);
	if (rc != 0 || strcmp(o.state, "OPEN") != 0)
		return rc;
	rc = cc_backfill_settle(c, &o, t->state);
	t->won = rc == 0;
	return rc;
}

static void settle(const struct cc_backfill_offer *o, const char *state)
{
	struct settle_tx t = { .offer_id = o->id, .player_id = o->player_id, .state = state };
	int rc = cc_pg_run_serializable(pg, settle_run, &t);
	ck_assert_msg(rc == 0 && t.won, "settle %s: %s", state, cc_errname(rc));
}

/* ---- the rule ------------------------------------------------------------------------ */

START_TEST(test_offer_goes_to_the_oldest_qualifying_ticket)
{
	char m[CC_UUID_BUF], old_wrong_build[CC_UUID_BUF], old_far[CC_UUID_BUF], old_no_rtt[CC_UUID_BUF];
	char a[CC_UUID_BUF], b[CC_UUID_BUF], young[CC_UUID_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	queued("other", "{\"eu\": 10}", 300, old_wrong_build);
	queued("settle", "{\"eu\": 150}", 300, old_far);
	queued("settle", "{\"us\": 10}", 300, old_no_rtt);
	queued("settle", "{\"eu\": 40}", 100, a);
	queued("settle", "{\"eu\": 40}", 100, b);
	queued("settle", "{\"eu\": 40}", 5, young);
	/* a and b queued at the same instant: the smaller id first. */
	const char *p[] = { a, b };
	PQclear(sqlp("UPDATE tickets SET queued_at = (SELECT queued_at FROM tickets WHERE id = $1) WHERE id = $2", 2, p));
	const char *first = strcmp(a, b) < 0 ? a : b, *second = strcmp(a, b) < 0 ? b : a;

	struct report_tx t = report(m);
	ck_assert(t.offered);
	ck_assert_str_eq(t.offer.ticket_id, first);
	ck_assert_str_eq(t.offer.state, "OPEN");
	ck_assert_int_eq(ll1("SELECT count(*) FROM outbox WHERE event = 'backfill.offered' AND resource_id = $1::uuid",
			     t.offer.id), 1);
	/* A second report of the vacancy: the live offer, no second one. */
	struct report_tx again = report(m);
	ck_assert(!again.offered && again.live);
	ck_assert_str_eq(again.offer.id, t.offer.id);

	/* Declined: the next ticket; the decliner is never offered this vacancy again. */
	settle(&t.offer, "DECLINED");
	struct report_tx next = report(m);
	ck_assert(next.offered);
	ck_assert_str_eq(next.offer.ticket_id, second);
	settle(&next.offer, "EXPIRED");
	struct report_tx last = report(m);
	ck_assert(last.offered);
	ck_assert_str_eq(last.offer.ticket_id, young);
	settle(&last.offer, "DECLINED");
	struct report_tx none = report(m);
	ck_assert(!none.offered && !none.live);
	ck_assert_int_eq(ll1("SELECT count(*) FROM penalties WHERE source_id = $1::uuid", m), 0);
}
END_TEST

START_TEST(test_offer_window_is_the_databases_clock)
{
	char m[CC_UUID_BUF], t1[CC_UUID_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	queued("settle", "{\"eu\": 40}", 10, t1);
	struct report_tx t = report(m);
	ck_assert(t.offered);
	struct cc_backfill_offer o;
	ck_assert_int_eq(cc_backfill_get(pg, t.offer.id, t.offer.player_id, &o), 0);
	ck_assert(!o.overdue);
	ck_assert_int_eq(ll1("SELECT extract(epoch FROM expires_at - created_at)::int FROM backfill_offers WHERE id = $1",
			     t.offer.id), 10);
	PQclear(sqlp("UPDATE backfill_offers SET expires_at = now() WHERE id = $1", 1, (const char *[]){ t.offer.id }));
	ck_assert_int_eq(cc_backfill_get(pg, t.offer.id, t.offer.player_id, &o), 0);
	ck_assert(o.overdue);
	/* Another player cannot read it. */
	ck_assert_int_eq(cc_backfill_get(pg, t.offer.id, m, &o), CC_ENOTFOUND);
}
END_TEST

/* ---- races ------------------------------------------------------------------------------ */

struct racer {
	int index;
	const char *match_id;
	const char *player_id;
	int generation;
	const char *offer_id, *offer_player;
	int offered, settled, seated, failures;
	char err[256];
};

static struct cc_pg *racer_connect(struct racer *r)
{
	struct cc_pg *c = NULL;
	if (cc_pg_connect(db_dsn, NULL, &c, r->err, sizeof r->err) != 0)
		r->failures++;
	return c;
}

static void *report_racer(void *arg)
{
	struct racer *r = arg;
	struct cc_pg *c = racer_connect(r);
	if (!c)
		return NULL;
	struct report_tx t = { .match_id = r->match_id, .player_id = r->player_id, .generation = r->generation,
			       .offer_for = 3600 };
	int rc = cc_pg_run_serializable(c, report_run, &t);
	if (rc != 0) {
		snprintf(r->err, sizeof r->err, "report: %s %s", cc_errname(rc), cc_pg_error_message(c));
		r->failures++;
	}
	r->offered += t.offered;
	cc_pg_free(c);
	return NULL;
}

static void run_racers(struct racer *rs, int n, void *(*fn)(void *))
{
	pthread_t th[RACERS];
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, fn, &rs[i]), 0);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(rs[i].failures == 0, "racer %d: %s", i, rs[i].err);
	}
}

START_TEST(test_race_vacated_reports_make_one_offer)
{
	for (int run = 0; run < RUNS; run++) {
		char m[CC_UUID_BUF], player[CC_UUID_BUF], t[3][CC_UUID_BUF];
		int gen;
		match_at("casual", 3, S_IN_PROGRESS, 6, m);
		for (int k = 0; k < 3; k++)
			queued("settle", "{\"eu\": 40}", 30 - k, t[k]);
		slot0(m, player, &gen);
		struct racer rs[RACERS];
		for (int i = 0; i < RACERS; i++)
			rs[i] = (struct racer){ .index = i, .match_id = m, .player_id = player, .generation = gen };
		run_racers(rs, RACERS, report_racer);
		int offered = 0;
		for (int i = 0; i < RACERS; i++)
			offered += rs[i].offered;
		ck_assert_int_eq(offered, 1);
		ck_assert_int_eq(ll1("SELECT count(*) FROM backfill_offers WHERE match_id = $1", m), 1);
		ck_assert_int_eq(ll1("SELECT count(*) FROM outbox WHERE event = 'backfill.offered'", NULL), run + 1);
	}
}
END_TEST

static const char *const settle_states[] = { "ACCEPTED", "DECLINED", "EXPIRED" };

static void *settle_racer(void *arg)
{
	struct racer *r = arg;
	struct cc_pg *c = racer_connect(r);
	if (!c)
		return NULL;
	struct settle_tx t = { .offer_id = r->offer_id, .player_id = r->offer_player, .state = settle_states[r->index % 3] };
	int rc = cc_pg_run_serializable(c, settle_run, &t);
	if (rc != 0 && rc != CC_ESTATE) {
		snprintf(r->err, sizeof r->err, "settle: %s %s", cc_errname(rc), cc_pg_error_message(c));
		r->failures++;
	}
	r->settled += t.won;
	cc_pg_free(c);
	return NULL;
}

START_TEST(test_race_responses_settle_an_offer_once)
{
	for (int run = 0; run < RUNS; run++) {
		char m[CC_UUID_BUF], t1[CC_UUID_BUF];
		match_at("casual", 3, S_IN_PROGRESS, 6, m);
		queued("settle", "{\"eu\": 40}", 30, t1);
		struct report_tx t = report(m);
		ck_assert(t.offered);
		struct racer rs[RACERS];
		for (int i = 0; i < RACERS; i++)
			rs[i] = (struct racer){ .index = i + run, .offer_id = t.offer.id, .offer_player = t.offer.player_id };
		run_racers(rs, RACERS, settle_racer);
		int settled = 0;
		for (int i = 0; i < RACERS; i++)
			settled += rs[i].settled;
		ck_assert_int_eq(settled, 1);
		ck_assert_int_eq(ll1("SELECT revision FROM backfill_offers WHERE id = $1", t.offer.id), 2);
		ck_assert_int_eq(ll1("SELECT count(*) FROM backfill_offers WHERE id = $1 AND state <> 'OPEN'", t.offer.id), 1);
	}
}
END_TEST

START_TEST(test_race_two_vacancies_one_ticket)
{
	for (int run = 0; run < RUNS; run++) {
		char m[2][CC_UUID_BUF], player[2][CC_UUID_BUF], t1[CC_UUID_BUF];
		int gen[2];
		struct racer rs[RACERS];
		for (int k = 0; k < 2; k++) {
			match_at("casual", 3, S_IN_PROGRESS, 6, m[k]);
			slot0(m[k], player[k], &gen[k]);
		}
		queued("settle", "{\"eu\": 40}", 30, t1);
		for (int i = 0; i < RACERS; i++)
			rs[i] = (struct racer){ .index = i, .match_id = m[i % 2], .player_id = player[i % 2], .generation = gen[i % 2] };
		run_racers(rs, RACERS, report_racer);
		ck_assert_int_eq(ll1("SELECT count(*) FROM backfill_offers WHERE ticket_id = $1 AND state = 'OPEN'", t1), 1);
	}
}
END_TEST

/* The store half of an accept (services/api/backfill.c accept_offer), with a stand-in manifest. */
static int accept_run(struct cc_pg *c, void *arg)
{
	struct racer *r = arg;
	struct cc_backfill_offer o;
	struct cc_match m;
	int n = 0;
	r->seated = 0;
	int rc = cc_backfill_lock(c, r->offer_id, r->offer_player, &o);
	if (rc != 0 || strcmp(o.state, "OPEN") != 0)
		return rc;
	if ((rc = cc_match_get(c, o.match_id, true, &m)) != 0 ||
	    (rc = cc_ticket_backfill_assign(c, o.ticket_id, o.match_id, &n, NULL)) != 0)
		return rc;
	if (n == 0)
		return 0;
	if ((rc = cc_match_add_backfill_player(c, &m, o.player_id, o.ticket_id, o.team)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	struct cc_roster_seat s = { .slot = o.slot, .team = o.team, .generation = o.generation + 1,
				    .join_token = "token2", .expires_unix = o.now_unix + 600 };
	snprintf(s.player_id, sizeof s.player_id, "%s", o.player_id);
	char digest[65];
	memset(digest, 'b', 64);
	digest[64] = '\0';
	if ((rc = cc_roster_backfill_seat(c, o.match_id, o.vacated_player_id, o.generation, &s, digest, "{}")) != 0 ||
	    (rc = cc_backfill_settle(c, &o, "ACCEPTED")) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	r->seated = 1;
	return 0;
}

static void *accept_racer(void *arg)
{
	struct racer *r = arg;
	struct cc_pg *c = racer_connect(r);
	if (!c)
		return NULL;
	int rc = cc_pg_run_serializable(c, accept_run, r);
	if (rc != 0) {
		snprintf(r->err, sizeof r->err, "accept: %s %s", cc_errname(rc), cc_pg_error_message(c));
		r->failures++;
	}
	cc_pg_free(c);
	return NULL;
}

START_TEST(test_race_accepts_seat_one_player)
{
	for (int run = 0; run < RUNS; run++) {
		char m[CC_UUID_BUF], t1[CC_UUID_BUF], leaver[CC_UUID_BUF];
		int gen;
		match_at("casual", 3, S_IN_PROGRESS, 6, m);
		slot0(m, leaver, &gen);
		queued("settle", "{\"eu\": 40}", 30, t1);
		struct report_tx t = report(m);
		ck_assert(t.offered);
		struct racer rs[RACERS];
		for (int i = 0; i < RACERS; i++)
			rs[i] = (struct racer){ .index = i, .offer_id = t.offer.id, .offer_player = t.offer.player_id };
		run_racers(rs, RACERS, accept_racer);
		int seated = 0;
		for (int i = 0; i < RACERS; i++)
			seated += rs[i].seated;
		ck_assert_int_eq(seated, 1);
		ck_assert_int_eq(ll1("SELECT count(*) FROM match_players WHERE match_id = $1", m), 7);
		ck_assert_int_eq(ll1("SELECT count(*) FROM assignments WHERE match_id = $1 AND slot = 0", m), 2);
		/* The slot's current assignment is the newcomer at generation + 1; the leaver's is kept, replaced. */
		char cur[CC_UUID_BUF];
		int cur_gen;
		slot0(m, cur, &cur_gen);
		ck_assert_str_eq(cur, t.offer.player_id);
		ck_assert_int_eq(cur_gen, gen + 1);
		const char *p[] = { m, leaver };
		PGresult *r = sqlp("SELECT replaced_at IS NOT NULL FROM assignments WHERE match_id = $1 AND player_id = $2", 2, p);
		ck_assert_str_eq(PQgetvalue(r, 0, 0), "t");
		PQclear(r);
		ck_assert_int_eq(ll1("SELECT count(*) FROM tickets WHERE id = $1 AND state = 'ASSIGNED'", t1), 1);
		/* A second accept of the settled vacancy finds nothing to do; the old vacancy is not current. */
		struct report_tx replay = { .match_id = m, .player_id = leaver, .generation = gen };
		bool current = true, live = false;
		int team;
		ck_assert_int_eq(cc_backfill_vacancy(pg, m, 0, leaver, gen, &current, &team, &live, &replay.offer), 0);
		ck_assert(!current && live);
		ck_assert_str_eq(replay.offer.state, "ACCEPTED");
	}
}
END_TEST

/* ---- the cut-off holds for every offer (migration 0023) ------------------------------- */

struct pass_on_tx {
	const char *offer_id, *player_id, *state;
	enum cc_backfill_outcome outcome;
	struct cc_backfill_offer next;
};

/* What a decline, or an expiry found by a read or a response, runs (services/api/backfill.c close_offer). */
static int pass_on_run(struct cc_pg *c, void *arg)
{
	struct pass_on_tx *t = arg;
	struct cc_backfill_offer o;
	int rc = cc_backfill_lock(c, t->offer_id, t->player_id, &o);
	if (rc == 0)
		rc = cc_backfill_settle(c, &o, t->state);
	if (rc == 0)
		rc = cc_backfill_offer_next(c, o.match_id, o.slot, o.team, o.generation, o.vacated_player_id, &rules, NULL,
					    &t->outcome, &t->next);
	return rc;
}

static struct pass_on_tx pass_on(const struct cc_backfill_offer *o, const char *state)
{
	struct pass_on_tx t = { .offer_id = o->id, .player_id = o->player_id, .state = state };
	int rc = cc_pg_run_serializable(pg, pass_on_run, &t);
	ck_assert_msg(rc == 0, "pass on (%s): %s %s", state, cc_errname(rc), cc_pg_error_message(pg));
	return t;
}

/* The match of m reaches its last minute: every offer of its vacancy was made an hour ago, with the cut-off passed. */
static void into_last_minute(const char *m)
{
	PQclear(sqlp("UPDATE backfill_offers SET created_at = created_at - interval '1 hour', "
		     "offer_until = now() - interval '1 second' WHERE match_id = $1", 1, (const char *[]){ m }));
}

static long long offers_of_ticket(const char *ticket)
{
	return ll1("SELECT count(*) FROM backfill_offers WHERE ticket_id = $1", ticket);
}

START_TEST(test_cut_off_holds_for_a_pass_on_after_a_decline)
{
	char m[CC_UUID_BUF], a[CC_UUID_BUF], b[CC_UUID_BUF], c[CC_UUID_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	queued("settle", "{\"eu\": 40}", 300, a);
	queued("settle", "{\"eu\": 40}", 200, b);
	queued("settle", "{\"eu\": 40}", 100, c);
	struct report_tx t = report_for(m, 120);
	ck_assert(t.offered);
	ck_assert_str_eq(t.offer.ticket_id, a);
	ck_assert_int_eq(ll1("SELECT extract(epoch FROM offer_until - created_at)::int FROM backfill_offers WHERE id = $1",
			     t.offer.id), 120);
	/* Declined before the cut-off: the next ticket, with the vacancy's offer_until carried over. */
	struct pass_on_tx d = pass_on(&t.offer, "DECLINED");
	ck_assert_int_eq(d.outcome, CC_BACKFILL_OFFERED);
	ck_assert_str_eq(d.next.ticket_id, b);
	const char *ids[] = { t.offer.id, d.next.id };
	PGresult *r = sqlp("SELECT (SELECT offer_until FROM backfill_offers WHERE id = $1) = "
			   "(SELECT offer_until FROM backfill_offers WHERE id = $2)", 2, ids);
	ck_assert_str_eq(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	/* Declined in the last minute: nobody else is offered the slot. */
	into_last_minute(m);
	struct pass_on_tx late = pass_on(&d.next, "DECLINED");
	ck_assert_int_eq(late.outcome, CC_BACKFILL_LAST_MINUTE);
	ck_assert_str_eq(cc_backfill_outcome_name(late.outcome), "last_minute");
	ck_assert_int_eq(offers_of_ticket(c), 0);
	ck_assert_int_eq(ll1("SELECT count(*) FROM backfill_offers WHERE match_id = $1 AND state = 'OPEN'", m), 0);
	ck_assert_int_eq(ll1("SELECT count(*) FROM outbox WHERE event = 'backfill.offered'", NULL), 2);
}
END_TEST

START_TEST(test_cut_off_holds_for_a_pass_on_after_an_expiry)
{
	char m[CC_UUID_BUF], a[CC_UUID_BUF], b[CC_UUID_BUF], c[CC_UUID_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	queued("settle", "{\"eu\": 40}", 300, a);
	queued("settle", "{\"eu\": 40}", 200, b);
	queued("settle", "{\"eu\": 40}", 100, c);
	struct report_tx t = report_for(m, 120);
	ck_assert(t.offered);
	/* Expired before the cut-off: passed on. */
	struct pass_on_tx e = pass_on(&t.offer, "EXPIRED");
	ck_assert_int_eq(e.outcome, CC_BACKFILL_OFFERED);
	ck_assert_str_eq(e.next.ticket_id, b);
	/* Expired in the last minute: not. */
	into_last_minute(m);
	struct pass_on_tx late = pass_on(&e.next, "EXPIRED");
	ck_assert_int_eq(late.outcome, CC_BACKFILL_LAST_MINUTE);
	ck_assert_int_eq(offers_of_ticket(c), 0);
}
END_TEST

START_TEST(test_cut_off_of_the_vacated_report)
{
	char m[CC_UUID_BUF], a[CC_UUID_BUF], b[CC_UUID_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	queued("settle", "{\"eu\": 40}", 300, a);
	/* Less than the cut-off left: nobody; exactly the cut-off left: offered (as remaining >= cut-off). */
	struct report_tx late = report_for(m, -1);
	ck_assert(!late.offered && !late.live);
	ck_assert_int_eq(late.outcome, CC_BACKFILL_LAST_MINUTE);
	ck_assert_int_eq(offers_of_ticket(a), 0);
	struct report_tx edge = report_for(m, 0);
	ck_assert(edge.offered);
	ck_assert_str_eq(edge.offer.ticket_id, a);
	/* Nobody qualifies before the cut-off: no_candidate, not last_minute. */
	settle(&edge.offer, "DECLINED");
	struct report_tx none = report_for(m, 600);
	ck_assert(!none.offered);
	ck_assert_int_eq(none.outcome, CC_BACKFILL_NO_CANDIDATE);
	/* A repeated report sets the vacancy's offer_until afresh from its remaining play. */
	queued("settle", "{\"eu\": 40}", 100, b);
	struct report_tx again = report_for(m, 600);
	ck_assert(again.offered);
	ck_assert_str_eq(again.offer.ticket_id, b);
	ck_assert_int_eq(ll1("SELECT extract(epoch FROM offer_until - created_at)::int FROM backfill_offers WHERE id = $1",
			     again.offer.id), 600);
	/* Out of range. */
	enum cc_backfill_outcome o;
	struct cc_backfill_offer out;
	int64_t bad = -3601;
	ck_assert_int_eq(cc_backfill_offer_next(pg, m, 0, 0, 1, a, &rules, &bad, &o, &out), CC_EINVAL);
	bad = 86401;
	ck_assert_int_eq(cc_backfill_offer_next(pg, m, 0, 0, 1, a, &rules, &bad, &o, &out), CC_EINVAL);
}
END_TEST

/* A pass-on of a vacancy with no offer to carry a cut-off from (none was ever made) offers nobody. */
START_TEST(test_pass_on_without_a_cut_off_offers_nobody)
{
	char m[CC_UUID_BUF], a[CC_UUID_BUF], player[CC_UUID_BUF];
	int gen;
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	slot0(m, player, &gen);
	queued("settle", "{\"eu\": 40}", 300, a);
	enum cc_backfill_outcome o = CC_BACKFILL_OFFERED;
	struct cc_backfill_offer out;
	ck_assert_int_eq(cc_backfill_offer_next(pg, m, 0, 0, gen, player, &rules, NULL, &o, &out), 0);
	ck_assert_int_eq(o, CC_BACKFILL_LAST_MINUTE);
	ck_assert_int_eq(offers_of_ticket(a), 0);
}
END_TEST

/* An offer made before the cut-off is answered within its window, even once the cut-off has passed. */
START_TEST(test_accept_after_the_cut_off_within_the_window)
{
	char m[CC_UUID_BUF], a[CC_UUID_BUF];
	match_at("casual", 3, S_IN_PROGRESS, 6, m);
	queued("settle", "{\"eu\": 40}", 300, a);
	struct report_tx t = report_for(m, 0);
	ck_assert(t.offered);
	into_last_minute(m);
	struct racer r = { .offer_id = t.offer.id, .offer_player = t.offer.player_id };
	int rc = cc_pg_run_serializable(pg, accept_run, &r);
	ck_assert_msg(rc == 0, "accept: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	ck_assert_int_eq(r.seated, 1);
	ck_assert_int_eq(ll1("SELECT count(*) FROM tickets WHERE id = $1 AND state = 'ASSIGNED'", a), 1);
}
END_TEST

/* ---- lock order: an offer's transition racing the vacated report ---------------------- */

/*
 * Each round: one OPEN offer of match m's slot 0 (to the older of two
 * queued tickets), then, each in its own SERIALIZABLE transaction on its
 * own connection, the offer route's transaction (services/api/backfill.c
 * offer_tx_run: an expiry found by a read, a decline, or an accept) and
 * the game server's repeated vacated report (services/api/servers.c
 * vacated_run), which finds the offer past its window and expires it.
 * The interleaving is forced: the offer route takes its lock
 * (cc_backfill_lock) first, then the report starts and runs until
 * PostgreSQL shows it waiting for the offer route, then the offer route
 * goes on. For the decline and the accept the offer's window closes
 * between the two transactions' starts (expires_at is set, by a third
 * session, between them), so the route still answers it while the report
 * sees it overdue. Each side's first attempt is run by hand, so a
 * deadlock is counted rather than retried; a failed attempt is then
 * retried as cc_pg_run_serializable retries the route.
 */
#define LOCK_ROUNDS 20

enum offer_path { P_EXPIRY, P_DECLINE, P_ACCEPT };

struct vacated_race {
	const char *match_id, *leaver;
	int generation;
	struct cc_backfill_offer offer;
	bool offered, live;
	enum cc_backfill_outcome outcome;
	int pid;
	int done; /* atomic: the first attempt ended */
	int first_rc, rc;
	bool deadlock; /* the first attempt ended in PostgreSQL's "deadlock detected" */
	char err[256];
};

/* What POST /v1/servers/{id}/vacated runs (servers.c vacated_run), minus the HTTP and the token. */
static int vacated_race_run(struct cc_pg *c, void *arg)
{
	struct vacated_race *v = arg;
	struct cc_server_allocation a;
	struct cc_match m;
	bool current = false;
	int team = -1;
	v->offered = v->live = false;
	int rc = cc_server_allocation_of_match(c, v->match_id, true, &a); /* caller_allocation: FOR UPDATE */
	if (rc == 0)
		rc = cc_match_get(c, a.match_id, true, &m);
	if (rc == 0)
		rc = cc_backfill_vacancy(c, m.id, 0, v->leaver, v->generation, &current, &team, &v->live, &v->offer);
	if (rc != 0)
		return rc;
	if (v->live && v->offer.overdue) {
		if ((rc = cc_backfill_settle(c, &v->offer, "EXPIRED")) != 0)
			return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
		v->live = false;
	}
	if (v->live)
		return 0; /* already_offered */
	if (!current || team < 0)
		return CC_ESTATE;
	int64_t offer_for = 3600;
	rc = cc_backfill_offer_next(c, m.id, 0, team, v->generation, v->leaver, &rules, &offer_for, &v->outcome, &v->offer);
	v->offered = rc == 0 && v->outcome == CC_BACKFILL_OFFERED;
	return rc;
}

static bool is_deadlock(const struct cc_pg *c)
{
	return strstr(cc_pg_error_message(c), "deadlock") != NULL;
}

/* One transaction by hand: BEGIN SERIALIZABLE, fn, COMMIT (or ROLLBACK); *deadlock when PostgreSQL said so. */
static int by_hand(struct cc_pg *c, cc_pg_tx_fn fn, void *arg, bool *deadlock)
{
	int rc = cc_pg_exec(c, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL);
	if (rc == 0)
		rc = fn(c, arg);
	if (rc == 0)
		rc = cc_pg_exec(c, "COMMIT", 0, NULL, NULL);
	*deadlock = rc != 0 && is_deadlock(c);
	if (rc != 0)
		if (cc_pg_exec(c, "ROLLBACK", 0, NULL, NULL) != 0)
			fprintf(stderr, "rollback: %s\n", cc_pg_error_message(c));
	return rc;
}

static void *vacated_racer(void *arg)
{
	struct vacated_race *v = arg;
	struct cc_pg *c = NULL;
	if (cc_pg_connect(db_dsn, NULL, &c, v->err, sizeof v->err) != 0) {
		v->rc = CC_EDB;
		__atomic_store_n(&v->done, 1, __ATOMIC_SEQ_CST);
		return NULL;
	}
	__atomic_store_n(&v->pid, cc_pg_backend_pid(c), __ATOMIC_SEQ_CST);
	v->first_rc = v->rc = by_hand(c, vacated_race_run, v, &v->deadlock);
	if (v->rc != 0)
		snprintf(v->err, sizeof v->err, "%s %s", cc_errname(v->rc), cc_pg_error_message(c));
	__atomic_store_n(&v->done, 1, __ATOMIC_SEQ_CST);
	if (v->rc == CC_ESERIALIZATION) /* as the route retries */
		v->rc = cc_pg_run_serializable(c, vacated_race_run, v);
	if (v->rc != 0)
		snprintf(v->err, sizeof v->err, "retry: %s %s", cc_errname(v->rc), cc_pg_error_message(c));
	cc_pg_free(c);
	return NULL;
}

struct offer_race {
	enum offer_path path;
	const char *offer_id, *player_id;
	struct cc_backfill_offer offer;
	bool seated, closed; /* answered: seated, or declined/expired by this transaction */
	bool saw_overdue;
	struct vacated_race *report; /* started once the lock is held (first attempt only) */
	pthread_t th;
	bool started, blocked;
};

/* The report started after the offer's lock, and ran until it waits for this transaction (or ended). */
static void start_the_report(struct cc_pg *c, struct offer_race *o)
{
	ck_assert_int_eq(pthread_create(&o->th, NULL, vacated_racer, o->report), 0);
	o->started = true;
	char me[16], them[16];
	snprintf(me, sizeof me, "%d", cc_pg_backend_pid(c));
	for (int i = 0; i < 30000; i++) {
		int pid = __atomic_load_n(&o->report->pid, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&o->report->done, __ATOMIC_SEQ_CST))
			return;
		if (pid) {
			snprintf(them, sizeof them, "%d", pid);
			const char *p[] = { me, them };
			PGresult *r = sqlp("SELECT $1::int = ANY (pg_blocking_pids($2::int))", 2, p);
			o->blocked = PQgetvalue(r, 0, 0)[0] == 't';
			PQclear(r);
			if (o->blocked)
				return;
		}
		usleep(1000);
	}
	ck_abort_msg("the vacated report neither waited for the offer's transaction nor ended in 30 s");
}

/* The offer's transition as services/api/backfill.c offer_tx_run makes it, minus the HTTP and the token. */
static int offer_race_run(struct cc_pg *c, void *arg)
{
	struct offer_race *o = arg;
	struct cc_match m;
	o->seated = o->closed = false;
	int rc = cc_backfill_lock(c, o->offer_id, o->player_id, &o->offer);
	if (rc != 0)
		return rc;
	o->saw_overdue = o->offer.overdue;
	if (o->report && !o->started)
		start_the_report(c, o);
	if (strcmp(o->offer.state, "OPEN") != 0)
		return 0; /* decided: the route answers it as it is (or 409) */
	const char *close = o->offer.overdue ? "EXPIRED" : o->path == P_DECLINE ? "DECLINED" : NULL;
	if (!close && o->path == P_ACCEPT) { /* accept_offer, with a stand-in manifest */
		int n = 0;
		if ((rc = cc_match_get(c, o->offer.match_id, true, &m)) != 0 ||
		    (rc = cc_ticket_backfill_assign(c, o->offer.ticket_id, o->offer.match_id, &n, NULL)) != 0)
			return rc;
		if (n == 0) {
			close = "EXPIRED";
		} else {
			if ((rc = cc_match_add_backfill_player(c, &m, o->offer.player_id, o->offer.ticket_id, o->offer.team)) != 0)
				return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
			struct cc_roster_seat s = { .slot = o->offer.slot, .team = o->offer.team,
						    .generation = o->offer.generation + 1, .join_token = "token2",
						    .expires_unix = o->offer.now_unix + 600 };
			snprintf(s.player_id, sizeof s.player_id, "%s", o->offer.player_id);
			char digest[65];
			memset(digest, 'b', 64);
			digest[64] = '\0';
			if ((rc = cc_roster_backfill_seat(c, o->offer.match_id, o->offer.vacated_player_id, o->offer.generation,
							  &s, digest, "{}")) != 0 ||
			    (rc = cc_backfill_settle(c, &o->offer, "ACCEPTED")) != 0)
				return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
			o->seated = true;
			return 0;
		}
	}
	if (!close)
		return 0; /* a read of an offer in its window */
	/* close_offer: settled, then offer_next (the match read without a lock, the pass-on) */
	enum cc_backfill_outcome outcome;
	struct cc_backfill_offer next;
	if ((rc = cc_backfill_settle(c, &o->offer, close)) != 0 || (rc = cc_match_get(c, o->offer.match_id, false, &m)) != 0)
		return rc;
	rc = cc_backfill_offer_next(c, o->offer.match_id, o->offer.slot, o->offer.team, o->offer.generation,
				    o->offer.vacated_player_id, &rules, NULL, &outcome, &next);
	o->closed = rc == 0;
	return rc;
}

static const char *const path_names[] = { "expiry", "decline", "accept" };

static void lock_race(enum offer_path path)
{
	int deadlocked = 0, route_deadlocks = 0, report_deadlocks = 0, forced = 0, route_first = 0;
	struct cc_pg *c = NULL;
	char err[256];
	ck_assert_int_eq(cc_pg_connect(db_dsn, NULL, &c, err, sizeof err), 0);
	for (int round = 0; round < LOCK_ROUNDS; round++) {
		char m[CC_UUID_BUF], leaver[CC_UUID_BUF], t1[CC_UUID_BUF], t2[CC_UUID_BUF], gen_s[16];
		int gen;
		match_at("casual", 3, S_IN_PROGRESS, 6, m);
		slot0(m, leaver, &gen);
		queued("settle", "{\"eu\": 40}", 30, t1);
		queued("settle", "{\"eu\": 40}", 20, t2);
		struct report_tx first = report(m);
		ck_assert(first.offered);
		ck_assert_msg(strcmp(first.offer.ticket_id, t1) == 0, "offered %s, t1 %s, t2 %s", first.offer.ticket_id, t1, t2);
		const char *po[] = { first.offer.id };
		if (path == P_EXPIRY) /* nobody answered in the window: both transactions find it overdue */
			PQclear(sqlp("UPDATE backfill_offers SET expires_at = now() - interval '1 second' WHERE id = $1", 1, po));

		struct vacated_race v = { .match_id = m, .leaver = leaver, .generation = gen };
		struct offer_race o = { .path = path, .offer_id = first.offer.id, .player_id = first.offer.player_id,
					.report = &v };
		bool deadlock = false;
		int rc = cc_pg_exec(c, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL);
		ck_assert_int_eq(rc, 0);
		if (path != P_EXPIRY) /* the window closes after this transaction's now() and before the report's */
			PQclear(sqlp("UPDATE backfill_offers SET expires_at = clock_timestamp() WHERE id = $1", 1, po));
		rc = offer_race_run(c, &o);
		if (rc == 0)
			rc = cc_pg_exec(c, "COMMIT", 0, NULL, NULL);
		deadlock = rc != 0 && is_deadlock(c);
		if (rc != 0)
			if (cc_pg_exec(c, "ROLLBACK", 0, NULL, NULL) != 0)
			fprintf(stderr, "rollback: %s\n", cc_pg_error_message(c));
		ck_assert_msg(o.started, "round %d: the offer's lock failed: %s %s", round, cc_errname(rc), cc_pg_error_message(c));
		ck_assert_msg(o.saw_overdue == (path == P_EXPIRY), "round %d: the %s saw the offer %s", round, path_names[path],
			      o.saw_overdue ? "overdue" : "in its window");
		ck_assert_msg(rc == 0 || rc == CC_ESERIALIZATION, "round %d: %s: %s %s", round, path_names[path],
			      cc_errname(rc), cc_pg_error_message(c));
		route_first += rc == 0;
		bool route_won = rc == 0;
		forced += o.blocked;
		o.report = NULL;
		if (rc != 0) { /* as the route retries */
			rc = cc_pg_run_serializable(c, offer_race_run, &o);
			ck_assert_msg(rc == 0, "round %d: %s retry: %s %s", round, path_names[path], cc_errname(rc),
				      cc_pg_error_message(c));
		}
		pthread_join(o.th, NULL);
		ck_assert_msg(v.first_rc == 0 || v.first_rc == CC_ESERIALIZATION, "round %d: report: %s", round, v.err);
		ck_assert_msg(v.rc == 0, "round %d: report: %s", round, v.err);
		deadlocked += deadlock || v.deadlock;
		route_deadlocks += deadlock;
		report_deadlocks += v.deadlock;

		/* One consistent end: the first offer decided, at most one live offer of the vacancy, one OPEN per ticket. */
		snprintf(gen_s, sizeof gen_s, "%d", gen);
		const char *pv[] = { m, gen_s };
		PGresult *r = sqlp("SELECT count(*) FILTER (WHERE state IN ('OPEN', 'ACCEPTED')), "
				   "  count(*) FILTER (WHERE state = 'ACCEPTED'), count(*) FROM backfill_offers "
				   "WHERE match_id = $1 AND slot = 0 AND generation = $2::int", 2, pv);
		long long live = strtoll(PQgetvalue(r, 0, 0), NULL, 10), accepted = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		long long offers = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
		PQclear(r);
		ck_assert_msg(live == 1, "round %d: %lld live offers of the vacancy", round, live);
		ck_assert_int_le(offers, 2);
		ck_assert_int_eq(ll1("SELECT count(*) FROM backfill_offers WHERE id = $1 AND state = 'OPEN'", first.offer.id), 0);
		ck_assert_int_eq(ll1("SELECT count(*) FROM (SELECT ticket_id FROM backfill_offers WHERE state = 'OPEN' "
				     "GROUP BY ticket_id HAVING count(*) > 1) x", NULL), 0);
		ck_assert_int_eq(ll1("SELECT count(*) FROM backfill_offers o WHERE o.match_id = $1 AND (SELECT count(*) "
				     "FROM outbox x WHERE x.event = 'backfill.offered' AND x.resource_id = o.id) <> 1", m), 0);
		/* The accepted player holds the slot (and the match) at most once, and only with its offer ACCEPTED. */
		const char *pp[] = { m, first.offer.player_id };
		r = sqlp("SELECT (SELECT count(*) FROM assignments WHERE match_id = $1 AND player_id = $2 AND replaced_at IS NULL), "
			 "(SELECT count(*) FROM match_players WHERE match_id = $1 AND player_id = $2)", 2, pp);
		long long seats = strtoll(PQgetvalue(r, 0, 0), NULL, 10), plays = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		PQclear(r);
		ck_assert_int_eq(seats, accepted);
		ck_assert_int_eq(plays, accepted);
		ck_assert_int_eq(ll1("SELECT count(*) FROM tickets WHERE id = $1 AND state = 'ASSIGNED'", t1), accepted);
		if (accepted) {
			char cur[CC_UUID_BUF];
			int cur_gen;
			slot0(m, cur, &cur_gen);
			ck_assert_str_eq(cur, first.offer.player_id);
			ck_assert_int_eq(cur_gen, gen + 1);
		} else { /* passed on once, to the other ticket */
			ck_assert_int_eq(ll1("SELECT count(*) FROM backfill_offers WHERE ticket_id = $1 AND state = 'OPEN'", t2), 1);
		}
		if (route_won) { /* the route decided the offer; the report's retry answered the live offer, made none */
			static const char *const decided[] = { "EXPIRED", "DECLINED", "ACCEPTED" };
			const char *pd[] = { first.offer.id, decided[path] };
			r = sqlp("SELECT count(*) FROM backfill_offers WHERE id = $1 AND state = $2", 2, pd);
			ck_assert_msg(strcmp(PQgetvalue(r, 0, 0), "1") == 0, "round %d: the route's %s did not stick", round,
				      decided[path]);
			PQclear(r);
			ck_assert_msg(!v.offered && v.live, "round %d: the report's retry made an offer", round);
		}
		/* This round's queued tickets out of the next rounds' way (a pick skips an expired ticket). */
		const char *pt[] = { t1, t2 };
		PQclear(sqlp("UPDATE tickets SET expires_at = now() WHERE id IN ($1, $2) AND state = 'QUEUED'", 2, pt));
	}
	cc_pg_free(c);
	fprintf(stderr, "lock race (%s): %d of %d rounds deadlocked (the route's transaction the victim %d times, the "
		"report's %d), %d forced (the report waited for the route's transaction), %d committed by the route "
		"at its first attempt\n",
		path_names[path], deadlocked, LOCK_ROUNDS, route_deadlocks, report_deadlocks, forced, route_first);
	ck_assert_msg(forced == LOCK_ROUNDS, "only %d of %d rounds forced the interleaving", forced, LOCK_ROUNDS);
	ck_assert_msg(deadlocked == 0, "%s: %d of %d rounds deadlocked", path_names[path], deadlocked, LOCK_ROUNDS);
}

START_TEST(test_lock_race_expiry_and_vacated_report)
{
	lock_race(P_EXPIRY);
}
END_TEST

START_TEST(test_lock_race_decline_and_vacated_report)
{
	lock_race(P_DECLINE);
}
END_TEST

START_TEST(test_lock_race_accept_and_vacated_report)
{
	lock_race(P_ACCEPT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("backfill");
	TCase *tc = tcase_create("store");
	tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_offer_goes_to_the_oldest_qualifying_ticket);
	tcase_add_test(tc, test_offer_window_is_the_databases_clock);
	tcase_add_test(tc, test_cut_off_holds_for_a_pass_on_after_a_decline);
	tcase_add_test(tc, test_cut_off_holds_for_a_pass_on_after_an_expiry);
	tcase_add_test(tc, test_cut_off_of_the_vacated_report);
	tcase_add_test(tc, test_pass_on_without_a_cut_off_offers_nobody);
	tcase_add_test(tc, test_accept_after_the_cut_off_within_the_window);
	tcase_add_test(tc, test_race_vacated_reports_make_one_offer);
	tcase_add_test(tc, test_race_responses_settle_an_offer_once);
	tcase_add_test(tc, test_race_two_vacancies_one_ticket);
	tcase_add_test(tc, test_race_accepts_seat_one_player);
	tcase_add_test(tc, test_lock_race_expiry_and_vacated_report);
	tcase_add_test(tc, test_lock_race_decline_and_vacated_report);
	tcase_add_test(tc, test_lock_race_accept_and_vacated_report);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(suite());
}
