/*
 * tickets.h - the one owner of writes to the tickets table (SPEC 4, 6, 7).
 *
 * Every ticket transition is one function here, and each one
 *   - is a single compare-and-set statement inside the caller's
 *     SERIALIZABLE transaction (sys/pg.h), so a lost race changes nothing;
 *   - bumps revision by one (read back as an int64, never as text);
 *   - appends its outbox event (store/outbox.h) in one place, announce();
 *   - returns the rows it changed as struct cc_ticket, appended to the
 *     caller's struct cc_ticket_moves, so nobody reads them back (cc-api
 *     refreshes the Redis candidate index from them after the commit).
 *
 *   transition            states                        outbox event
 *   cc_ticket_enqueue     (new) -> QUEUED               ticket.queued
 *   cc_ticket_heartbeat   QUEUED|PROPOSED, same state   none: nobody else must hear it
 *   cc_ticket_expire_*    QUEUED -> EXPIRED (overdue)   ticket.expired
 *   cc_tickets_expire_unanswered  PROPOSED -> EXPIRED   ticket.expired {"reason":"proposal_timeout"}
 *   cc_ticket_cancel      QUEUED -> CANCELLED           ticket.cancelled
 *   cc_tickets_cancel_proposed  PROPOSED -> CANCELLED   ticket.cancelled (the decliner's)
 *   cc_tickets_cancel_proposed_party  PROPOSED -> CANCELLED  ticket.cancelled {"reason": ...} (mates, party gone)
 *   propose               QUEUED -> PROPOSED            ticket.proposed
 *   cc_tickets_requeue    PROPOSED -> QUEUED            ticket.requeued
 *   cc_tickets_match      PROPOSED -> MATCHED           ticket.matched
 *   cc_tickets_assign     MATCHED -> ASSIGNED           ticket.assigned
 *   cc_ticket_backfill_assign  QUEUED -> ASSIGNED       ticket.assigned {"backfill": true}
 *   cc_tickets_complete   ASSIGNED -> COMPLETED         ticket.completed
 *   cc_tickets_fail_match MATCHED|ASSIGNED -> FAILED    ticket.failed {"reason": ...}
 *   cc_tickets_requeue_match  MATCHED|ASSIGNED -> QUEUED  ticket.requeued {"reason": ...}
 *   cc_tickets_split_match    MATCHED|ASSIGNED -> FAILED  ticket.failed {"reason": ...} (named players)
 *                             MATCHED|ASSIGNED -> QUEUED  ticket.requeued {"reason": ...} (the rest)
 *   cc_ticket_set_rtt     predicted_rtt only            none (see below)
 *   cc_tickets_cancel_party  QUEUED -> CANCELLED        ticket.cancelled {"reason": ...} (a party's;
 *                            never while one is PROPOSED: cc_tickets_party_proposal)
 *
 * A party's tickets (party_id set, issue 26) move together: they share one
 * heartbeat lease (any member's heartbeat gives every waiting ticket of the
 * party the same new deadline, with no revision bump or event, as
 * cc_ticket_set_rtt, so the others' compare-and-set still holds; they were
 * created in one transaction with one deadline, so they stay equal and go
 * silent together; a ticket another transaction holds is skipped, not
 * waited for: two mates' heartbeats at once, or one racing a decline,
 * deadlocked), and cancelling one QUEUED ticket of a party cancels
 * the party's other QUEUED tickets in the same transaction
 * ({"reason": "party_member_cancelled"}).
 *
 * The propose step is the exception that stays in SQL: cc_claim_proposal
 * (migration 0006, called by store/formation_claim.c) moves a whole
 * formation QUEUED -> PROPOSED under its lock-ordered fence in one
 * round trip, with the same revision bump and ticket.proposed events; it
 * is the owner of that step.
 *
 * cc_ticket_set_rtt bumps no revision on purpose: a probe answered while
 * the ticket waits must not break the client's heartbeat compare-and-set.
 *
 * Ownership: struct cc_ticket and struct cc_ticket_moves are plain values
 * (no pointers); a json out-parameter, when not NULL, receives malloc'd
 * text (the contract's Ticket object) that the caller frees.
 */
#ifndef CC_STORE_TICKETS_H
#define CC_STORE_TICKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/candidate.h"
#include "game/enqueue_policy.h"
#include "game/playlist.h"
#include "game/transitions.h"

/*
 * The one JSON shape of a ticket (contracts/v1/openapi.json Ticket) as a
 * SQL json expression over a tickets row aliased t: the queue routes get it
 * as text from these functions, the operator's player view nests it.
 */
