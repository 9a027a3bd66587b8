/*
 * The parts of pg.c that need no server: SQLSTATE classification, channel
 * names, the backoff schedule, result readers and argument checks.
 * (tests/integration/test_pg.c runs everything against PostgreSQL.)
 */
#include <string.h>

#include "sys/pg.h"
#include "support.h"

#include "sys/banned.h"

START_TEST(test_classify_sqlstate)
{
	static const struct {
		const char *state;
		int want;
	} cases[] = {
		{ "40001", CC_ESERIALIZATION }, { "40P01", CC_ESERIALIZATION }, { "23505", CC_ECONFLICT },
		{ "23P01", CC_ECONFLICT },	{ "08006", CC_EUNAVAILABLE },	{ "08001", CC_EUNAVAILABLE },
		{ "57P01", CC_EUNAVAILABLE },	{ "57P02", CC_EUNAVAILABLE },	{ "57P03", CC_EUNAVAILABLE },
		{ "57014", CC_ETIMEOUT },	{ "23514", CC_EDB },		{ "23503", CC_EDB },
		{ "P0001", CC_EDB },		{ "42601", CC_EDB },		{ "40002", CC_EDB },
		{ "", CC_EDB },			{ "4000", CC_EDB },		{ "400011", CC_EDB },
		{ NULL, CC_EDB },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++)
		ck_assert_msg(cc_pg_classify_sqlstate(cases[i].state) == cases[i].want, "%s -> %s, want %s",
			      cases[i].state ? cases[i].state : "(null)",
			      cc_errname(cc_pg_classify_sqlstate(cases[i].state)), cc_errname(cases[i].want));
}
END_TEST

START_TEST(test_channel_names)
{
	static const struct {
		const char *name;
		bool valid;
	} cases[] = {
		{ "a", true },
		{ "_", true },
		{ "outbox_wakeup", true },
		{ "q9_casual", true },
		{ "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk", true }, /* 63 */
		{ "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl", false }, /* 64 */
		{ "", false },
		{ "9lives", false },
		{ "Outbox", false },
		{ "out-box", false },
		{ "out box", false },
		{ "x\"; DROP TABLE t; --", false },
		{ "caf\xc3\xa9", false },
		{ NULL, false },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++)
		ck_assert_msg(cc_pg_channel_valid(cases[i].name) == cases[i].valid, "case %zu (%s)", i,
			      cases[i].name ? cases[i].name : "(null)");
}
END_TEST

START_TEST(test_backoff_schedule)
{
	static const unsigned want[] = { 8, 8, 16, 32, 64, 100, 100, 100, 100, 100 };
	for (int a = 0; a < (int)CC_ARRAY_LEN(want); a++)
		ck_assert_msg(cc_pg_backoff_cap_ms(a) == want[a], "attempt %d: %u ms, want %u", a, cc_pg_backoff_cap_ms(a),
			      want[a]);
	ck_assert_uint_eq(cc_pg_backoff_cap_ms(1000), CC_PG_BACKOFF_CAP_MS);
	ck_assert_int_eq(CC_PG_MAX_ATTEMPTS, 5);
}
END_TEST

/* A two-column result built without a server: ("42", "t"), (NULL, "x"),
 * ("12abc", "f"), ("-9223372036854775808", "true"), ("99999999999999999999", ""). */
static PGresult *make_result(void)
{
	static const char *const cells[][2] = {
		{ "42", "t" }, { NULL, "x" }, { "12abc", "f" }, { "-9223372036854775808", "true" },
		{ "99999999999999999999", "" },
	};
	PGresAttDesc attrs[2] = { { .name = (char *)"n", .format = 0 }, { .name = (char *)"b", .format = 0 } };
	PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
	ck_assert_ptr_nonnull(res);
	ck_assert(PQsetResultAttrs(res, 2, attrs));
	for (int r = 0; r < (int)CC_ARRAY_LEN(cells); r++)
		for (int c = 0; c < 2; c++)
			ck_assert(PQsetvalue(res, r, c, (char *)cells[r][c], cells[r][c] ? (int)strlen(cells[r][c]) : -1));
	return res;
}

