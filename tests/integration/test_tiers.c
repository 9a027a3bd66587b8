/*
 * cc_tier_bands_load against the harness PostgreSQL (migrations applied):
 *  - the seeded tier_bands rows are exactly cc_tier_default_bands()
 *  - an empty table falls back to the default
 *  - malformed tables are refused with every problem named
 *  - a custom valid table is used as it stands
 *
 * Every change to tier_bands happens inside a transaction that the test
 * rolls back (and an aborted test's connection dies with its process, which
 * rolls it back too), so the table is always left as seeded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/pg.h"
#include "support.h"
#include "store/tier_bands.h"
#include "sys/banned.h"

static struct cc_pg *pg;

static void setup(void)
{
	char err[512];
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &pg, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
}

static void teardown(void)
{
	cc_pg_free(pg);
	pg = NULL;
}

static void exec_ok(const char *sql)
{
	int rc = cc_pg_exec(pg, sql, 0, NULL, NULL);
	ck_assert_msg(rc == 0, "%s: %s [%s] %s", sql, cc_errname(rc), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
}

/* BEGIN, then empty the table: each test fills it as it needs. */
static void begin_empty(void)
{
	exec_ok("BEGIN");
	exec_ok("DELETE FROM tier_bands");
}

static void rollback(void)
{
	ck_assert_int_eq(cc_pg_rollback(pg), 0);
}

static void assert_default(const struct cc_tier_band *bands, size_t n)
{
	size_t n_def;
	const struct cc_tier_band *def = cc_tier_default_bands(&n_def);
	ck_assert_uint_eq(n, n_def);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(bands[i].name, def[i].name);
		ck_assert_double_eq(bands[i].min_rating, def[i].min_rating);
	}
}

