/*
 * pg.c against the harness PostgreSQL: parameters, error classification,
 * SERIALIZABLE retries driven by real serialization failures, "a clear
 * error, never a hang" (refused port, silent listener, killed backend,
 * slow statement), prepared statements, LISTEN/NOTIFY and the pool.
 *
 * Every test makes its own tables (names carry the pid and a counter) and
 * drops them. Nothing sleeps to synchronise: waits poll a condition with a
 * deadline and report what they saw.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/pg.h"
#include "support.h"

#include "sys/banned.h"

/* ---- helpers --------------------------------------------------------------- */

static struct cc_pg *open_pg(const struct cc_pg_options *opt)
{
	struct cc_pg *pg = NULL;
	char err[512];
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), opt, &pg, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
	return pg;
}

/* Runs sql (params as text) and fails the test with the server's words. */
static void exec_ok(struct cc_pg *pg, const char *sql, int n, const char *const *params)
{
	int rc = cc_pg_exec(pg, sql, n, params, NULL);
	ck_assert_msg(rc == 0, "%s: %s [%s] %s", sql, cc_errname(rc), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
}

/* First cell of a one-row query as an integer. */
static int64_t query_int(struct cc_pg *pg, const char *sql, int n, const char *const *params)
{
	PGresult *res = NULL;
	int64_t v = 0;
	int rc = cc_pg_exec(pg, sql, n, params, &res);
	ck_assert_msg(rc == 0, "%s: %s [%s] %s", sql, cc_errname(rc), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
	ck_assert_msg(cc_pg_get_int64(res, 0, 0, &v) == 0, "%s: no integer in the first cell", sql);
	PQclear(res);
	return v;
}

/* A table name unique to this process and call: "cc_pg_t_<pid>_<n>". */
static void table_name(char *buf, size_t len, const char *what)
{
	static int n;
	snprintf(buf, len, "cc_pg_%s_%ld_%d", what, (long)getpid(), ++n);
}

/* Copies fmt with every "%s" replaced by table (test SQL only; no printf,
 * so the statement text needs no format-string escaping). */
static const char *sqlf(char *buf, size_t len, const char *fmt, const char *table)
{
	size_t n = 0, tl = strlen(table);
	for (; *fmt; fmt++) {
		if (fmt[0] == '%' && fmt[1] == 's') {
			ck_assert_uint_lt(n + tl, len);
			memcpy(buf + n, table, tl);
			n += tl;
			fmt++;
			continue;
		}
		ck_assert_uint_lt(n + 1, len);
		buf[n++] = *fmt;
	}
	buf[n] = '\0';
	return buf;
}

/* Ends backend pid from another connection and waits for it to be gone. */
static void terminate_backend(int pid)
{
	struct cc_pg *admin = open_pg(NULL);
	char pidtext[16];
	const char *params[] = { pidtext };
	snprintf(pidtext, sizeof(pidtext), "%d", pid);
	/* The timeout argument makes the server wait until the backend exited. */
	ck_assert_int_eq(query_int(admin, "SELECT pg_terminate_backend($1::int, 5000)::int", 1, params), 1);
	cc_pg_free(admin);
}

/* A channel name unique to this process, so parallel runs never cross. */
static const char *channel(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "cc_t%ld_%s", (long)getpid(), what);
	return buf;
}

static struct cc_pg_stats stats_now(void)
{
	struct cc_pg_stats s;
	cc_pg_stats_get(&s);
	return s;
}

/* ---- statements and errors ---------------------------------------------------- */

START_TEST(test_params_are_data)
{
	struct cc_pg *pg = open_pg(NULL);
	static const char hostile[] = "'; DROP TABLE pg_class; -- \\ \"q\" $1 \xe2\x98\x83";
	const char *params[] = { hostile, NULL, "41" };
	PGresult *res = NULL;
	int64_t v;
	bool isnull = false;

	ck_assert_int_eq(cc_pg_exec(pg, "SELECT $1::text, $2::text IS NULL, $3::int + 1", 3, params, &res), 0);
	ck_assert_str_eq(cc_pg_get_text(res, 0, 0), hostile);
	ck_assert_int_eq(cc_pg_get_bool(res, 0, 1, &isnull), 0);
	ck_assert(isnull);
	ck_assert_int_eq(cc_pg_get_int64(res, 0, 2, &v), 0);
	ck_assert_int_eq(v, 42);
	PQclear(res);

	/* Several statements in one string are refused by the server. */
	ck_assert_int_eq(cc_pg_exec(pg, "SELECT 1; SELECT 2", 0, NULL, NULL), CC_EDB);
	ck_assert_str_eq(cc_pg_sqlstate(pg), "42601");
	ck_assert_msg(strstr(cc_pg_error_message(pg), "multiple commands"), "%s", cc_pg_error_message(pg));
	/* Success clears the last error. */
	exec_ok(pg, "SELECT 1", 0, NULL);
	ck_assert_str_eq(cc_pg_sqlstate(pg), "");
	ck_assert_str_eq(cc_pg_error_message(pg), "");
	ck_assert_int_eq(cc_pg_exec(pg, "SELECT $1", 1, NULL, NULL), CC_EINVAL);
	cc_pg_free(pg);
}
END_TEST

START_TEST(test_error_classification)
{
	struct cc_pg *pg = open_pg(NULL);
	char t[64], sql[512];
	static const struct {
		const char *sql; /* %s is the table */
		int want;
		const char *sqlstate;
		const char *in_message;  /* substring of the message, or NULL */
		const char *constraint; /* expected constraint name suffix, or NULL */
	} cases[] = {
		{ "INSERT INTO %s (id, n, r) VALUES (1, 5, '[10,20)')", CC_ECONFLICT, "23505", NULL, "_pkey" },
		{ "INSERT INTO %s (id, n, r) VALUES (2, 5, '[15,16)')", CC_ECONFLICT, "23P01", NULL, "_r_excl" },
		{ "INSERT INTO %s (id, n, r) VALUES (3, -1, '[30,31)')", CC_EDB, "23514", NULL, "_n_check" },
		{ "DO $$BEGIN RAISE EXCEPTION 'ticket_state_illegal QUEUED->COMPLETED'; END$$", CC_EDB, "P0001",
		  "ticket_state_illegal QUEUED->COMPLETED", NULL },
		{ "DO $$BEGIN RAISE EXCEPTION USING ERRCODE = 'serialization_failure'; END$$", CC_ESERIALIZATION,
		  "40001", NULL, NULL },
		{ "DO $$BEGIN RAISE EXCEPTION USING ERRCODE = 'deadlock_detected'; END$$", CC_ESERIALIZATION, "40P01",
		  NULL, NULL },
		{ "SELECT 1 / 0", CC_EDB, "22012", "division by zero", NULL },
		{ "SELEC 1", CC_EDB, "42601", NULL, NULL },
		{ "SELECT * FROM %s_missing", CC_EDB, "42P01", NULL, NULL },
		/* Class 08 means the connection is gone: dropped, reopened next call. */
		{ "DO $$BEGIN RAISE EXCEPTION USING ERRCODE = 'connection_failure'; END$$", CC_EUNAVAILABLE, "08006",
		  NULL, NULL },
	};

	table_name(t, sizeof(t), "err");
	exec_ok(pg,
		sqlf(sql, sizeof(sql),
		     "CREATE TABLE %s (id int PRIMARY KEY, n int CONSTRAINT %s_n_check CHECK (n >= 0), r int4range, "
		     "CONSTRAINT %s_r_excl EXCLUDE USING gist (r WITH &&))",
		     t),
		0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1, 1, '[0,1)')", t), 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (9, 1, '[10,20)')", t), 0, NULL);
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		int rc = cc_pg_exec(pg, sqlf(sql, sizeof(sql), cases[i].sql, t), 0, NULL, NULL);
		ck_assert_msg(rc == cases[i].want && !strcmp(cc_pg_sqlstate(pg), cases[i].sqlstate),
			      "case %zu (%s): got %s [%s] %s, want %s [%s]", i, cases[i].sql, cc_errname(rc),
			      cc_pg_sqlstate(pg), cc_pg_error_message(pg), cc_errname(cases[i].want), cases[i].sqlstate);
		ck_assert_msg(cc_pg_error_message(pg)[0], "case %zu has no message", i);
		if (cases[i].in_message)
			ck_assert_msg(strstr(cc_pg_error_message(pg), cases[i].in_message), "case %zu: message %s", i,
				      cc_pg_error_message(pg));
		if (cases[i].constraint) {
			const char *c = cc_pg_error_constraint(pg);
			size_t lc = strlen(c), ls = strlen(cases[i].constraint);
			ck_assert_msg(lc >= ls && !strcmp(c + lc - ls, cases[i].constraint), "case %zu: constraint '%s'", i,
				      c);
		}
		/* Whatever failed, the next statement works (reconnecting if needed). */
		ck_assert_int_eq(query_int(pg, "SELECT 7", 0, NULL), 7);
	}

	/* 57014 from the server's own statement_timeout: CC_ETIMEOUT, and the
	 * connection survives (same backend). */
	int pid = cc_pg_backend_pid(pg);
	exec_ok(pg, "SET statement_timeout = 50", 0, NULL);
	ck_assert_int_eq(cc_pg_exec(pg, "SELECT pg_sleep(5)", 0, NULL, NULL), CC_ETIMEOUT);
	ck_assert_str_eq(cc_pg_sqlstate(pg), "57014");
	exec_ok(pg, "RESET statement_timeout", 0, NULL);
	ck_assert_int_eq(cc_pg_backend_pid(pg), pid);

	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_free(pg);
}
END_TEST