START_TEST(test_result_readers)
{
	PGresult *res = make_result();
	int64_t v = 7;
	bool b = false;

	ck_assert_str_eq(cc_pg_get_text(res, 0, 0), "42");
	ck_assert_ptr_null(cc_pg_get_text(res, 1, 0)); /* SQL NULL */
	ck_assert_ptr_null(cc_pg_get_text(res, 5, 0)); /* row out of range */
	ck_assert_ptr_null(cc_pg_get_text(res, 0, 2)); /* column out of range */
	ck_assert_ptr_null(cc_pg_get_text(res, -1, 0));
	ck_assert_ptr_null(cc_pg_get_text(NULL, 0, 0));

	ck_assert_int_eq(cc_pg_get_int64(res, 0, 0, &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(cc_pg_get_int64(res, 3, 0, &v), 0);
	ck_assert(v == INT64_MIN);
	v = 7;
	ck_assert_int_eq(cc_pg_get_int64(res, 1, 0, &v), CC_ENOTFOUND);
	ck_assert_int_eq(cc_pg_get_int64(res, 2, 0, &v), CC_EINVAL);
	ck_assert_int_eq(cc_pg_get_int64(res, 4, 0, &v), CC_EINVAL); /* overflow */
	ck_assert_int_eq(cc_pg_get_int64(res, 9, 0, &v), CC_ENOTFOUND);
	ck_assert_int_eq(v, 7); /* untouched on failure */

	ck_assert_int_eq(cc_pg_get_bool(res, 0, 1, &b), 0);
	ck_assert(b);
	ck_assert_int_eq(cc_pg_get_bool(res, 2, 1, &b), 0);
	ck_assert(!b);
	ck_assert_int_eq(cc_pg_get_bool(res, 1, 1, &b), CC_EINVAL);
	ck_assert_int_eq(cc_pg_get_bool(res, 3, 1, &b), CC_EINVAL);
	ck_assert_int_eq(cc_pg_get_bool(res, 4, 1, &b), CC_EINVAL);
	ck_assert(!b);
	PQclear(res);
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct cc_pg *pg = (struct cc_pg *)0x1;
	struct cc_pg_options neg = { .query_timeout_ms = -1 };
	char err[256];

	ck_assert_int_eq(cc_pg_connect(NULL, NULL, &pg, err, sizeof(err)), CC_EINVAL);
	ck_assert_int_eq(cc_pg_connect("host=x port='unterminated", NULL, &pg, err, sizeof(err)), CC_EINVAL);
	ck_assert_msg(strstr(err, "malformed"), "err: %s", err);
	ck_assert_int_eq(cc_pg_connect("postgresql://h:notaport/db?x=1", NULL, &pg, err, sizeof(err)), CC_EINVAL);
	ck_assert_int_eq(cc_pg_connect("host=x", &neg, &pg, err, sizeof(err)), CC_EINVAL);
	/* A DSN with a password never reaches the message. */
	ck_assert_int_eq(cc_pg_connect("host=x password=hunter2 bogus=1", NULL, &pg, err, sizeof(err)), CC_EINVAL);
	ck_assert_msg(!strstr(err, "hunter2"), "err: %s", err);
	/* libpq quotes a whole malformed URI in its message: redacted. */
	ck_assert_int_eq(cc_pg_connect("postgresql://cc:hunter2@[::1/db", NULL, &pg, err, sizeof(err)), CC_EINVAL);
	ck_assert_msg(!strstr(err, "hunter2") && strstr(err, "URI"), "err: %s", err);
	ck_assert_ptr_eq(pg, (struct cc_pg *)0x1); /* out untouched */

	ck_assert_int_eq(cc_pg_exec(NULL, "SELECT 1", 0, NULL, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_pg_run_serializable(NULL, NULL, NULL), CC_EINVAL);
	ck_assert_ptr_null(cc_pg_pool_create("host=x", 0, NULL));
	ck_assert_ptr_null(cc_pg_pool_create(NULL, 2, NULL));
	ck_assert_ptr_null(cc_pg_pool_create("host=x", 2, &neg));
	ck_assert_str_eq(cc_pg_sqlstate(NULL), "");
	ck_assert(cc_pg_is_broken(NULL));
	cc_pg_free(NULL);
	cc_pg_pool_free(NULL);
}
END_TEST

/* A pool never connects until asked, and hands back its slot when the
 * connect fails (here: nothing can be reached at a malformed-free but
 * unresolvable socket directory). */
START_TEST(test_pool_lazy_and_slot_returned)
{
	struct cc_pg_options opt = { .connect_timeout_ms = 2000 };
	struct cc_pg_pool *pool = cc_pg_pool_create("host=/nonexistent/cc-pg-test port=1 dbname=x", 1, &opt);
	struct cc_pg_pool_stats st;
	struct cc_pg *pg = NULL;

	ck_assert_ptr_nonnull(pool);
	cc_pg_pool_stats_get(pool, &st);
	ck_assert_uint_eq(st.open, 0);
	for (int i = 0; i < 3; i++) /* a leaked slot would turn the 2nd try into CC_ETIMEOUT */
		ck_assert_int_eq(cc_pg_pool_acquire(pool, 100, &pg), CC_EUNAVAILABLE);
	ck_assert_ptr_null(pg);
	cc_pg_pool_stats_get(pool, &st);
	ck_assert_uint_eq(st.open, 0);
	ck_assert_uint_eq(st.lent, 0);
	cc_pg_pool_free(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pg");
	TCase *tc = tcase_create("offline");
	tcase_add_test(tc, test_classify_sqlstate);
	tcase_add_test(tc, test_channel_names);
	tcase_add_test(tc, test_backoff_schedule);
	tcase_add_test(tc, test_result_readers);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_pool_lazy_and_slot_returned);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
