/*
 * match_settle.h - the ways a match ends that the control plane decides
 * (SPEC 7, 9), one function each, called alike by cc-api's server routes
 * and by cc-maintenance's sweeps: a transition made by a sweep is the same
 * code as the same transition made by a request, and whichever sees it
 * first settles it (the match row's lock serializes them; the loser finds
 * the match settled and changes nothing).
 *
 *   function                         from                                 match ends   tickets                       server
 *   cc_match_settle_stalled          ALLOCATING | PROCESS_READY |         FAILED       MATCHED|ASSIGNED -> QUEUED    allocation REQUESTED -> FAILED,
 *                                    ASSIGNMENT_READY, past its deadline  "stalled"    (fresh expiry, no penalty)    ALLOCATED|PUBLISHED -> RELEASED "stalled"
 *   cc_match_settle_server_lost      any non-terminal                     FAILED       -> QUEUED when the playlist   ALLOCATED|PUBLISHED -> RELEASED reason
 *                                                                         reason       requeues on server loss,
 *                                                                                      else -> FAILED reason
 *   cc_match_settle_no_show          ASSIGNMENT_READY | IN_PROGRESS |     ranked:      no-shows -> FAILED "no_show"  ranked: RELEASED "no_show"
 *                                    RESULT_PENDING (the connect window   FAILED       + INITIAL_CONNECT_NO_SHOW;
 *                                    is over)                             "no_show"    the others -> QUEUED (fresh
 *                                                                         casual:      expiry, no penalty)
 *                                                                         unchanged    casual: only the penalty
 *   cc_match_settle_result_missing   RESULT_PENDING (the server said it   FAILED       -> FAILED "result_missing"    RELEASED "result_missing"
 *                                    ended; no result in the window)      "result_missing"
 *
 * Nobody's rating moves in any of them, and only a no-show is penalised.
 * Who "never connected" is the durable truth: an assignment whose
 * connection_generation is still 0 (no connect receipt was ever taken).
 *
 * Each function locks the match (cc_match_get for_update), checks it is
 * still in a state its row of the table covers, and then calls the owner
 * of every row it changes (store/matches.h, store/tickets.h,
 * store/allocations.h, store/server_routes.h, store/penalties.h); it
 * writes no SQL of its own but the reads below. Every call runs inside the
 * caller's SERIALIZABLE transaction. A match that is already past the
 * covered states answers 0 with out->changed false (nothing written): the
 * other path settled it first.
 *
 * The selectors return the ids of matches due for a sweep, oldest first,
 * locked FOR UPDATE SKIP LOCKED (so two cc-maintenance replicas never take
 * the same match in one pass), at most limit; *lag receives how many are
 * due in all (the sweep's backlog past its window, for the lag metric).
 *
 * Ownership: plain values; no pointers are kept.
 */
#ifndef CC_STORE_MATCH_SETTLE_H
#define CC_STORE_MATCH_SETTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/formation.h"
#include "store/matches.h"
#include "store/tickets.h"