/*
 * With prepare_statements, cc_pg_exec prepares a statement text once per
 * connection and then only binds and runs it: after two runs with
 * different parameters the session holds exactly one prepared statement
 * with that text. Without the option nothing is prepared; a session that dropped its statements (DEALLOCATE ALL) fails one
 * call with 26000 and then prepares afresh; a reconnect starts empty.
 */
START_TEST(test_statements_prepared_once)
{
	static const char twice[] = "SELECT $1::int * 2";
	static const char count_sql[] = "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1";
	const char *text[] = { twice };
	const char *p21[] = { "21" }, *p5[] = { "5" };
	struct cc_pg_options prepared = { .prepare_statements = true };
	struct cc_pg *pg = open_pg(&prepared);

	ck_assert_int_eq(query_int(pg, twice, 1, p21), 42);
	ck_assert_int_eq(query_int(pg, twice, 1, p5), 10);
	ck_assert_int_eq(query_int(pg, count_sql, 1, text), 1);

	exec_ok(pg, "DEALLOCATE ALL", 0, NULL);
	ck_assert_int_eq(cc_pg_exec(pg, twice, 1, p5, NULL), CC_EDB);
	ck_assert_str_eq(cc_pg_sqlstate(pg), "26000");
	ck_assert_int_eq(query_int(pg, twice, 1, p5), 10);
	ck_assert_int_eq(query_int(pg, count_sql, 1, text), 1);

	terminate_backend(cc_pg_backend_pid(pg));
	ck_assert_int_eq(query_int(pg, twice, 1, p21), 42);
	ck_assert_int_eq(query_int(pg, count_sql, 1, text), 1);
	cc_pg_free(pg);

	pg = open_pg(NULL);
	ck_assert_int_eq(query_int(pg, twice, 1, p21), 42);
	ck_assert_int_eq(query_int(pg, count_sql, 1, text), 0);
	cc_pg_free(pg);
}
END_TEST

/* ---- SERIALIZABLE ------------------------------------------------------------------ */

/*
 * The race: every round, THREADS threads released together by a barrier
 * each commit one read-modify-write increment of the same row. A failed
 * attempt is always caused by another thread's commit in that round, so a
 * thread fails at most THREADS - 1 times a round: with THREADS equal to
 * CC_PG_MAX_ATTEMPTS every increment must commit, and a smaller budget (or
 * a retry that is not a fresh transaction) shows up as a failure.
 *
 * (Threads that loop without pause, so a winner is at once contending
 * again, can starve one thread past any fixed budget: that is what the 503
 * "retryable" answer is for, and it is not what this test measures.)
 */
struct counter_run {
	const char *table;  /* counter table, row id 1 */
	int rounds;         /* increments to commit, one per round */
	int committed;      /* run_serializable calls that returned 0 */
	int failed;         /* ... that returned anything else */
	int first_error;    /* first such code */
	char first_message[256];
};

/* Read, then write what was read plus one: loses races under SERIALIZABLE. */
static int increment(struct cc_pg *pg, void *arg)
{
	const struct counter_run *run = arg;
	char sql[256], next[32];
	const char *params[] = { next };
	PGresult *res = NULL;
	int64_t n;
	int rc;

	snprintf(sql, sizeof(sql), "SELECT n FROM %s WHERE id = 1", run->table);
	rc = cc_pg_exec(pg, sql, 0, NULL, &res);
	if (rc)
		return rc;
	rc = cc_pg_get_int64(res, 0, 0, &n);
	PQclear(res);
	if (rc)
		return rc;
	snprintf(next, sizeof(next), "%lld", (long long)n + 1);
	snprintf(sql, sizeof(sql), "UPDATE %s SET n = $1::bigint WHERE id = 1", run->table);
	return cc_pg_exec(pg, sql, 1, params, NULL);
}

