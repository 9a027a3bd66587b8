/*
 * results.h - the one owner of the match_results and rating_changes
 * tables (SPEC 9): the durable guards that make POST
 * /v1/servers/{id}/result complete a match and move each rating exactly
 * once, however many identical submissions race.
 *
 *   match_results   one row per match (primary key match_id): the score,
 *                   the canonical body and its request_hash. An equal hash
 *                   is an identical replay, another a conflict.
 *   rating_changes  one row per player per match (primary key): the rating
 *                   before and after, so a rating can never move twice for
 *                   one match, and the answer of every replay is rebuilt
 *                   from the same rows.
 *
 * Every function runs inside the caller's SERIALIZABLE transaction (the
 * result route's, services/api/servers.c). A submission racing a committed
 * one gets 40001 from the insert (its snapshot cannot see the row that
 * blocks it), and its retry finds the row and answers as a replay.
 * No PGresult leaves this module; a json out-parameter is malloc'd text the
 * caller frees.
 */
#ifndef CC_STORE_RESULTS_H
#define CC_STORE_RESULTS_H

#include <stdbool.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/glicko2.h"
#include "game/match_result.h"

/*
 * The stored result's request_hash of match_id into hash: 0; CC_ENOTFOUND
 * when the match has no result yet; or a database error.
 */
int cc_result_find(struct cc_pg *pg, const char *match_id, char hash[CC_MATCH_RESULT_HASH_BUF]) CC_MUST_CHECK;

/*
 * Records r (its canonical body and hash) as the result of match_id served
 * by allocation_id. Returns 0; CC_ECONFLICT when the match already has a
 * result (the caller read none: a concurrent one committed, so the
 * transaction must be retried, and returns CC_ESERIALIZATION for it);
 * CC_ENOMEM; or a database error.
 */
int cc_result_insert(struct cc_pg *pg, const char *match_id, const char *allocation_id,
		     const struct cc_match_result *r) CC_MUST_CHECK;

/* Records one player's rating before and after the result of match_id, in playlist. */
int cc_result_rating_change(struct cc_pg *pg, const char *match_id, const char *player_id, const char *playlist,
			    const struct cc_glicko2_rating *before, const struct cc_glicko2_rating *after) CC_MUST_CHECK;

/*
 * The MatchResult object of contracts/v1/openapi.json for match_id, built
 * from match_results, rating_changes and the match row (so the first answer
 * and every replay are the same), as malloc'd JSON text in *json.
 * Returns 0, CC_ENOTFOUND, or a database error.
 */
int cc_result_view(struct cc_pg *pg, const char *match_id, char **json) CC_MUST_CHECK;

#endif
