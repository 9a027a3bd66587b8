/*
 * matches.h - the one owner of writes to the matches and match_players
 * tables (SPEC 7-9). Every function runs inside the caller's SERIALIZABLE
 * transaction, moves the match with one compare-and-set statement, bumps
 * its revision (an int64), appends its outbox event here and nowhere else,
 * and returns the row it wrote, so no caller reads it back.
 *
 * Today one writer exists: a proposal that everyone accepted becomes a
 * match in ALLOCATING (cc_match_create, from store/proposals.c). The
 * allocator (ALLOCATING -> PROCESS_READY -> ASSIGNMENT_READY), the result
 * route (-> IN_PROGRESS -> RESULT_PENDING -> COMPLETED) and the maintenance
 * sweeps (-> FAILED) will add one function each here, in the same shape:
 * (pg, match_id, expected state, ..., struct cc_match *out), the move
 * checked against contracts/v1/state-transitions.json by the database.
 *
 * struct cc_match is a plain value (no pointers).
 */
#ifndef CC_STORE_MATCHES_H
#define CC_STORE_MATCHES_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/formation.h"
#include "game/playlist.h"

#define CC_MATCH_STATE_BUF 24   /* "ASSIGNMENT_READY" and the rest */
#define CC_MATCH_TEXT_BUF 65    /* region, arena, build */

struct cc_match {
	char id[CC_UUID_BUF];
	char proposal_id[CC_UUID_BUF];
	char playlist[CC_PLAYLIST_BUF];
	char state[CC_MATCH_STATE_BUF];
	int64_t revision;
	char region[CC_MATCH_TEXT_BUF];
	char arena[CC_MATCH_TEXT_BUF];
	char build[CC_MATCH_TEXT_BUF];
	int32_t protocol_version;
	int team_size;
	size_t n_players;                                      /* 2 * team_size */
	char player_ids[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF]; /* by team, then player id */
	uint8_t teams[CC_FORMATION_MAX_PLAYERS];               /* team of player_ids[i] */
};

/*
 * Creates the match of proposal_id (which the caller has just settled
 * ACCEPTED) in ALLOCATING, copying its region, arena, build, protocol and
 * team size, with one match_players row per participant, and announces
 * "match.created" (revision 1, every player): the allocator's cue.
 * Returns 0 with *out; CC_ENOTFOUND when there is no such proposal;
 * or a database error (a second match of one proposal violates its
 * unique key).
 */
int cc_match_create(struct cc_pg *pg, const char *proposal_id, struct cc_match *out) CC_MUST_CHECK;

#endif
