/*
 * ratings.c - the ratings table's statements. See ratings.h.
 */
#include "store/ratings.h"

#include <stdlib.h>

#include "sys/banned.h"

static const char sql_profile[] =
	"SELECT rating, deviation, games FROM ratings WHERE player_id = $1 "
	"AND playlist = (SELECT name FROM playlists WHERE profile)";

int cc_rating_profile_get(struct cc_pg *pg, const char *player_id, struct cc_rating *out)
{
	PGresult *res = NULL;
	const char *p[] = { player_id };
	int rc = cc_pg_exec(pg, sql_profile, 1, p, &res);
	if (rc != 0)
		return rc;
	if (PQntuples(res) == 0) {
		rc = CC_ENOTFOUND;
		goto out;
	}
	out->rating = strtod(PQgetvalue(res, 0, 0), NULL);
	out->deviation = strtod(PQgetvalue(res, 0, 1), NULL);
	out->games = strtol(PQgetvalue(res, 0, 2), NULL, 10);
out:
	PQclear(res);
	return rc;
}
