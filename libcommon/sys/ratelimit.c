/*
 * ratelimit.c - token buckets in Redis (one atomic Lua script) with a
 * per-process fallback (see ratelimit.h).
 */
#include "sys/ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/redis.h"
#include "sys/banned.h"

/*
 * KEYS[1] the bucket; ARGV[1] tokens a second, ARGV[2] burst. Returns
 * {allowed 0|1, seconds to wait as text}. Redis's TIME is the one clock, so
 * replicas on machines whose clocks disagree still share one bucket
 * correctly (Redis >= 5 replicates the effects, so TIME before a write is
 * allowed). The bucket expires once it would be full again.
 */
static const char bucket_script[] =
	"local rate = tonumber(ARGV[1])\n"
	"local burst = tonumber(ARGV[2])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) + tonumber(t[2]) / 1000000\n"
	"local v = redis.call('HMGET', KEYS[1], 't', 'n')\n"
	"local tokens = burst\n"
	"if v[1] and v[2] then\n"
	"  tokens = math.min(burst, tonumber(v[2]) + math.max(0, now - tonumber(v[1])) * rate)\n"
	"end\n"
	"local allowed = 0\n"
	"local wait = 0\n"
	"if tokens >= 1 then\n"
	"  tokens = tokens - 1\n"
	"  allowed = 1\n"
	"else\n"
	"  wait = (1 - tokens) / rate\n"
	"end\n"
	"redis.call('HSET', KEYS[1], 't', string.format('%.6f', now), 'n', string.format('%.6f', tokens))\n"
	"redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)\n"
	"return {allowed, string.format('%.6f', wait)}\n";

/* One per-process bucket. */
struct local_bucket {
	uint64_t tag;	   /* keyed hash of the key; 0 = empty */
	double tokens;
	int64_t at_ns;	   /* when tokens was computed (monotonic) */
};

/* A Redis connection and the lock that serialises its callers. */
struct redis_slot {
	pthread_mutex_t lock;
	struct cc_redis *redis;
};

struct cc_ratelimiter {
	char *prefix;				/* owned */
	unsigned char hash_key[crypto_shorthash_KEYBYTES];
	pthread_mutex_t local_lock;
	struct local_bucket *local;		/* CC_RATELIMIT_LOCAL_SLOTS */
	struct redis_slot redis[CC_RATELIMIT_REDIS_CONNECTIONS];
	size_t n_redis;				/* 0 = no Redis */
	atomic_uint next;			/* round robin over redis[] */
	atomic_bool degraded;			/* last Redis call failed (for the log) */
};

struct cc_ratelimiter *cc_ratelimiter_create(const struct cc_ratelimit_options *opts)
{
	struct cc_ratelimiter *rl;
	bool with_redis = opts && opts->redis_host && *opts->redis_host;

	if (!opts || !opts->key_prefix ||
	    (with_redis && (opts->redis_port < 1 || opts->redis_port > 65535 || opts->redis_timeout_ms <= 0)))
		return NULL;
	if (sodium_init() < 0)
		return NULL;
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	rl->prefix = strdup(opts->key_prefix);
	rl->local = calloc(CC_RATELIMIT_LOCAL_SLOTS, sizeof(*rl->local));
	if (!rl->prefix || !rl->local)
		goto out_free;
	crypto_shorthash_keygen(rl->hash_key);
	pthread_mutex_init(&rl->local_lock, NULL);
	for (size_t i = 0; with_redis && i < CC_RATELIMIT_REDIS_CONNECTIONS; i++) {
		rl->redis[i].redis = cc_redis_create(opts->redis_host, opts->redis_port, opts->redis_timeout_ms,
						     opts->redis_timeout_ms);
		if (!rl->redis[i].redis) {
			rl->n_redis = i;
			cc_ratelimiter_free(rl);
			return NULL;
		}
		pthread_mutex_init(&rl->redis[i].lock, NULL);
		rl->n_redis = i + 1;
	}
	return rl;

out_free:
	free(rl->prefix);
	free(rl->local);
	free(rl);
	return NULL;
}

void cc_ratelimiter_free(struct cc_ratelimiter *rl)
{
	if (!rl)
		return;
	for (size_t i = 0; i < rl->n_redis; i++) {
		cc_redis_free(rl->redis[i].redis);
		pthread_mutex_destroy(&rl->redis[i].lock);
	}
	pthread_mutex_destroy(&rl->local_lock);
	free(rl->local);
	free(rl->prefix);
	free(rl);
}

static bool key_ok(const char *key)
{
	size_t n = key ? strlen(key) : 0;
	return n > 0 && n <= CC_RATELIMIT_KEY_MAX;
}

