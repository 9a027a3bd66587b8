/*
 * queue_stats.c - the operator's queue statistics read. See queue_stats.h.
 */
#include "store/queue_stats.h"

#include <stdlib.h>
#include <string.h>

#include "sys/banned.h"

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
