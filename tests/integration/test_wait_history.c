/*
 * store/queue_stats.c's wait history (issue 26) against the harness
 * PostgreSQL: which proposals' tickets are a ticket's samples (its
 * playlist, a region it reaches within the RTT limit, the last
 * CC_WAIT_WINDOW_SECONDS), newest first, capped at CC_WAIT_SAMPLES_MAX,
 * and what a bad or unknown ticket id gets. Everything happens inside a
 * transaction the test rolls back, so now() is one instant throughout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/pg.h"
#include "support.h"
#include "game/formation.h"
#include "game/wait_estimate.h"
#include "store/queue_stats.h"
#include "sys/banned.h"

static struct cc_pg *pg;

static void exec_ok(const char *sql)
{
	int rc = cc_pg_exec(pg, sql, 0, NULL, NULL);
	ck_assert_msg(rc == 0, "%s: %s %s", sql, cc_errname(rc), cc_pg_error_message(pg));
}

static void query1(const char *sql, char *out, size_t len)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, 0, NULL, &res);
	ck_assert_msg(rc == 0, "%s: %s %s", sql, cc_errname(rc), cc_pg_error_message(pg));
	ck_assert_int_eq(PQntuples(res), 1);
	snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
}

/*
 * wh_ticket(playlist, rating, rtt, queued_ago_s) and wh_proposal(playlist,
 * region, created_ago_s, waits[], ratings[]): fixtures as SQL functions of
 * this transaction (pg_temp), a proposal with one participant per wait.
 */
static void setup(void)
{
	char err[512];
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &pg, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
	exec_ok("BEGIN");
	exec_ok("CREATE FUNCTION pg_temp.wh_ticket(pl text, r float8, rtt jsonb, ago float8) "
		"RETURNS uuid LANGUAGE sql AS $$ "
		"WITH p AS (INSERT INTO players DEFAULT VALUES RETURNING id) "
		"INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, "
		"  predicted_rtt, expires_at, queued_at) "
		"SELECT p.id, pl, 'QUEUED', 'wh', 1, r, 80, rtt, now() + interval '1 hour', now() - make_interval(secs => ago) "
		"FROM p RETURNING id $$");
	exec_ok("CREATE FUNCTION pg_temp.wh_proposal(pl text, region text, ago float8, waits float8[], ratings float8[]) "
		"RETURNS void LANGUAGE plpgsql AS $$ DECLARE pid uuid; tid uuid; BEGIN "
		"INSERT INTO proposals (playlist, state, region, arena, build, protocol_version, team_size, matcher, "
		"  created_at, expires_at) VALUES (pl, 'OPEN', region, 'aurora_ring', 'wh', 1, 1, 'test', "
		"  now() - make_interval(secs => ago), now() + interval '10 s') RETURNING id INTO pid; "
		"FOR i IN 1 .. cardinality(waits) LOOP "
		"  tid := pg_temp.wh_ticket(pl, ratings[i], '{}', ago + waits[i]); "
		"  INSERT INTO proposal_participants (proposal_id, ticket_id, player_id, team) "
		"  SELECT pid, tid, t.player_id, (i % 2)::smallint FROM tickets t WHERE t.id = tid; "
		"END LOOP; END $$");
}

static void teardown(void)
{
	ck_assert_int_eq(cc_pg_rollback(pg), 0);
	cc_pg_free(pg);
	pg = NULL;
}

