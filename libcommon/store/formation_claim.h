/*
 * formation_claim.h - claims a formed match in PostgreSQL (SPEC 6): ONE
 * SERIALIZABLE transaction moves every ticket QUEUED -> PROPOSED and opens
 * the proposal, or changes nothing.
 *
 * The claim is one call of the SQL function cc_claim_proposal (migration
 * 0006; cc_formation_claim_batch below runs it for many in one call), so
 * it costs three round trips (BEGIN, the call, COMMIT) however
 * many tickets it holds. Its fence is FOR UPDATE SKIP LOCKED on each ticket in
 * ticket-id order, stopping at the first one that does not come back; it
 * re-checks everything a stale candidate (Redis) might have wrong:
 * playlist, state QUEUED, expires_at > now(), build, protocol_version and
 * RTT to the proposal's region <= max_rtt_ms. One global lock order plus
 * giving up at the first miss means that of two claims racing over
 * overlapping tickets exactly one commits (a single statement over the
 * whole set would skip and carry on, and two claims of the same set could
 * each take half and both lose). A lost claim rolls back, so the loser's
 * other tickets stay QUEUED, untouched; the caller learns which tickets
 * were lost and which of those are gone for good (no longer a usable
 * candidate) rather than merely locked by another claim.
 *
 * On success it has written, in that one transaction: the proposal (OPEN,
 * expires_at = now() + window), one participant row per ticket with its
 * team, every ticket PROPOSED with proposal_id and revision + 1, and the
 * outbox rows "proposal.opened" (resource proposal, revision 1, every
 * player) and "ticket.proposed" per ticket (its new revision, its player,
 * payload {"proposal_id": ...}).
 *
 * The arena is chosen deterministically from the proposal id: the FNV-1a
 * hash of the id modulo the number of arenas the playlist's arena rule
 * allows (the playlists table: all, or only those ranked_eligible), in name
 * order, from the arenas table (SQL cc_playlist_arenas, migration 0007).
 */
#ifndef CC_FORMATION_CLAIM_H
#define CC_FORMATION_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/candidates.h"
#include "sys/cc.h"
#include "game/formation.h"
#include "sys/pg.h"

#define CC_ARENA_NAME_MAX 32

/* What to claim; strings are borrowed for the call. */
struct cc_claim_request {
	const char *playlist;                          /* a name from game/playlist.c */
	const char *matcher;                           /* replica id, stored for diagnostics */
	int window_seconds;                            /* proposal response window (SPEC 7: 10) */
	int team_size;                                 /* 1..CC_FORMATION_MAX_TEAM_SIZE */
	const char *build;                             /* every ticket's build */
	int32_t protocol_version;                      /* every ticket's protocol */
	const char *region;                            /* the proposal's region */
	double max_rtt_ms;                             /* every ticket must reach region within this */
	size_t n;                                      /* tickets: 2 * team_size */
	const char *ticket_id[CC_FORMATION_MAX_PLAYERS]; /* lowercase UUIDs */
	uint8_t team[CC_FORMATION_MAX_PLAYERS];        /* 0 or 1 */
};

struct cc_claim_result {
	char proposal_id[CC_UUID_BUF];                    /* success: the new proposal */
	char arena[CC_ARENA_NAME_MAX + 1];       /* success: its arena */
	bool lost[CC_FORMATION_MAX_PLAYERS];     /* CC_ECONFLICT: the ticket that missed, and every gone one */
	bool gone[CC_FORMATION_MAX_PLAYERS];     /* CC_ECONFLICT: no longer claimable (not merely locked) */
};

/*
 * Fills req from formation f over cands (borrowing their strings) plus the
 * matcher's settings. Never fails: f is trusted (it came from formation.c).
 */
void cc_claim_request_from(struct cc_claim_request *req, const struct cc_formation *f,
			   const struct cc_candidate *cands, const char *playlist, const char *matcher,
			   int window_seconds, double max_rtt_ms);

/*
 * Runs the claim transaction on pg (must not be inside a transaction).
 * Returns 0 with out->proposal_id and out->arena set; CC_ECONFLICT (lost
 * claim, nothing written) with out->lost / out->gone set; CC_EINVAL for a
 * malformed request (bad UUID, team, sizes); CC_ENOTFOUND when no arena is
 * eligible (configuration); CC_ERETRY_EXHAUSTED when every attempt hit a
 * serialization failure; or another cc_pg_run_serializable error
 * (CC_EUNAVAILABLE, CC_ETIMEOUT, CC_EDB). On CC_EUNAVAILABLE/CC_ETIMEOUT
 * from COMMIT the outcome is unknown; either way no ticket is in two
 * proposals, and the next pass reads the truth.
 */
int cc_formation_claim(struct cc_pg *pg, const struct cc_claim_request *req, struct cc_claim_result *out)
	CC_MUST_CHECK;

/*
 * A batch of claims in one SERIALIZABLE transaction of one statement (SQL
 * cc_claim_proposals, migration 0022): each request gets exactly the fence,
 * rows and outbox events of cc_formation_claim, one after the other in
 * array order, and the proposals that were claimed commit together. So a
 * batch costs three round trips and one commit however many matches it
 * holds. A request that loses writes nothing and does not stop the others:
 * two requests of one batch sharing a ticket is one claimed and the later
 * one lost (the shared ticket gone). What differs from n single claims:
 * the locks a lost request took before its miss are held until the batch
 * commits instead of being dropped at once.
 *
 * Every request must share playlist, matcher, window_seconds, team_size
 * and max_rtt_ms (one matcher's pass); build, protocol, region and tickets
 * are each its own. n is 1..CC_CLAIM_BATCH_MAX.
 *
 * Returns 0 when the transaction committed: rcs[i] is then request i's
 * outcome, 0 (out[i].proposal_id and arena set), CC_ECONFLICT (out[i].lost
 * and gone set) or CC_ENOTFOUND (no eligible arena). Otherwise nothing was
 * written and rcs is untouched: CC_EINVAL for a malformed batch (any
 * request malformed, shared fields differing, n out of range), CC_ENOMEM,
 * CC_ERETRY_EXHAUSTED, or cc_pg_run_serializable's errors as for
 * cc_formation_claim (an unknown outcome on CC_EUNAVAILABLE/CC_ETIMEOUT
 * from COMMIT).
 */
#define CC_CLAIM_BATCH_MAX 64

int cc_formation_claim_batch(struct cc_pg *pg, const struct cc_claim_request *reqs, size_t n,
			     struct cc_claim_result *out, int *rcs) CC_MUST_CHECK;

/* The index of the arena for proposal_id among n arenas (n > 0). */
size_t cc_claim_arena_index(const char *proposal_id, size_t n);

#endif
