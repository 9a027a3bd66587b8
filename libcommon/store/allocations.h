/*
 * allocations.h - the one owner of the allocator's writes to the
 * allocations table (SPEC 8): one row per match, REQUESTED -> ALLOCATED ->
 * PUBLISHED (the server routes own what comes after: register, shutdown),
 * and REQUESTED -> FAILED when the match is called off before a server came.
 *
 * The work of cc-allocator replicas is shared through these rows:
 *   claim      a replica inserts the REQUESTED row of an ALLOCATING match
 *              that has none (FOR NO KEY UPDATE SKIP LOCKED on the match, the
 *              unique match_id as the final guard), or takes over a
 *              REQUESTED or ALLOCATED row whose claim lapsed or was released
 *              and whose next_attempt_at has come. Either way the row names
 *              the replica (claimed_by) until claim_until.
 *   allocated  the provider answered: the endpoint is written once, in the
 *              transaction that moves REQUESTED -> ALLOCATED, and only by the
 *              replica that still holds the claim (a replica whose claim was
 *              taken over gets CC_ECONFLICT and its transaction rolls back).
 *   published  ALLOCATED -> PUBLISHED in the roster transaction
 *              (store/rosters.h writes the roster and assignments); the claim
 *              is cleared, nothing is left to do.
 *   deferred   no capacity or a transient failure: the claim is released and
 *              next_attempt_at pushed back, so any replica retries later.
 * A crash at any point leaves a row another replica (or the restarted one)
 * resumes from its state once the claim lapses: REQUESTED asks the provider
 * again, ALLOCATED publishes.
 *
 * Outbox: "allocation.allocated" (resource allocation, no players) and
 * "allocation.published" (every player of the match, payload with the match
 * and server ids), each at the row's new revision, written by the same
 * statement as the change through the SQL constructor cc_outbox_append
 * that store/outbox.c wraps (a round trip less per allocation).
 *
 * Every function runs inside the caller's SERIALIZABLE transaction.
 * struct cc_allocation is a plain value.
 */
#ifndef CC_STORE_ALLOCATIONS_H
#define CC_STORE_ALLOCATIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/formation.h"
#include "game/playlist.h"
#include "store/game_servers.h"
#include "store/matches.h"

#define CC_ALLOCATION_STATE_BUF 16   /* "PUBLISHED" and the rest */
#define CC_ALLOCATION_OWNER_BUF 128  /* claimed_by: a replica's name */
#define CC_ALLOCATION_REASON_MAX 200 /* bytes of failure_reason kept */

/* One allocation row with the facts of its match a provider needs. */
struct cc_allocation {
	char id[CC_UUID_BUF];
	char match_id[CC_UUID_BUF];
	char state[CC_ALLOCATION_STATE_BUF];      /* REQUESTED | ALLOCATED | PUBLISHED | RELEASED | FAILED */
	int64_t revision;
	char provider[8];                         /* local | agones */
	char server_id[CC_GAME_SERVER_ID_BUF];    /* "" while REQUESTED */
	char address[CC_GAME_SERVER_ADDR_BUF];    /* "" while REQUESTED */
	int port;                                 /* 0 while REQUESTED */
	char node_name[CC_GAME_SERVER_ADDR_BUF];  /* agones: the node; "" otherwise */
	int64_t workload_expires_unix;            /* the workload token's expiry (signed into it) */
	int attempts;                             /* provider calls that found no server so far */
	/* The match: */
	char playlist[CC_PLAYLIST_BUF];
	char region[CC_MATCH_TEXT_BUF];
	char arena[CC_MATCH_TEXT_BUF];
	char build[CC_MATCH_TEXT_BUF];
	int32_t protocol_version;
	int64_t now_unix;                         /* PostgreSQL's now() when the row was read (seconds) */
};

/* What one claim asks for. */
struct cc_allocation_claim {
	const char *provider;        /* "local" | "agones": a replica works its own provider's rows */
	const char *replica;         /* claimed_by: unique per worker (1..127 bytes) */
	const char *owner;           /* local: an ALLOCATED row is taken over only by its server's owner
				      * (only that instance can hand the allocation to its child) */
	int64_t lease_ms;            /* claim_until = now() + lease_ms: after it, anyone may take over */
	int64_t workload_ttl_s;      /* new rows: workload_expires_at = now() + this */
	int limit;                   /* at most this many new rows, and this many taken over (1..1000) */
};

/*
 * Claims work for replica: new REQUESTED rows for ALLOCATING matches that
 * have none, plus REQUESTED/ALLOCATED rows of req->provider that are due
 * (next_attempt_at <= now()) and unclaimed (claim_until NULL or past), whose
 * match is not over (a local ALLOCATED row only when its server's owner is
 * req->owner). Writes up to cap rows into out (cap >= 2 * limit) and
 * their number into *n (0 is normal: nothing to do). Returns 0, CC_EINVAL
 * for a bad request, or a database error.
 */
int cc_allocations_claim(struct cc_pg *pg, const struct cc_allocation_claim *req, struct cc_allocation *out,
			 size_t cap, size_t *n) CC_MUST_CHECK;

