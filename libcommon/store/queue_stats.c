/*
 * queue_stats.c - the operator's queue statistics read. See queue_stats.h.
 */
#include "store/queue_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/banned.h"
#include "sys/crypto.h"

/* Every configured playlist x region, with depth 0 where nobody waits. */
static const char sql_queue_stats[] =
	"SELECT json_build_object('generated_at', " CC_PG_RFC3339("now()") ", 'entries', coalesce(json_agg("
	"  json_build_object('playlist', s.playlist, 'region', s.region, 'depth', s.depth, "
	"  'oldest_age_seconds', s.oldest) ORDER BY s.playlist, s.region), '[]'::json))::text FROM ("
	"  SELECT p.playlist, g.region, count(t.id) AS depth, "
	"    coalesce(round(extract(epoch FROM now() - min(t.queued_at))::numeric, 3), 0)::float8 AS oldest "
	"  FROM (SELECT name AS playlist FROM playlists) p CROSS JOIN unnest($1::text[]) g(region) "
	"  LEFT JOIN tickets t ON t.state = 'QUEUED' AND t.playlist = p.playlist "
	"    AND t.predicted_rtt ? g.region "
	"  GROUP BY p.playlist, g.region) s";

int cc_queue_stats_json(struct cc_pg *pg, const char *regions_pg_array, char **json)
{
	const char *params[] = { regions_pg_array };
	return cc_pg_exec_text(pg, sql_queue_stats, 1, params, json);
}

/*
 * The ticket (columns 0-2) and its samples (3-4, NULL without any): the
 * LATERAL keeps the ticket's row when no proposal matches.
 */
static const char sql_wait_history[] =
	"SELECT t.state = 'QUEUED', extract(epoch FROM now() - t.queued_at)::float8, t.rating, s.w, s.r, "
	"  (extract(epoch FROM now()) * 1000)::bigint "
	"FROM tickets t LEFT JOIN LATERAL ("
	"  SELECT extract(epoch FROM p.created_at - k.queued_at)::float8 AS w, k.rating AS r, "
	"    p.created_at AS c, p.id AS pid, k.id AS kid "
	"  FROM proposals p JOIN proposal_participants pp ON pp.proposal_id = p.id "
	"  JOIN tickets k ON k.id = pp.ticket_id "
	"  WHERE p.playlist = t.playlist AND p.created_at > now() - make_interval(secs => $3::int) "
	"    AND p.region IN (SELECT e.key FROM jsonb_each(t.predicted_rtt) e "
	"      WHERE jsonb_typeof(e.value) = 'number' AND e.value::float8 <= $2::float8) "
	"  ORDER BY p.created_at DESC, p.id, k.id LIMIT $4::int) s ON true "
	"WHERE t.id = $1::uuid "
	"ORDER BY s.c DESC, s.pid, s.kid";

int cc_queue_wait_history(struct cc_pg *pg, const char *ticket_id, double max_rtt_ms, struct cc_wait_history *out)
{
	char rtt[32], window[16], limit[16];
	PGresult *res = NULL;
	if (!ticket_id || !cc_uuid_valid(ticket_id) || !(max_rtt_ms >= 0) || max_rtt_ms > 1e9)
		return CC_EINVAL;
	snprintf(rtt, sizeof rtt, "%.3f", max_rtt_ms);
	snprintf(window, sizeof window, "%d", CC_WAIT_WINDOW_SECONDS);
	snprintf(limit, sizeof limit, "%d", CC_WAIT_SAMPLES_MAX);
	const char *p[] = { ticket_id, rtt, window, limit };
	int rc = cc_pg_exec(pg, sql_wait_history, 4, p, &res);
	if (rc != 0)
		return rc;
	int rows = PQntuples(res);
	if (rows == 0) {
		PQclear(res);
		return CC_ENOTFOUND;
	}
	out->queued = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	out->waited_s = strtod(PQgetvalue(res, 0, 1), NULL);
	out->rating = strtod(PQgetvalue(res, 0, 2), NULL);
	out->now_ms = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
	out->n = 0;
	for (int i = 0; i < rows && out->n < CC_WAIT_SAMPLES_MAX; i++) {
		if (PQgetisnull(res, i, 3) || PQgetisnull(res, i, 4))
			continue;
		out->v[out->n++] = (struct cc_wait_sample){ strtod(PQgetvalue(res, i, 3), NULL),
							    strtod(PQgetvalue(res, i, 4), NULL) };
	}
	PQclear(res);
	return 0;
}

/* As sql_wait_history's samples, for a playlist ($1) and regions ($2); column 0 is now(). */
static const char sql_wait_samples[] =
	"SELECT (extract(epoch FROM now()) * 1000)::bigint, s.w, s.r FROM (SELECT 1) one LEFT JOIN LATERAL ("
	"  SELECT extract(epoch FROM p.created_at - k.queued_at)::float8 AS w, k.rating AS r, "
	"    p.created_at AS c, p.id AS pid, k.id AS kid "
	"  FROM proposals p JOIN proposal_participants pp ON pp.proposal_id = p.id "
	"  JOIN tickets k ON k.id = pp.ticket_id "
	"  WHERE p.playlist = $1 AND p.region = ANY($2::text[]) "
	"    AND p.created_at > now() - make_interval(secs => $3::int) "
	"  ORDER BY p.created_at DESC, p.id, k.id LIMIT $4::int) s ON true "
	"ORDER BY s.c DESC, s.pid, s.kid";

int cc_queue_wait_samples(struct cc_pg *pg, const char *playlist, const char *regions_pg_array,
			  struct cc_wait_history *out)
{
	char window[16], limit[16];
	PGresult *res = NULL;
	snprintf(window, sizeof window, "%d", CC_WAIT_WINDOW_SECONDS);
	snprintf(limit, sizeof limit, "%d", CC_WAIT_SAMPLES_MAX);
	const char *p[] = { playlist, regions_pg_array, window, limit };
	int rc = cc_pg_exec(pg, sql_wait_samples, 4, p, &res);
	if (rc != 0)
		return rc;
	int rows = PQntuples(res);
	out->now_ms = rows > 0 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
	out->n = 0;
	for (int i = 0; i < rows && out->n < CC_WAIT_SAMPLES_MAX; i++) {
		if (PQgetisnull(res, i, 1) || PQgetisnull(res, i, 2))
			continue;
		out->v[out->n++] = (struct cc_wait_sample){ strtod(PQgetvalue(res, i, 1), NULL),
							    strtod(PQgetvalue(res, i, 2), NULL) };
	}
	PQclear(res);
	return 0;
}
