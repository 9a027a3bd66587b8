/*
 * The playlists table (migration 0007) and the compiled list
 * (libcommon/game/playlist.c), through store/playlists.h's start-up sync:
 *  - after a sync the table equals the compiled list, field by field
 *    (checked here with its own query, not with the sync's comparison);
 *  - a row that differs in any field is reported, naming the playlist and
 *    the field; a second profile playlist keeps the real one from being
 *    equal; a row the list lacks (a newer release's) is tolerated;
 *  - the playlist columns refuse a name the table lacks (foreign keys);
 *  - cc_claim_proposal's arena rule comes from the table: the SQL function
 *    cc_playlist_arenas agrees with cc_playlist_arena_allowed for every
 *    playlist.
 * Every change to the shared table happens inside a transaction that is
 * rolled back. tests/integration/third_playlist.sh covers inserting a
 * missing row through the real services.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "game/arenas.h"
#include "game/playlist.h"
#include "store/playlists.h"
#include "support.h"
#include "sys/pg.h"
#include "sys/banned.h"

static struct cc_pg *pg;

static void setup(void)
{
	char err[256] = "";
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &pg, err, sizeof err);
	ck_assert_msg(rc == 0, "connect: %s %s", cc_errname(rc), err);
}

static void teardown(void)
{
	(void)cc_pg_rollback(pg);
	cc_pg_free(pg);
	pg = NULL;
}

static void exec_ok(const char *sql)
{
	int rc = cc_pg_exec(pg, sql, 0, NULL, NULL);
	ck_assert_msg(rc == 0, "%s: %s [%s] %s", sql, cc_errname(rc), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
}

START_TEST(test_table_equals_compiled_list)
{
	char why[256];
	size_t n = 0, inserted = 99;
	(void)cc_playlists(&n);
	int rc = cc_playlists_sync(pg, &inserted, why, sizeof why);
	ck_assert_msg(rc == 0, "sync: %s: %s", cc_errname(rc), why);
	ck_assert_str_eq(why, "");
	ck_assert_msg(inserted <= n, "inserted %zu of %zu", inserted, n);

	PGresult *res = NULL;
	rc = cc_pg_exec(pg,
			"SELECT name, team_size, ranked, tolerance_start, tolerance_growth_per_second, tolerance_cap, "
			"arenas, profile FROM playlists ORDER BY name COLLATE \"C\"",
			0, NULL, &res);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg((size_t)PQntuples(res) == n, "playlists table has %d rows, the compiled list %zu", PQntuples(res),
		      n);
	for (int r = 0; r < PQntuples(res); r++) {
		const char *name = PQgetvalue(res, r, 0);
		const struct cc_playlist *pl = cc_playlist_find(name);
		ck_assert_msg(pl, "row '%s' is not in the compiled list", name);
		ck_assert_int_eq(strtol(PQgetvalue(res, r, 1), NULL, 10), pl->team_size);
		ck_assert_int_eq(PQgetvalue(res, r, 2)[0] == 't', pl->ranked);
		ck_assert_double_eq(strtod(PQgetvalue(res, r, 3), NULL), pl->tolerance_start);
		ck_assert_double_eq(strtod(PQgetvalue(res, r, 4), NULL), pl->tolerance_growth_per_s);
		ck_assert_double_eq(strtod(PQgetvalue(res, r, 5), NULL), pl->tolerance_cap);
		ck_assert_str_eq(PQgetvalue(res, r, 6), cc_playlist_arenas_name(pl->arenas));
		ck_assert_int_eq(PQgetvalue(res, r, 7)[0] == 't', pl->profile);
	}
	PQclear(res);
}
END_TEST

/* One field changed in the table, and what the sync must say about it. */
static const struct {
	const char *update; /* run inside the rolled-back transaction */
	const char *why;    /* the reason names the playlist and the field */
} drift_cases[] = {
	{ "UPDATE playlists SET team_size = 2 WHERE name = 'ranked'", "'ranked' differs from game/playlist.c: team_size is 2" },
	{ "UPDATE playlists SET ranked = true, tolerance_start = 1, tolerance_cap = 1 WHERE name = 'casual'",
	  "'casual' differs from game/playlist.c: ranked is t there, f here" },
	{ "UPDATE playlists SET tolerance_start = 50.5 WHERE name = 'ranked'", "tolerance_start is 50.5 there, 50 here" },
	{ "UPDATE playlists SET tolerance_growth_per_second = 0 WHERE name = 'ranked'",
	  "tolerance_growth_per_second is 0 there, 5 here" },
	{ "UPDATE playlists SET tolerance_cap = 601 WHERE name = 'ranked'", "tolerance_cap is 601 there, 600 here" },
	{ "UPDATE playlists SET arenas = 'ranked_eligible' WHERE name = 'casual'",
	  "'casual' differs from game/playlist.c: arenas is ranked_eligible there, all here" },
	{ "UPDATE playlists SET profile = false WHERE name = 'ranked'", "'ranked' differs from game/playlist.c: profile is f" },
};

