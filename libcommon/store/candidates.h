/*
 * candidates.h - the SQL that reads candidates (game/candidate.h) from
 * PostgreSQL, the source of truth; the Redis index in candidate_index.h is
 * only an accelerator over the same shape.
 */
#ifndef CC_CANDIDATES_H
#define CC_CANDIDATES_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/candidate.h"
#include "game/playlist.h"

/*
 * The SELECT (or RETURNING) list over tickets aliased t that
 * cc_candidate_from_row() reads: CC_CANDIDATE_NCOLUMNS columns, the last
 * one the playlist. Writers that change a ticket use it to refresh the
 * index from the row they already have, without a second query.
 */
#define CC_CANDIDATE_COLUMNS                                                                     \
	"t.id, t.player_id, t.build, t.protocol_version, t.rating, t.deviation, "                \
	"(extract(epoch FROM t.queued_at) * 1000)::bigint, "                                      \
	"(extract(epoch FROM t.expires_at) * 1000)::bigint, t.predicted_rtt::text, "               \
	"coalesce(t.party_id::text, ''), t.party_size, t.playlist"
#define CC_CANDIDATE_NCOLUMNS 12

/* Fills *out from the CC_CANDIDATE_COLUMNS that start at column col of row i of res. */
void cc_candidate_from_row(const PGresult *res, int i, int col, struct cc_candidate *out);

/*
 * Reads up to limit QUEUED, unexpired tickets of playlist, oldest first,
 * into out (caller's array of limit entries); *n receives the count. With
 * after_ticket_id (a UUID; NULL = from the head) it reads the page that
 * follows that ticket in queue order (queued_at, id), whatever state the
 * ticket is in now: keyset paging, as cheap at any depth (none when that
 * ticket no longer exists). Also
 * returns PostgreSQL's now() in *now_ms when now_ms is not NULL. Returns 0 or
 * cc_pg_exec's error.
 */
int cc_candidates_load(struct cc_pg *pg, const char *playlist, const char *after_ticket_id, size_t limit,
		       struct cc_candidate *out,
		       size_t *n, int64_t *now_ms) CC_MUST_CHECK;

/*
 * Reads one ticket as a candidate: 0 and *out when it is QUEUED and
 * unexpired, CC_ENOTFOUND otherwise (absent, another state, expired), or
 * cc_pg_exec's error. *playlist_out (CC_PLAYLIST_BUF bytes) receives its playlist.
 */
int cc_candidate_load_one(struct cc_pg *pg, const char *ticket_id, struct cc_candidate *out,
			  char playlist_out[CC_PLAYLIST_BUF]) CC_MUST_CHECK;

#endif
