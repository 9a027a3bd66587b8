/*
 * ratings.h - the one owner of the ratings table (SPEC 9): the ranked
 * profile's read, and the result route's writes (game/glicko2 computes
 * the numbers; services/api/servers.c calls cc_ratings_lock, then
 * cc_rating_record once per player, in the result's transaction, behind
 * the match_results and rating_changes primary keys of store/results.h,
 * so a rating moves exactly once per match). A rating row is per player
 * and playlist: the casual row is the hidden rating, and only the profile
 * playlist's games are the "ranked games" of GET /v1/profile/ranked. The
 * enqueue's rating read is part of store/tickets.h's one-statement enqueue
 * facts.
 *
 * Runs on pg inside the caller's transaction, if any; struct cc_rating is
 * a plain value; no PGresult leaves this module.
 */
#ifndef CC_STORE_RATINGS_H
#define CC_STORE_RATINGS_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/glicko2.h"

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

/*
 * Locks (FOR UPDATE) the ratings in playlist of the n players ids[i],
 * creating the missing rows with the Glicko-2 defaults first, and writes
 * each one's rating to out[i] (and its games to games[i] when games is not
 * NULL). Returns 0; CC_EINVAL for n out of 1..CC_GLICKO2_TEAM_MAX * 2;
 * CC_EDB when a stored rating lies outside Glicko-2's domain; or a
 * database error.
 */
CC_MUST_CHECK int cc_ratings_lock(struct cc_pg *pg, const char *playlist, const char (*ids)[CC_UUID_BUF], size_t n,
				  struct cc_glicko2_rating *out, long *games);

/*
 * Stores player_id's new rating in playlist after match_id, one more game
 * played, and announces "rating.changed" (resource "rating" = the player;
 * revision = the player's rated games over all playlists, which only grows;
 * payload: playlist, match id and the new numbers). The row must exist
 * (cc_ratings_lock). Returns 0, CC_ENOTFOUND, or a database error.
 */
CC_MUST_CHECK int cc_rating_record(struct cc_pg *pg, const char *player_id, const char *playlist,
				   const char *match_id, const struct cc_glicko2_rating *after);

/* ---- season rollover (cc-maintenance; also owner of season_resets) ---------- */

/*
 * The soft reset a new season brings (SPEC 9), chosen so a season starts
 * close to where the last one ended but with room to move: the rating is
 * pulled CC_SEASON_RESET_PULL of the way back to the Glicko-2 default
 * (1500), and the deviation is raised to at least
 * CC_SEASON_RESET_MIN_DEVIATION (never above the default 350), so the
 * first games of a season move a rating quickly. Volatility and games
 * (ranked_games, provisional) are kept.
 */
#define CC_SEASON_RESET_PULL 0.5
#define CC_SEASON_RESET_MIN_DEVIATION 200.0

/*
 * Applies the soft reset of entering season (>= 2; a row of store/seasons.h)
 * to at most limit profile-playlist ratings that existed before the season
 * started and were not reset for it yet, FOR UPDATE SKIP LOCKED (player id
 * order). The season_resets row (player_id, season), inserted in the same
 * statement with the numbers before and after, is the exactly-once guard: a
 * second replica or a rerun finds it and changes nothing. Each reset is
 * announced "rating.season_reset" (resource "season_reset" = the player,
 * revision = the season). *n how many; *lag (when not NULL) how many were
 * due before. Returns 0, CC_EINVAL, or a database error.
 */
CC_MUST_CHECK int cc_ratings_season_reset(struct cc_pg *pg, int season, int limit, int64_t *n, int64_t *lag);

/*
 * The same reset, rule and guard, for the named players (1..64 UUIDs) who
 * are due it, locked FOR UPDATE (no SKIP LOCKED: a sweep batch holding one
 * is waited for). The result route calls it before it locks and rates a
 * profile-playlist match, so a player whose first game of a season comes
 * before the season sweep reaches them is reset first and then rated,
 * never rated and then pulled halfway back. *n (may be NULL) how many were
 * reset. Returns 0, CC_EINVAL, CC_ENOMEM, or a database error.
 */
CC_MUST_CHECK int cc_ratings_season_reset_players(struct cc_pg *pg, int season, const char (*ids)[CC_UUID_BUF],
						  size_t n_ids, int64_t *n);

#endif
