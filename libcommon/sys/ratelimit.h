/*
 * ratelimit.h - token buckets shared by every replica through Redis, kept
 * per process while Redis is down.
 *
 * A bucket is named by a key the caller builds ("login:addr:10.0.0.7",
 * "enqueue:player:<uuid>"). It holds at most burst tokens and refills at
 * per_minute / 60 tokens a second; each request takes one, and a request
 * that finds less than one is refused with the whole seconds until one is
 * there (at least 1).
 *
 * Shared: with a Redis address, one Lua script per request does the whole
 * read-refill-take-write atomically on the Redis server, timed by Redis's
 * own TIME (no two machines' clocks are compared); the key expires when the
 * bucket would be full again, so idle buckets cost nothing.
 * Fallback: when Redis fails (down, slow past its timeout, an error reply),
 * or there is no Redis address, the same bucket is kept in this process
 * only: a client spread over N replicas then gets up to N times its limit
 * until Redis is back. Redis trouble never refuses a request and never
 * waits longer than the Redis command timeout (sys/redis.h; a dead Redis
 * is retried at most every CC_REDIS_RETRY_INTERVAL_MS per connection, so
 * meanwhile the fallback costs no network at all).
 * The local table is direct-mapped, CC_RATELIMIT_LOCAL_SLOTS slots, indexed
 * by a keyed hash (the key is random per process, so clients cannot aim
 * collisions); two keys in one slot reset each other to a full bucket: a
 * collision can only let a request through, never refuse one wrongly.
 *
 * Threads: every function is thread-safe. Ownership: the limiter copies the
 * options' strings; cc_ratelimiter_free() frees everything.
 */
#ifndef CC_RATELIMIT_H
#define CC_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "sys/cc.h"

#define CC_RATELIMIT_LOCAL_SLOTS 8192  /* per-process buckets while Redis is down */
#define CC_RATELIMIT_REDIS_CONNECTIONS 4 /* Redis connections shared by the callers */
#define CC_RATELIMIT_KEY_MAX 160       /* bytes of a bucket name */

struct cc_ratelimiter;

struct cc_ratelimit_options {
	const char *redis_host;	 /* NULL or "" = per-process buckets only */
	int redis_port;
	int redis_timeout_ms;	 /* connect and command deadline, each */
	const char *key_prefix;	 /* Redis key prefix, e.g. "cc:rl:" (copied) */
};

/* The outcome of one request. */
struct cc_ratelimit_verdict {
	bool allowed;
	unsigned retry_after_seconds; /* when refused: >= 1 */
	bool shared;		      /* decided by Redis (false: by the local fallback) */
};

/*
 * Creates a limiter. Returns NULL on a bad option (port outside 1..65535
 * with a host, timeout <= 0, NULL prefix) or out of memory. Never connects:
 * Redis being down is not an error.
 */
struct cc_ratelimiter *cc_ratelimiter_create(const struct cc_ratelimit_options *opts);

/* Frees the limiter. NULL is a harmless no-op. */
void cc_ratelimiter_free(struct cc_ratelimiter *rl);

/*
 * Takes one token from bucket key (per_minute tokens a minute, at most
 * burst). per_minute == 0 means unlimited: allowed, nothing stored.
 * Returns 0 and *out; CC_EINVAL for a NULL argument, an empty key or one
 * over CC_RATELIMIT_KEY_MAX bytes, or burst == 0 with a limit.
 */
int cc_ratelimit_take(struct cc_ratelimiter *rl, const char *key, unsigned per_minute, unsigned burst,
		      struct cc_ratelimit_verdict *out) CC_MUST_CHECK;

/*
 * Same as cc_ratelimit_take, but always with the per-process table (for
 * tests, and for callers that must not touch the network).
 */
int cc_ratelimit_take_local(struct cc_ratelimiter *rl, const char *key, unsigned per_minute,
			    unsigned burst, struct cc_ratelimit_verdict *out) CC_MUST_CHECK;

#endif
