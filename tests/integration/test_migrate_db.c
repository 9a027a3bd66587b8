/*
 * The migrated database against the contract, and the migrate library
 * driven directly. Each test migrates its own scratch database (created
 * through CC_TEST_PG_ADMIN_DSN, dropped afterwards) with cc_migrate_up, so
 * this also proves the library entry points the binary uses.
 *
 *  - state_transitions rows == contracts/v1/state-transitions.json == C table
 *  - the trigger refuses every move the C table refuses and allows every
 *    move it allows, for every pair of states, with SQLSTATE CC001
 *  - one active ticket per player
 *  - the advisory lock: a held lock makes up time out and change nothing
 *  - up/down/status counts through the library
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <libpq-fe.h>

#include "sys/cc.h"
#include "sys/clock.h"
#include "sys/migrate.h"
#include "support.h"
#include "game/transitions.h"
#include "sys/banned.h"

static char db_name[64];   /* this test's scratch database */
static char db_dsn[1024];  /* its URI */
static char mig_dir[4096]; /* the repository's migrations */
static PGconn *db;         /* a session on the scratch database */

/* Runs sql on conn and asserts it succeeded; returns the result (caller clears). */
static PGresult *must(PGconn *conn, const char *sql)
{
	PGresult *res = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(res);
	ck_assert_msg(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s\n  failed: %s", sql,
		      PQerrorMessage(conn));
	return res;
}

static void must_exec(PGconn *conn, const char *sql)
{
	PQclear(must(conn, sql));
}

static PGconn *connect_or_fail(const char *dsn)
{
	PGconn *conn = PQconnectdb(dsn);
	ck_assert_msg(PQstatus(conn) == CONNECTION_OK, "cannot connect: %s", PQerrorMessage(conn));
	return conn;
}

/* Creates the scratch database and points db_dsn at it (no migrations yet). */
static void scratch_create(void)
{
	static int counter;
	const char *admin = cc_test_env("CC_TEST_PG_ADMIN_DSN");
	const char *slash = strrchr(admin, '/');
	char sql[128];

	ck_assert_msg(slash && strcmp(slash, "/postgres") == 0,
		      "CC_TEST_PG_ADMIN_DSN should be a URI ending in /postgres: %s", admin);
	snprintf(db_name, sizeof db_name, "migdb_%d_%d", (int)getpid(), counter++);
	snprintf(db_dsn, sizeof db_dsn, "%.*s/%s", (int)(slash - admin), admin, db_name);
	const char *top = getenv("CC_TOP");
	snprintf(mig_dir, sizeof mig_dir, "%s/migrations", top && *top ? top : ".");

	PGconn *adm = connect_or_fail(admin);
	snprintf(sql, sizeof sql, "CREATE DATABASE %s", db_name);
	must_exec(adm, sql);
	PQfinish(adm);
	db = connect_or_fail(db_dsn);
	PQsetNoticeProcessor(db, NULL, NULL);
}

static void scratch_drop(void)
{
	char sql[128];
	PQfinish(db);
	db = NULL;
	PGconn *adm = connect_or_fail(cc_test_env("CC_TEST_PG_ADMIN_DSN"));
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db_name);
	must_exec(adm, sql);
	PQfinish(adm);
}

static struct cc_migrate_options options(int64_t lock_timeout_ms)
{
	return (struct cc_migrate_options){ .dsn = db_dsn, .dir = mig_dir, .lock_timeout_ms = lock_timeout_ms };
}

/* Applies every migration with the library; returns how many there are. */
static int migrate_all(void)
{
	struct cc_migrate_options opt = options(10000);
	struct cc_migrate_error err;
	int n = -1;
	int rc = cc_migrate_up(&opt, &n, &err);
	ck_assert_msg(rc == 0, "cc_migrate_up: %s: %s", cc_errname(rc), err.message);
	ck_assert_int_ge(n, 2);
	return n;
}

