/*
 * playlists.c - the playlists table's start-up sync. See playlists.h.
 */
#include "store/playlists.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/banned.h"

/* Any unique violation (the name, or a second profile playlist) leaves the table as it was. */
static const char sql_insert[] =
	"INSERT INTO playlists (name, team_size, ranked, tolerance_start, tolerance_growth_per_second, "
	"tolerance_cap, arenas, profile) VALUES ($1, $2::integer, $3::boolean, $4::float8, $5::float8, $6::float8, "
	"$7, $8::boolean) ON CONFLICT DO NOTHING";

static const char sql_rows[] =
	"SELECT name, team_size, ranked, tolerance_start, tolerance_growth_per_second, tolerance_cap, arenas, profile "
	"FROM playlists";

/* Writes why from a failed statement; returns rc. */
static int db_failed(struct cc_pg *pg, int rc, const char *what, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s: %s [%s] %s", what, cc_errname(rc), cc_pg_sqlstate(pg), cc_pg_error_message(pg));
	return rc;
}

static int insert_missing(struct cc_pg *pg, size_t *inserted, char *why, size_t whylen)
{
	size_t n = 0;
	const struct cc_playlist *list = cc_playlists(&n);
	for (size_t i = 0; i < n; i++) {
		const struct cc_playlist *pl = &list[i];
		char team[16], start[32], growth[32], cap[32];
		PGresult *res = NULL;
		snprintf(team, sizeof team, "%d", pl->team_size);
		/* %.17g: the float8 the server stores is exactly the double compiled in. */
		snprintf(start, sizeof start, "%.17g", pl->tolerance_start);
		snprintf(growth, sizeof growth, "%.17g", pl->tolerance_growth_per_s);
		snprintf(cap, sizeof cap, "%.17g", pl->tolerance_cap);
		const char *p[] = { pl->name, team, pl->ranked ? "true" : "false", start, growth, cap,
				    cc_playlist_arenas_name(pl->arenas), pl->profile ? "true" : "false" };
		int rc = cc_pg_exec(pg, sql_insert, 8, p, &res);
		if (rc == 0)
			*inserted += (size_t)cc_pg_rows_affected(res);
		PQclear(res);
		if (rc != 0)
			return db_failed(pg, rc, "cannot insert into playlists", why, whylen);
	}
	return 0;
}

/* Compares one double cell with the compiled value (the server prints float8 exactly). */
static bool same_double(const char *cell, double compiled)
{
	char *end = NULL;
	double v = cell ? strtod(cell, &end) : 0;
	return cell && end != cell && *end == '\0' && v == compiled;
}

/* Compares pl with row r of res; writes why and returns false at the first difference. */
static bool row_equal(const PGresult *res, int r, const struct cc_playlist *pl, char *why, size_t whylen)
{
	char compiled[7][32]; /* columns 1..7 of sql_rows, as the server prints them */
	snprintf(compiled[0], sizeof compiled[0], "%d", pl->team_size);
	snprintf(compiled[1], sizeof compiled[1], "%s", pl->ranked ? "t" : "f");
	snprintf(compiled[2], sizeof compiled[2], "%g", pl->tolerance_start);
	snprintf(compiled[3], sizeof compiled[3], "%g", pl->tolerance_growth_per_s);
	snprintf(compiled[4], sizeof compiled[4], "%g", pl->tolerance_cap);
	snprintf(compiled[5], sizeof compiled[5], "%s", cc_playlist_arenas_name(pl->arenas));
	snprintf(compiled[6], sizeof compiled[6], "%s", pl->profile ? "t" : "f");
	const double doubles[3] = { pl->tolerance_start, pl->tolerance_growth_per_s, pl->tolerance_cap };
	for (int k = 0; k < 7; k++) {
		const char *cell = cc_pg_get_text(res, r, k + 1);
		bool same = k >= 2 && k <= 4 ? same_double(cell, doubles[k - 2]) : cell && strcmp(cell, compiled[k]) == 0;
		if (!same) {
			snprintf(why, whylen, "playlists row '%s' differs from game/playlist.c: %s is %.32s there, %s here",
				 pl->name, PQfname(res, k + 1), cell ? cell : "NULL", compiled[k]);
			return false;
		}
	}
	return true;
}

static int compare(struct cc_pg *pg, char *why, size_t whylen)
{
	PGresult *res = NULL;
	size_t n = 0;
	const struct cc_playlist *list = cc_playlists(&n);
	int rc = cc_pg_exec(pg, sql_rows, 0, NULL, &res);
	if (rc != 0)
		return db_failed(pg, rc, "cannot read playlists", why, whylen);
	int rows = PQntuples(res);
	for (size_t i = 0; i < n && rc == 0; i++) {
		int r = 0;
		while (r < rows && strcmp(cc_pg_get_text(res, r, 0), list[i].name) != 0)
			r++;
		if (r == rows) {
			snprintf(why, whylen, "playlists table lacks '%s' and it could not be inserted "
				 "(another playlist holds profile?)", list[i].name);
			rc = CC_ESTATE;
		} else if (!row_equal(res, r, &list[i], why, whylen)) {
			rc = CC_ESTATE;
		}
	}
	PQclear(res);
	return rc;
}

int cc_playlists_sync(struct cc_pg *pg, size_t *inserted, char *why, size_t whylen)
{
	size_t added = 0;
	if (whylen > 0)
		why[0] = '\0';
	if (!pg) {
		snprintf(why, whylen, "cc_playlists_sync: no connection");
		return CC_EINVAL;
	}
	int rc = cc_playlists_check(why, whylen);
	if (rc == 0)
		rc = insert_missing(pg, &added, why, whylen);
	if (rc == 0)
		rc = compare(pg, why, whylen);
	if (rc == 0 && inserted)
		*inserted = added;
	return rc;
}
