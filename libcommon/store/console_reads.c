/*
 * console_reads.c - the operator console's reads. See console_reads.h.
 * Statements only: each builds its whole JSON answer in PostgreSQL.
 */
#include "store/console_reads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/banned.h"

#define TS(c) CC_PG_RFC3339(c)
#define SECS(a, b) "round(extract(epoch FROM (" a ") - (" b "))::numeric, 3)::float8"

/*
 * Buckets: 30 of 30 s ending now (b.t is each bucket's end). Queue depth at
 * t counts the tickets queued by t that were still QUEUED then (still now,
 * or left it after t): a ticket requeued after a proposal counts from its
 * first queue, close enough for a chart.
 */
static const char sql_overview[] =
	"WITH b AS (SELECT i, now() - (29 - i) * interval '30 seconds' AS t FROM generate_series(0, 29) i), "
	"q AS (SELECT p.name AS playlist, g.region, t.queued_at FROM playlists p "
	"  CROSS JOIN unnest($1::text[]) g(region) "
	"  LEFT JOIN tickets t ON t.state = 'QUEUED' AND t.playlist = p.name AND t.predicted_rtt ? g.region) "
	"SELECT json_build_object("
	" 'generated_at', " TS("now()") ","
	" 'series_bucket_seconds', 30,"
	" 'queues', (SELECT coalesce(json_agg(json_build_object('playlist', s.playlist, 'region', s.region, "
	"    'depth', s.depth, 'wait_p50_seconds', s.p50, 'wait_p90_seconds', s.p90, 'wait_p99_seconds', s.p99, "
	"    'oldest_age_seconds', s.oldest) ORDER BY s.playlist, s.region), '[]'::json) FROM ("
	"    SELECT playlist, region, count(queued_at) AS depth, "
	"      coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM now() - queued_at))::numeric, 3), 0)::float8 AS p50, "
	"      coalesce(round(percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM now() - queued_at))::numeric, 3), 0)::float8 AS p90, "
	"      coalesce(round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM now() - queued_at))::numeric, 3), 0)::float8 AS p99, "
	"      coalesce(round(extract(epoch FROM now() - min(queued_at))::numeric, 3), 0)::float8 AS oldest "
	"    FROM q GROUP BY playlist, region) s),"
	" 'matches_by_state', (SELECT coalesce(json_agg(json_build_object('state', s.state, 'count', s.n) ORDER BY s.state), '[]'::json) FROM ("
	"    SELECT state, count(*) AS n FROM matches WHERE state NOT IN ('COMPLETED', 'FAILED') GROUP BY state "
	"    UNION ALL SELECT state, count(*) FROM matches WHERE state IN ('COMPLETED', 'FAILED') "
	"      AND ended_at > now() - interval '15 minutes' GROUP BY state) s),"
	" 'servers_by_state', (SELECT coalesce(json_agg(json_build_object('provider', s.provider, 'state', s.state, "
	"    'count', s.n) ORDER BY s.provider, s.state), '[]'::json) FROM ("
	"    SELECT provider, state, count(*) AS n FROM game_servers GROUP BY provider, state) s),"
	" 'allocations', (SELECT json_build_object('requested', count(*), "
	"    'failed', count(*) FILTER (WHERE state = 'FAILED'), "
	"    'per_minute', round(count(*) / 15.0, 3)::float8) "
	"    FROM allocations WHERE created_at > now() - interval '15 minutes'),"
	" 'series', json_build_object("
	"   'queue_depth', (SELECT json_agg((SELECT count(*) FROM tickets t WHERE t.queued_at <= b.t "
	"      AND t.queued_at > now() - interval '1 day' "
	"      AND (t.state = 'QUEUED' OR t.updated_at > b.t)) ORDER BY b.i) FROM b),"
	"   'matches_created', (SELECT json_agg((SELECT count(*) FROM matches m WHERE m.created_at <= b.t "
	"      AND m.created_at > b.t - interval '30 seconds') ORDER BY b.i) FROM b),"
	"   'allocations_requested', (SELECT json_agg((SELECT count(*) FROM allocations a WHERE a.created_at <= b.t "
	"      AND a.created_at > b.t - interval '30 seconds') ORDER BY b.i) FROM b),"
	"   'allocations_failed', (SELECT json_agg((SELECT count(*) FROM allocations a WHERE a.state = 'FAILED' "
	"      AND a.updated_at <= b.t AND a.updated_at > b.t - interval '30 seconds') ORDER BY b.i) FROM b))"
	")::text";

