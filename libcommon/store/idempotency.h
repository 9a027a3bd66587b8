/*
 * idempotency.h - the one owner of the idempotency_keys table (SPEC 4):
 * an enqueue's Idempotency-Key, claimed and answered in the same
 * transaction as the ticket, so concurrent replays of one key all return
 * the one stored answer.
 *
 * Neither function checks-then-inserts: the claim inserts a placeholder
 * and lets the (player_id, key) unique index report a taken key, and the
 * answer is stored over that placeholder by the same conflict check. An
 * insert takes no predicate lock, and the conflict check reads past the
 * snapshot, so claiming a key never conflicts with other players' claims
 * the way a SERIALIZABLE read of the index (btree-page predicate locks)
 * does.
 *
 * Both run inside the caller's SERIALIZABLE transaction on pg (sys/pg.h);
 * no PGresult leaves this module. struct cc_idempotency_claim's response
 * is malloc'd: cc_idempotency_claim_release() frees it.
 */
#ifndef CC_STORE_IDEMPOTENCY_H
#define CC_STORE_IDEMPOTENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

/* What claiming a key found. */
struct cc_idempotency_claim {
	bool claimed;      /* the key is this transaction's now: answer, then cc_idempotency_store */
	bool same_request; /* not claimed: the stored request_hash equals ours (a replay) */
	int status;        /* not claimed: the stored answer's HTTP status */
	char *response;    /* not claimed: the stored answer's body (malloc'd) */
};

/*
 * Claims (player_id, key) for request_hash with a placeholder (status 0,
 * never committed: the same transaction stores the answer over it or
 * rolls back). When the key is taken (and committed: a row in flight makes
 * the claim wait, and one committed after our snapshot fails it with
 * 40001) reads the stored request hash and answer into *out. Returns 0,
 * CC_ENOMEM, CC_ENOTFOUND (the taken row vanished) or cc_pg_exec's error;
 * on failure *out holds nothing to free.
 */
CC_MUST_CHECK int cc_idempotency_claim(struct cc_pg *pg, const char *player_id, const char *key,
				       const char *request_hash, struct cc_idempotency_claim *out);

/* Frees c->response; c may be NULL. */
void cc_idempotency_claim_release(struct cc_idempotency_claim *c);

/*
 * Stores the answer (status, response) over this transaction's own
 * placeholder for (player_id, key). Returns 0, CC_EDB when the placeholder
 * is gone (nothing should do that to an uncommitted row: the caller must
 * not commit a ticket its key cannot replay), or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_idempotency_store(struct cc_pg *pg, const char *player_id, const char *key,
				       const char *request_hash, int status, const char *response);

/*
 * Retention (cc-maintenance): deletes at most limit keys created more than
 * older_than_s ago, oldest first, FOR UPDATE SKIP LOCKED (store/purge.h);
 * *n how many; *lag (when not NULL) how many were past the window before.
 */
CC_MUST_CHECK int cc_idempotency_purge(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag);

#endif