#define CC_TICKET_JSON_OBJECT                                                                    \
	"json_build_object('id', t.id, 'player_id', t.player_id, 'playlist', t.playlist, "       \
	"'state', t.state, 'revision', t.revision, 'build', t.build, "                            \
	"'protocol_version', t.protocol_version, 'predicted_rtt', t.predicted_rtt, "              \
	"'proposal_id', t.proposal_id, 'match_id', t.match_id, 'party_id', t.party_id, "          \
	"'created_at', " CC_PG_RFC3339("t.created_at") ", 'updated_at', " CC_PG_RFC3339("t.updated_at") ", " \
	"'expires_at', " CC_PG_RFC3339("t.expires_at") ")"

/* A ticket row as a transition left it. */
struct cc_ticket {
	char id[CC_UUID_BUF];
	char player_id[CC_UUID_BUF];
	char playlist[CC_PLAYLIST_BUF];
	enum cc_ticket_state state;
	int64_t revision;
	char proposal_id[CC_UUID_BUF]; /* "" when none */
	char match_id[CC_UUID_BUF];    /* "" when none */
	int64_t expires_at_ms;         /* heartbeat deadline, ms since the epoch on PostgreSQL's clock */
	struct cc_candidate cand;      /* the matcher's view of it (candidate index entry) */
};

/* Room for every ticket of the largest proposal plus the requester's own, twice over. */
#define CC_TICKET_MOVES_MAX 40

/* The rows one transaction changed, in the order it changed them (a ticket may appear twice). */
struct cc_ticket_moves {
	size_t n;
	size_t dropped; /* rows beyond CC_TICKET_MOVES_MAX: cannot happen with one active ticket per player */
	struct cc_ticket v[CC_TICKET_MOVES_MAX];
};

/* Empties m (call at the start of every transaction attempt). */
void cc_ticket_moves_reset(struct cc_ticket_moves *m);

/* ---- enqueue ------------------------------------------------------------- */

/*
 * What the enqueue decision and the new row need, read in one statement of
 * the player's own rows (players, penalties, region_rtts, ratings) inside
 * the enqueue transaction: the rating never comes from the client.
 */
struct cc_enqueue_reading {
	struct cc_enqueue_facts facts;   /* for cc_enqueue_decide (protocol fields: the caller's) */
	char banned_until[40];           /* RFC 3339, "" when not banned */
	double rating;                   /* Glicko-2 defaults (1500, 350) without a rating row */
	double deviation;
	char *predicted_rtt;             /* malloc'd JSON object of the fresh regions: cc_enqueue_reading_release */
};

/*
 * Reads the facts of player_id for playlist: RTT evidence counts for the
 * regions in regions_pg_array ("{a,b}") measured within freshness_seconds.
 * Returns 0, CC_ENOTFOUND (no such player), CC_ENOMEM or cc_pg_exec's error.
 */
int cc_ticket_enqueue_facts(struct cc_pg *pg, const char *player_id, const char *playlist,
			    const char *regions_pg_array, int64_t freshness_seconds,
			    struct cc_enqueue_reading *out) CC_MUST_CHECK;
void cc_enqueue_reading_release(struct cc_enqueue_reading *r);

struct cc_ticket_new {
	const char *player_id;
	const char *playlist;
	const char *build;
	int32_t protocol_version;
	double rating;
	double deviation;
	const char *predicted_rtt;       /* JSON object text */
	int64_t ttl_seconds;             /* first heartbeat deadline */
	const char *party_id;            /* the party that queued it (store/parties.h), NULL = solo */
	int party_size;                  /* tickets the party queues together (1 when solo) */
};

/*
 * Inserts the QUEUED ticket, with the one-active-ticket index as the
 * arbiter (no predicate lock: enqueues of different players never conflict).
 * An overdue QUEUED ticket of the player in the way is expired first
 * (announced, in moves). Returns 0 with *out the new ticket (in moves,
 * *json its JSON when json is not NULL); CC_ECONFLICT with *out the
 * player's live active ticket; CC_ESERIALIZATION when that ticket was
 * committed after our snapshot (the retry sees it); or a database error.
 */
