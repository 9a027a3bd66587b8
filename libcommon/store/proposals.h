/*
 * proposals.h - deciding proposals (SPEC 7), shared by cc-api (responses,
 * reads, cancel cascade) and the workers that expire overdue proposals.
 *
 * Every function runs inside the caller's SERIALIZABLE transaction and only
 * reads and writes through it, so it may be retried as a whole. Decisions
 * are compare-and-set on proposals.state = 'OPEN', and penalties are
 * exactly-once in the database (penalties.h), so any number of racing
 * requests settle a proposal once:
 *   all accept  -> ACCEPTED; tickets MATCHED; a match in ALLOCATING.
 *   a decline   -> DECLINED; the decliner's ticket CANCELLED with a DECLINE
 *                  penalty and the decliner out of its party; every other
 *                  participant requeued at once, its party mates as the
 *                  smaller party, another party whole (no penalty; see
 *                  cc_proposal_decline_by_cancel).
 *   window over -> EXPIRED; each non-responder's ticket ends EXPIRED with
 *                  exactly one PROPOSAL_TIMEOUT (its client may be gone,
 *                  and must never hold live players twice), its party
 *                  mates' tickets CANCELLED with it (party_member_timed_out,
 *                  no penalty; the party keeps its members); the players
 *                  who accepted are requeued at once.
 * Requeued tickets keep queued_at (their place in the queue). After a
 * decline those who accepted get a fresh heartbeat deadline (SPEC 7);
 * non-responders, and everyone after a timeout, keep the one their owner
 * earned, so a requeue never keeps a ticket alive that its owner stopped
 * heartbeating. Each change writes its outbox
 * rows.
 *
 * This module owns the proposals and proposal_participants tables (the
 * claim that opens a proposal is the SQL function cc_claim_proposal,
 * store/formation_claim.h). Ticket moves go through store/tickets.h and the
 * match through store/matches.h; the tickets a call moved are appended to
 * the caller's struct cc_ticket_moves (may be NULL), so the caller
 * refreshes the candidate index from them without reading them back.
 */
#ifndef CC_PROPOSALS_H
#define CC_PROPOSALS_H

#include <stdbool.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "store/matches.h"
#include "store/tickets.h"

#define CC_PROPOSAL_MAX_PARTICIPANTS 16

/*
 * Locks the proposal's row (FOR UPDATE) for the rest of the transaction:
 * the first step of the lock order (store/README.md) on a path that starts
 * from a ticket. Returns 0 (also when there is no such proposal) or a pg
 * error.
 */
int cc_proposal_lock(struct cc_pg *pg, const char *proposal_id) CC_MUST_CHECK;

/*
 * cc_proposal_lock for a path that may decline the proposal on player_id's
 * behalf (cc_proposal_decline_by_cancel: a cancel, a ban): first the party
 * of the player's ticket in it, if any (cc_party_lock), since the decline
 * changes the party (store/README.md's lock order), then the proposal.
 */
int cc_proposal_lock_as_decliner(struct cc_pg *pg, const char *proposal_id, const char *player_id) CC_MUST_CHECK;

/*
 * Expires proposal_id if it is OPEN and its window has passed (PostgreSQL's
 * now()). *expired says whether this call did it.
 */