/*
 * The provider gave server s (node_name may be NULL or "") to allocation id,
 * which replica still holds: REQUESTED -> ALLOCATED with the endpoint,
 * revision + 1, "allocation.allocated". Returns 0 with *out; CC_ECONFLICT
 * when the row is not REQUESTED or another replica holds it now (roll back:
 * the server must not be kept); or a database error.
 */
int cc_allocation_set_allocated(struct cc_pg *pg, const char *id, const char *replica,
				const struct cc_game_server *s, const char *node_name,
				struct cc_allocation *out) CC_MUST_CHECK;

/*
 * The local provider's allocation of a whole batch in one statement: the
 * rows ids[0..n) that replica still holds REQUESTED are locked (FOR UPDATE,
 * re-checked on the newest version), paired in order with as many IDLE
 * servers of owner (lowest port first, FOR UPDATE SKIP LOCKED, so racing
 * batches take distinct servers), and each pair is written: the server
 * ALLOCATED to it, the allocation ALLOCATED with the endpoint, one
 * "allocation.allocated" event each. The ALLOCATED rows go to out (cap >=
 * n), *allocated of them; ids without a row are the pool running dry.
 * *held is how many of the n replica still held: fewer than n means
 * another replica took one over, and the caller must roll back (the
 * servers paired with the others must not stay taken) and retry one by
 * one. Returns 0 or a database error.
 */
int cc_allocations_allocate_local(struct cc_pg *pg, const char *owner, const char *replica, const char *const *ids,
				  size_t n, struct cc_allocation *out, size_t cap, size_t *allocated,
				  size_t *held) CC_MUST_CHECK;

/*
 * Reads allocations ids[0..n) with their matches and locks them (FOR
 * UPDATE, in id order, so two batches never wait on each other in a
 * cycle) for the roster transaction: up to cap rows into out, *rows of
 * them (an unknown id has none). Returns 0 or a database error.
 */
int cc_allocations_lock_many(struct cc_pg *pg, const char *const *ids, size_t n, struct cc_allocation *out,
			     size_t cap, size_t *rows) CC_MUST_CHECK;

/*
 * No server now (no capacity, contention, a provider error): releases
 * replica's claim on n REQUESTED or ALLOCATED rows (ids) in one statement
 * and makes each due again in delay_ms[i] (PostgreSQL's clock);
 * count_attempt adds one to attempts (the no-capacity backoff grows with
 * it). reason (may be NULL) is kept, capped at CC_ALLOCATION_REASON_MAX
 * bytes. *deferred (may be NULL) receives how many rows were still
 * replica's to defer.
 */
int cc_allocations_defer(struct cc_pg *pg, const char *replica, const char *const *ids, const int64_t *delay_ms,
			 size_t n, bool count_attempt, const char *reason, size_t *deferred) CC_MUST_CHECK;

/*
 * Reads allocation id with its match and locks it (FOR UPDATE) for the
 * roster transaction. Returns 0 with *out, CC_ENOTFOUND, or a database
 * error.
 */
int cc_allocation_lock(struct cc_pg *pg, const char *id, struct cc_allocation *out) CC_MUST_CHECK;

/*
 * The live (ALLOCATED or PUBLISHED) allocations served by local servers of
 * owner, with their matches, up to cap into out (*n of them): what a
 * restarted local provider hands to its servers again. Returns 0 or a
 * database error.
 */
int cc_allocations_live_local(struct cc_pg *pg, const char *owner, struct cc_allocation *out, size_t cap,
			      size_t *n) CC_MUST_CHECK;

/*
 * ALLOCATED -> PUBLISHED (revision + 1, claim cleared), announcing
 * "allocation.published" to every player of the match (payload: match and
 * server ids), in one statement. Call in the transaction that wrote the
 * roster. Returns 0 with *out; CC_ECONFLICT when the row is not ALLOCATED;
 * or a database error.
 */
int cc_allocation_set_published(struct cc_pg *pg, const char *id, struct cc_allocation *out) CC_MUST_CHECK;

/*
 * The match of match_id was called off while its allocation was still
 * REQUESTED (no server ever came: store/match_settle.h,
 * cc_match_settle_stalled): REQUESTED -> FAILED with failure_reason =
 * reason (1..CC_ALLOCATION_REASON_MAX bytes), the claim cleared, revision +
 * 1, "allocation.failed" (payload: match id and reason), in one statement.
 * *failed says whether a row moved (false: none, or not REQUESTED); *out
 * (may be NULL) receives it. Returns 0, CC_EINVAL, or a database error.
 */
int cc_allocation_fail_requested(struct cc_pg *pg, const char *match_id, const char *reason, bool *failed,
				 struct cc_allocation *out) CC_MUST_CHECK;

/*
 * The match of match_id was called off before any replica claimed it (no
 * allocation row): writes its FAILED tombstone (provider as given, reason,
 * "allocation.failed"), so no replica can claim it later. A row that
 * exists but the caller's snapshot cannot see makes the statement a
 * serialization failure (CC_ESERIALIZATION: retry, and settle that row by
 * its state). *failed says whether the tombstone was written. Returns 0,
 * CC_EINVAL, or a database error.
 */
int cc_allocation_fail_unclaimed(struct cc_pg *pg, const char *match_id, const char *provider, const char *reason,
				 bool *failed) CC_MUST_CHECK;

#endif
