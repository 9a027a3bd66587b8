/*
 * players.c - the players table's statements. See players.h.
 */
#include "store/players.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/tickets.h"
#include "sys/banned.h"

/* Creates the player on first login; the no-op update makes RETURNING see an existing row. */
static const char sql_upsert_player[] =
	"INSERT INTO players (steam_id) VALUES ($1) "
	"ON CONFLICT (steam_id) DO UPDATE SET steam_id = EXCLUDED.steam_id "
	"RETURNING id, coalesce(banned_until > now(), false), " CC_PG_RFC3339("banned_until");

/* $2 is validated as RFC 3339 before it gets here; the cast is the parser of record. */
static const char sql_ban[] =
	"UPDATE players SET banned_until = $2::timestamptz, ban_reason = $3 "
	"WHERE id = $1 RETURNING banned_until > now()";

static const char sql_unban[] =
	"UPDATE players SET banned_until = NULL, ban_reason = NULL WHERE id = $1 RETURNING id";

#define PLAYER_VIEW                                                                                 \
	"json_build_object('player_id', p.id, 'steam_id', p.steam_id, "                             \
	"'created_at', " CC_PG_RFC3339("p.created_at") ", 'banned_until', " CC_PG_RFC3339("p.banned_until") ", " \
	"'ban_reason', p.ban_reason, "                                                              \
	"'active_sessions', (SELECT count(*) FROM sessions s WHERE s.player_id = p.id "             \
	"   AND s.revoked_at IS NULL AND s.expires_at > now()), "                                   \
	"'active_ticket', (SELECT " CC_TICKET_JSON_OBJECT " FROM tickets t WHERE t.player_id = p.id " \
	"   AND t.state IN ('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED')), "                       \
	"'rating', (SELECT json_build_object('rating', r.rating, 'deviation', r.deviation, "        \
	"   'ranked_games', r.games) FROM ratings r WHERE r.player_id = p.id "                      \
	"   AND r.playlist = (SELECT name FROM playlists WHERE profile)))::text"

/* Its rating holds the stored numbers only; the caller completes it. */
static const char sql_view[] = "SELECT " PLAYER_VIEW " FROM players p WHERE p.id = $1";

/* Runs sql and keeps its one row in *out; CC_ENOTFOUND when it returned none. */
static int one_row(struct cc_pg *pg, const char *sql, int n, const char *const *params, PGresult **out)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, params, &res);
	if (rc != 0)
		return rc;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return CC_ENOTFOUND;
	}
	*out = res;
	return 0;
}

int cc_player_upsert_steam(struct cc_pg *pg, const char *steam_id, struct cc_player_status *out)
{
	PGresult *res = NULL;
	const char *params[] = { steam_id };
	int rc = one_row(pg, sql_upsert_player, 1, params, &res);
	if (rc != 0)
		return rc;
	memset(out, 0, sizeof *out);
	snprintf(out->id, sizeof out->id, "%s", PQgetvalue(res, 0, 0));
	out->banned = strcmp(PQgetvalue(res, 0, 1), "t") == 0;
	snprintf(out->banned_until, sizeof out->banned_until, "%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	return 0;
}

int cc_player_ban(struct cc_pg *pg, const char *player_id, const char *until, const char *reason, bool *in_future)
{
	PGresult *res = NULL;
	const char *params[] = { player_id, until, reason };
	int rc = one_row(pg, sql_ban, 3, params, &res);
	if (rc != 0)
		return rc;
	*in_future = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return 0;
}

int cc_player_unban(struct cc_pg *pg, const char *player_id)
{
	PGresult *res = NULL;
	const char *params[] = { player_id };
	int rc = one_row(pg, sql_unban, 1, params, &res);
	PQclear(res);
	return rc;
}

int cc_player_view(struct cc_pg *pg, const char *player_id, char **json)
{
	const char *params[] = { player_id };
	return cc_pg_exec_text(pg, sql_view, 1, params, json);
}
