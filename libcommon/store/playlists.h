/*
 * playlists.h - the `playlists` table (migration 0007): the database's copy
 * of the compiled list in game/playlist.c, the one place that table is
 * written or read from C.
 *
 * Why a copy at all: the playlist columns of tickets, ratings, proposals and
 * matches are foreign keys to it, so the database refuses a playlist no
 * release defines, and SQL that needs a playlist's rule (cc_claim_proposal's
 * arena choice, the operator's queue view) reads it instead of spelling
 * playlist names.
 *
 * Why "insert what is missing, then compare" at start-up (cc-api and
 * cc-matcher both run it) rather than a migration per playlist or an
 * overwrite:
 *   - adding a playlist stays one entry in game/playlist.c: the first
 *     service of the new release to start inserts its row, before anything
 *     can reference it;
 *   - a row is never overwritten: while two releases run side by side
 *     (a rolling deploy) each would rewrite the other's definition back and
 *     forth, and the SQL would follow whichever started last. A changed
 *     definition is a deliberate change with consequences for queued
 *     tickets, so it goes through a migration (UPDATE playlists ...); until
 *     the row and the entry agree the services refuse to serve, as
 *     cc-matcher does for the arenas table;
 *   - rows the compiled list lacks are tolerated: a newer release running
 *     beside this one may have added them. This release never accepts them
 *     (cc_playlist_find refuses the name).
 */
#ifndef CC_STORE_PLAYLISTS_H
#define CC_STORE_PLAYLISTS_H

#include <stddef.h>

#include "game/playlist.h"
#include "sys/cc.h"
#include "sys/pg.h"

/*
 * Checks the compiled list (cc_playlists_check), inserts every playlist the
 * table lacks (INSERT ... ON CONFLICT DO NOTHING, one autocommit statement
 * each, so replicas starting together are safe), then reads the table and
 * compares every compiled playlist with its row. Call it outside a
 * transaction. *inserted (if not NULL) receives how many rows this call
 * inserted.
 * Returns 0 when every compiled playlist has an equal row (why ""),
 * CC_EINVAL when the compiled list itself is invalid, CC_ESTATE when a row
 * is missing or differs (a row of the same name, or a second profile
 * playlist, kept the insert out), or cc_pg_exec's error; why then says
 * which playlist and field ("playlists row 'duo' differs from
 * game/playlist.c: team_size is 3 there, 2 here") or quotes the server.
 */
CC_MUST_CHECK int cc_playlists_sync(struct cc_pg *pg, size_t *inserted, char *why, size_t whylen);

#endif
