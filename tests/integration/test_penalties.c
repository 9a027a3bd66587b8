/*
 * store/penalties.c against the harness PostgreSQL: the cooldowns it
 * records are game/penalty_policy.h's, counted over the rolling window in
 * the same statement, and recording the same offence twice writes one row.
 * Everything happens inside a transaction the test rolls back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/pg.h"
#include "support.h"
#include "game/penalty_policy.h"
#include "store/penalties.h"
#include "sys/banned.h"

static struct cc_pg *pg;
static char player[CC_UUID_BUF];

/* One value of a one-row query with params. */
static void query1(const char *sql, int n, const char *const *params, char *out, size_t len)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, params, &res);
	ck_assert_msg(rc == 0, "%s: %s %s", sql, cc_errname(rc), cc_pg_error_message(pg));
	ck_assert_int_eq(PQntuples(res), 1);
	snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
}

static void setup(void)
{
	char err[512];
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &pg, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
	ck_assert_int_eq(cc_pg_exec(pg, "BEGIN", 0, NULL, NULL), 0);
	query1("INSERT INTO players DEFAULT VALUES RETURNING id", 0, NULL, player, sizeof player);
}

static void teardown(void)
{
	ck_assert_int_eq(cc_pg_rollback(pg), 0);
	cc_pg_free(pg);
	pg = NULL;
}

/* Records kind for a fresh source; returns the cooldown it got, in seconds. */
static long long record(enum cc_penalty_kind kind, char source[CC_UUID_BUF], bool want_recorded)
{
	char seconds[32];
	bool recorded = !want_recorded;
	if (!source[0])
		query1("SELECT gen_random_uuid()", 0, NULL, source, CC_UUID_BUF);
	int rc = cc_penalty_record(pg, player, kind, source, &recorded);
	ck_assert_msg(rc == 0, "record: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	ck_assert(recorded == want_recorded);
	const char *p[] = { player, cc_penalty_kind_name(kind), source };
	query1("SELECT extract(epoch FROM cooldown_until - created_at)::bigint FROM penalties "
	       "WHERE player_id = $1 AND kind = $2 AND source_id = $3",
	       3, p, seconds, sizeof seconds);
	return strtoll(seconds, NULL, 10);
}

START_TEST(test_cooldowns_escalate_as_the_policy_says)
{
	static const enum cc_penalty_kind kinds[] = { CC_PENALTY_DECLINE, CC_PENALTY_PROPOSAL_TIMEOUT,
						      CC_PENALTY_EARLY_LEAVE, CC_PENALTY_DECLINE,
						      CC_PENALTY_INITIAL_CONNECT_NO_SHOW, CC_PENALTY_EARLY_LEAVE };
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		char source[CC_UUID_BUF] = "";
		long long got = record(kinds[k], source, true);
		ck_assert_msg(got == cc_penalty_cooldown_seconds(kinds[k], (int64_t)k),
			      "offence %zu (%s): %lld s, the policy says %lld", k, cc_penalty_kind_name(kinds[k]), got,
			      (long long)cc_penalty_cooldown_seconds(kinds[k], (int64_t)k));
	}
}
END_TEST

START_TEST(test_same_offence_is_recorded_once)
{
	char source[CC_UUID_BUF] = "";
	long long first = record(CC_PENALTY_PROPOSAL_TIMEOUT, source, true);
	long long again = record(CC_PENALTY_PROPOSAL_TIMEOUT, source, false);
	ck_assert_int_eq(first, again);
	char n[16];
	const char *p[] = { player };
	query1("SELECT count(*) FROM penalties WHERE player_id = $1", 1, p, n, sizeof n);
	ck_assert_str_eq(n, "1");
}
END_TEST

START_TEST(test_offences_outside_the_window_do_not_count)
{
	const char *p[] = { player };
	ck_assert_int_eq(cc_pg_exec(pg,
				    "INSERT INTO penalties (player_id, kind, source_id, created_at, cooldown_until) "
				    "SELECT $1, 'DECLINE', gen_random_uuid(), now() - interval '25 hours', "
				    "now() - interval '24 hours' FROM generate_series(1, 3)",
				    1, p, NULL),
			 0);
	char source[CC_UUID_BUF] = "";
	ck_assert_int_eq(record(CC_PENALTY_DECLINE, source, true), cc_penalty_cooldown_seconds(CC_PENALTY_DECLINE, 0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("penalties");
	TCase *tc = tcase_create("record");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_cooldowns_escalate_as_the_policy_says);
	tcase_add_test(tc, test_same_offence_is_recorded_once);
	tcase_add_test(tc, test_offences_outside_the_window_do_not_count);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