int cc_console_overview(struct cc_pg *pg, const char *regions_pg_array, char **json)
{
	const char *p[] = { regions_pg_array };
	return cc_pg_exec_text(pg, sql_overview, 1, p, json);
}

#define MATCH_ROW                                                                                   \
	"json_build_object('match_id', m.id, 'proposal_id', m.proposal_id, 'playlist', m.playlist, "  \
	"'region', m.region, 'arena', m.arena, 'state', m.state, 'team_size', m.team_size, "           \
	"'created_at', " TS("m.created_at") ", 'started_at', " TS("m.started_at") ", "               \
	"'ended_at', " TS("m.ended_at") ", 'end_reason', m.end_reason, 'server_id', a.server_id, "    \
	"'score', CASE WHEN r.match_id IS NULL THEN NULL ELSE json_build_array(r.score_team0, r.score_team1) END)"

/* $1 query ('' = all; a prefix, its LIKE wildcards escaped in k.p as the player search does), $2 state ('' = any), $3 limit. */
static const char sql_matches[] =
	"SELECT json_build_object('matches', coalesce(json_agg(x.j ORDER BY x.created_at DESC, x.id), '[]'::json))::text "
	"FROM (SELECT " MATCH_ROW " AS j, m.created_at, m.id "
	"  FROM (SELECT replace(replace(replace(lower($1), '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%' AS p) k "
	"  CROSS JOIN matches m "
	"  LEFT JOIN allocations a ON a.match_id = m.id LEFT JOIN match_results r ON r.match_id = m.id "
	"  WHERE ($2 = '' OR m.state = $2) AND ($1 = '' "
	"    OR m.id::text LIKE k.p OR m.proposal_id::text LIKE k.p "
	"    OR lower(a.server_id) LIKE k.p OR lower(m.state) LIKE k.p "
	"    OR m.playlist LIKE k.p OR m.region LIKE k.p OR m.arena LIKE k.p "
	"    OR EXISTS (SELECT 1 FROM match_players mp JOIN players p ON p.id = mp.player_id "
	"      WHERE mp.match_id = m.id AND (p.id::text = lower($1) OR p.steam_id = $1))) "
	"  ORDER BY m.created_at DESC, m.id LIMIT $3::int) x";

int cc_console_matches(struct cc_pg *pg, const char *query, const char *state, int limit, char **json)
{
	char lim[16];
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = { query, state, lim };
	return cc_pg_exec_text(pg, sql_matches, 3, p, json);
}

/*
 * The timeline: each step's time or null when it has not happened (the
 * proposal formed, the match created when everyone accepted, the allocation
 * requested, the process ready, the assignment ready, the first player
 * connected, the result recorded, the match ended).
 */