/* The rows as seeded, read straight from the table, and through the loader. */
START_TEST(seeded_equals_default)
{
	PGresult *res = NULL;
	size_t n_def;
	const struct cc_tier_band *def = cc_tier_default_bands(&n_def);
	ck_assert_int_eq(cc_pg_exec(pg, "SELECT name, min_rating FROM tier_bands ORDER BY min_rating", 0, NULL, &res), 0);
	ck_assert_int_eq(PQntuples(res), (int)n_def);
	for (size_t i = 0; i < n_def; i++) {
		ck_assert_str_eq(cc_pg_get_text(res, (int)i, 0), def[i].name);
		ck_assert_double_eq(strtod(cc_pg_get_text(res, (int)i, 1), NULL), def[i].min_rating);
	}
	PQclear(res);

	struct cc_tier_band *bands = NULL;
	size_t n = 0;
	char err[512];
	int rc = cc_tier_bands_load(pg, &bands, &n, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s: %s", cc_errname(rc), err);
	assert_default(bands, n);
	free(bands);
}
END_TEST

START_TEST(empty_table_falls_back)
{
	size_t n_def;
	const struct cc_tier_band *def = cc_tier_default_bands(&n_def);
	struct cc_tier_band *bands = NULL;
	size_t n = 0;
	char err[512];
	begin_empty();
	int rc = cc_tier_bands_load(pg, &bands, &n, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s: %s", cc_errname(rc), err);
	assert_default(bands, n);
	ck_assert_ptr_ne(bands, def); /* a copy the caller owns */
	free(bands);
	rollback();
}
END_TEST

struct malformed_case {
	const char *what;
	const char *insert; /* rows for the emptied table */
	const char *want;   /* substring of the message */
};

static const struct malformed_case malformed_cases[] = {
	{ "a PROVISIONAL band", "INSERT INTO tier_bands VALUES ('BRONZE', 0), ('PROVISIONAL', 1000)",
	  "band 2 \"PROVISIONAL\": PROVISIONAL is a status, not a band" },
	{ "provisional in lower case", "INSERT INTO tier_bands VALUES ('provisional', 0)", "PROVISIONAL is a status" },
	{ "a bad name", "INSERT INTO tier_bands VALUES ('BRONZE', 0), ('Gold Star', 1500)",
	  "band 2 \"Gold Star\": a name may hold only A-Z, 0-9 and _" },
	{ "an empty name", "INSERT INTO tier_bands VALUES ('', 0)", "band 1: empty name" },
	{ "a name too long", "INSERT INTO tier_bands VALUES (repeat('A', 40), 0)",
	  "row 1 \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"...: name longer than 32 bytes" },
	{ "a NaN threshold", "INSERT INTO tier_bands VALUES ('BRONZE', 0), ('GOLD', 'NaN')",
	  "band 2 \"GOLD\": threshold nan is not a finite number" },
	{ "an infinite threshold", "INSERT INTO tier_bands VALUES ('BRONZE', '-Infinity'), ('GOLD', 0)",
	  "band 1 \"BRONZE\": threshold -inf is not a finite number" },
	{ "too many rows", "INSERT INTO tier_bands SELECT 'B' || i, i FROM generate_series(1, 65) AS i",
	  "tier_bands has more than 64 rows" },
	{ "several problems", "INSERT INTO tier_bands VALUES ('PROVISIONAL', 0), ('gold', 1)",
	  "band 1 \"PROVISIONAL\": PROVISIONAL is a status, not a band; band 2 \"gold\": a name may hold only" },
};

START_TEST(malformed_refused)
{
	const struct malformed_case *c = &malformed_cases[_i];
	struct cc_tier_band untouched, *bands = &untouched;
	size_t n = 12345;
	char err[1024];
	begin_empty();
	exec_ok(c->insert);
	int rc = cc_tier_bands_load(pg, &bands, &n, err, sizeof(err));
	ck_assert_msg(rc == CC_EINVAL, "%s: got %s (%s)", c->what, cc_errname(rc), err);
	ck_assert_msg(strstr(err, c->want), "%s: message \"%s\" lacks \"%s\"", c->what, err, c->want);
	ck_assert_ptr_eq(bands, &untouched);
	ck_assert_uint_eq(n, 12345);
	rollback();
}
END_TEST

/* Two bands can never share a threshold: the table refuses the second. */
START_TEST(shared_threshold_prevented)
{
	begin_empty();
	exec_ok("INSERT INTO tier_bands VALUES ('SILVER', 1200)");
	int rc = cc_pg_exec(pg, "INSERT INTO tier_bands VALUES ('GOLD', 1200)", 0, NULL, NULL);
	ck_assert_int_eq(rc, CC_ECONFLICT);
	ck_assert_str_eq(cc_pg_sqlstate(pg), "23505");
	rollback();
}
END_TEST

START_TEST(custom_table_used)
{
	struct cc_tier_band *bands = NULL;
	size_t n = 0;
	char err[512];
	begin_empty();
	/* inserted out of order: the loader returns them ascending */
	exec_ok("INSERT INTO tier_bands VALUES ('ACE', 2000), ('ROOKIE', -500), ('PILOT_2', 1000.5)");
	int rc = cc_tier_bands_load(pg, &bands, &n, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s: %s", cc_errname(rc), err);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(bands[0].name, "ROOKIE");
	ck_assert_double_eq(bands[0].min_rating, -500);
	ck_assert_str_eq(bands[1].name, "PILOT_2");
	ck_assert_double_eq(bands[1].min_rating, 1000.5);
	ck_assert_str_eq(bands[2].name, "ACE");
	ck_assert_str_eq(cc_tier_for(bands, n, 1999, 20), "PILOT_2");
	ck_assert_str_eq(cc_tier_for(bands, n, 2400, 20), "ACE");
	free(bands);
	rollback();
	/* and the seeded rows are back */
	bands = NULL;
	ck_assert_int_eq(cc_tier_bands_load(pg, &bands, &n, err, sizeof(err)), 0);
	assert_default(bands, n);
	free(bands);
}
END_TEST

START_TEST(missing_table_is_an_error)
{
	struct cc_tier_band *bands = NULL;
	size_t n = 0;
	char err[512];
	exec_ok("BEGIN");
	exec_ok("DROP TABLE tier_bands");
	int rc = cc_tier_bands_load(pg, &bands, &n, err, sizeof(err));
	ck_assert_int_eq(rc, CC_EDB);
	ck_assert_msg(strstr(err, "cannot read tier_bands") && strstr(err, "42P01"), "%s", err);
	ck_assert_ptr_null(bands);
	rollback();
}
END_TEST

static Suite *tiers_suite(void)
{
	Suite *s = suite_create("tiers_db");
	TCase *tc = tcase_create("db");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, seeded_equals_default);
	tcase_add_test(tc, empty_table_falls_back);
	tcase_add_loop_test(tc, malformed_refused, 0, CC_ARRAY_LEN(malformed_cases));
	tcase_add_test(tc, shared_threshold_prevented);
	tcase_add_test(tc, custom_table_used);
	tcase_add_test(tc, missing_table_is_an_error);
	/* last: whatever ran before, the table is as seeded */
	tcase_add_test(tc, seeded_equals_default);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(tiers_suite());
}
