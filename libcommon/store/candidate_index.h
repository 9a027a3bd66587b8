/*
 * candidate_index.h - the Redis candidate index of SPEC 6: an accelerator
 * over QUEUED tickets so a matcher pass never scans the whole queue.
 *
 * One namespace per playlist ("cc:cand:<playlist>:"): a hash of ticket id ->
 * serialized struct cc_candidate and a sorted set of ticket ids scored by
 * queued_at_ms. Reads push LIMIT into Redis (ZRANGE 0 limit-1, then HMGET),
 * so they never scale with queue depth.
 *
 * Redis may be lost at any time: every call returns CC_EUNAVAILABLE instead
 * of hanging, and callers fall back to PostgreSQL (candidates.h). "Redis is
 * down" (CC_EUNAVAILABLE) and "Redis is empty" (0 with *n == 0) are
 * different answers; only the second one should trigger a rebuild.
 * Entries may be stale (a claim re-checks every ticket in PostgreSQL);
 * cc_candidate_index_remove() drops ones a claim found gone. Expired
 * entries are NOT filtered: no Redis TTL tracks a ticket, because expiry is
 * judged by PostgreSQL's now(), so the caller drops candidates whose
 * expires_at_ms <= the now_ms it read from PostgreSQL in the same pass.
 *
 * Playlist names are [A-Za-z0-9_-]{1,32} (others: CC_EINVAL), so one
 * playlist's keys can never be another's. The value format and key layout
 * are described in candidate_index.c.
 *
 * Thread-safe: the index keeps a small pool of Redis connections.
 */
#ifndef CC_CANDIDATE_INDEX_H
#define CC_CANDIDATE_INDEX_H

#include <stddef.h>

#include "store/candidates.h"
#include "store/tickets.h"
#include "sys/cc.h"

#define CC_CANDIDATE_INDEX_READ_MAX 4096 /* a read returns at most this many */
#define CC_CANDIDATE_INDEX_LOG_INTERVAL_MS 10000 /* cc_candidate_index_apply_moves logs a failure at most this often */

struct cc_candidate_index;
struct cc_metric;

/*
 * Creates the index over Redis at host:port (connections are opened
 * lazily, so Redis may be down). timeout_ms bounds each connect, each
 * command and the wait for a free connection; pool_size is 1..64. host
 * NULL or "" returns NULL: no index (also NULL on a bad argument or OOM).
 * Free with cc_candidate_index_free() (NULL is a no-op).
 */
struct cc_candidate_index *cc_candidate_index_create(const char *host, int port, int timeout_ms,
						     size_t pool_size);
void cc_candidate_index_free(struct cc_candidate_index *idx);

/*
 * Adds or refreshes one candidate (hash and sorted set change together).
 * NULL idx is a no-op returning 0. CC_EINVAL for a bad playlist or a
 * candidate with an unterminated or empty id, player or build, a
 * non-finite number or more than CC_CANDIDATE_MAX_REGIONS RTTs.
 */
int cc_candidate_index_put(struct cc_candidate_index *idx, const char *playlist,
			   const struct cc_candidate *c) CC_MUST_CHECK;

/* Removes one ticket (absent is fine). NULL idx is a no-op returning 0. */
int cc_candidate_index_remove(struct cc_candidate_index *idx, const char *playlist,
			      const char *ticket_id) CC_MUST_CHECK;

/*
 * Reads up to limit (capped at CC_CANDIDATE_INDEX_READ_MAX) candidates
 * oldest first into out; *n receives the count (0 = the index is empty).
 * Unreadable entries (another format version, a zset member without its
 * hash value) are skipped and deleted, so a read may return fewer than
 * limit; when every entry read was unreadable the answer is
 * CC_EUNAVAILABLE, not "empty". A key of the wrong type in the namespace is
 * deleted and reported as empty, so the caller's rebuild repairs it.
 * CC_EUNAVAILABLE when Redis is down or the data is unreadable; CC_EINVAL
 * for a bad playlist, limit 0 or NULL out/n. NULL idx returns
 * CC_EUNAVAILABLE. *n is written only on success.
 */
int cc_candidate_index_read(struct cc_candidate_index *idx, const char *playlist, size_t limit,
			    struct cc_candidate *out, size_t *n) CC_MUST_CHECK;

/*
 * Replaces the playlist's namespace with these n candidates (n == 0 empties
 * it), touching no other playlist's keys. Built under temporary keys, then
 * swapped in with one MULTI/EXEC, so a reader sees the old or the new index,
 * never half of one. Best effort: a put or remove that lands during a
 * rebuild may be lost (the next heartbeat repairs it); invalid candidates
 * are left out. NULL idx is a no-op returning 0.
 */
int cc_candidate_index_rebuild(struct cc_candidate_index *idx, const char *playlist,
			       const struct cc_candidate *all, size_t n) CC_MUST_CHECK;

/*
 * Keeps the index in step with one committed transaction's ticket moves
 * (store/tickets.h), for every process that changes tickets (cc-api after
 * a request, cc-maintenance after a batch): in order, a QUEUED ticket is
 * put with the candidate the store returned, any other state removed. Call
 * it only after the commit, so Redis never shows a change PostgreSQL
 * rolled back. Best effort: a change that fails (Redis down or slow, each
 * call bounded by the index's timeout; after a transport failure the rest
 * answer at once, see candidate_index.c) adds 1 to errors{op} (a counter
 * with the one label "op": "put", "remove", or "overflow" once when
 * moves->dropped rows never made it into moves; NULL: not counted), and a
 * warning candidate_index_refresh_failed (op, ticket_id, error,
 * suppressed_since_last) is logged at most once per
 * CC_CANDIDATE_INDEX_LOG_INTERVAL_MS per index, across threads. Returns
 * how many changes failed (an overflow counts as one). NULL idx (no
 * index): 0, nothing counted.
 */
size_t cc_candidate_index_apply_moves(struct cc_candidate_index *idx, const struct cc_ticket_moves *moves,
				      struct cc_metric *errors);

#endif