static const char sql_match[] =
	"SELECT json_build_object('match', " MATCH_ROW ", "
	" 'timeline', json_build_array("
	"   json_build_object('step', 'proposal', 'at', " TS("pr.created_at") "),"
	"   json_build_object('step', 'accepted', 'at', " TS("m.created_at") "),"
	"   json_build_object('step', 'allocation', 'at', " TS("a.created_at") "),"
	"   json_build_object('step', 'process_ready', 'at', " TS("a.process_ready_at") "),"
	"   json_build_object('step', 'ready', 'at', " TS("a.assignment_ready_at") "),"
	"   json_build_object('step', 'connected', 'at', " TS("(SELECT min(s.connected_at) FROM assignments s WHERE s.match_id = m.id)") "),"
	"   json_build_object('step', 'result', 'at', " TS("r.recorded_at") "),"
	"   json_build_object('step', 'ended', 'at', " TS("m.ended_at") ")),"
	" 'players', (SELECT coalesce(json_agg(json_build_object('player_id', mp.player_id, 'steam_id', p.steam_id, "
	"    'display_name', p.display_name, 'team', mp.team, 'connected_at', " TS("s.connected_at") ", "
	"    'disconnected_at', " TS("s.disconnected_at") ", 'disconnect_reason', s.disconnect_reason, "
	"    'rating_before', rc.rating_before, 'rating_after', rc.rating_after) ORDER BY mp.team, mp.player_id), '[]'::json) "
	"    FROM match_players mp JOIN players p ON p.id = mp.player_id "
	"    LEFT JOIN assignments s ON s.match_id = mp.match_id AND s.player_id = mp.player_id "
	"    LEFT JOIN rating_changes rc ON rc.match_id = mp.match_id AND rc.player_id = mp.player_id "
	"    WHERE mp.match_id = m.id),"
	" 'server', CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object('allocation_id', a.id, "
	"    'allocation_state', a.state, 'provider', a.provider, 'server_id', a.server_id, 'address', a.address, "
	"    'port', a.port, 'failure_reason', a.failure_reason, 'last_heartbeat_at', " TS("a.last_heartbeat_at") ", "
	"    'last_phase', a.last_phase, 'shutdown_reason', a.shutdown_reason) END,"
	" 'result', CASE WHEN r.match_id IS NULL THEN NULL ELSE json_build_object('score_team0', r.score_team0, "
	"    'score_team1', r.score_team1, 'recorded_at', " TS("r.recorded_at") ") END"
	")::text FROM matches m JOIN proposals pr ON pr.id = m.proposal_id "
	"LEFT JOIN allocations a ON a.match_id = m.id LEFT JOIN match_results r ON r.match_id = m.id "
	"WHERE m.id = $1::uuid";

int cc_console_match(struct cc_pg *pg, const char *match_id, char **json)
{
	const char *p[] = { match_id };
	return cc_pg_exec_text(pg, sql_match, 1, p, json);
}

/* $1 is 1..64 printable characters (the route checks); LIKE's wildcards in it are escaped. */
static const char sql_players[] =
	"SELECT json_build_object('players', coalesce(json_agg(x.j ORDER BY x.created_at DESC, x.id), '[]'::json))::text "
	"FROM (SELECT json_build_object('player_id', p.id, 'steam_id', p.steam_id, 'display_name', p.display_name, "
	"    'created_at', " TS("p.created_at") ", 'banned_until', " TS("p.banned_until") ") AS j, p.created_at, p.id "
	"  FROM players p WHERE p.id::text = lower($1) OR p.steam_id = $1 "
	"    OR p.id::text LIKE replace(replace(replace(lower($1), '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%' "
	"    OR p.display_name ILIKE '%' || replace(replace(replace($1, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%' "
	"  ORDER BY p.created_at DESC, p.id LIMIT " CC_STRINGIFY(CC_CONSOLE_LIST_MAX) ") x";

int cc_console_players(struct cc_pg *pg, const char *query, char **json)
{
	const char *p[] = { query };
	return cc_pg_exec_text(pg, sql_players, 1, p, json);
}

