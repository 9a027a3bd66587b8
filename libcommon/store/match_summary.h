/*
 * match_summary.h - the player's read of one match (GET
 * /v1/matches/{match_id}, issue 20): what a post-match screen shows, in
 * one statement. A reader with no write: it owns no table and reads across
 * the owners' rows (store/README.md, "Readers"):
 *   matches, playlists      state, times and end reason (migration 0016,
 *                           written by store/matches.c), whether ranked
 *   match_players, players  the teams, each participant's display name
 *   match_results           the score, the winner, the duration and each
 *                           participant's numbers (store/results.c)
 *   rating_changes          ranked only: each rated participant's rating
 *                           and deviation before and after (store/results.c)
 * Every write stays with those owners.
 *
 * The answer is the MatchSummary object of contracts/v1/openapi.json:
 * "result" is null until the result is recorded; a participant's "rating"
 * is present only in a ranked match, null until the result is in and for a
 * participant the result did not rate (a bot drove the slot, or the player
 * never connected). A casual match's hidden rating is never shown: its
 * participants have no "rating" field at all.
 */
#ifndef CC_STORE_MATCH_SUMMARY_H
#define CC_STORE_MATCH_SUMMARY_H

#include "sys/cc.h"
#include "sys/pg.h"

/*
 * The MatchSummary of match_id as player_id may see it, as malloc'd JSON
 * text in *json (caller frees). Returns 0; CC_ENOTFOUND when there is no
 * such match or player_id is not one of its participants (the same answer,
 * so the route tells a stranger nothing); CC_ENOMEM; or a database error.
 */
int cc_match_summary_get(struct cc_pg *pg, const char *match_id, const char *player_id, char **json) CC_MUST_CHECK;

#endif