static pthread_barrier_t race_round;

static void *race_thread(void *arg)
{
	struct counter_run *run = arg;
	struct cc_pg *pg = NULL;
	char err[256];

	/* A thread that cannot connect still takes part in every round's
	 * barrier, so the others are not stranded. */
	if (cc_pg_connect(getenv("CC_TEST_PG_DSN"), NULL, &pg, err, sizeof(err)) != 0)
		snprintf(run->first_message, sizeof(run->first_message), "connect: %.200s", err);
	for (int i = 0; i < run->rounds; i++) {
		pthread_barrier_wait(&race_round);
		int rc = pg ? cc_pg_run_serializable(pg, increment, run) : CC_EUNAVAILABLE;
		if (rc == 0) {
			run->committed++;
		} else if (run->failed++ == 0) {
			run->first_error = rc;
			if (pg)
				snprintf(run->first_message, sizeof(run->first_message), "round %d, %d attempts: [%s] %.200s", i,
					 cc_pg_tx_attempts(pg), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
		}
	}
	cc_pg_free(pg);
	return NULL;
}

START_TEST(test_serializable_race)
{
	enum { THREADS = CC_PG_MAX_ATTEMPTS, ROUNDS = 40 };
	struct cc_pg *pg = open_pg(NULL);
	struct counter_run runs[THREADS];
	pthread_t threads[THREADS];
	struct cc_pg_stats before = stats_now(), after;
	char t[64], sql[256];
	int committed = 0;

	table_name(t, sizeof(t), "race");
	exec_ok(pg, sqlf(sql, sizeof(sql), "CREATE TABLE %s (id int PRIMARY KEY, n bigint NOT NULL)", t), 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1, 0)", t), 0, NULL);
	ck_assert_int_eq(pthread_barrier_init(&race_round, NULL, THREADS), 0);
	for (int i = 0; i < THREADS; i++) {
		runs[i] = (struct counter_run){ .table = t, .rounds = ROUNDS };
		ck_assert_int_eq(pthread_create(&threads[i], NULL, race_thread, &runs[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&race_round);
	for (int i = 0; i < THREADS; i++) {
		ck_assert_msg(runs[i].failed == 0, "thread %d: %d failures, first %s %s", i, runs[i].failed,
			      cc_errname(runs[i].first_error), runs[i].first_message);
		committed += runs[i].committed;
	}
	after = stats_now();
	ck_assert_int_eq(committed, THREADS * ROUNDS);
	ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT n FROM %s WHERE id = 1", t), 0, NULL), committed);
	ck_assert_msg(after.serialization_retries > before.serialization_retries,
		      "no retries happened: the race was not exercised");
	ck_assert(after.committed - before.committed == (unsigned long long)committed);
	ck_assert(after.retry_exhausted == before.retry_exhausted);
	fprintf(stderr, "test_serializable_race: %d commits, %llu retries\n", committed,
		after.serialization_retries - before.serialization_retries);
	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_free(pg);
}
END_TEST

struct forced_conflict {
	struct cc_pg *other; /* a second connection that commits in the middle */
	const char *table;
	int calls;           /* attempts fn saw */
	int last_rc;         /* what fn's write returned on the last attempt */
	int losses;          /* lose_a_few_times: attempts that lose (then it commits) */
};

/* Reads the row, lets another connection update and commit it, then writes
 * it: a concurrent update that fails every SERIALIZABLE attempt. */
static int lose_to_concurrent_update(struct cc_pg *pg, void *arg)
{
	struct forced_conflict *fc = arg;
	char sql[256];

	fc->calls++;
	snprintf(sql, sizeof(sql), "SELECT v FROM %s WHERE id = 1", fc->table);
	int rc = cc_pg_exec(pg, sql, 0, NULL, NULL);
	if (rc)
		return rc;
	snprintf(sql, sizeof(sql), "UPDATE %s SET v = v + 1 WHERE id = 1", fc->table);
	exec_ok(fc->other, sql, 0, NULL);
	snprintf(sql, sizeof(sql), "UPDATE %s SET v = v + 100 WHERE id = 1", fc->table);
	fc->last_rc = cc_pg_exec(pg, sql, 0, NULL, NULL);
	return fc->last_rc;
}

START_TEST(test_serializable_exhausts_on_real_conflicts)
{
	struct cc_pg *pg = open_pg(NULL);
	struct forced_conflict fc = { .other = open_pg(NULL) };
	struct cc_pg_stats before = stats_now(), after;
	char t[64], sql[256];

	table_name(t, sizeof(t), "exh");
	fc.table = t;
	exec_ok(pg, sqlf(sql, sizeof(sql), "CREATE TABLE %s (id int PRIMARY KEY, v int NOT NULL)", t), 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1, 0)", t), 0, NULL);

	int64_t start = cc_clock_ms();
	int rc = cc_pg_run_serializable(pg, lose_to_concurrent_update, &fc);
	int64_t took = cc_clock_ms() - start;
	after = stats_now();
	ck_assert_msg(rc == CC_ERETRY_EXHAUSTED, "got %s [%s] %s", cc_errname(rc), cc_pg_sqlstate(pg),
		      cc_pg_error_message(pg));
	ck_assert_int_eq(fc.calls, CC_PG_MAX_ATTEMPTS);
	ck_assert_int_eq(cc_pg_tx_attempts(pg), CC_PG_MAX_ATTEMPTS);
	ck_assert_int_eq(fc.last_rc, CC_ESERIALIZATION);
	ck_assert_str_eq(cc_pg_sqlstate(pg), "40001"); /* the cause stays readable */
	ck_assert(after.serialization_retries - before.serialization_retries == CC_PG_MAX_ATTEMPTS - 1);
	ck_assert(after.retry_exhausted - before.retry_exhausted == 1);
	/* Only the other connection's increments committed; every +100 rolled back. */
	ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT v FROM %s WHERE id = 1", t), 0, NULL),
			 CC_PG_MAX_ATTEMPTS);
	/* Backoff is bounded: 2 + 4 + 8 + 16 ms at most, plus the statements. */
	ck_assert_msg(took < 5000, "exhaustion took %lld ms", (long long)took);
	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_free(fc.other);
	cc_pg_free(pg);
}
END_TEST

/* As lose_to_concurrent_update for the first fc->losses calls, then a plain write that commits. */
static int lose_a_few_times(struct cc_pg *pg, void *arg)
{
	struct forced_conflict *fc = arg;
	char sql[256];

	if (fc->calls >= fc->losses) {
		fc->calls++;
		snprintf(sql, sizeof(sql), "UPDATE %s SET v = v + 100 WHERE id = 1", fc->table);
		return cc_pg_exec(pg, sql, 0, NULL, NULL);
	}
	return lose_to_concurrent_update(pg, arg);
}

/*
 * cc_pg_run_serializable_budget: a transaction that loses its first seven
 * attempts commits on the eighth with a budget of eight (the proposal
 * answers' case: one loss per peer), where the default budget and a budget
 * of seven are exhausted after five and seven attempts.
 */
START_TEST(test_serializable_budget)
{
	struct cc_pg *pg = open_pg(NULL);
	struct forced_conflict fc = { .other = open_pg(NULL), .losses = 7 };
	char t[64], sql[256];

	table_name(t, sizeof(t), "bud");
	fc.table = t;
	exec_ok(pg, sqlf(sql, sizeof(sql), "CREATE TABLE %s (id int PRIMARY KEY, v int NOT NULL)", t), 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1, 0)", t), 0, NULL);

	int rc = cc_pg_run_serializable(pg, lose_a_few_times, &fc);
	ck_assert_msg(rc == CC_ERETRY_EXHAUSTED, "default budget: got %s", cc_errname(rc));
	ck_assert_int_eq(cc_pg_tx_attempts(pg), CC_PG_MAX_ATTEMPTS);

	fc.calls = 0;
	rc = cc_pg_run_serializable_budget(pg, 7, lose_a_few_times, &fc);
	ck_assert_msg(rc == CC_ERETRY_EXHAUSTED, "budget 7: got %s", cc_errname(rc));
	ck_assert_int_eq(cc_pg_tx_attempts(pg), 7);

	fc.calls = 0;
	rc = cc_pg_run_serializable_budget(pg, 8, lose_a_few_times, &fc);
	ck_assert_msg(rc == 0, "budget 8: got %s [%s] %s", cc_errname(rc), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
	ck_assert_int_eq(cc_pg_tx_attempts(pg), 8);
	ck_assert_int_eq(fc.calls, 8);
	/* 5 + 7 + 7 increments of the other connection, one +100 of ours. */
	ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT v FROM %s WHERE id = 1", t), 0, NULL),
			 CC_PG_MAX_ATTEMPTS + 7 + 7 + 100);
	ck_assert_int_eq(cc_pg_run_serializable_budget(pg, 0, lose_a_few_times, &fc), CC_EINVAL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_free(fc.other);
	cc_pg_free(pg);
}
END_TEST

struct write_skew {
	struct cc_pg *other;
	const char *table;
	int calls;
	int statements_failed; /* fn's own statements that failed (want 0) */
};

/*
 * Classic write skew: both transactions read both rows, each turns a
 * different one off, and the other commits first. Every statement in fn
 * succeeds; the failure surfaces at fn's COMMIT.
 */
static int write_skew(struct cc_pg *pg, void *arg)
{
	struct write_skew *ws = arg;
	char sql[256];

	ws->calls++;
	snprintf(sql, sizeof(sql), "UPDATE %s SET on_call = true", ws->table);
	exec_ok(ws->other, sql, 0, NULL);
	exec_ok(ws->other, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE on_call", ws->table);
	exec_ok(ws->other, sql, 0, NULL);
	if (cc_pg_exec(pg, sql, 0, NULL, NULL) != 0)
		ws->statements_failed++;
	snprintf(sql, sizeof(sql), "UPDATE %s SET on_call = false WHERE id = 1", ws->table);
	if (cc_pg_exec(pg, sql, 0, NULL, NULL) != 0)
		ws->statements_failed++;
	snprintf(sql, sizeof(sql), "UPDATE %s SET on_call = false WHERE id = 2", ws->table);
	exec_ok(ws->other, sql, 0, NULL);
	exec_ok(ws->other, "COMMIT", 0, NULL);
	return 0;
}

START_TEST(test_serializable_retries_failed_commit)
{
	struct cc_pg *pg = open_pg(NULL);
	struct write_skew ws = { .other = open_pg(NULL) };
	char t[64], sql[256];

	table_name(t, sizeof(t), "skew");
	ws.table = t;
	exec_ok(pg, sqlf(sql, sizeof(sql), "CREATE TABLE %s (id int PRIMARY KEY, on_call bool NOT NULL)", t), 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1, true), (2, true)", t), 0, NULL);
	int rc = cc_pg_run_serializable(pg, write_skew, &ws);
	ck_assert_msg(rc == CC_ERETRY_EXHAUSTED, "got %s [%s] %s", cc_errname(rc), cc_pg_sqlstate(pg),
		      cc_pg_error_message(pg));
	ck_assert_int_eq(ws.calls, CC_PG_MAX_ATTEMPTS);
	ck_assert_int_eq(ws.statements_failed, 0); /* so every failure was at COMMIT */
	ck_assert_str_eq(cc_pg_sqlstate(pg), "40001");
	/* Row 1 is still on call: fn's write never committed. */
	ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE on_call AND id = 1", t), 0,
				   NULL),
			 1);
	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_free(ws.other);
	cc_pg_free(pg);
}
END_TEST

struct own_error {
	const char *table;
	int calls;
	int give; /* code to return after inserting (0: insert a duplicate) */
};

static int insert_then_fail(struct cc_pg *pg, void *arg)
{
	struct own_error *oe = arg;
	char sql[256];
	int rc;

	oe->calls++;
	snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (100)", oe->table);
	rc = cc_pg_exec(pg, sql, 0, NULL, NULL);
	if (rc)
		return rc;
	if (oe->give)
		return oe->give;
	snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (1)", oe->table); /* already there */
	return cc_pg_exec(pg, sql, 0, NULL, NULL);
}

/* fn runs a failing statement, ignores it and returns 0 anyway. */
static int swallow_error(struct cc_pg *pg, void *arg)
{
	struct own_error *oe = arg;
	char sql[256];

	oe->calls++;
	snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (100)", oe->table);
	exec_ok(pg, sql, 0, NULL);
	(void)!cc_pg_exec(pg, "SELECT 1 / 0", 0, NULL, NULL);
	return 0;
}

START_TEST(test_serializable_own_errors_not_retried)
{
	struct cc_pg *pg = open_pg(NULL);
	struct cc_pg_stats before = stats_now(), after;
	char t[64], sql[256];
	static const struct {
		int give;
		int want;
		const char *sqlstate;
	} cases[] = {
		{ CC_ENOTFOUND, CC_ENOTFOUND, "" },
		{ CC_ESTATE, CC_ESTATE, "" },
		{ 0, CC_ECONFLICT, "23505" }, /* a real unique violation from the server */
	};

	table_name(t, sizeof(t), "own");
	exec_ok(pg, sqlf(sql, sizeof(sql), "CREATE TABLE %s (id int PRIMARY KEY)", t), 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1)", t), 0, NULL);
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		struct own_error oe = { .table = t, .give = cases[i].give };
		int rc = cc_pg_run_serializable(pg, insert_then_fail, &oe);
		ck_assert_msg(rc == cases[i].want, "case %zu: %s", i, cc_errname(rc));
		ck_assert_int_eq(oe.calls, 1);
		ck_assert_int_eq(cc_pg_tx_attempts(pg), 1);
		ck_assert_str_eq(cc_pg_sqlstate(pg), cases[i].sqlstate);
		/* Rolled back: row 100 is not there, and the connection is idle. */
		ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE id = 100", t), 0,
					   NULL),
				 0);
	}
	struct own_error oe = { .table = t };
	int rc = cc_pg_run_serializable(pg, swallow_error, &oe);
	ck_assert_msg(rc == CC_EDB, "swallowed error: %s", cc_errname(rc));
	ck_assert_str_eq(cc_pg_sqlstate(pg), "22012");
	ck_assert_int_eq(oe.calls, 1);
	ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE id = 100", t), 0, NULL), 0);

	after = stats_now();
	ck_assert(after.serialization_retries == before.serialization_retries);
	ck_assert(after.rolled_back - before.rolled_back == CC_ARRAY_LEN(cases) + 1);
	/* Nesting is refused. */
	exec_ok(pg, "BEGIN", 0, NULL);
	ck_assert_int_eq(cc_pg_run_serializable(pg, swallow_error, &oe), CC_EINVAL);
	ck_assert_int_eq(cc_pg_rollback(pg), 0);
	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_free(pg);
}
END_TEST

