/*
 * match_summary.c - the player's read of one match. See match_summary.h.
 */
#include "store/match_summary.h"

#include "sys/banned.h"

/*
 * One statement, one snapshot. No row: no such match, or not the caller's.
 * A participant's numbers come from the stored result's body (the
 * canonical MatchResultRequest of game/match_result.h); "bot" is absent
 * there when false.
 */
static const char sql_summary[] =
	"SELECT jsonb_build_object("
	"  'match_id', m.id, 'playlist', m.playlist, 'ranked', pl.ranked, 'state', m.state, "
	"  'end_reason', m.end_reason, 'region', m.region, 'arena', m.arena, "
	"  'created_at', " CC_PG_RFC3339("m.created_at") ", 'started_at', " CC_PG_RFC3339("m.started_at") ", "
	"  'ended_at', " CC_PG_RFC3339("m.ended_at") ", "
	"  'result', CASE WHEN r.match_id IS NOT NULL THEN jsonb_build_object("
	"    'score', jsonb_build_array(r.score_team0, r.score_team1), "
	"    'winner', CASE WHEN r.score_team0 > r.score_team1 THEN 0 WHEN r.score_team0 < r.score_team1 THEN 1 END, "
	"    'duration_seconds', (r.body ->> 'duration_seconds')::int, "
	"    'recorded_at', " CC_PG_RFC3339("r.recorded_at") ") END, "
	"  'teams', (SELECT jsonb_agg(jsonb_build_object("
	"      'team', t.team, "
	"      'score', CASE WHEN r.match_id IS NULL THEN NULL WHEN t.team = 0 THEN r.score_team0 ELSE r.score_team1 END, "
	"      'players', (SELECT coalesce(jsonb_agg(jsonb_build_object("
	"          'player_id', mp.player_id, 'display_name', p.display_name, 'team', mp.team, "
	"          'stats', (SELECT jsonb_build_object('goals', x -> 'goals', 'assists', x -> 'assists', "
	"                      'saves', x -> 'saves', 'shots', x -> 'shots', 'bot', coalesce(x -> 'bot', 'false'::jsonb)) "
	"                    FROM jsonb_array_elements(r.body -> 'players') x "
	"                    WHERE x ->> 'player_id' = mp.player_id::text LIMIT 1)) "
	"        || CASE WHEN pl.ranked THEN jsonb_build_object('rating', "
	"             (SELECT jsonb_build_object('rating_before', c.rating_before, 'deviation_before', c.deviation_before, "
	"                'rating_after', c.rating_after, 'deviation_after', c.deviation_after) "
	"              FROM rating_changes c WHERE c.match_id = m.id AND c.player_id = mp.player_id)) "
	"           ELSE '{}'::jsonb END "
	"        ORDER BY mp.player_id), '[]'::jsonb) "
	"        FROM match_players mp JOIN players p ON p.id = mp.player_id "
	"        WHERE mp.match_id = m.id AND mp.team = t.team)) ORDER BY t.team) "
	"    FROM (VALUES (0), (1)) AS t(team))"
	")::text "
	"FROM matches m JOIN playlists pl ON pl.name = m.playlist "
	"LEFT JOIN match_results r ON r.match_id = m.id "
	"WHERE m.id = $1 AND EXISTS (SELECT 1 FROM match_players q WHERE q.match_id = m.id AND q.player_id = $2)";

int cc_match_summary_get(struct cc_pg *pg, const char *match_id, const char *player_id, char **json)
{
	const char *p[] = { match_id, player_id };
	return cc_pg_exec_text(pg, sql_summary, 2, p, json);
}
