/*
 * seasons.c - the seasons table's statements. See seasons.h.
 */
#include "store/seasons.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/banned.h"

#define SEASON_COLUMNS \
	"season, " CC_PG_RFC3339("starts_at") ", " CC_PG_RFC3339("ends_at") ", starts_at <= now() AND now() < ends_at"

/* Season 1 at today's UTC midnight, or the next one once the latest has ended; nothing otherwise. */
static const char sql_roll[] =
	"INSERT INTO seasons (season, starts_at, ends_at) "
	"SELECT coalesce(l.season, 0) + 1, s.starts_at, s.starts_at + make_interval(weeks => $1::int) "
	"FROM (SELECT 1) one "
	"LEFT JOIN LATERAL (SELECT season, ends_at FROM seasons ORDER BY season DESC LIMIT 1) l ON true "
	"CROSS JOIN LATERAL (SELECT coalesce(l.ends_at, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') "
	"  AS starts_at) s "
	"WHERE l.season IS NULL OR l.ends_at <= now() "
	"ON CONFLICT (season) DO NOTHING";

static const char sql_latest[] = "SELECT " SEASON_COLUMNS " FROM seasons ORDER BY season DESC LIMIT 1";

static const char sql_current[] =
	"SELECT " SEASON_COLUMNS " FROM seasons WHERE starts_at <= now() AND now() < ends_at "
	"ORDER BY season DESC LIMIT 1";

/* Reads at most one season row into *out (none: season 0). */
static int read_season(struct cc_pg *pg, const char *sql, struct cc_season *out)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, 0, NULL, &res);
	if (rc != 0)
		return rc;
	memset(out, 0, sizeof *out);
	if (PQntuples(res) == 1) {
		out->season = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
		snprintf(out->starts_at, sizeof out->starts_at, "%s", PQgetvalue(res, 0, 1));
		snprintf(out->ends_at, sizeof out->ends_at, "%s", PQgetvalue(res, 0, 2));
		out->running = strcmp(PQgetvalue(res, 0, 3), "t") == 0;
	}
	PQclear(res);
	return 0;
}

int cc_season_roll(struct cc_pg *pg, int64_t weeks, struct cc_season *out, bool *rolled)
{
	char w[24];
	PGresult *res = NULL;
	if (weeks < 1)
		return CC_EINVAL;
	snprintf(w, sizeof w, "%lld", (long long)weeks);
	const char *p[] = { w };
	int rc = cc_pg_exec(pg, sql_roll, 1, p, &res);
	if (rc != 0)
		return rc;
	bool inserted = strtoll(PQcmdTuples(res), NULL, 10) > 0;
	PQclear(res);
	if ((rc = read_season(pg, sql_latest, out)) != 0)
		return rc;
	if (rolled)
		*rolled = inserted;
	return 0;
}

int cc_season_latest(struct cc_pg *pg, struct cc_season *out)
{
	return read_season(pg, sql_latest, out);
}

int cc_season_current(struct cc_pg *pg, struct cc_season *out)
{
	return read_season(pg, sql_current, out);
}