/* Reads and parses the contract (caller deletes). */
static cJSON *load_contract(void)
{
	const char *top = getenv("CC_TOP");
	char path[4096];
	snprintf(path, sizeof path, "%s/contracts/v1/state-transitions.json", top && *top ? top : ".");
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f, "cannot open %s", path);
	static char text[1024 * 1024];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	cJSON *doc = cJSON_Parse(text);
	ck_assert_msg(doc, "%s is not JSON", path);
	return doc;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Every machine of the contract as "machine:from>to" lines ('' from for initial states), sorted. */
static void contract_pairs(char *out, size_t len)
{
	cJSON *doc = load_contract();
	static char lines[256][64];
	int n = 0;
	const cJSON *m, *it;
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "machines"))
	{
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(m, "initial"))
		{
			ck_assert_int_lt(n, 256);
			snprintf(lines[n++], sizeof lines[0], "%s:>%s", m->string, it->valuestring);
		}
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(m, "transitions"))
		{
			ck_assert_int_lt(n, 256);
			snprintf(lines[n++], sizeof lines[0], "%s:%s>%s", m->string,
				 cJSON_GetObjectItemCaseSensitive(it, "from")->valuestring,
				 cJSON_GetObjectItemCaseSensitive(it, "to")->valuestring);
		}
	}
	cJSON_Delete(doc);
	qsort(lines, (size_t)n, sizeof lines[0], cmp_line);
	out[0] = '\0';
	size_t used = 0;
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(out + used, len - used, "%s\n", lines[i]);
	ck_assert_uint_lt(used, len);
}

START_TEST(test_database_rows_equal_contract)
{
	static char from_contract[16384], from_db[16384];
	from_db[0] = '\0';
	migrate_all();
	contract_pairs(from_contract, sizeof from_contract);
	/* COLLATE "C": the same byte order as strcmp in contract_pairs. */
	PGresult *res = must(db, "SELECT machine || ':' || from_state || '>' || to_state FROM state_transitions"
				 " ORDER BY machine || ':' || from_state || '>' || to_state COLLATE \"C\"");
	size_t used = 0;
	for (int i = 0; i < PQntuples(res); i++)
		used += (size_t)snprintf(from_db + used, sizeof from_db - used, "%s\n", PQgetvalue(res, i, 0));
	PQclear(res);
	ck_assert_msg(strcmp(from_contract, from_db) == 0,
		      "state_transitions differs from the contract\ncontract:\n%s\ndatabase:\n%s", from_contract,
		      from_db);

}
END_TEST

/* Shortest legal path from creation (QUEUED) to target, by the C table. */
static int path_to(enum cc_ticket_state target, enum cc_ticket_state path[CC_TICKET_STATE_COUNT])
{
	int prev[CC_TICKET_STATE_COUNT];
	int queue[CC_TICKET_STATE_COUNT], head = 0, tail = 0;
	for (int i = 0; i < CC_TICKET_STATE_COUNT; i++)
		prev[i] = -2;
	prev[CC_TICKET_QUEUED] = -1;
	queue[tail++] = CC_TICKET_QUEUED;
	while (head < tail) {
		int s = queue[head++];
		for (int t = 0; t < CC_TICKET_STATE_COUNT; t++) {
			if (prev[t] == -2 &&
			    cc_ticket_transition_allowed((enum cc_ticket_state)s, (enum cc_ticket_state)t)) {
				prev[t] = s;
				queue[tail++] = t;
			}
		}
	}
	ck_assert_msg(prev[target] != -2, "state %s cannot be reached from QUEUED", cc_ticket_state_name(target));
	int n = 0;
	for (int s = (int)target; s != -1; s = prev[s])
		path[n++] = (enum cc_ticket_state)s;
	for (int i = 0; i < n / 2; i++) {
		enum cc_ticket_state tmp = path[i];
		path[i] = path[n - 1 - i];
		path[n - 1 - i] = tmp;
	}
	return n;
}

