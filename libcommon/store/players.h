/*
 * players.h - the one owner of the players table (SPEC 3, 11): the row a
 * Steam login creates or finds, the operator's ban and unban, and the
 * operator's PlayerView read (the player with its active sessions, active
 * ticket and ranked rating, built in one statement).
 *
 * Every function runs inside the caller's transaction on pg (sys/pg.h)
 * and returns what it read or changed; no PGresult leaves this module.
 * struct cc_player_status is a plain value; a json out-parameter receives
 * malloc'd text the caller frees.
 */
#ifndef CC_STORE_PLAYERS_H
#define CC_STORE_PLAYERS_H

#include <stdbool.h>

#include "sys/cc.h"
#include "sys/pg.h"

/* A player row as a login sees it. */
struct cc_player_status {
	char id[CC_UUID_BUF];
	bool banned;                           /* banned_until is in the future */
	char banned_until[CC_PG_RFC3339_BUF];  /* RFC 3339, "" when never banned */
};

/*
 * Creates the player of steam_id on its first login, or finds it: a
 * returning account keeps its id. Returns 0 with *out filled, or
 * cc_pg_exec's error (CC_ENOTFOUND if no row came back).
 */
CC_MUST_CHECK int cc_player_upsert_steam(struct cc_pg *pg, const char *steam_id, struct cc_player_status *out);

/*
 * Bans player_id until `until` (RFC 3339 text; PostgreSQL's timestamptz
 * cast is the parser of record, so a value the caller's syntax check
 * passed but the cast refuses, e.g. month 13, fails with CC_EDB) for
 * reason. *in_future says whether `until` lies ahead of now(). Returns 0,
 * CC_ENOTFOUND for no such player, or cc_pg_exec's error. Revoking the
 * sessions and cancelling the tickets are the caller's next steps in the
 * same transaction (store/sessions.h, store/tickets.h).
 */
CC_MUST_CHECK int cc_player_ban(struct cc_pg *pg, const char *player_id, const char *until, const char *reason,
				bool *in_future);

/* Lifts player_id's ban (sessions stay revoked). Returns 0, CC_ENOTFOUND or cc_pg_exec's error. */
CC_MUST_CHECK int cc_player_unban(struct cc_pg *pg, const char *player_id);

/*
 * The operator's PlayerView of player_id as malloc'd JSON text in *json
 * (the caller frees): player_id, steam_id, created_at, banned_until,
 * ban_reason, active_sessions, active_ticket (the contract's Ticket or
 * null) and rating. rating holds only the stored numbers {rating,
 * deviation, ranked_games} of the profile playlist (or null); the caller
 * completes it into the ranked profile. Returns 0, CC_ENOTFOUND,
 * CC_ENOMEM or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_player_view(struct cc_pg *pg, const char *player_id, char **json);

#endif