/* Whole seconds (>= 1) until one token is there. */
static unsigned wait_seconds(double seconds)
{
	double up = ceil(seconds);
	if (!(up >= 1.0)) /* also NaN */
		return 1;
	return up > 86400.0 ? 86400u : (unsigned)up;
}

int cc_ratelimit_take_local(struct cc_ratelimiter *rl, const char *key, unsigned per_minute, unsigned burst,
			    struct cc_ratelimit_verdict *out)
{
	unsigned char h[crypto_shorthash_BYTES];
	uint64_t tag;
	struct local_bucket *b;
	double rate = per_minute / 60.0, tokens;
	int64_t now = cc_clock_ns();

	if (!rl || !out || !key_ok(key) || (per_minute && !burst))
		return CC_EINVAL;
	if (!per_minute) {
		*out = (struct cc_ratelimit_verdict){ .allowed = true };
		return 0;
	}
	crypto_shorthash(h, (const unsigned char *)key, strlen(key), rl->hash_key);
	memcpy(&tag, h, sizeof(tag));
	tag |= 1; /* never 0, the empty mark */
	pthread_mutex_lock(&rl->local_lock);
	b = &rl->local[(tag >> 1) % CC_RATELIMIT_LOCAL_SLOTS];
	if (b->tag != tag) {
		b->tag = tag; /* empty, or another key's: a fresh, full bucket */
		b->tokens = burst;
		b->at_ns = now;
	}
	tokens = b->tokens + (double)(now - b->at_ns) / 1e9 * rate;
	if (tokens > burst)
		tokens = burst;
	b->at_ns = now;
	if (tokens >= 1.0) {
		b->tokens = tokens - 1.0;
		*out = (struct cc_ratelimit_verdict){ .allowed = true };
	} else {
		b->tokens = tokens;
		*out = (struct cc_ratelimit_verdict){ .allowed = false,
						      .retry_after_seconds = wait_seconds((1.0 - tokens) / rate) };
	}
	pthread_mutex_unlock(&rl->local_lock);
	return 0;
}

/* The Redis verdict. Returns 0 and *out, or non-zero when Redis could not decide. */
static int take_shared(struct cc_ratelimiter *rl, const char *key, unsigned per_minute, unsigned burst,
		       struct cc_ratelimit_verdict *out)
{
	struct redis_slot *slot = &rl->redis[atomic_fetch_add(&rl->next, 1) % rl->n_redis];
	char full[256], rate[32], cap[16];
	redisReply *reply = NULL;
	int rc;

	snprintf(full, sizeof(full), "%s%s", rl->prefix, key);
	snprintf(rate, sizeof(rate), "%.9f", per_minute / 60.0);
	snprintf(cap, sizeof(cap), "%u", burst);
	pthread_mutex_lock(&slot->lock);
	rc = cc_redis_command(slot->redis, &reply, "EVAL", bucket_script, "1", full, rate, cap, (char *)NULL);
	pthread_mutex_unlock(&slot->lock);
	if (rc != 0)
		return rc;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
	    reply->element[0]->type != REDIS_REPLY_INTEGER || reply->element[1]->type != REDIS_REPLY_STRING) {
		freeReplyObject(reply);
		return CC_EDB;
	}
	*out = (struct cc_ratelimit_verdict){ .allowed = reply->element[0]->integer == 1, .shared = true };
	if (!out->allowed)
		out->retry_after_seconds = wait_seconds(strtod(reply->element[1]->str, NULL));
	freeReplyObject(reply);
	return 0;
}

int cc_ratelimit_take(struct cc_ratelimiter *rl, const char *key, unsigned per_minute, unsigned burst,
		      struct cc_ratelimit_verdict *out)
{
	int rc;

	if (!rl || !out || !key_ok(key) || (per_minute && !burst))
		return CC_EINVAL;
	if (!per_minute) {
		*out = (struct cc_ratelimit_verdict){ .allowed = true };
		return 0;
	}
	if (rl->n_redis) {
		rc = take_shared(rl, key, per_minute, burst, out);
		if (rc == 0) {
			if (atomic_exchange(&rl->degraded, false))
				cc_log_info("ratelimit_shared_again", CC_LOG_STR("backend", "redis"));
			return 0;
		}
		/* Logged once per outage, not per request. */
		if (!atomic_exchange(&rl->degraded, true))
			cc_log_warn("ratelimit_local_fallback", CC_LOG_STR("error", cc_errname(rc)));
	}
	return cc_ratelimit_take_local(rl, key, per_minute, burst, out);
}