/* Runs sql with params; returns NULL on success or the SQLSTATE and message in buf. */
static const char *try_exec(const char *sql, int n, const char *const *params, char *buf, size_t len)
{
	PGresult *res = PQexecParams(db, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	const char *out = NULL;
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		snprintf(buf, len, "%s %s", state ? state : "?????", msg ? msg : PQerrorMessage(db));
		out = buf;
	}
	PQclear(res);
	return out;
}

/* Inserts a player with a QUEUED ticket, walks it to target; writes the ticket id. */
static void ticket_in(enum cc_ticket_state target, char id[CC_UUID_BUF])
{
	enum cc_ticket_state path[CC_TICKET_STATE_COUNT];
	char buf[512];
	int n = path_to(target, path);
	PGresult *res = must(db, "WITH p AS (INSERT INTO players DEFAULT VALUES RETURNING id)"
				 " INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, expires_at)"
				 " SELECT id, 'casual', 'QUEUED', 'b', 1, 1500, 350, now() FROM p RETURNING id");
	snprintf(id, CC_UUID_BUF, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	for (int i = 1; i < n; i++) {
		const char *params[2] = { cc_ticket_state_name(path[i]), id };
		const char *fail = try_exec("UPDATE tickets SET state = $1 WHERE id = $2", 2, params, buf, sizeof buf);
		ck_assert_msg(!fail, "walking a ticket to %s: %s -> %s refused: %s", cc_ticket_state_name(target),
			      cc_ticket_state_name(path[i - 1]), cc_ticket_state_name(path[i]), fail);
	}
}

START_TEST(test_trigger_agrees_with_table_for_every_pair)
{
	char buf[512], expect_msg[128];
	migrate_all();
	must_exec(db, "BEGIN");
	for (int f = 0; f < CC_TICKET_STATE_COUNT; f++) {
		char id[CC_UUID_BUF];
		ticket_in((enum cc_ticket_state)f, id);
		for (int t = 0; t < CC_TICKET_STATE_COUNT; t++) {
			const char *from = cc_ticket_state_name((enum cc_ticket_state)f);
			const char *to = cc_ticket_state_name((enum cc_ticket_state)t);
			const char *params[2] = { to, id };
			bool allowed = f == t || /* an unchanged state is not a move */
				       cc_ticket_transition_allowed((enum cc_ticket_state)f, (enum cc_ticket_state)t);
			must_exec(db, "SAVEPOINT attempt");
			const char *fail = try_exec("UPDATE tickets SET state = $1, revision = revision + 1 WHERE id = $2",
						    2, params, buf, sizeof buf);
			must_exec(db, "ROLLBACK TO SAVEPOINT attempt");
			if (allowed) {
				ck_assert_msg(!fail, "%s -> %s is legal but the database refused it: %s", from, to, fail);
				continue;
			}
			snprintf(expect_msg, sizeof expect_msg, CC_SQLSTATE_ILLEGAL_TRANSITION " illegal_transition: ticket %s -> %s",
				 from, to);
			ck_assert_msg(fail && strcmp(fail, expect_msg) == 0,
				      "%s -> %s is illegal: expected the database to say [%s], it said [%s]", from, to,
				      expect_msg, fail ? fail : "(nothing: the update succeeded)");
		}
	}
	/* Creation: only the initial state. */
	PGresult *res = must(db, "INSERT INTO players DEFAULT VALUES RETURNING id");
	char player[CC_UUID_BUF];
	snprintf(player, sizeof player, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	for (int s = 0; s < CC_TICKET_STATE_COUNT; s++) {
		const char *name = cc_ticket_state_name((enum cc_ticket_state)s);
		const char *params[2] = { player, name };
		must_exec(db, "SAVEPOINT attempt");
		const char *fail = try_exec("INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, expires_at) VALUES ($1, 'ranked', $2, 'b', 1, 1500, 350, now())", 2,
					    params, buf, sizeof buf);
		must_exec(db, "ROLLBACK TO SAVEPOINT attempt");
		if (cc_ticket_state_is_initial((enum cc_ticket_state)s)) {
			ck_assert_msg(!fail, "creating a ticket in %s was refused: %s", name, fail);
		} else {
			snprintf(expect_msg, sizeof expect_msg,
				 CC_SQLSTATE_ILLEGAL_TRANSITION " illegal_transition: ticket (insert) -> %s", name);
			ck_assert_msg(fail && strcmp(fail, expect_msg) == 0, "insert in %s: expected [%s], got [%s]", name,
				      expect_msg, fail ? fail : "(accepted)");
		}
	}
	const char *bogus[2] = { player, "LIMBO" };
	ck_assert_ptr_nonnull(
		try_exec("INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, expires_at) VALUES ($1, 'ranked', $2, 'b', 1, 1500, 350, now())", 2, bogus, buf, sizeof buf));
	must_exec(db, "ROLLBACK");
}
END_TEST

/* The examples from the brief, outside any savepoint games: committed state
 * stays put after a refused move, and other columns update freely. */
START_TEST(test_refused_move_leaves_row_unchanged)
{
	char id[CC_UUID_BUF], buf[512];
	migrate_all();
	ticket_in(CC_TICKET_COMPLETED, id);
	const char *params[2] = { "QUEUED", id };
	const char *fail = try_exec("UPDATE tickets SET state = $1 WHERE id = $2", 2, params, buf, sizeof buf);
	ck_assert_msg(fail && strcmp(fail, "CC001 illegal_transition: ticket COMPLETED -> QUEUED") == 0, "got %s",
		      fail ? fail : "(accepted)");
	const char *idp[1] = { id };
	ck_assert_ptr_null(try_exec("UPDATE tickets SET revision = revision + 1, state = state WHERE id = $1", 1, idp,
				    buf, sizeof buf));
	PGresult *res = PQexecParams(db, "SELECT state, revision FROM tickets WHERE id = $1", 1, NULL, idp, NULL, NULL, 0);
	ck_assert_int_eq(PQntuples(res), 1);
	ck_assert_str_eq(PQgetvalue(res, 0, 0), "COMPLETED");
	PQclear(res);
}
END_TEST

START_TEST(test_one_active_ticket_per_player)
{
	char buf[512];
	migrate_all();
	PGresult *res = must(db, "INSERT INTO players DEFAULT VALUES RETURNING id");
	char player[CC_UUID_BUF];
	snprintf(player, sizeof player, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	const char *p[1] = { player };
	const char *insert = "INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, expires_at) VALUES ($1, 'casual', 'QUEUED', 'b', 1, 1500, 350, now())";
	ck_assert_ptr_null(try_exec(insert, 1, p, buf, sizeof buf));
	const char *fail = try_exec(insert, 1, p, buf, sizeof buf);
	ck_assert_msg(fail && strncmp(fail, "23505", 5) == 0, "second active ticket: %s", fail ? fail : "(accepted)");
	ck_assert_ptr_null(try_exec("UPDATE tickets SET state = 'CANCELLED' WHERE player_id = $1", 1, p, buf, sizeof buf));
	ck_assert_msg(!try_exec(insert, 1, p, buf, sizeof buf), "a new ticket after a cancelled one: %s", buf);
	const char *bad_playlist = "INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, expires_at) VALUES ($1, 'arcade', 'QUEUED', 'b', 1, 1500, 350, now())";
	must_exec(db, "UPDATE tickets SET state = 'CANCELLED' WHERE state = 'QUEUED'");
	fail = try_exec(bad_playlist, 1, p, buf, sizeof buf);
	/* The playlists table decides (migration 0007): a foreign key, not a list of names. */
	ck_assert_msg(fail && strncmp(fail, "23503", 5) == 0 && strstr(fail, "tickets_playlist_fk"), "playlist 'arcade': %s",
		      fail ? fail : "(accepted)");
}
END_TEST

START_TEST(test_held_lock_times_out_and_changes_nothing)
{
	char key[32];
	struct cc_migrate_error err;
	snprintf(key, sizeof key, "%lld", (long long)CC_MIGRATE_LOCK_KEY);
	const char *params[1] = { key };
	PGconn *holder = connect_or_fail(db_dsn);
	PGresult *res = PQexecParams(holder, "SELECT pg_advisory_lock($1::bigint)", 1, NULL, params, NULL, NULL, 0);
	ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
	PQclear(res);

	struct cc_migrate_options opt = options(300);
	int n = -1;
	double start = ((double)cc_clock_ns() / 1e6);
	int rc = cc_migrate_up(&opt, &n, &err);
	double waited = ((double)cc_clock_ns() / 1e6) - start;
	ck_assert_msg(rc == CC_ETIMEOUT, "up under a held lock: %s (%s)", cc_errname(rc), err.message);
	ck_assert_msg(strstr(err.message, "timed out after 300 ms waiting for the migration lock"), "%s", err.message);
	ck_assert_int_eq(n, 0);
	ck_assert_msg(waited >= 250 && waited < 10000, "waited %.0f ms for a 300 ms lock timeout", waited);
	res = must(db, "SELECT to_regclass('schema_migrations') IS NULL");
	ck_assert_str_eq(PQgetvalue(res, 0, 0), "t");
	PQclear(res);
	struct cc_migrate_summary sum;
	ck_assert_int_eq(cc_migrate_status(&opt, &sum, &err), 0); /* status takes no lock */

	PQfinish(holder); /* releases the lock */
	rc = cc_migrate_up(&opt, &n, &err);
	ck_assert_msg(rc == 0, "up after the lock was released: %s", err.message);
	ck_assert_int_eq(n, sum.pending);
}
END_TEST

START_TEST(test_library_up_down_status_counts)
{
	struct cc_migrate_options opt = options(10000);
	struct cc_migrate_error err;
	struct cc_migrate_summary sum;
	int n_files, n;

	ck_assert_int_eq(cc_migrate_status(&opt, &sum, &err), 0);
	ck_assert_int_eq(sum.applied, 0);
	ck_assert_int_eq(sum.problems, 0);
	n_files = sum.pending;
	ck_assert_int_eq(migrate_all(), n_files);
	ck_assert_int_eq(cc_migrate_status(&opt, &sum, &err), 0);
	ck_assert_int_eq(sum.applied, n_files);
	ck_assert_int_eq(sum.pending, 0);

	ck_assert_int_eq(cc_migrate_down(&opt, 0, &n, &err), CC_EINVAL);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(cc_migrate_down(&opt, n_files + 1, &n, &err), CC_EINVAL);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(cc_migrate_down(&opt, 1, &n, &err), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cc_migrate_status(&opt, &sum, &err), 0);
	ck_assert_int_eq(sum.applied, n_files - 1);
	ck_assert_int_eq(sum.pending, 1);
	ck_assert_int_eq(cc_migrate_down(&opt, -1, &n, &err), 0);
	ck_assert_int_eq(n, n_files - 1);
	ck_assert_int_eq(cc_migrate_down(&opt, -1, &n, &err), 0); /* nothing left: fine */
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(cc_migrate_status(&opt, &sum, &err), 0);
	ck_assert_int_eq(sum.pending, n_files);

	opt.dsn = "postgresql://cc@127.0.0.1:1/nowhere?connect_timeout=5";
	ck_assert_int_eq(cc_migrate_up(&opt, &n, &err), CC_EUNAVAILABLE);
	ck_assert_msg(strstr(err.message, "cannot connect to the database"), "%s", err.message);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("migrate_db");
	TCase *tc = tcase_create("db");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, scratch_create, scratch_drop);
	tcase_add_test(tc, test_database_rows_equal_contract);
	tcase_add_test(tc, test_trigger_agrees_with_table_for_every_pair);
	tcase_add_test(tc, test_refused_move_leaves_row_unchanged);
	tcase_add_test(tc, test_one_active_ticket_per_player);
	tcase_add_test(tc, test_held_lock_times_out_and_changes_nothing);
	tcase_add_test(tc, test_library_up_down_status_counts);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
