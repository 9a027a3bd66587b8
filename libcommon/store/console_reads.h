/*
 * console_reads.h - the operator console's reads (GET /v1/admin/overview,
 * /matches, /matches/{id}, /players?q=, /players/{id}/history, /servers):
 * statements over tickets, matches, allocations, game_servers, players,
 * sessions, penalties and results that write nothing. Every write the
 * console makes (ban, unban) goes through the tables' owners
 * (players.c, sessions.c, tickets.c) in services/api/operator.c.
 *
 * Each function runs one statement on pg (inside the caller's transaction,
 * if any) and returns the contract's JSON object (contracts/v1/openapi.json)
 * as malloc'd text in *json that the caller frees; no PGresult leaves this
 * module. Returns 0, CC_ENOTFOUND (no such row, for the by-id reads),
 * CC_ENOMEM or cc_pg_exec's error.
 */
#ifndef CC_STORE_CONSOLE_READS_H
#define CC_STORE_CONSOLE_READS_H

#include <stdbool.h>

#include "sys/cc.h"
#include "sys/pg.h"

#define CC_CONSOLE_SERIES_BUCKETS 30        /* points of a series */
#define CC_CONSOLE_SERIES_BUCKET_SECONDS 30 /* 30 x 30 s: the last 15 minutes */
#define CC_CONSOLE_LIST_MAX 100             /* rows of a list at most */

/*
 * The ConsoleOverview: per playlist x served region the queue depth and the
 * current waits' p50/p90/p99; matches by state (live ones all, ended ones
 * of the last 15 minutes); game servers by provider and state; allocations
 * requested and failed in the last 15 minutes; and the 15-minute series
 * (CC_CONSOLE_SERIES_BUCKETS points, oldest first) of queue depth, matches
 * created, allocations requested and allocations failed.
 * regions_pg_array as cc_queue_stats_json's.
 */
CC_MUST_CHECK int cc_console_overview(struct cc_pg *pg, const char *regions_pg_array, char **json);

/*
 * The ConsoleMatchList: newest first, at most limit (1..CC_CONSOLE_LIST_MAX)
 * matches. query "" = all; else a match whose id, proposal id, server id,
 * state, playlist, region or arena starts with it (case-insensitive), or one
 * a player with that id or Steam id played in. state "" = any.
 */
CC_MUST_CHECK int cc_console_matches(struct cc_pg *pg, const char *query, const char *state, int limit,
				     char **json);

/* The ConsoleMatch: its timeline, players, server and result. CC_ENOTFOUND: no such match. */
CC_MUST_CHECK int cc_console_match(struct cc_pg *pg, const char *match_id, char **json);

/*
 * The ConsolePlayerList: at most CC_CONSOLE_LIST_MAX players whose id or
 * Steam id is query, or whose display name contains it (case-insensitive),
 * or whose id starts with it.
 */
CC_MUST_CHECK int cc_console_players(struct cc_pg *pg, const char *query, char **json);

/* The ConsolePlayerHistory: recent matches, penalties and sessions. CC_ENOTFOUND: no such player. */
CC_MUST_CHECK int cc_console_player_history(struct cc_pg *pg, const char *player_id, char **json);

/* The ConsoleServerList: every game server with its state, match, uptime and last heartbeat. */
CC_MUST_CHECK int cc_console_servers(struct cc_pg *pg, char **json);

/*
 * The fence of a ban or unban (operator.c): whether the player's
 * banned_until equals expected (NULL = not banned), and whether the ban the
 * request asks for is already in place (banned_until = until and
 * ban_reason = reason; until NULL: not banned), so a retried request is
 * answered, not refused. CC_ENOTFOUND: no such player.
 */
CC_MUST_CHECK int cc_console_ban_fence(struct cc_pg *pg, const char *player_id, const char *expected,
				       const char *until, const char *reason, bool *matches, bool *applied);

#endif
