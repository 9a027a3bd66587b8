/*
 * rosters.h - the one owner of writes to the rosters and assignments tables
 * (SPEC 8): what a match's game server admits, and each participant's seat.
 *
 * cc-allocator publishes a roster once per match, in the transaction that
 * moves its allocation ALLOCATED -> PUBLISHED (store/allocations.h): one
 * assignments row per match_players row (slot, team, generation 1, the join
 * token and its expiry) and the rosters row (the manifest, its digest and
 * the join key id). The primary keys make a second publication of a match
 * fail (CC_ECONFLICT), so a republish after a crash must check the
 * allocation's state first, which the allocator does under the row lock.
 *
 * Slots are dealt by team, then player id (the order
 * cc_roster_participants returns), so every publication of one match
 * deals the same slots. Every function runs inside the caller's
 * transaction; the structs are plain values.
 */
#ifndef CC_STORE_ROSTERS_H
#define CC_STORE_ROSTERS_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/formation.h"

#define CC_ROSTER_KEY_ID_BUF 65 /* a join key id: up to 64 bytes */

/* One participant and the seat the roster gives it. */
struct cc_roster_seat {
	char player_id[CC_UUID_BUF];
	int slot;                   /* 0..n-1, by team then player id */
	int team;                   /* 0 or 1 */
	int generation;             /* 1 at publication */
	const char *join_token;     /* borrowed: the signed join authorisation (printable ASCII) */
	int64_t expires_unix;       /* the join token's expiry */
};

/*
 * Reads the participants of match_id in slot order (team, then player id)
 * into seats (cap entries): player_id, slot, team, generation 1; the token
 * fields are left for the caller. Returns 0 with *n; CC_ENOTFOUND for a
 * match without players; CC_ETOOBIG over cap; or a database error.
 */
int cc_roster_participants(struct cc_pg *pg, const char *match_id, struct cc_roster_seat *seats, size_t cap,
			   size_t *n) CC_MUST_CHECK;

/* The roster row. */
struct cc_roster_record {
	const char *match_id;
	const char *allocation_id;
	const char *key_id;        /* the join key that signed the tokens ("" = the raw key) */
	const char *digest;        /* 64 lowercase hex: SHA-256 of the canonical roster bytes */
	const char *manifest_json; /* a JSON object (game/roster's manifest) */
};

/*
 * Writes the rosters row and one assignments row per seat. Returns 0;
 * CC_EINVAL for bad input; CC_ECONFLICT when the match already has a
 * roster or an assignment; or a database error.
 */
int cc_roster_insert(struct cc_pg *pg, const struct cc_roster_record *r, const struct cc_roster_seat *seats,
		     size_t n) CC_MUST_CHECK;

/*
 * cc_roster_participants for n matches in one statement: the seats of
 * match_ids[i] go to seats[i * per ..] in slot order, their number to
 * counts[i]. Returns 0; CC_ENOTFOUND when a match has no players;
 * CC_ETOOBIG when one has more than per; CC_EINVAL for bad input; or a
 * database error.
 */
int cc_roster_participants_many(struct cc_pg *pg, const char *const *match_ids, size_t n,
				struct cc_roster_seat *seats, size_t per, size_t *counts) CC_MUST_CHECK;

/*
 * Publishes n rosters in one statement (the batch form of cc_roster_insert
 * followed by cc_allocation_set_published, store/allocations.h): each
 * rosters row, one assignments row per seat (seats[i][0..counts[i])), and
 * each allocation ALLOCATED -> PUBLISHED (revision + 1, claim cleared) with
 * its own "allocation.published" event to every player of its match. Every
 * record must name the same key_id. Call with the allocations locked and
 * seen ALLOCATED. Returns 0; CC_EINVAL for bad input; CC_ECONFLICT when a
 * match already has a roster or an assignment, or an allocation was not
 * ALLOCATED (roll back); or a database error.
 */
int cc_rosters_publish_many(struct cc_pg *pg, const struct cc_roster_record *recs,
			    const struct cc_roster_seat *const *seats, const size_t *counts, size_t n) CC_MUST_CHECK;

/*
 * Backfill (store/backfill.h). cc_roster_lock reads (FOR UPDATE) the
 * roster row of match_id: its manifest text (malloc'd into *manifest, the
 * caller frees) and key id. CC_ENOTFOUND when none.
 */
int cc_roster_lock(struct cc_pg *pg, const char *match_id, char **manifest, char key_id[CC_ROSTER_KEY_ID_BUF]) CC_MUST_CHECK;

/*
 * Seats s (generation = the vacated one + 1) on s->slot of match_id: the
 * current assignment of that slot, which must be old_player_id at
 * old_generation, is marked replaced (its lease history stays), the new
 * assignment inserted, and the rosters row gets the new manifest and
 * digest. Returns 0; CC_ESTATE when the slot's current assignment is not
 * the one named (another accept came first); CC_EINVAL; or a database error.
 */
int cc_roster_backfill_seat(struct cc_pg *pg, const char *match_id, const char *old_player_id, int old_generation,
			    const struct cc_roster_seat *s, const char *digest, const char *manifest_json) CC_MUST_CHECK;

#endif