static const char sql_history[] =
	"SELECT json_build_object('player_id', p.id, "
	" 'matches', (SELECT coalesce(json_agg(x.j ORDER BY x.created_at DESC, x.id), '[]'::json) FROM ("
	"    SELECT json_build_object('match_id', m.id, 'playlist', m.playlist, 'state', m.state, 'team', mp.team, "
	"      'created_at', " TS("m.created_at") ", 'ended_at', " TS("m.ended_at") ", 'end_reason', m.end_reason, "
	"      'score', CASE WHEN r.match_id IS NULL THEN NULL ELSE json_build_array(r.score_team0, r.score_team1) END, "
	"      'rating_before', rc.rating_before, 'rating_after', rc.rating_after) AS j, m.created_at, m.id "
	"    FROM match_players mp JOIN matches m ON m.id = mp.match_id "
	"    LEFT JOIN match_results r ON r.match_id = m.id "
	"    LEFT JOIN rating_changes rc ON rc.match_id = m.id AND rc.player_id = mp.player_id "
	"    WHERE mp.player_id = p.id ORDER BY m.created_at DESC, m.id LIMIT 20) x),"
	" 'penalties', (SELECT coalesce(json_agg(x.j ORDER BY x.id DESC), '[]'::json) FROM ("
	"    SELECT json_build_object('kind', n.kind, 'source_id', n.source_id, 'created_at', " TS("n.created_at") ", "
	"      'cooldown_until', " TS("n.cooldown_until") ", 'active', n.cooldown_until > now()) AS j, n.id "
	"    FROM penalties n WHERE n.player_id = p.id ORDER BY n.id DESC LIMIT 20) x),"
	" 'sessions', (SELECT coalesce(json_agg(x.j ORDER BY x.created_at DESC, x.id), '[]'::json) FROM ("
	"    SELECT json_build_object('session_id', s.id, 'created_at', " TS("s.created_at") ", "
	"      'expires_at', " TS("s.expires_at") ", 'revoked_at', " TS("s.revoked_at") ", "
	"      'active', s.revoked_at IS NULL AND s.expires_at > now()) AS j, s.created_at, s.id "
	"    FROM sessions s WHERE s.player_id = p.id ORDER BY s.created_at DESC, s.id LIMIT 20) x)"
	")::text FROM players p WHERE p.id = $1::uuid";

int cc_console_player_history(struct cc_pg *pg, const char *player_id, char **json)
{
	const char *p[] = { player_id };
	return cc_pg_exec_text(pg, sql_history, 1, p, json);
}

/* A server's match: the allocation it serves (ALLOCATED), else the last one it served. */
static const char sql_servers[] =
	"SELECT json_build_object('generated_at', " TS("now()") ", 'servers', coalesce(json_agg(json_build_object("
	"  'server_id', g.id, 'provider', g.provider, 'region', g.region, 'address', g.address, 'port', g.port, "
	"  'state', g.state, 'match_id', a.match_id, 'match_state', m.state, "
	"  'uptime_seconds', " SECS("now()", "g.created_at") ", "
	"  'updated_at', " TS("g.updated_at") ", 'last_heartbeat_at', " TS("a.last_heartbeat_at") ", "
	"  'last_phase', a.last_phase) ORDER BY g.provider, g.region, g.id), '[]'::json))::text "
	"FROM game_servers g "
	"LEFT JOIN LATERAL (SELECT x.* FROM allocations x WHERE x.server_id = g.id "
	"  ORDER BY (x.id = g.allocation_id) DESC, x.created_at DESC LIMIT 1) a ON true "
	"LEFT JOIN matches m ON m.id = a.match_id";

int cc_console_servers(struct cc_pg *pg, char **json)
{
	return cc_pg_exec_text(pg, sql_servers, 0, NULL, json);
}

/* $2 expected ('' = not banned), $3 until ('' = unban), $4 reason; to the millisecond, as views show it. */
static const char sql_fence[] =
	"SELECT (date_trunc('milliseconds', banned_until) IS NOT DISTINCT FROM "
	"        date_trunc('milliseconds', nullif($2, '')::timestamptz))::text || ' ' || "
	"  (date_trunc('milliseconds', banned_until) IS NOT DISTINCT FROM "
	"   date_trunc('milliseconds', nullif($3, '')::timestamptz) "
	"   AND ($3 = '' OR ban_reason IS NOT DISTINCT FROM $4))::text "
	"FROM players WHERE id = $1::uuid";

int cc_console_ban_fence(struct cc_pg *pg, const char *player_id, const char *expected, const char *until,
			 const char *reason, bool *matches, bool *applied)
{
	const char *p[] = { player_id, expected ? expected : "", until ? until : "", reason ? reason : "" };
	char *row = NULL;
	int rc = cc_pg_exec_text(pg, sql_fence, 4, p, &row);
	if (rc != 0)
		return rc;
	*matches = strncmp(row, "true ", 5) == 0;
	*applied = strcmp(row + strcspn(row, " "), " true") == 0;
	free(row);
	return 0;
}