int cc_proposal_expire_if_due(struct cc_pg *pg, const char *proposal_id, bool *expired,
			      struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * Expires up to limit overdue OPEN proposals (FOR UPDATE SKIP LOCKED, so
 * replicas share the work); *n receives how many were expired. moves (may
 * be NULL) receives the tickets they moved, for the caller's candidate
 * index after the commit (a requeued accepter missing from the index is
 * hidden from the head page until its next heartbeat); with moves, the
 * sweep stops before a proposal that might not fit, so a caller wanting
 * limit proposals runs it again while moves is that full. grace_seconds
 * (>= 0) takes only proposals overdue by more than that: cc-maintenance's
 * backstop leaves the prompt expiry to cc-matcher's pass (grace 0), which
 * refreshes the candidate index from moves.
 */
int cc_proposals_expire_overdue(struct cc_pg *pg, int64_t grace_seconds, int limit, int *n,
				struct cc_ticket_moves *moves) CC_MUST_CHECK;

/* True when moves has no room for another proposal's tickets (run the sweep again). */
bool cc_proposals_moves_full(const struct cc_ticket_moves *moves);

enum cc_proposal_verdict {
	CC_PROPOSAL_OK,              /* the response was recorded (or repeated identically) */
	CC_PROPOSAL_NOT_PARTICIPANT, /* no such proposal for this player: 404 */
	CC_PROPOSAL_CLOSED,          /* not OPEN (decided or expired): 409 */
	CC_PROPOSAL_REVISION,        /* revision mismatch: 409 */
	CC_PROPOSAL_ALREADY,         /* a different response was given before: 409 */
};

/*
 * Records player_id's accept (or decline) of proposal_id at revision,
 * expiring the proposal first when its window has passed. On
 * CC_PROPOSAL_CLOSED after a lazy expiry the transaction must still commit.
 * When this accept was the last one, *match (may be NULL) receives the new
 * match; otherwise match->id is left "".
 */
int cc_proposal_respond(struct cc_pg *pg, const char *proposal_id, const char *player_id, bool accept,
			int64_t revision, int ticket_ttl_seconds, enum cc_proposal_verdict *verdict,
			struct cc_ticket_moves *moves, struct cc_match *match) CC_MUST_CHECK;

/*
 * The cancel cascade: the ticket of player_id is PROPOSED in OPEN proposal
 * proposal_id and its player cancels. Declines the proposal (the canceller
 * counts as the decliner: DECLINE penalty, ticket CANCELLED, out of its
 * party as below) and requeues the others. The caller locked with
 * cc_proposal_lock_as_decliner. Returns 0, or CC_ESTATE when the proposal
 * is not OPEN.
 *
 * A decline and a party (issue 26), here and in cc_proposal_respond: the
 * decliner's ticket is CANCELLED with the DECLINE penalty, the decliner's
 * alone; the decliner leaves its party (cc_party_member_declined: the lead
 * passes to the longest-standing member left, party.updated {"change":
 * "declined"}); its party mates are requeued like every other participant,
 * keeping party_id and queued_at, their party_size now how many of them
 * are left and their deadlines aligned (the party's one lease), so they
 * form again as the smaller party (one mate left: a party of one, formed as
 * a solo). A party of one (no mates in the proposal) is left as it is. A
 * party that is gone has its mates cancelled ("party_member_declined").
 */
int cc_proposal_decline_by_cancel(struct cc_pg *pg, const char *proposal_id, const char *player_id,
				  int ticket_ttl_seconds, struct cc_ticket_moves *moves) CC_MUST_CHECK;

/*
 * The proposal as its participant player_id sees it, as JSON text (malloc'd,
 * caller frees) in *json; CC_ENOTFOUND when the player is not in it.
 */
int cc_proposal_view(struct cc_pg *pg, const char *proposal_id, const char *player_id,
		     char **json) CC_MUST_CHECK;

/* ---- the sweeps (cc-maintenance) ------------------------------------------- */

/* How many OPEN proposals are past their window by more than grace_seconds (the expiry sweep's lag). */
int cc_proposals_overdue_count(struct cc_pg *pg, int64_t grace_seconds, int64_t *lag) CC_MUST_CHECK;

/*
 * Retention (store/purge.h): at most limit proposals that never made a
 * match (DECLINED or EXPIRED) decided more than older_than_s ago, FOR
 * UPDATE SKIP LOCKED, oldest first, are deleted with their
 * proposal_participants rows and the tickets that ended in them
 * (cc_tickets_purge_of_proposals). A proposal a live or matched ticket
 * still names is left alone (never selected, so it blocks nothing). *n how
 * many proposals; *tickets (may be NULL) how many tickets went with them;
 * *lag (when not NULL) how many proposals were due before.
 */
int cc_proposals_purge_unmatched(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *tickets,
				 int64_t *lag) CC_MUST_CHECK;

#endif