START_TEST(test_a_differing_row_is_named)
{
	char why[256];
	size_t inserted = 99;
	exec_ok("BEGIN");
	exec_ok(drift_cases[_i].update);
	int rc = cc_playlists_sync(pg, &inserted, why, sizeof why);
	ck_assert_msg(rc == CC_ESTATE, "%s: sync returned %s (%s)", drift_cases[_i].update, cc_errname(rc), why);
	ck_assert_msg(strstr(why, drift_cases[_i].why), "%s: why is \"%s\", expected it to contain \"%s\"",
		      drift_cases[_i].update, why, drift_cases[_i].why);
	ck_assert_int_eq(inserted, 99); /* out-parameter untouched on failure */
	exec_ok("ROLLBACK");
}
END_TEST

START_TEST(test_unknown_rows_are_tolerated_foreign_keys_hold)
{
	char why[256];
	size_t inserted = 0;
	exec_ok("BEGIN");
	/* A newer release's playlist: this one neither minds nor accepts it. */
	exec_ok("INSERT INTO playlists (name, team_size, ranked, tolerance_start, tolerance_growth_per_second, "
		"tolerance_cap, arenas) VALUES ('zz_newer', 4, false, 0, 0, 0, 'all')");
	int rc = cc_playlists_sync(pg, &inserted, why, sizeof why);
	ck_assert_msg(rc == 0, "an extra row: %s (%s)", cc_errname(rc), why);
	ck_assert_ptr_null(cc_playlist_find("zz_newer"));
	exec_ok("ROLLBACK");

	/* A second profile playlist: the real one loses its flag and is reported. */
	exec_ok("BEGIN");
	exec_ok("UPDATE playlists SET profile = false WHERE profile");
	exec_ok("INSERT INTO playlists (name, team_size, ranked, tolerance_start, tolerance_growth_per_second, "
		"tolerance_cap, arenas, profile) VALUES ('zz_profile', 2, true, 0, 0, 0, 'all', true)");
	rc = cc_playlists_sync(pg, &inserted, why, sizeof why);
	ck_assert_msg(rc == CC_ESTATE && strstr(why, "profile is f there, t here"), "two profiles: %s (%s)",
		      cc_errname(rc), why);
	exec_ok("ROLLBACK");

	/* The playlist columns are foreign keys to the table. */
	static const char *const refused[] = {
		"INSERT INTO ratings (player_id, playlist) SELECT id, 'arcade' FROM players LIMIT 1",
		"INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, expires_at) "
		"SELECT id, 'arcade', 'QUEUED', 'b', 1, 1500, 350, now() FROM players LIMIT 1",
	};
	exec_ok("BEGIN");
	exec_ok("INSERT INTO players DEFAULT VALUES");
	exec_ok("SAVEPOINT s");
	for (size_t i = 0; i < CC_ARRAY_LEN(refused); i++) {
		rc = cc_pg_exec(pg, refused[i], 0, NULL, NULL);
		ck_assert_msg(rc == CC_EDB && strcmp(cc_pg_sqlstate(pg), "23503") == 0, "%s: %s [%s]", refused[i],
			      cc_errname(rc), cc_pg_sqlstate(pg));
		exec_ok("ROLLBACK TO SAVEPOINT s");
	}
	PGresult *res = NULL;
	ck_assert_int_eq(cc_pg_exec(pg,
				    "SELECT string_agg(conrelid::regclass || ':' || conname, ' ' ORDER BY conname) "
				    "FROM pg_constraint WHERE contype = 'f' AND confrelid = 'playlists'::regclass",
				    0, NULL, &res),
			 0);
	/*
	 * rating_changes (migration 0010) names the playlist each result moved a
	 * rating in; season_resets (0014) the playlist each season's soft reset did;
	 * cc_parties (0020) the playlist a party queues for.
	 */
	ck_assert_str_eq(PQgetvalue(res, 0, 0), "cc_parties:cc_parties_playlist_fkey "
						 "matches:matches_playlist_fk proposals:proposals_playlist_fk "
						 "rating_changes:rating_changes_playlist_fkey "
						 "ratings:ratings_playlist_fk season_resets:season_resets_playlist_fkey "
						 "tickets:tickets_playlist_fk");
	PQclear(res);
	exec_ok("ROLLBACK");
}
END_TEST

