/* The arenas table (seeded by migration 0005) equals libcommon's compiled list. */
#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "game/arenas.h"
#include "support.h"
#include "sys/banned.h"

START_TEST(test_table_equals_compiled_list)
{
	PGconn *conn = PQconnectdb(cc_test_env("CC_TEST_PG_DSN"));
	ck_assert_msg(PQstatus(conn) == CONNECTION_OK, "connect: %s", PQerrorMessage(conn));
	PGresult *res = PQexec(conn, "SELECT name, ranked_eligible FROM arenas ORDER BY name COLLATE \"C\"");
	ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
	size_t n;
	const struct cc_arena *list = cc_arenas(&n);
	ck_assert_msg((size_t)PQntuples(res) == n, "arenas table has %d rows, the compiled list %zu", PQntuples(res), n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(PQgetvalue(res, (int)i, 0), list[i].name);
		ck_assert_msg((PQgetvalue(res, (int)i, 1)[0] == 't') == list[i].ranked_eligible,
			      "arena %s: ranked_eligible differs", list[i].name);
		ck_assert_ptr_eq(cc_arena_find(list[i].name), &list[i]);
	}
	ck_assert_ptr_null(cc_arena_find("no_such_arena"));
	ck_assert_ptr_null(cc_arena_find(NULL));
	PQclear(res);
	PQfinish(conn);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arenas");
	TCase *tc = tcase_create("shared list");
	tcase_add_test(tc, test_table_equals_compiled_list);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
