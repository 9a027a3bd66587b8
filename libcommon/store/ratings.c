/*
 * ratings.c - the ratings table's statements. See ratings.h.
 */
#include "store/ratings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/outbox.h"
#include "sys/crypto.h"
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

static const char sql_create_missing[] =
	"INSERT INTO ratings (player_id, playlist) SELECT unnest($2::uuid[]), $1 ON CONFLICT DO NOTHING";

static const char sql_lock[] =
	"SELECT player_id, rating, deviation, volatility, games FROM ratings "
	"WHERE playlist = $1 AND player_id = ANY($2::uuid[]) ORDER BY player_id FOR UPDATE";

/* The revision: the player's rated games over every playlist, this one included (the subquery sees the old row). */
static const char sql_record[] =
	"UPDATE ratings SET rating = $3::float8, deviation = $4::float8, volatility = $5::float8, "
	"  games = games + 1, updated_at = now() WHERE player_id = $1 AND playlist = $2 "
	"RETURNING games, (SELECT sum(r.games) FROM ratings r WHERE r.player_id = $1) + 1";

/* Writes "{a,b,...}" of the n ids into buf (cap bytes). */
static void uuid_array(const char (*ids)[CC_UUID_BUF], size_t n, char *buf, size_t cap)
{
	size_t used = 0;
	buf[used++] = '{';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "," : "", ids[i]);
	snprintf(buf + used, cap - used, "}");
}

int cc_ratings_lock(struct cc_pg *pg, const char *playlist, const char (*ids)[CC_UUID_BUF], size_t n,
		    struct cc_glicko2_rating *out, long *games)
{
	char array[2 * CC_GLICKO2_TEAM_MAX * CC_UUID_BUF + 3];
	PGresult *res = NULL;
	if (n == 0 || n > 2 * CC_GLICKO2_TEAM_MAX)
		return CC_EINVAL;
	uuid_array(ids, n, array, sizeof array);
	const char *p[] = { playlist, array };
	int rc = cc_pg_exec(pg, sql_create_missing, 2, p, NULL);
	if (rc == 0)
		rc = cc_pg_exec(pg, sql_lock, 2, p, &res);
	if (rc != 0)
		goto out;
	for (size_t i = 0; i < n && rc == 0; i++) {
		int row = 0;
		while (row < PQntuples(res) && strcmp(PQgetvalue(res, row, 0), ids[i]) != 0)
			row++;
		if (row == PQntuples(res)) { /* the insert above made every row: a player id twice is a caller bug */
			rc = CC_EDB;
			break;
		}
		struct cc_glicko2_rating r = { strtod(PQgetvalue(res, row, 1), NULL), strtod(PQgetvalue(res, row, 2), NULL),
					       strtod(PQgetvalue(res, row, 3), NULL) };
		/* A row someone edited out of the domain must not reach Glicko-2 as if it were valid. */
		if (!cc_glicko2_rating_valid(&r))
			rc = CC_EDB;
		out[i] = r;
		if (games)
			games[i] = strtol(PQgetvalue(res, row, 4), NULL, 10);
	}
out:
	PQclear(res);
	return rc;
}

int cc_rating_record(struct cc_pg *pg, const char *player_id, const char *playlist, const char *match_id,
		     const struct cc_glicko2_rating *after)
{
	char rating[40], deviation[40], volatility[40], payload[320];
	PGresult *res = NULL;
	snprintf(rating, sizeof rating, "%.17g", after->rating);
	snprintf(deviation, sizeof deviation, "%.17g", after->deviation);
	snprintf(volatility, sizeof volatility, "%.17g", after->volatility);
	const char *p[] = { player_id, playlist, rating, deviation, volatility };
	int rc = cc_pg_exec(pg, sql_record, 5, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc != 0)
		goto out;
	snprintf(payload, sizeof payload,
		 "{\"playlist\":\"%s\",\"match_id\":\"%s\",\"rating\":%s,\"deviation\":%s,\"volatility\":%s,\"games\":%s}",
		 playlist, match_id, rating, deviation, volatility, PQgetvalue(res, 0, 0));
	const char *players[] = { player_id };
	struct cc_outbox_event ev = {
		.event = "rating.changed",
		.resource_type = "rating",
		.resource_id = player_id,
		.revision = strtoll(PQgetvalue(res, 0, 1), NULL, 10),
		.player_ids = players,
		.n_player_ids = 1,
		.payload_json = payload,
	};
	rc = cc_outbox_append(pg, &ev);
out:
	PQclear(res);
	return rc;
}

/* ---- season rollover ------------------------------------------------------- */

#define RESET_DUE                                                                                    \
	"r.playlist = (SELECT name FROM playlists WHERE profile) "                                       \
	"AND r.created_at < (SELECT starts_at FROM seasons WHERE season = $1::int) "                     \
	"AND NOT EXISTS (SELECT 1 FROM season_resets s WHERE s.player_id = r.player_id AND s.season = $1::int)"

static const char sql_reset_count[] = "SELECT count(*) FROM ratings r WHERE " RESET_DUE;

