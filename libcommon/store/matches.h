/*
 * matches.h - the one owner of writes to the matches and match_players
 * tables (SPEC 7-9). Every function runs inside the caller's SERIALIZABLE
 * transaction, moves the match with one compare-and-set statement, bumps
 * its revision (an int64), appends its outbox event here and nowhere else,
 * and returns the row it wrote, so no caller reads it back.
 *
 * Writers: a proposal that everyone accepted becomes a match in
 * ALLOCATING (cc_match_create, from store/proposals.c); cc-api's server
 * routes (services/api/servers.c) move it on, one function per
 * transition below, each a compare-and-set on the state it expects
 * (CC_ESTATE when the match is elsewhere: nothing written), also
 * checked against contracts/v1/state-transitions.json by the database:
 *
 *   function                        move                               outbox event
 *   cc_match_mark_process_ready     ALLOCATING -> PROCESS_READY        match.process_ready
 *   cc_match_mark_assignment_ready  PROCESS_READY -> ASSIGNMENT_READY  match.assignment_ready
 *   cc_match_start                  ASSIGNMENT_READY -> IN_PROGRESS    match.in_progress
 *   cc_match_await_result           IN_PROGRESS -> RESULT_PENDING      match.result_pending
 *   cc_match_complete               RESULT_PENDING -> COMPLETED        match.completed
 *   cc_match_fail                   any non-terminal -> FAILED         match.failed
 *
 * A transition takes the match as the caller read it (cc_match_get, in the
 * same transaction) and updates its state and revision in place; every
 * event goes to all of the match's players. The same statement stamps
 * migration 0016's columns: started_at (cc_match_start), ended_at and
 * end_reason ("completed" from cc_match_complete, the reason of
 * cc_match_fail), which GET /v1/matches/{match_id} shows
 * (store/match_summary.h).
 *
 * struct cc_match is a plain value (no pointers).
 */
#ifndef CC_STORE_MATCHES_H
#define CC_STORE_MATCHES_H

#include <stdbool.h>
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

/*
 * Reads match_id with its players (by team, then id) into *out; for_update
 * locks the match row, so the transitions of one match serialize. Returns
 * 0, CC_ENOTFOUND, or a database error.
 */
int cc_match_get(struct cc_pg *pg, const char *match_id, bool for_update, struct cc_match *out) CC_MUST_CHECK;

/* The transitions (table above). 0 with m->state and m->revision updated; CC_ESTATE; or a database error. */
int cc_match_mark_process_ready(struct cc_pg *pg, struct cc_match *m) CC_MUST_CHECK;
int cc_match_mark_assignment_ready(struct cc_pg *pg, struct cc_match *m) CC_MUST_CHECK;
int cc_match_start(struct cc_pg *pg, struct cc_match *m) CC_MUST_CHECK;
int cc_match_await_result(struct cc_pg *pg, struct cc_match *m) CC_MUST_CHECK;
int cc_match_complete(struct cc_pg *pg, struct cc_match *m) CC_MUST_CHECK;
/* Any state but COMPLETED and FAILED -> FAILED; reason (a [a-z_] word) goes into the event's payload. */
int cc_match_fail(struct cc_pg *pg, struct cc_match *m, const char *reason) CC_MUST_CHECK;

/*
 * Backfill (store/backfill.h): player_id (ticket_id) joins m, IN_PROGRESS,
 * on team, its match_players row stamped joined_at = now(); m gains the
 * player. No event: the ticket's ticket.assigned tells the player. Returns
 * 0; CC_ESTATE when m is not IN_PROGRESS; CC_ETOOBIG when m is full;
 * CC_ECONFLICT when the player is already in it; or a database error.
 */
int cc_match_add_backfill_player(struct cc_pg *pg, struct cc_match *m, const char *player_id, const char *ticket_id,
				 int team) CC_MUST_CHECK;

/* True when state is COMPLETED or FAILED. */
bool cc_match_state_terminal(const char *state);

#endif
