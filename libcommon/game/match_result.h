/*
 * match_result.h - what a game server's POST /v1/servers/{id}/result says
 * (SPEC 9), and the rules it must obey before it may complete a match.
 *
 * The body (contracts/v1/openapi.json MatchResultRequest):
 *   {"score":[t0,t1], "duration_seconds":N,
 *    "players":[{"player_id","team","goals","assists","saves","shots"[,"bot"]}, ...]}
 * "bot": true (optional, default false) says a server bot drove that
 * participant's slot at some time of the match (a no-show, or a player
 * whose reservation lapsed; issue 12). The participant is still listed
 * (every participant exactly once) and its numbers recorded, but it is
 * never rated: cc-api moves no rating for it and leaves it out of the
 * opponents' composite (a team with no human left rates nobody).
 * cc_match_result_parse() reads its shape (what a 400 refuses);
 * cc_match_result_check() judges it against the match's participants (what
 * a 422 refuses): every participant exactly once, nobody else, each on the
 * team the match put them in, and no team's players scoring more goals
 * than its score (an own goal counts for the other team's score and for
 * nobody's goals, so a team's goals may be fewer than its score, never
 * more).
 *
 * Two submissions are the same result exactly when their canonical text is
 * equal (cc_match_result_hash): score, duration and every player's numbers,
 * players ordered by id, so neither the order of players nor that of JSON
 * keys makes a replay look different. match_results.request_hash stores
 * that digest: an equal one is an identical replay (200), another is a
 * conflict (409).
 *
 * Pure: no I/O; struct cc_match_result is a plain value (no pointers);
 * cc_match_result_to_json() is the one function that allocates (the
 * caller frees the tree with cJSON_Delete).
 */
#ifndef CC_GAME_MATCH_RESULT_H
#define CC_GAME_MATCH_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sys/cc.h"
#include "sys/json.h"

#define CC_MATCH_RESULT_MAX_PLAYERS 16     /* two teams of at most 8 */
#define CC_MATCH_RESULT_SCORE_MAX 1000     /* goals of one team */
#define CC_MATCH_RESULT_STAT_MAX 1000      /* any one player's goals, assists, saves or shots */
#define CC_MATCH_RESULT_DURATION_MAX 86400 /* seconds played */
#define CC_MATCH_RESULT_HASH_BUF 65        /* SHA-256 hex and the NUL */

struct cc_match_result_player {
	char player_id[CC_UUID_BUF]; /* lowercase UUID */
	int team;                    /* 0 or 1 */
	int goals;                   /* into the other team's net */
	int assists;
	int saves;
	int shots;
	bool bot;                    /* a server bot drove this slot at some time: recorded, never rated */
};

struct cc_match_result {
	int score[2];                /* goals of team 0 and team 1 */
	int duration_seconds;        /* played time, stoppages excluded */
	size_t n_players;            /* 2 .. CC_MATCH_RESULT_MAX_PLAYERS */
	struct cc_match_result_player players[CC_MATCH_RESULT_MAX_PLAYERS]; /* sorted by player_id */
};

/*
 * Reads body (a JSON object) into *out, players sorted by id. Refuses, with
 * CC_EINVAL and err naming the field: an unknown or repeated field, a
 * missing one, a wrong type, a number out of its range, a score that is not
 * exactly two integers, fewer than 2 or more than CC_MATCH_RESULT_MAX_PLAYERS
 * players, a player_id that is not a lowercase UUID. *out is written only
 * on success. Duplicates are the check's business (422), not the shape's.
 */
int cc_match_result_parse(const cJSON *body, struct cc_match_result *out, struct cc_json_error *err) CC_MUST_CHECK;

/*
 * Judges r against the match's n participants (ids[i] on teams[i]).
 * Returns 0, or CC_EINVAL with why (whylen bytes) saying what is wrong in
 * one sentence: a player twice, a player not in the match, a participant
 * missing, a player on the wrong team, a team with more goals than its
 * score.
 */
int cc_match_result_check(const struct cc_match_result *r, const char (*ids)[CC_UUID_BUF], const uint8_t *teams,
			  size_t n, char *why, size_t whylen) CC_MUST_CHECK;

/* SHA-256 hex of r's canonical text (see above) into out. */
void cc_match_result_hash(const struct cc_match_result *r, char out[CC_MATCH_RESULT_HASH_BUF]);

/* The game from team 0's side, for Glicko-2: 1 (team 0 won), 0.5 (draw) or 0. */
double cc_match_result_score_team0(const struct cc_match_result *r);

/* The winning team, or -1 for a draw. */
int cc_match_result_winner(const struct cc_match_result *r);

/*
 * The canonical JSON object of r (the request's fields, players by id), as
 * stored in match_results.body. Returns a new tree, or NULL when out of memory.
 */
cJSON *cc_match_result_to_json(const struct cc_match_result *r);

#endif