/* ---- a clear error, never a hang ---------------------------------------------------- */

/* A loopback socket bound to a free port; listening or not. */
static int loopback_socket(bool listening, int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	if (listening)
		ck_assert_int_eq(listen(fd, 8), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

START_TEST(test_connect_refused_is_unavailable)
{
	struct cc_pg_options opt = { .connect_timeout_ms = 5000 };
	struct cc_pg *pg = NULL;
	char dsn[128], err[512];
	int port, fd = loopback_socket(false, &port); /* bound, not listening: refused */

	snprintf(dsn, sizeof(dsn), "host=127.0.0.1 port=%d dbname=x user=cc password=hunter2", port);
	int64_t start = cc_clock_ms();
	int rc = cc_pg_connect(dsn, &opt, &pg, err, sizeof(err));
	int64_t took = cc_clock_ms() - start;
	ck_assert_msg(rc == CC_EUNAVAILABLE, "got %s: %s", cc_errname(rc), err);
	ck_assert_ptr_null(pg);
	ck_assert_msg(took < 1000, "refusal took %lld ms", (long long)took);
	ck_assert_msg(strstr(err, "127.0.0.1") && strstr(err, "refused"), "err: %s", err);
	ck_assert_msg(!strstr(err, "hunter2"), "password leaked: %s", err);
	close(fd);
}
END_TEST

START_TEST(test_connect_to_silent_listener_times_out)
{
	struct cc_pg_options opt = { .connect_timeout_ms = 300 };
	struct cc_pg *pg = NULL;
	char dsn[128], err[512];
	int port, fd = loopback_socket(true, &port); /* the kernel accepts; nobody answers */

	snprintf(dsn, sizeof(dsn), "host=127.0.0.1 port=%d dbname=x user=cc", port);
	int64_t start = cc_clock_ms();
	int rc = cc_pg_connect(dsn, &opt, &pg, err, sizeof(err));
	int64_t took = cc_clock_ms() - start;
	ck_assert_msg(rc == CC_ETIMEOUT, "got %s: %s", cc_errname(rc), err);
	ck_assert_msg(took >= 290 && took < 300 + 1000, "timed out after %lld ms, deadline 300", (long long)took);
	ck_assert_msg(strstr(err, "timed out"), "err: %s", err);
	close(fd);
}
END_TEST

struct killer {
	int pid;         /* backend to kill once it runs pg_sleep */
	bool killed;     /* it was seen active and terminated */
	char seen[300];  /* last state seen, for the failure message */
};

static void *kill_when_active(void *arg)
{
	struct killer *k = arg;
	struct cc_pg *admin = NULL;
	char err[256], pidtext[16];
	const char *params[] = { pidtext };
	int64_t deadline = cc_clock_ms() + 10000;

	if (cc_pg_connect(getenv("CC_TEST_PG_DSN"), NULL, &admin, err, sizeof(err)) != 0) {
		snprintf(k->seen, sizeof(k->seen), "admin connect: %s", err);
		return NULL;
	}
	snprintf(pidtext, sizeof(pidtext), "%d", k->pid);
	while (!k->killed && cc_clock_ms() < deadline) {
		PGresult *res = NULL;
		if (cc_pg_exec(admin,
			       "SELECT state, query FROM pg_stat_activity WHERE pid = $1::int AND state = 'active' "
			       "AND query LIKE 'SELECT pg_sleep%'",
			       1, params, &res) == 0 &&
		    PQntuples(res) == 1) {
			snprintf(k->seen, sizeof(k->seen), "%s: %s", cc_pg_get_text(res, 0, 0), cc_pg_get_text(res, 0, 1));
			k->killed = cc_pg_exec(admin, "SELECT pg_terminate_backend($1::int)", 1, params, NULL) == 0;
		}
		PQclear(res);
	}
	cc_pg_free(admin);
	return NULL;
}

START_TEST(test_backend_killed_mid_statement)
{
	struct cc_pg_options opt = { .query_timeout_ms = 60000 };
	struct cc_pg *pg = open_pg(&opt);
	struct cc_pg_stats before = stats_now();
	struct killer k = { .pid = cc_pg_backend_pid(pg) };
	pthread_t thread;

	ck_assert_int_ne(k.pid, 0);
	ck_assert_int_eq(pthread_create(&thread, NULL, kill_when_active, &k), 0);
	int64_t start = cc_clock_ms();
	int rc = cc_pg_exec(pg, "SELECT pg_sleep(30)", 0, NULL, NULL);
	int64_t took = cc_clock_ms() - start;
	pthread_join(thread, NULL);
	ck_assert_msg(k.killed, "the backend was never seen running pg_sleep (last seen: %s)", k.seen);
	ck_assert_msg(rc == CC_EUNAVAILABLE, "got %s [%s] %s", cc_errname(rc), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
	ck_assert_msg(took < 10000, "the killed statement returned after %lld ms", (long long)took);
	ck_assert(cc_pg_is_broken(pg));
	/* The next call reconnects and works. */
	ck_assert_int_eq(query_int(pg, "SELECT 5", 0, NULL), 5);
	ck_assert_int_ne(cc_pg_backend_pid(pg), k.pid);
	ck_assert(stats_now().reconnects == before.reconnects + 1);
	cc_pg_free(pg);
}
END_TEST

START_TEST(test_backend_killed_while_idle_reconnects_transparently)
{
	struct cc_pg *pg = open_pg(NULL);
	struct cc_pg_stats before = stats_now();
	int pid = cc_pg_backend_pid(pg);

	terminate_backend(pid);
	/* The FATAL message and EOF are waiting on the socket: noticed before
	 * sending, so this statement runs on a fresh connection. */
	ck_assert_int_eq(query_int(pg, "SELECT 6", 0, NULL), 6);
	ck_assert_int_ne(cc_pg_backend_pid(pg), pid);
	ck_assert(stats_now().reconnects == before.reconnects + 1);
	cc_pg_free(pg);
}
END_TEST

START_TEST(test_backend_killed_inside_transaction)
{
	struct cc_pg *pg = open_pg(NULL);
	char t[64], sql[256];

	table_name(t, sizeof(t), "lost");
	exec_ok(pg, sqlf(sql, sizeof(sql), "CREATE TABLE %s (id int PRIMARY KEY)", t), 0, NULL);
	exec_ok(pg, "BEGIN", 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1)", t), 0, NULL);
	terminate_backend(cc_pg_backend_pid(pg));
	/* Never silently continue outside the transaction the caller began. */
	sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (2)", t);
	ck_assert_int_eq(cc_pg_exec(pg, sql, 0, NULL, NULL), CC_EUNAVAILABLE);
	ck_assert_int_eq(cc_pg_exec(pg, sql, 0, NULL, NULL), CC_EUNAVAILABLE);
	ck_assert_msg(strstr(cc_pg_error_message(pg), "cc_pg_rollback"), "%s", cc_pg_error_message(pg));
	ck_assert_int_eq(cc_pg_rollback(pg), 0);
	ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT count(*) FROM %s", t), 0, NULL), 0);
	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_free(pg);
}
END_TEST

START_TEST(test_query_timeout_cancels_and_recovers)
{
	struct cc_pg_options opt = { .query_timeout_ms = 300 };
	struct cc_pg *pg = open_pg(&opt);
	struct cc_pg *admin = open_pg(NULL);
	struct cc_pg_stats before = stats_now();
	int pid = cc_pg_backend_pid(pg);
	char pidtext[16];
	const char *params[] = { pidtext };
	int64_t left = -1;

	int64_t start = cc_clock_ms();
	int rc = cc_pg_exec(pg, "SELECT pg_sleep(30)", 0, NULL, NULL);
	int64_t took = cc_clock_ms() - start;
	ck_assert_msg(rc == CC_ETIMEOUT, "got %s: %s", cc_errname(rc), cc_pg_error_message(pg));
	ck_assert_msg(took >= 290 && took < 300 + 1000, "returned after %lld ms, deadline 300", (long long)took);
	ck_assert(stats_now().query_timeouts == before.query_timeouts + 1);
	/* Usable right after. */
	ck_assert_int_eq(query_int(pg, "SELECT 8", 0, NULL), 8);
	/* The server stopped the old statement long before its 30 s ran out:
	 * it was cancelled, not merely abandoned. */
	snprintf(pidtext, sizeof(pidtext), "%d", pid);
	for (int64_t deadline = cc_clock_ms() + 5000; cc_clock_ms() < deadline;) {
		left = query_int(admin, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int", 1, params);
		if (left == 0)
			break;
	}
	ck_assert_msg(left == 0, "backend %d still exists 5 s after the timeout", pid);
	cc_pg_free(admin);
	cc_pg_free(pg);
}
END_TEST

/* ---- LISTEN / NOTIFY --------------------------------------------------------------------- */

START_TEST(test_listen_notify)
{
	struct cc_pg *listener = open_pg(NULL), *sender = open_pg(NULL);
	char chan[CC_PG_CHANNEL_MAX + 1], payload[CC_PG_NOTIFY_PAYLOAD_MAX + 1], small[4];
	char big[CC_PG_NOTIFY_PAYLOAD_MAX + 2];
	static const char *const bad[] = { "", "Upper", "9x", "a-b", "x\"y", "a b" };
	char wake[64];

	channel(wake, sizeof(wake), "wake");

	ck_assert_int_eq(cc_pg_listen(listener, wake), 0);
	ck_assert_int_eq(cc_pg_listen(listener, wake), 0); /* idempotent */
	exec_ok(sender, "BEGIN", 0, NULL);
	ck_assert_int_eq(cc_pg_listen(sender, wake), CC_EINVAL); /* would wait for COMMIT */
	ck_assert_int_eq(cc_pg_rollback(sender), 0);
	for (int i = 0; i < CC_PG_MAX_CHANNELS + 1; i++) {
		char name[32];
		snprintf(name, sizeof(name), "cc_t%ld_cap_%d", (long)getpid(), i);
		ck_assert_int_eq(cc_pg_listen(sender, name), i < CC_PG_MAX_CHANNELS ? 0 : CC_ETOOBIG);
	}
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++) {
		ck_assert_int_eq(cc_pg_listen(listener, bad[i]), CC_EINVAL);
		ck_assert_int_eq(cc_pg_notify(sender, bad[i], "x"), CC_EINVAL);
	}
	/* Nothing pending: a clean timeout after roughly the asked time. */
	int64_t start = cc_clock_ms();
	ck_assert_int_eq(cc_pg_wait_notify(listener, 100, chan, sizeof(chan), payload, sizeof(payload)), CC_ETIMEOUT);
	ck_assert_int_ge(cc_clock_ms() - start, 95);
	ck_assert_int_eq(cc_pg_wait_notify(listener, 0, chan, sizeof(chan), payload, sizeof(payload)), CC_ETIMEOUT);

	ck_assert_int_eq(cc_pg_notify(sender, wake, "ticket 42 'quoted'"), 0);
	ck_assert_int_eq(cc_pg_wait_notify(listener, 5000, chan, sizeof(chan), payload, sizeof(payload)), 0);
	ck_assert_str_eq(chan, wake);
	ck_assert_str_eq(payload, "ticket 42 'quoted'");

	/* A notification inside a rolled-back transaction is never delivered;
	 * one in a committed transaction is. */
	exec_ok(sender, "BEGIN", 0, NULL);
	ck_assert_int_eq(cc_pg_notify(sender, wake, "rolled back"), 0);
	ck_assert_int_eq(cc_pg_rollback(sender), 0);
	exec_ok(sender, "BEGIN", 0, NULL);
	ck_assert_int_eq(cc_pg_notify(sender, wake, "committed"), 0);
	exec_ok(sender, "COMMIT", 0, NULL);
	ck_assert_int_eq(cc_pg_wait_notify(listener, 5000, chan, sizeof(chan), payload, sizeof(payload)), 0);
	ck_assert_str_eq(payload, "committed");

	/* Buffers too small: CC_ETOOBIG, nothing written, and the next works. */
	memset(big, 'p', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(cc_pg_notify(sender, wake, big), CC_ETOOBIG);
	ck_assert_int_eq(cc_pg_notify(sender, wake, "long payload"), 0);
	ck_assert_int_eq(cc_pg_notify(sender, wake, "ok"), 0);
	small[0] = '\0';
	ck_assert_int_eq(cc_pg_wait_notify(listener, 5000, chan, sizeof(chan), small, sizeof(small)), CC_ETOOBIG);
	ck_assert_str_eq(small, "");
	ck_assert_int_eq(cc_pg_wait_notify(listener, 5000, chan, sizeof(chan), small, sizeof(small)), 0);
	ck_assert_str_eq(small, "ok");
	cc_pg_free(sender);
	cc_pg_free(listener);
}
END_TEST

START_TEST(test_listener_survives_lost_connection)
{
	struct cc_pg *listener = open_pg(NULL), *sender = open_pg(NULL);
	char chan[CC_PG_CHANNEL_MAX + 1], payload[64];
	int pid = cc_pg_backend_pid(listener);
	char ca[64], cb[64];

	channel(ca, sizeof(ca), "a");
	channel(cb, sizeof(cb), "b");
	ck_assert_int_eq(cc_pg_listen(listener, ca), 0);
	ck_assert_int_eq(cc_pg_listen(listener, cb), 0);
	terminate_backend(pid);
	int64_t start = cc_clock_ms();
	int rc = cc_pg_wait_notify(listener, 10000, chan, sizeof(chan), payload, sizeof(payload));
	ck_assert_msg(rc == CC_EUNAVAILABLE, "got %s: %s", cc_errname(rc), cc_pg_error_message(listener));
	ck_assert_msg(cc_clock_ms() - start < 5000, "loss noticed after %lld ms", (long long)(cc_clock_ms() - start));
	/* The next wait reconnects and LISTENs on both channels again. */
	ck_assert_int_eq(cc_pg_wait_notify(listener, 0, chan, sizeof(chan), payload, sizeof(payload)), CC_ETIMEOUT);
	ck_assert_int_ne(cc_pg_backend_pid(listener), pid);
	ck_assert_int_eq(cc_pg_notify(sender, cb, "after"), 0);
	ck_assert_int_eq(cc_pg_wait_notify(listener, 5000, chan, sizeof(chan), payload, sizeof(payload)), 0);
	ck_assert_str_eq(chan, cb);
	ck_assert_str_eq(payload, "after");

	/* A loss that a statement already reconnected over is still reported
	 * to the listener, once. */
	pid = cc_pg_backend_pid(listener);
	terminate_backend(pid);
	ck_assert_int_eq(query_int(listener, "SELECT 3", 0, NULL), 3);
	ck_assert_int_ne(cc_pg_backend_pid(listener), pid);
	ck_assert_int_eq(cc_pg_wait_notify(listener, 0, chan, sizeof(chan), payload, sizeof(payload)), CC_EUNAVAILABLE);
	ck_assert_int_eq(cc_pg_notify(sender, ca, "again"), 0);
	ck_assert_int_eq(cc_pg_wait_notify(listener, 5000, chan, sizeof(chan), payload, sizeof(payload)), 0);
	ck_assert_str_eq(chan, ca);
	ck_assert_str_eq(payload, "again");
	cc_pg_free(sender);
	cc_pg_free(listener);
}
END_TEST

/* ---- pool ---------------------------------------------------------------------------------- */

START_TEST(test_pool_limits_and_waits)
{
	struct cc_pg_pool *pool = cc_pg_pool_create(cc_test_env("CC_TEST_PG_DSN"), 2, NULL);
	struct cc_pg *a = NULL, *b = NULL, *c = NULL;
	struct cc_pg_pool_stats st;

	ck_assert_ptr_nonnull(pool);
	cc_pg_pool_stats_get(pool, &st);
	ck_assert_uint_eq(st.open, 0); /* lazy */
	ck_assert_int_eq(cc_pg_pool_acquire(pool, 1000, &a), 0);
	ck_assert_int_eq(cc_pg_pool_acquire(pool, 1000, &b), 0);
	ck_assert_ptr_ne(a, b);
	int64_t start = cc_clock_ms();
	ck_assert_int_eq(cc_pg_pool_acquire(pool, 150, &c), CC_ETIMEOUT);
	ck_assert_int_ge(cc_clock_ms() - start, 140);
	ck_assert_ptr_null(c);
	int pid_a = cc_pg_backend_pid(a);
	cc_pg_pool_release(pool, a);
	ck_assert_int_eq(cc_pg_pool_acquire(pool, 0, &c), 0);
	ck_assert_int_eq(cc_pg_backend_pid(c), pid_a); /* reused, not reopened */
	cc_pg_pool_stats_get(pool, &st);
	ck_assert_uint_eq(st.open, 2);
	ck_assert_uint_eq(st.lent, 2);
	cc_pg_pool_release(pool, b);
	cc_pg_pool_release(pool, c);
	cc_pg_pool_release(pool, NULL);
	cc_pg_pool_stats_get(pool, &st);
	ck_assert_uint_eq(st.idle, 2);
	ck_assert_uint_eq(st.lent, 0);
	cc_pg_pool_free(pool);
}
END_TEST

struct pool_worker {
	struct cc_pg_pool *pool;
	atomic_int *busy;     /* connections currently lent */
	atomic_int *max_busy; /* highest value busy reached */
	int done;             /* statements that succeeded */
	int failed;
	int first_error;
};

static void *pool_thread(void *arg)
{
	struct pool_worker *w = arg;
	for (int i = 0; i < 25; i++) {
		struct cc_pg *pg = NULL;
		int rc = cc_pg_pool_acquire(w->pool, 10000, &pg);
		if (rc == 0) {
			int now = atomic_fetch_add(w->busy, 1) + 1;
			int seen = atomic_load(w->max_busy);
			while (now > seen && !atomic_compare_exchange_weak(w->max_busy, &seen, now)) {
			}
			rc = cc_pg_exec(pg, "SELECT pg_sleep(0.002)", 0, NULL, NULL);
			atomic_fetch_sub(w->busy, 1);
			cc_pg_pool_release(w->pool, pg);
		}
		if (rc == 0)
			w->done++;
		else if (w->failed++ == 0)
			w->first_error = rc;
	}
	return NULL;
}

START_TEST(test_pool_threads)
{
	enum { THREADS = 8, SIZE = 3 };
	struct cc_pg_pool *pool = cc_pg_pool_create(cc_test_env("CC_TEST_PG_DSN"), SIZE, NULL);
	atomic_int busy = 0, max_busy = 0;
	struct pool_worker w[THREADS];
	pthread_t threads[THREADS];
	struct cc_pg_pool_stats st;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct pool_worker){ .pool = pool, .busy = &busy, .max_busy = &max_busy };
		ck_assert_int_eq(pthread_create(&threads[i], NULL, pool_thread, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		ck_assert_msg(w[i].failed == 0, "thread %d: %d failures, first %s", i, w[i].failed,
			      cc_errname(w[i].first_error));
		ck_assert_int_eq(w[i].done, 25);
	}
	ck_assert_int_le(atomic_load(&max_busy), SIZE);
	ck_assert_int_ge(atomic_load(&max_busy), 2); /* there was contention to bound */
	cc_pg_pool_stats_get(pool, &st);
	ck_assert_uint_le(st.open, SIZE);
	ck_assert_uint_eq(st.lent, 0);
	cc_pg_pool_free(pool);
}
END_TEST

START_TEST(test_pool_release_resets_connections)
{
	struct cc_pg_pool *pool = cc_pg_pool_create(cc_test_env("CC_TEST_PG_DSN"), 1, NULL);
	struct cc_pg *pg = NULL, *sender = open_pg(NULL);
	struct cc_pg_pool_stats st;
	char t[64], sql[256], chan[64], payload[64], cpool[64];

	channel(cpool, sizeof(cpool), "pool");
	table_name(t, sizeof(t), "pool");
	ck_assert_int_eq(cc_pg_pool_acquire(pool, 1000, &pg), 0);
	exec_ok(pg, sqlf(sql, sizeof(sql), "CREATE TABLE %s (id int PRIMARY KEY)", t), 0, NULL);

	/* Left listening, inside a transaction, with a 1 ms query timeout:
	 * all of it is undone on release. */
	ck_assert_int_eq(cc_pg_listen(pg, cpool), 0);
	exec_ok(pg, "BEGIN", 0, NULL);
	exec_ok(pg, sqlf(sql, sizeof(sql), "INSERT INTO %s VALUES (1)", t), 0, NULL);
	cc_pg_set_query_timeout(pg, 1);
	cc_pg_pool_release(pool, pg);
	ck_assert_int_eq(cc_pg_pool_acquire(pool, 1000, &pg), 0);
	ck_assert_int_eq(query_int(pg, sqlf(sql, sizeof(sql), "SELECT count(*) FROM %s", t), 0, NULL), 0);
	/* The 1 ms query timeout did not follow it, and nor did the LISTEN. */
	exec_ok(pg, "SELECT pg_sleep(0.05)", 0, NULL);
	ck_assert_int_eq(cc_pg_notify(sender, cpool, "stale"), 0);
	ck_assert_int_eq(cc_pg_wait_notify(pg, 200, chan, sizeof(chan), payload, sizeof(payload)), CC_ETIMEOUT);

	/* Dropped while lent: closed on release, a fresh one opened next time. */
	int pid = cc_pg_backend_pid(pg);
	exec_ok(pg, "BEGIN", 0, NULL);
	terminate_backend(pid);
	ck_assert_int_eq(cc_pg_exec(pg, "SELECT 1", 0, NULL, NULL), CC_EUNAVAILABLE);
	cc_pg_pool_release(pool, pg);
	cc_pg_pool_stats_get(pool, &st);
	ck_assert_uint_eq(st.open, 0);
	ck_assert_int_eq(cc_pg_pool_acquire(pool, 1000, &pg), 0);
	ck_assert_int_ne(cc_pg_backend_pid(pg), pid);
	exec_ok(pg, sqlf(sql, sizeof(sql), "DROP TABLE %s", t), 0, NULL);
	cc_pg_pool_release(pool, pg);
	cc_pg_pool_free(pool);
	cc_pg_free(sender);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pg");
	TCase *tc = tcase_create("postgres");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_params_are_data);
	tcase_add_test(tc, test_error_classification);
	tcase_add_test(tc, test_statements_prepared_once);
	tcase_add_test(tc, test_serializable_race);
	tcase_add_test(tc, test_serializable_exhausts_on_real_conflicts);
	tcase_add_test(tc, test_serializable_budget);
	tcase_add_test(tc, test_serializable_retries_failed_commit);
	tcase_add_test(tc, test_serializable_own_errors_not_retried);
	tcase_add_test(tc, test_connect_refused_is_unavailable);
	tcase_add_test(tc, test_connect_to_silent_listener_times_out);
	tcase_add_test(tc, test_backend_killed_mid_statement);
	tcase_add_test(tc, test_backend_killed_while_idle_reconnects_transparently);
	tcase_add_test(tc, test_backend_killed_inside_transaction);
	tcase_add_test(tc, test_query_timeout_cancels_and_recovers);
	tcase_add_test(tc, test_listen_notify);
	tcase_add_test(tc, test_listener_survives_lost_connection);
	tcase_add_test(tc, test_pool_limits_and_waits);
	tcase_add_test(tc, test_pool_threads);
	tcase_add_test(tc, test_pool_release_resets_connections);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
