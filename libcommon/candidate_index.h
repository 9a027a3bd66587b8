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
 * cc_candidate_index_remove() drops ones a claim found gone.
 *
 * Thread-safe: the index keeps a small pool of Redis connections.
 */
#ifndef CC_CANDIDATE_INDEX_H
#define CC_CANDIDATE_INDEX_H

#include <stddef.h>

#include "candidates.h"
#include "cc.h"

struct cc_candidate_index;

/*
 * Creates the index over Redis at host:port (connections are opened
 * lazily, so Redis may be down). host NULL or "" returns NULL: no index.
 */
struct cc_candidate_index *cc_candidate_index_create(const char *host, int port, int timeout_ms,
						     size_t pool_size);
void cc_candidate_index_free(struct cc_candidate_index *idx);

/* Adds or refreshes one candidate. NULL idx is a no-op returning 0. */
int cc_candidate_index_put(struct cc_candidate_index *idx, const char *playlist,
			   const struct cc_candidate *c) CC_MUST_CHECK;

/* Removes one ticket (absent is fine). NULL idx is a no-op returning 0. */
int cc_candidate_index_remove(struct cc_candidate_index *idx, const char *playlist,
			      const char *ticket_id) CC_MUST_CHECK;

/*
 * Reads up to limit candidates oldest first into out; *n receives the count
 * (0 = the index is empty). CC_EUNAVAILABLE when Redis is down or the data
 * is unreadable. NULL idx returns CC_EUNAVAILABLE.
 */
int cc_candidate_index_read(struct cc_candidate_index *idx, const char *playlist, size_t limit,
			    struct cc_candidate *out, size_t *n) CC_MUST_CHECK;

/* Replaces the playlist's namespace with these n candidates (best effort). */
int cc_candidate_index_rebuild(struct cc_candidate_index *idx, const char *playlist,
			       const struct cc_candidate *all, size_t n) CC_MUST_CHECK;

#endif