/*
 * The guard row and the new numbers in one statement: no reset without its
 * guard, no guard without its reset. PICK chooses the due ratings: the
 * sweep's bounded batch that never waits, or the named players of a result
 * (locked, so a sweep holding one makes the result wait one batch).
 */
#define RESET_SQL(pick)                                                                                   \
	"WITH due AS (SELECT r.player_id, r.playlist, r.rating, r.deviation FROM ratings r WHERE " RESET_DUE \
	pick "), "                                                                                           \
	"guard AS (INSERT INTO season_resets (player_id, season, playlist, rating_before, deviation_before, "  \
	"    rating_after, deviation_after) "                                                                 \
	"  SELECT player_id, $1::int, playlist, rating, deviation, 1500 + (rating - 1500) * (1 - $3::float8), " \
	"    least(350, greatest(deviation, $4::float8)) FROM due "                                           \
	"  ON CONFLICT DO NOTHING RETURNING player_id, playlist, rating_after, deviation_after) "              \
	"UPDATE ratings r SET rating = g.rating_after, deviation = g.deviation_after, updated_at = now() "     \
	"FROM guard g WHERE r.player_id = g.player_id AND r.playlist = g.playlist "                           \
	"RETURNING r.player_id::text, json_build_object('season', $1::int, 'playlist', r.playlist, "          \
	"  'rating', r.rating, 'deviation', r.deviation)::text"

static const char sql_reset[] = RESET_SQL(" ORDER BY r.player_id LIMIT $2::int FOR UPDATE OF r SKIP LOCKED");
static const char sql_reset_players[] = RESET_SQL(" AND r.player_id = ANY ($2::uuid[]) ORDER BY r.player_id FOR UPDATE OF r");

/* Runs a reset statement (params p: season, pick, pull, floor) and announces each reset; *n how many. */
static int reset_run(struct cc_pg *pg, const char *sql, int season, const char *const *p, int64_t *n)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, 4, p, &res);
	if (rc != 0)
		return rc;
	for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
		const char *players[] = { PQgetvalue(res, i, 0) };
		struct cc_outbox_event ev = {
			.event = "rating.season_reset",
			.resource_type = "season_reset",
			.resource_id = players[0],
			.revision = season,
			.player_ids = players,
			.n_player_ids = 1,
			.payload_json = PQgetvalue(res, i, 1),
		};
		rc = cc_outbox_append(pg, &ev);
	}
	if (rc == 0)
		*n = PQntuples(res);
	PQclear(res);
	return rc;
}

int cc_ratings_season_reset(struct cc_pg *pg, int season, int limit, int64_t *n, int64_t *lag)
{
	char s[16], lim[16], pull[32], floor_dev[32];
	int rc;
	if (season < 2 || limit < 1)
		return CC_EINVAL;
	snprintf(s, sizeof s, "%d", season);
	snprintf(lim, sizeof lim, "%d", limit);
	snprintf(pull, sizeof pull, "%.17g", CC_SEASON_RESET_PULL);
	snprintf(floor_dev, sizeof floor_dev, "%.17g", CC_SEASON_RESET_MIN_DEVIATION);
	const char *p[] = { s, lim, pull, floor_dev };
	int64_t due = -1, done = 0;
	if (lag) {
		char *text = NULL;
		if ((rc = cc_pg_exec_text(pg, sql_reset_count, 1, p, &text)) != 0)
			return rc;
		due = strtoll(text, NULL, 10);
		free(text);
	}
	if ((rc = reset_run(pg, sql_reset, season, p, &done)) != 0)
		return rc;
	*n = done;
	if (lag)
		*lag = due;
	return 0;
}

int cc_ratings_season_reset_players(struct cc_pg *pg, int season, const char (*ids)[CC_UUID_BUF], size_t n_ids,
				    int64_t *n)
{
	char s[16], pull[32], floor_dev[32];
	char *array = NULL;
	int64_t done = 0;
	if (season < 2 || !ids || n_ids == 0 || n_ids > CC_OUTBOX_MAX_PLAYERS)
		return CC_EINVAL;
	/* "{id,id,...}": every id is a checked UUID, so no quoting is needed. */
	size_t cap = n_ids * CC_UUID_BUF + 3, at = 0;
	if (!(array = malloc(cap)))
		return CC_ENOMEM;
	array[at++] = '{';
	for (size_t i = 0; i < n_ids; i++) {
		if (!cc_uuid_valid(ids[i])) {
			free(array);
			return CC_EINVAL;
		}
		at += (size_t)snprintf(array + at, cap - at, "%s%s", i ? "," : "", ids[i]);
	}
	snprintf(array + at, cap - at, "}");
	snprintf(s, sizeof s, "%d", season);
	snprintf(pull, sizeof pull, "%.17g", CC_SEASON_RESET_PULL);
	snprintf(floor_dev, sizeof floor_dev, "%.17g", CC_SEASON_RESET_MIN_DEVIATION);
	const char *p[] = { s, array, pull, floor_dev };
	int rc = reset_run(pg, sql_reset_players, season, p, &done);
	free(array);
	if (rc == 0 && n)
		*n = done;
	return rc;
}