START_TEST(test_which_proposals_count)
{
	char t[CC_UUID_BUF];
	query1("SELECT pg_temp.wh_ticket('ranked', 1500, '{\"eu-west\": 30, \"us-east\": 150}', 5)", t, sizeof t);
	/* Counted: ranked, eu-west, in the window; the newest first, then by proposal and ticket. */
	exec_ok("SELECT pg_temp.wh_proposal('ranked', 'eu-west', 10, '{4, 6}', '{1500, 1400}')");
	exec_ok("SELECT pg_temp.wh_proposal('ranked', 'eu-west', 2, '{7}', '{1600}')");
	/* Not counted: a region beyond the RTT limit, one the ticket never probed, another playlist, too old. */
	exec_ok("SELECT pg_temp.wh_proposal('ranked', 'us-east', 3, '{50}', '{1500}')");
	exec_ok("SELECT pg_temp.wh_proposal('ranked', 'ap-southeast', 3, '{51}', '{1500}')");
	exec_ok("SELECT pg_temp.wh_proposal('casual', 'eu-west', 3, '{52}', '{1500}')");
	char old[128];
	snprintf(old, sizeof old, "SELECT pg_temp.wh_proposal('ranked', 'eu-west', %d, '{53}', '{1500}')",
		 CC_WAIT_WINDOW_SECONDS + 1);
	exec_ok(old);

	struct cc_wait_history h;
	int rc = cc_queue_wait_history(pg, t, CC_FORMATION_DEFAULT_MAX_RTT_MS, &h);
	ck_assert_msg(rc == 0, "history: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	ck_assert(h.queued);
	ck_assert_double_eq_tol(h.waited_s, 5, 1e-6);
	ck_assert_double_eq(h.rating, 1500);
	ck_assert_uint_eq(h.n, 3);
	ck_assert_double_eq_tol(h.v[0].wait_s, 7, 1e-6);
	ck_assert_double_eq(h.v[0].rating, 1600);
	/* The two of the older proposal, in ticket-id order: compare as a set. */
	double a = h.v[1].wait_s, b = h.v[2].wait_s;
	ck_assert(fabs(fmin(a, b) - 4) < 1e-6 && fabs(fmax(a, b) - 6) < 1e-6);

	/* The shared read over the same queue gives the same samples. */
	struct cc_wait_history s;
	rc = cc_queue_wait_samples(pg, "ranked", "{\"eu-west\"}", &s);
	ck_assert_msg(rc == 0, "samples: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	ck_assert_uint_eq(s.n, 3);
	ck_assert_double_eq_tol(s.v[0].wait_s, 7, 1e-6);
	ck_assert(s.now_ms > 0 && s.now_ms == h.now_ms);

	/* A ticket reaching no region has no samples; one not QUEUED says so. */
	query1("SELECT pg_temp.wh_ticket('ranked', 1500, '{\"us-east\": 150}', 5)", t, sizeof t);
	ck_assert_int_eq(cc_queue_wait_history(pg, t, CC_FORMATION_DEFAULT_MAX_RTT_MS, &h), 0);
	ck_assert(h.queued);
	ck_assert_uint_eq(h.n, 0);
	query1("SELECT pg_temp.wh_ticket('ranked', 1500, '{\"eu-west\": 30}', 5)", t, sizeof t);
	char cancel[128];
	snprintf(cancel, sizeof cancel, "UPDATE tickets SET state = 'CANCELLED' WHERE id = '%s'", t);
	exec_ok(cancel);
	ck_assert_int_eq(cc_queue_wait_history(pg, t, CC_FORMATION_DEFAULT_MAX_RTT_MS, &h), 0);
	ck_assert(!h.queued);
	ck_assert_uint_eq(h.n, 3);
}
END_TEST

START_TEST(test_capped_at_the_newest)
{
	char t[CC_UUID_BUF];
	query1("SELECT pg_temp.wh_ticket('ranked', 1500, '{\"eu-west\": 30}', 0)", t, sizeof t);
	/* CC_WAIT_SAMPLES_MAX + 40 proposals, one ticket each: proposal k formed k s ago, its ticket waited k s. */
	char sql[160];
	snprintf(sql, sizeof sql,
		 "SELECT pg_temp.wh_proposal('ranked', 'eu-west', k, ARRAY[k::float8], '{1500}') "
		 "FROM generate_series(1, %d) k", CC_WAIT_SAMPLES_MAX + 40);
	exec_ok(sql);
	struct cc_wait_history h;
	ck_assert_int_eq(cc_queue_wait_history(pg, t, CC_FORMATION_DEFAULT_MAX_RTT_MS, &h), 0);
	ck_assert_uint_eq(h.n, CC_WAIT_SAMPLES_MAX);
	for (size_t i = 0; i < h.n; i++)
		ck_assert_double_eq_tol(h.v[i].wait_s, (double)(i + 1), 1e-6);
}
END_TEST

START_TEST(test_bad_and_unknown_ids)
{
	struct cc_wait_history h;
	ck_assert_int_eq(cc_queue_wait_history(pg, "not-a-uuid", 100, &h), CC_EINVAL);
	ck_assert_int_eq(cc_queue_wait_history(pg, "'; DROP TABLE tickets; --", 100, &h), CC_EINVAL);
	ck_assert_int_eq(cc_queue_wait_history(pg, NULL, 100, &h), CC_EINVAL);
	ck_assert_int_eq(cc_queue_wait_history(pg, "00000000-0000-4000-8000-000000000000", NAN, &h), CC_EINVAL);
	ck_assert_int_eq(cc_queue_wait_history(pg, "00000000-0000-4000-8000-000000000000", 100, &h), CC_ENOTFOUND);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wait_history");
	TCase *tc = tcase_create("store");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_which_proposals_count);
	tcase_add_test(tc, test_capped_at_the_newest);
	tcase_add_test(tc, test_bad_and_unknown_ids);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