/* The SQL arena rule (cc_claim_proposal's choice) and the C one agree for every playlist. */
START_TEST(test_sql_arena_rule_equals_c)
{
	char why[256];
	size_t n = 0, n_arenas = 0;
	const struct cc_playlist *list = cc_playlists(&n);
	const struct cc_arena *arenas = cc_arenas(&n_arenas);
	ck_assert_int_eq(cc_playlists_sync(pg, NULL, why, sizeof why), 0);
	for (size_t i = 0; i < n; i++) {
		char want[512] = "";
		size_t used = 0;
		/* cc_arenas is sorted by name, as the function orders them. */
		for (size_t a = 0; a < n_arenas; a++)
			if (cc_playlist_arena_allowed(&list[i], &arenas[a]))
				used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", used ? "," : "",
							 arenas[a].name);
		PGresult *res = NULL;
		const char *p[] = { list[i].name };
		ck_assert_int_eq(cc_pg_exec(pg, "SELECT array_to_string(cc_playlist_arenas($1), ',')", 1, p, &res), 0);
		ck_assert_msg(strcmp(PQgetvalue(res, 0, 0), want) == 0, "playlist %s: SQL %s, C %s", list[i].name,
			      PQgetvalue(res, 0, 0), want);
		PQclear(res);
	}
	PGresult *res = NULL;
	ck_assert_int_eq(cc_pg_exec(pg, "SELECT cc_playlist_arenas('arcade') IS NULL", 0, NULL, &res), 0);
	ck_assert_str_eq(PQgetvalue(res, 0, 0), "t");
	PQclear(res);
}
END_TEST

START_TEST(test_sync_refuses_bad_arguments)
{
	char why[128];
	ck_assert_int_eq(cc_playlists_sync(NULL, NULL, why, sizeof why), CC_EINVAL);
	ck_assert_str_eq(why, "cc_playlists_sync: no connection");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("playlists");
	TCase *tc = tcase_create("table and compiled list");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_table_equals_compiled_list);
	tcase_add_loop_test(tc, test_a_differing_row_is_named, 0, (int)CC_ARRAY_LEN(drift_cases));
	tcase_add_test(tc, test_unknown_rows_are_tolerated_foreign_keys_hold);
	tcase_add_test(tc, test_sql_arena_rule_equals_c);
	tcase_add_test(tc, test_sync_refuses_bad_arguments);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
