/*
 * ratings.h - the one owner of the ratings table (SPEC 9). Today it reads
 * the ranked profile's numbers; the result route will write ratings here
 * (game/glicko2 computes them). The enqueue's rating read is part of
 * store/tickets.h's one-statement enqueue facts.
 *
 * Runs on pg inside the caller's transaction, if any; struct cc_rating is
 * a plain value; no PGresult leaves this module.
 */
#ifndef CC_STORE_RATINGS_H
#define CC_STORE_RATINGS_H

#include "sys/cc.h"
#include "sys/pg.h"

/* A player's stored rating in one playlist. */
struct cc_rating {
	double rating;
	double deviation;
	long games; /* rated games played */
};

/*
 * player_id's rating in the profile playlist (the one marked profile in
 * the playlists table, game/playlist.c). Returns 0 with *out
 * filled, CC_ENOTFOUND when the player has no such row yet, or
 * cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_rating_profile_get(struct cc_pg *pg, const char *player_id, struct cc_rating *out);

#endif