/* What a settlement did. */
struct cc_settle_outcome {
	bool changed;                     /* false: the match was already past the covered states */
	char match_state[CC_MATCH_STATE_BUF]; /* the match's state afterwards */
	int requeued;                     /* tickets back to QUEUED */
	int failed;                       /* tickets -> FAILED */
	int penalised;                    /* INITIAL_CONNECT_NO_SHOW rows newly written */
	size_t n_no_shows;                /* cc_match_settle_no_show: who never connected */
	char no_shows[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
};

/* ---- the settlements ------------------------------------------------------ */

/*
 * A match stuck before IN_PROGRESS past its deadline (SPEC 9): FAILED
 * "stalled", its players requeued with expiry now() + ticket_ttl_seconds
 * and no penalty, its server freed. The deadline is the caller's (the
 * selector's) judgement; this function settles whatever match_id it is
 * given that is still in ALLOCATING, PROCESS_READY or ASSIGNMENT_READY.
 */
int cc_match_settle_stalled(struct cc_pg *pg, const char *match_id, int64_t ticket_ttl_seconds,
			    struct cc_settle_outcome *out, struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * The match's game server is gone (it stopped reporting, or a restarted
 * supervisor found its match past registration): FAILED with reason (a
 * [a-z_]{1,32} word: "server_silent", "server_lost"), nobody rated or
 * penalised, the allocation released. Tickets are requeued (expiry now() +
 * ticket_ttl_seconds) when the match's playlist says so
 * (cc_playlist.requeue_on_server_loss), else FAILED with reason.
 */
int cc_match_settle_server_lost(struct cc_pg *pg, const char *match_id, const char *reason,
				int64_t ticket_ttl_seconds, struct cc_settle_outcome *out,
				struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Settles the initial-connect no-shows of a match whose connect window is
 * over. named (n_named players; NULL/0: none named) is what the game
 * server reported; the no-shows are those of them who never connected
 * (durably), or, with none named (the sweep), every participant who never
 * connected. With no no-show at all nothing changes (out->changed false);
 * nor when nobody ever connected: that is a server nobody could reach (an
 * infrastructure fault, never penalised: SPEC 7), left to the server's
 * call-off or shutdown or to the stalled sweep.
 * Ranked: each no-show gets INITIAL_CONNECT_NO_SHOW (source: the match)
 * and its ticket FAILED "no_show"; the match is FAILED "no_show" unrated;
 * everyone else is requeued at once (expiry now() + ticket_ttl_seconds,
 * no penalty); the allocation is released "no_show". Casual: the bots
 * already took the slots, so only the penalties are recorded (the match
 * plays on; the result route never rates a no-show).
 * Returns CC_EINVAL when a named id is not a participant.
 */
int cc_match_settle_no_show(struct cc_pg *pg, const char *match_id, const char (*named)[CC_UUID_BUF],
			    size_t n_named, int64_t ticket_ttl_seconds, struct cc_settle_outcome *out,
			    struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * A match in RESULT_PENDING (its server said the game ended) whose result
 * never came: FAILED "result_missing", tickets FAILED "result_missing"
 * (the players are free to queue again), the allocation released.
 */
int cc_match_settle_result_missing(struct cc_pg *pg, const char *match_id, struct cc_settle_outcome *out,
				   struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* ---- the sweeps' selectors (cc-maintenance) -------------------------------- */

/* Matches in ALLOCATING, PROCESS_READY or ASSIGNMENT_READY whose updated_at is older than older_than_s. */
int cc_matches_due_stalled(struct cc_pg *pg, int64_t older_than_s, int limit, char (*ids)[CC_UUID_BUF],
			   size_t *n, int64_t *lag) CC_MUST_CHECK;

/*
 * Matches IN_PROGRESS whose server's last heartbeat (or, before its
 * first, the match's assignment_ready_at) is older than silent_s while
 * some live allocation was heard within silent_s: when none was (cc-api
 * or its network down, so every server looks silent), only after four
 * times silent_s. RESULT_PENDING is left to the result-missing selector,
 * whose window outlasts the result's retries.
 */
int cc_matches_due_server_silent(struct cc_pg *pg, int64_t silent_s, int limit, char (*ids)[CC_UUID_BUF],
				 size_t *n, int64_t *lag) CC_MUST_CHECK;

/*
 * Matches in ASSIGNMENT_READY, IN_PROGRESS or RESULT_PENDING whose assignment_ready_at is
 * older than window_s, in which somebody connected, and that have a
 * participant who never connected and is not yet penalised for it (so a
 * casual match, which plays on, is selected once).
 */
int cc_matches_due_no_show(struct cc_pg *pg, int64_t window_s, int limit, char (*ids)[CC_UUID_BUF], size_t *n,
			   int64_t *lag) CC_MUST_CHECK;

/* Matches in RESULT_PENDING whose updated_at is older than window_s. */
int cc_matches_due_result_missing(struct cc_pg *pg, int64_t window_s, int limit, char (*ids)[CC_UUID_BUF],
				  size_t *n, int64_t *lag) CC_MUST_CHECK;

#endif
