/*
 * results.c - the match_results and rating_changes statements. See results.h.
 */
#include "store/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/banned.h"

static const char sql_find[] = "SELECT request_hash FROM match_results WHERE match_id = $1";

/* ON CONFLICT DO NOTHING: a committed twin gives no row (or 40001 when our snapshot cannot see it). */
static const char sql_insert[] =
	"INSERT INTO match_results (match_id, allocation_id, score_team0, score_team1, request_hash, body) "
	"VALUES ($1, $2, $3::int, $4::int, $5, $6::jsonb) ON CONFLICT (match_id) DO NOTHING RETURNING 1";

static const char sql_change[] =
	"INSERT INTO rating_changes (match_id, player_id, playlist, rating_before, deviation_before, "
	"  volatility_before, rating_after, deviation_after, volatility_after) "
	"VALUES ($1, $2, $3, $4::float8, $5::float8, $6::float8, $7::float8, $8::float8, $9::float8)";

static const char sql_view[] =
	"SELECT json_build_object('match_id', m.id, 'playlist', m.playlist, 'state', 'COMPLETED', "
	"  'score', json_build_array(r.score_team0, r.score_team1), "
	"  'winner', CASE WHEN r.score_team0 > r.score_team1 THEN 0 WHEN r.score_team0 < r.score_team1 THEN 1 END, "
	"  'recorded_at', " CC_PG_RFC3339("r.recorded_at") ", "
	"  'rating_changes', coalesce((SELECT json_agg(json_build_object('player_id', c.player_id, "
	"      'playlist', c.playlist, 'rating_before', c.rating_before, 'deviation_before', c.deviation_before, "
	"      'volatility_before', c.volatility_before, 'rating_after', c.rating_after, "
	"      'deviation_after', c.deviation_after, 'volatility_after', c.volatility_after) "
	"      ORDER BY mp.team, c.player_id) "
	"    FROM rating_changes c JOIN match_players mp ON mp.match_id = c.match_id AND mp.player_id = c.player_id "
	"    WHERE c.match_id = m.id), '[]'::json))::text "
	"FROM match_results r JOIN matches m ON m.id = r.match_id WHERE r.match_id = $1";

int cc_result_find(struct cc_pg *pg, const char *match_id, char hash[CC_MATCH_RESULT_HASH_BUF])
{
	PGresult *res = NULL;
	const char *p[] = { match_id };
	int rc = cc_pg_exec(pg, sql_find, 1, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0)
		snprintf(hash, CC_MATCH_RESULT_HASH_BUF, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}

int cc_result_insert(struct cc_pg *pg, const char *match_id, const char *allocation_id,
		     const struct cc_match_result *r)
{
	char s0[16], s1[16], hash[CC_MATCH_RESULT_HASH_BUF];
	PGresult *res = NULL;
	cJSON *body = cc_match_result_to_json(r);
	char *text = body ? cc_json_print(body) : NULL;
	int rc = CC_ENOMEM;
	if (!text)
		goto out;
	snprintf(s0, sizeof s0, "%d", r->score[0]);
	snprintf(s1, sizeof s1, "%d", r->score[1]);
	cc_match_result_hash(r, hash);
	const char *p[] = { match_id, allocation_id, s0, s1, hash, text };
	rc = cc_pg_exec(pg, sql_insert, 6, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ECONFLICT;
out:
	PQclear(res);
	free(text);
	cJSON_Delete(body);
	return rc;
}

int cc_result_rating_change(struct cc_pg *pg, const char *match_id, const char *player_id, const char *playlist,
			    const struct cc_glicko2_rating *before, const struct cc_glicko2_rating *after)
{
	char v[6][40];
	const double x[6] = { before->rating, before->deviation, before->volatility,
			      after->rating,  after->deviation,  after->volatility };
	for (int i = 0; i < 6; i++)
		snprintf(v[i], sizeof v[i], "%.17g", x[i]);
	const char *p[] = { match_id, player_id, playlist, v[0], v[1], v[2], v[3], v[4], v[5] };
	return cc_pg_exec(pg, sql_change, 9, p, NULL);
}

int cc_result_view(struct cc_pg *pg, const char *match_id, char **json)
{
	const char *p[] = { match_id };
	return cc_pg_exec_text(pg, sql_view, 1, p, json);
}
