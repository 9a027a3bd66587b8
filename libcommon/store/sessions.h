/*
 * sessions.h - the one owner of the sessions table (SPEC 3): a login
 * creates a row, every authenticated request looks its bearer token up,
 * a ban revokes them all.
 *
 * Every function runs inside the caller's transaction on pg (sys/pg.h;
 * a single statement when the caller has none) and returns what it read
 * or changed; no PGresult leaves this module. Tokens are never stored:
 * token_hash is the hashed bearer token the API renders as a bytea
 * parameter. The caller frees a json out-parameter's malloc'd text;
 * struct cc_session_check is a plain value.
 */
#ifndef CC_STORE_SESSIONS_H
#define CC_STORE_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

/* A session and its player, with each reason to refuse it, as one read. */
struct cc_session_check {
	char player_id[CC_UUID_BUF];
	bool banned;                           /* players.banned_until is in the future */
	bool revoked;                          /* sessions.revoked_at is set */
	bool expired;                          /* sessions.expires_at has passed */
	char banned_until[CC_PG_RFC3339_BUF];  /* RFC 3339, "" when never banned */
};

/*
 * The session check as SQL, for a statement of another owner module that
 * folds it in (store/tickets.c's heartbeat): one row (or none) with the
 * columns player_id, banned, revoked, expired, banned_until over the token
 * hash parameter hash_param ("$1"); cc_session_check_from_row() reads them.
 */
#define CC_SESSION_CHECK_SQL(hash_param)                                                        \
	"SELECT p.id AS player_id, coalesce(p.banned_until > now(), false) AS banned, "            \
	"  s.revoked_at IS NOT NULL AS revoked, s.expires_at <= now() AS expired, "               \
	"  " CC_PG_RFC3339("p.banned_until") " AS banned_until "                                  \
	"FROM sessions s JOIN players p ON p.id = s.player_id WHERE s.token_hash = " hash_param
#define CC_SESSION_CHECK_NCOLUMNS 5

/* Fills *out from the CC_SESSION_CHECK_SQL columns of row starting at column col. */
void cc_session_check_from_row(const PGresult *res, int row, int col, struct cc_session_check *out);

/*
 * Looks up the session whose token hashes to token_hash, joined to its
 * player, in one round trip. Returns 0 with *out filled, CC_ENOTFOUND for
 * an unknown token, or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_session_lookup(struct cc_pg *pg, const char *token_hash, struct cc_session_check *out);

/*
 * Inserts a session for player_id expiring ttl_seconds from now and sets
 * *json to the contract's session answer {session_token, player_id,
 * expires_at} (malloc'd, the caller frees), token being the bearer token
 * the client receives (only its hash is stored). Returns 0, CC_ENOMEM,
 * CC_ENOTFOUND (no row back) or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_session_create(struct cc_pg *pg, const char *player_id, const char *token_hash,
				    int64_t ttl_seconds, const char *token, char **json);

/*
 * Revokes every unrevoked session of player_id (a ban: every replica
 * refuses the player at the next request). *revoked, when not NULL,
 * receives how many rows it changed. Returns 0 or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_sessions_revoke_all(struct cc_pg *pg, const char *player_id, int64_t *revoked);

/*
 * Retention (cc-maintenance, store/purge.h): deletes at most limit dead
 * sessions (expired, or revoked, more than older_than_s ago), oldest
 * first, FOR UPDATE SKIP LOCKED. A live session is never touched. *n how
 * many; *lag (when not NULL) how many were past the window before.
 */
int cc_sessions_purge_dead(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag) CC_MUST_CHECK;

/*
 * The event stream's periodic re-check, in one round trip for many: for
 * each of the n token hashes (the "\\x<64 hex>" form of the API's
 * api_secret_hash_param), verdict[i] = 0 when its session still admits its
 * bearer, CC_SESSION_ENDED_REVOKED when it is unknown, revoked or its
 * player banned, CC_SESSION_ENDED_EXPIRED when it expired. n at most
 * CC_SESSIONS_CHECK_MAX. Returns 0, CC_EINVAL (a malformed hash: nothing
 * queried), CC_ENOMEM or cc_pg_exec's error.
 */
#define CC_SESSIONS_CHECK_MAX 1000
#define CC_SESSION_ENDED_REVOKED 1
#define CC_SESSION_ENDED_EXPIRED 2
CC_MUST_CHECK int cc_sessions_ended(struct cc_pg *pg, const char *const *token_hashes, size_t n, uint8_t *verdict);

#endif