int cc_ticket_enqueue(struct cc_pg *pg, const struct cc_ticket_new *n, struct cc_ticket *out, char **json,
		      struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* ---- one ticket of a player ----------------------------------------------- */

/*
 * The heartbeat compare-and-set with the expiry folded in (one statement on
 * the primary key: the hottest request). A QUEUED ticket past its deadline
 * becomes EXPIRED whatever revision was sent (announced); otherwise a
 * QUEUED or PROPOSED ticket at revision gets revision + 1 and the deadline
 * now() + ttl_seconds. Returns 0 with *out the changed row (state EXPIRED
 * or the heartbeat's); CC_ECONFLICT with *out the row unchanged (another
 * revision, or no longer waiting); CC_ENOTFOUND; or a database error.
 */
int cc_ticket_heartbeat(struct cc_pg *pg, const char *ticket_id, const char *player_id, int64_t revision,
			int64_t ttl_seconds, struct cc_ticket *out, char **json,
			struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * The heartbeat in one round trip, for the common case: one statement that
 * reads the session (store/sessions.h's CC_SESSION_CHECK_SQL, token_hash
 * as for cc_session_lookup) and, when it is usable, makes the heartbeat's
 * compare-and-set on the primary key (revision + 1, deadline now() +
 * ttl_seconds) for a QUEUED or PROPOSED ticket at revision that is not
 * overdue. Run outside a transaction, as one statement: its only write is
 * that compare-and-set, which PostgreSQL re-checks on the newest row
 * version if another transaction changed the row meanwhile, it writes no
 * outbox row (a heartbeat announces nothing), and the session was read
 * outside the heartbeat's transaction before too. Whatever needs more goes
 * back to the caller as CC_HEARTBEAT_SLOW, nothing changed, for the
 * SERIALIZABLE cc_ticket_heartbeat: an overdue ticket (its expiry writes
 * ticket.expired) or a row that matched as read but was changed under the
 * statement. *outcome:
 *   CC_HEARTBEAT_NO_SESSION  no session has this token (nothing else read);
 *   CC_HEARTBEAT_SESSION     *session filled; refused (banned, revoked or
 *                            expired): nothing else read or changed;
 *   CC_HEARTBEAT_DONE        *session, *out the changed row (in moves, *json);
 *   CC_HEARTBEAT_NOT_FOUND   *session; the player has no such ticket;
 *   CC_HEARTBEAT_MISS        *session, *out the row unchanged: another
 *                            revision, or no longer waiting;
 *   CC_HEARTBEAT_SLOW        *session; run cc_ticket_heartbeat instead.
 * Returns 0 (see *outcome) or a database error.
 */
enum cc_heartbeat_outcome {
	CC_HEARTBEAT_NO_SESSION,
	CC_HEARTBEAT_SESSION,
	CC_HEARTBEAT_DONE,
	CC_HEARTBEAT_NOT_FOUND,
	CC_HEARTBEAT_MISS,
	CC_HEARTBEAT_SLOW,
};
struct cc_session_check;
/* The statement's text, parameters $1 token hash, $2 ticket id, $3 revision, $4 ttl (for the bench's pgbench reference). */
const char *cc_ticket_heartbeat_with_session_sql(void);
int cc_ticket_heartbeat_with_session(struct cc_pg *pg, const char *token_hash, const char *ticket_id,
				     int64_t revision, int64_t ttl_seconds, enum cc_heartbeat_outcome *outcome,
				     struct cc_session_check *session, struct cc_ticket *out, char **json,
				     struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* Reads the player's ticket: 0, CC_ENOTFOUND, or a database error. for_update locks the row. */
int cc_ticket_get(struct cc_pg *pg, const char *ticket_id, const char *player_id, bool for_update,
		  struct cc_ticket *out, char **json) CC_MUST_CHECK;

/*
 * Expires the player's ticket when it is QUEUED and overdue (the lazy
 * expiry of any request that touches it). *expired says whether it did.
 */
int cc_ticket_expire_if_overdue(struct cc_pg *pg, const char *ticket_id, const char *player_id, bool *expired,
				struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Cancels the player's QUEUED ticket ticket_id (NULL: whichever QUEUED
 * ticket the player has). reason, when not NULL, goes into the event's
 * payload ({"reason": ...}; 1-32 of [a-z_], else CC_EINVAL). *cancelled
 * says whether a ticket was QUEUED and is now CANCELLED (*json its JSON,
 * when json is not NULL).
 */
int cc_ticket_cancel(struct cc_pg *pg, const char *ticket_id, const char *player_id, const char *reason,
		     bool *cancelled, char **json, struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Copies a probe result into the player's waiting (QUEUED or PROPOSED)
 * ticket's predicted_rtt, without a revision bump or an event (see above).
 */
int cc_ticket_set_rtt(struct cc_pg *pg, const char *player_id, const char *region, double rtt_ms,
		      struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Every QUEUED ticket of party_id -> CANCELLED, reason (a [a-z_]{1,32}
 * word, else CC_EINVAL) in each event's payload: a member left, was
 * kicked, or the party was disbanded. *n (may be NULL) how many. It
 * leaves PROPOSED tickets alone: the caller refuses the change first while
 * cc_tickets_party_proposal finds one (a proposal must never hold a
 * player who has left the ticket's party, nor a party half queued and half
 * proposed). MATCHED and ASSIGNED tickets (a party that plays) stay too.
 */
int cc_tickets_cancel_party(struct cc_pg *pg, const char *party_id, const char *reason, int *n,
			    struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * The open proposal one of party_id's tickets is PROPOSED in: 0 with
 * proposal_id that proposal's id, or "" when none is (CC_EINVAL for a
 * party_id that is not a UUID, or a database error). A plain read inside
 * the caller's SERIALIZABLE transaction, made after the party's row lock
 * (store/parties.h) and before cc_tickets_cancel_party: a claim or a
 * response committed after the snapshot makes the cancel's compare-and-set
 * or the commit fail with a serialization error, and the retry reads
 * again (store/README.md, lock order).
 */
int cc_tickets_party_proposal(struct cc_pg *pg, const char *party_id, char proposal_id[CC_UUID_BUF]) CC_MUST_CHECK;

/* ---- the tickets of one proposal (store/proposals.c) ------------------- */

/*
 * The party_id of player_id's ticket PROPOSED in proposal_id, read without
 * a lock ("" when it has none, or no such ticket): what a decline locks
 * first (store/README.md's lock order, store/proposals.h).
 */
int cc_ticket_party_in_proposal(struct cc_pg *pg, const char *proposal_id, const char *player_id,
				char party_id[CC_UUID_BUF]) CC_MUST_CHECK;

/*
 * The decliner's (or canceller's) ticket: PROPOSED in proposal_id ->
 * CANCELLED (the penalty is store/proposals.c's, the decliner's alone).
 * party_id receives the ticket's party ("" when solo, or no such ticket);
 * its party mates' tickets stay PROPOSED for cc_tickets_requeue, their
 * party_size now *mates (how many of them there are, at least 1; no
 * revision bump, no event), so they form again as the smaller party.
 */
int cc_tickets_cancel_proposed(struct cc_pg *pg, const char *proposal_id, const char *player_id,
			       char party_id[CC_UUID_BUF], int *mates, struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * The party mates of player_id's ticket in proposal_id, still PROPOSED ->
 * CANCELLED ({"reason": "party_member_declined"}, no penalty): a decline
 * whose party no longer exists (so the mates have no party to requeue as).
 */
int cc_tickets_cancel_proposed_party(struct cc_pg *pg, const char *proposal_id, const char *player_id,
				     struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Every ticket still PROPOSED in proposal_id back to QUEUED, keeping
 * queued_at (the player's place in the queue). ttl_seconds > 0 gives the
 * participants who ACCEPTED a fresh heartbeat deadline now() + ttl_seconds;
 * everyone else, and everyone with 0, keeps the deadline its owner earned
 * (SPEC 7: a requeue never extends it, so a client that went away cannot
 * hold live players twice). *n (may be NULL) receives how many moved.
 * A requeued party's tickets then share the latest deadline among them
 * (the party's one lease; no revision bump, no event).
 */
int cc_tickets_requeue(struct cc_pg *pg, const char *proposal_id, int64_t ttl_seconds, int *n,
		       struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * The tickets of proposal_id's non-responders (no response recorded) that
 * are still PROPOSED -> EXPIRED: their client let the window pass, so it
 * may be gone, and a ticket that went back to the queue would hold live
 * players again (SPEC 7). *n (may be NULL) receives how many ended. The
 * party mates of an expired ticket in the proposal are cancelled with it
 * ({"reason": "party_member_timed_out"}), so no part of a party requeues.
 */
int cc_tickets_expire_unanswered(struct cc_pg *pg, const char *proposal_id, int *n,
				 struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* Every ticket still PROPOSED in proposal_id -> MATCHED into match_id. */
int cc_tickets_match(struct cc_pg *pg, const char *proposal_id, const char *match_id,
		     struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* ---- the tickets of one match (cc-api's server routes) ------------------ */

/* Every ticket MATCHED into match_id -> ASSIGNED (the match reached ASSIGNMENT_READY); *n (may be NULL) how many. */
int cc_tickets_assign(struct cc_pg *pg, const char *match_id, int *n, struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Backfill (store/backfill.h): the QUEUED ticket_id -> ASSIGNED into
 * match_id (an accepted offer seats it in a match in progress). *n (may be
 * NULL): 1, or 0 when the ticket is no longer QUEUED (nothing changed).
 */
int cc_ticket_backfill_assign(struct cc_pg *pg, const char *ticket_id, const char *match_id, int *n,
			      struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* Every ticket ASSIGNED in match_id -> COMPLETED (its result was recorded); *n (may be NULL) how many. */
int cc_tickets_complete(struct cc_pg *pg, const char *match_id, int *n, struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Every ticket MATCHED or ASSIGNED in match_id -> FAILED (the match failed:
 * its server shut down without a result); reason, a [a-z_]{1,32} word, goes
 * into each event's payload (else CC_EINVAL). *n (may be NULL) how many.
 */
int cc_tickets_fail_match(struct cc_pg *pg, const char *match_id, const char *reason, int *n,
			  struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * A match called off (store/match_settle.h): every ticket MATCHED or
 * ASSIGNED in match_id -> QUEUED, out of the match and its proposal, with a
 * fresh heartbeat deadline now() + ttl_seconds (>= 1) and its queued_at
 * kept (the player's place in the queue); reason, a [a-z_]{1,32} word, goes
 * into each "ticket.requeued" payload (else CC_EINVAL). *n (may be NULL)
 * how many.
 */
int cc_tickets_requeue_match(struct cc_pg *pg, const char *match_id, const char *reason, int64_t ttl_seconds,
			     int *n, struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * The same, except for the n_out players out_players (the no-shows of a
 * ranked match, at most CC_FORMATION_MAX_PLAYERS lowercase UUIDs): their
 * tickets -> FAILED ("ticket.failed" {"reason"}), everyone else's ->
 * QUEUED as cc_tickets_requeue_match. *failed and *requeued (may be NULL)
 * count them.
 */
int cc_tickets_split_match(struct cc_pg *pg, const char *match_id, const char (*out_players)[CC_UUID_BUF],
			   size_t n_out, const char *reason, int64_t ttl_seconds, int *failed, int *requeued,
			   struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* ---- reads ---------------------------------------------------------------- */

/* The one-active-ticket index allows one; room for a few shows a broken index as an error, not a crash. */
#define CC_TICKET_PROPOSALS_MAX 4

/* The open proposals a player's PROPOSED tickets sit in (a plain value). */
struct cc_ticket_proposals {
	size_t n;
	char id[CC_TICKET_PROPOSALS_MAX][CC_UUID_BUF];
};

/*
 * The proposal ids of player_id's PROPOSED tickets (a ban makes them leave
 * their proposals, store/proposals.h). Returns 0 with *out filled (n may be
 * 0), CC_EDB when more than CC_TICKET_PROPOSALS_MAX came back, or
 * cc_pg_exec's error.
 */
int cc_ticket_proposals_of_player(struct cc_pg *pg, const char *player_id, struct cc_ticket_proposals *out)
	CC_MUST_CHECK;

/* ---- the sweeps (cc-maintenance) ------------------------------------------- */

/*
 * The expiry sweep: at most limit overdue QUEUED tickets (FOR UPDATE SKIP
 * LOCKED, oldest deadline first) -> EXPIRED, each announced ticket.expired
 * exactly as the lazy expiry of cc_ticket_expire_if_overdue. *n how many;
 * *lag (when not NULL) how many were overdue before. moves (may be NULL)
 * as elsewhere; beyond CC_TICKET_MOVES_MAX rows are counted as dropped.
 */
int cc_tickets_expire_overdue(struct cc_pg *pg, int limit, int *n, int64_t *lag,
			      struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Retention (store/purge.h): deletes at most limit tickets that ended
 * without a match (EXPIRED or CANCELLED while QUEUED: no proposal, no
 * match) more than older_than_s ago, FOR UPDATE SKIP LOCKED. A ticket that
 * any proposal_participants or match_players row names is left (the
 * proposal purge, store/proposals.h, removes the ones that ended in a
 * proposal). *n how many; *lag (when not NULL) how many were due before.
 */
int cc_tickets_purge_unmatched(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n,
			       int64_t *lag) CC_MUST_CHECK;

/*
 * For the proposal purge: deletes the tickets whose proposal_id is one of
 * proposal_ids (a PostgreSQL uuid[] literal) that ended without a match
 * and that no proposal_participants or match_players row names any more.
 * *n how many.
 */
int cc_tickets_purge_of_proposals(struct cc_pg *pg, const char *proposal_ids, int64_t *n) CC_MUST_CHECK;

#endif
