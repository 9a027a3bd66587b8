/*
 * candidate_index.c - the Redis candidate index (candidate_index.h).
 *
 * Keys of playlist P, and nothing else, live under "cc:cand:P:":
 *   cc:cand:P:h   hash   ticket_id -> the candidate as a JSON object (below)
 *   cc:cand:P:z   zset   ticket_id scored by queued_at_ms (ties: by id, as
 *                        PostgreSQL orders "queued_at, id")
 *   cc:cand:P:rebuild:<tag>:{h,z}  a rebuild under construction (60 s TTL)
 * Playlist names are [A-Za-z0-9_-]{1,32}, so no playlist's namespace can
 * contain another's keys.
 *
 * Value format, version 1 (short keys; the ticket id is the hash field):
 *   {"v":1,"p":player_id,"b":build,"pv":protocol_version,"r":rating,
 *    "d":deviation,"q":queued_at_ms,"e":expires_at_ms,"rtt":{region:ms,...}}
 * A value that does not parse as exactly this (another "v" included) is
 * unreadable: a read skips it and deletes it, as it does a zset member whose
 * hash value is missing.
 *
 * put and remove run as MULTI/EXEC so the hash and the zset change together.
 * No key carries a TTL except a rebuild's temporary keys (relative, on
 * Redis's own clock, dropped by PERSIST when they go live): expiry is the
 * caller's business, judged against PostgreSQL's now().
 *
 * Connections: a fixed pool of cc_redis handles under one mutex. After a
 * transport failure the whole index answers CC_EUNAVAILABLE at once for
 * CC_REDIS_RETRY_INTERVAL_MS, so a Redis that black-holes packets costs one
 * connect timeout per interval, not one per caller.
 */
#include "store/candidate_index.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "game/playlist.h"
#include "sys/charset.h"
#include "sys/clock.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/redis.h"
#include "sys/banned.h"

#define FORMAT_VERSION 1
#define KEY_MAX 160 /* "cc:cand:" + 32-byte playlist + ":rebuild:<tag>:h" fits */
#define VALUE_MAX 4096		 /* bytes of one serialized candidate we accept back */
#define REBUILD_BATCH 128	 /* candidates per HSET/ZADD pair of a rebuild */
#define REBUILD_TTL_MS "60000"	 /* how long an abandoned rebuild's keys survive */
#define POOL_MAX 64
#define INT53 9007199254740991LL /* the integers a JSON number holds exactly */

struct cc_candidate_index {
	pthread_mutex_t lock;	 /* guards everything below */
	pthread_cond_t returned; /* a handle came back to the pool */
	int timeout_ms;		 /* connect, command and pool-wait budget */
	int64_t down_until_ms;	 /* monotonic: answer "down" without trying until then */
	unsigned long rebuilds;	 /* tags rebuild keys of this process */
	bool failure_logged;	 /* apply_moves logged a failure at last_log_ms */
	int64_t last_log_ms;	 /* monotonic */
	unsigned long suppressed; /* apply_moves failures not logged since that line */
	size_t n_idle;		 /* handles in idle[0..n_idle) */
	size_t pool_size;
	struct cc_redis **idle;	 /* stack of handles nobody is using */
	struct cc_redis **all;	 /* every handle, for free */
};

/* Deletes entries only if they still hold what the read saw ("" = missing). */
static const char cleanup_script[] =
	"local n = 0 "
	"for i = 1, #ARGV, 2 do "
	"  local cur = redis.call('HGET', KEYS[1], ARGV[i]) "
	"  if (not cur and ARGV[i + 1] == '') or cur == ARGV[i + 1] then "
	"    redis.call('HDEL', KEYS[1], ARGV[i]) redis.call('ZREM', KEYS[2], ARGV[i]) n = n + 1 "
	"  end "
	"end "
	"return n";

/* ---- pool ---------------------------------------------------------------- */

struct cc_candidate_index *cc_candidate_index_create(const char *host, int port, int timeout_ms,
						     size_t pool_size)
{
	struct cc_candidate_index *idx = NULL;

	if (!host || !*host || timeout_ms <= 0 || pool_size == 0 || pool_size > POOL_MAX)
		return NULL;
	idx = calloc(1, sizeof *idx);
	if (!idx)
		return NULL;
	idx->all = calloc(pool_size, sizeof *idx->all);
	idx->idle = calloc(pool_size, sizeof *idx->idle);
	if (!idx->all || !idx->idle)
		goto out_free;
	for (size_t i = 0; i < pool_size; i++) {
		idx->all[i] = cc_redis_create(host, port, timeout_ms, timeout_ms);
		if (!idx->all[i])
			goto out_free;
		idx->idle[i] = idx->all[i];
	}
	idx->pool_size = idx->n_idle = pool_size;
	idx->timeout_ms = timeout_ms;
	/* The pool wait is a deadline on the monotonic clock, like everything else here. */
	if (cc_clock_cond_init(&idx->returned) != 0)
		goto out_free;
	if (pthread_mutex_init(&idx->lock, NULL) != 0) {
		pthread_cond_destroy(&idx->returned);
		goto out_free;
	}
	return idx;
out_free:
	for (size_t i = 0; idx->all && i < pool_size; i++)
		cc_redis_free(idx->all[i]);
	free(idx->all);
	free(idx->idle);
	free(idx);
	return NULL;
}

void cc_candidate_index_free(struct cc_candidate_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->pool_size; i++)
		cc_redis_free(idx->all[i]);
	pthread_cond_destroy(&idx->returned);
	pthread_mutex_destroy(&idx->lock);
	free(idx->all);
	free(idx->idle);
	free(idx);
}

/*
 * Borrows a handle within timeout_ms. CC_EUNAVAILABLE when Redis failed
 * recently (no network touched) or every handle stayed busy.
 */
static int acquire(struct cc_candidate_index *idx, struct cc_redis **out)
{
	int64_t deadline = cc_clock_ms() + idx->timeout_ms;
	struct timespec ts = cc_clock_timespec(deadline * 1000000);
	int rc = CC_EUNAVAILABLE;

	pthread_mutex_lock(&idx->lock);
	if (cc_clock_ms() < idx->down_until_ms)
		goto out;
	while (idx->n_idle == 0)
		if (pthread_cond_timedwait(&idx->returned, &idx->lock, &ts) != 0)
			break; /* ETIMEDOUT */
	if (idx->n_idle > 0) {
		*out = idx->idle[--idx->n_idle];
		rc = 0;
	}
out:
	pthread_mutex_unlock(&idx->lock);
	return rc;
}

/*
 * Returns a handle. A failure that cost the handle its connection (refused,
 * timed out, reset) closes the gate for a while; an error reply does not.
 */
static void release(struct cc_candidate_index *idx, struct cc_redis *r, int result)
{
	pthread_mutex_lock(&idx->lock);
	if (result != 0 && !cc_redis_is_connected(r))
		idx->down_until_ms = cc_clock_ms() + CC_REDIS_RETRY_INTERVAL_MS;
	idx->idle[idx->n_idle++] = r;
	pthread_cond_signal(&idx->returned);
	pthread_mutex_unlock(&idx->lock);
}

/* What the index answers for an internal result: our own codes pass, the rest is "down". */
static int index_result(int rc)
{
	return rc == 0 || rc == CC_ENOMEM || rc == CC_EINVAL ? rc : CC_EUNAVAILABLE;
}

/* ---- keys and values ----------------------------------------------------- */

static bool playlist_valid(const char *playlist)
{
	return cc_charset_valid(playlist, CC_PLAYLIST_NAME_MAX, CC_CHARSET_ALNUM, "_-");
}

/* Writes "cc:cand:<playlist>:<suffix>" (playlist already validated). */
static void make_key(char out[KEY_MAX], const char *playlist, const char *suffix)
{
	snprintf(out, KEY_MAX, "cc:cand:%s:%s", playlist, suffix);
}

/* True when s is NUL-terminated within size bytes and at least min bytes long. */
static bool field_ok(const char *s, size_t size, size_t min)
{
	size_t n = strnlen(s, size);
	return n < size && n >= min;
}

/* A candidate we can store and read back unchanged. */
static bool candidate_valid(const struct cc_candidate *c)
{
	if (!field_ok(c->ticket_id, sizeof c->ticket_id, 1) || !field_ok(c->player_id, sizeof c->player_id, 1) ||
	    !field_ok(c->build, sizeof c->build, 1) || !isfinite(c->rating) || !isfinite(c->deviation) ||
	    c->queued_at_ms < -INT53 || c->queued_at_ms > INT53 || c->expires_at_ms < -INT53 ||
	    c->expires_at_ms > INT53 || c->n_rtt > CC_CANDIDATE_MAX_REGIONS ||
	    (c->party_id[0] && (c->party_size < 1 || c->party_size > CC_FORMATION_MAX_TEAM_SIZE)))
		return false;
	for (size_t i = 0; i < c->n_rtt; i++)
		if (!field_ok(c->rtt[i].region, sizeof c->rtt[i].region, 1) || !isfinite(c->rtt[i].rtt_ms) ||
		    c->rtt[i].rtt_ms < 0)
			return false;
	return true;
}

/*
 * Adds a number as JSON text printed by us: cJSON's own printer accepts a
 * 15-digit form that is only approximately equal, and a rating must come
 * back bit for bit. %.17g round-trips every finite double.
 */
static bool add_number(cJSON *o, const char *name, double v)
{
	char text[40];
	snprintf(text, sizeof text, "%.17g", v);
	return cJSON_AddRawToObject(o, name, text) != NULL;
}

static bool add_integer(cJSON *o, const char *name, long long v)
{
	char text[24];
	snprintf(text, sizeof text, "%lld", v);
	return cJSON_AddRawToObject(o, name, text) != NULL;
}

/* Serializes c (format above). Returns malloc'd text, NULL when c is invalid or on OOM. */
static char *candidate_encode(const struct cc_candidate *c)
{
	char *text = NULL;
	if (!candidate_valid(c))
		return NULL;
	cJSON *o = cJSON_CreateObject(), *rtt = NULL;
	if (!o || !add_integer(o, "v", FORMAT_VERSION) || !cJSON_AddStringToObject(o, "p", c->player_id) ||
	    !cJSON_AddStringToObject(o, "b", c->build) || !add_integer(o, "pv", c->protocol_version) ||
	    !add_number(o, "r", c->rating) || !add_number(o, "d", c->deviation) ||
	    !add_integer(o, "q", c->queued_at_ms) || !add_integer(o, "e", c->expires_at_ms) ||
	    !(rtt = cJSON_AddObjectToObject(o, "rtt")))
		goto out;
	/* A party's ticket (issue 26): absent for a solo one, so older values still read as solo. */
	if (c->party_id[0] && (!cJSON_AddStringToObject(o, "pt", c->party_id) || !add_integer(o, "ps", c->party_size)))
		goto out;
	for (size_t i = 0; i < c->n_rtt; i++)
		if (!add_number(rtt, c->rtt[i].region, c->rtt[i].rtt_ms))
			goto out;
	text = cJSON_PrintUnformatted(o);
out:
	cJSON_Delete(o);
	return text;
}

/* Copies a string field of o into dst (size bytes) if it is min..size-1 bytes long. */
static bool get_text(const cJSON *o, const char *field, size_t min, char *dst, size_t size)
{
	const char *s;
	struct cc_json_error err;
	if (cc_json_get_string(o, field, true, min, size - 1, &s, &err) != 0)
		return false;
	memcpy(dst, s, strlen(s) + 1);
	return true;
}

/*
 * Parses a stored value for ticket_id into *out. False when the value is
 * not version FORMAT_VERSION or any field is missing, mistyped or out of
 * range (*out is then undefined).
 */
static bool candidate_decode(const char *ticket_id, const char *text, size_t len, struct cc_candidate *out)
{
	struct cc_json_error err;
	cJSON *o = NULL;
	const cJSON *rtt, *it;
	int64_t v, pv;
	bool ok = false;

	memset(out, 0, sizeof *out);
	if (!field_ok(ticket_id, sizeof out->ticket_id, 1) ||
	    cc_json_parse_object(text, len, VALUE_MAX, 2, &o, &err) != 0)
		return false;
	memcpy(out->ticket_id, ticket_id, strlen(ticket_id) + 1);
	if (cc_json_get_int(o, "v", true, FORMAT_VERSION, FORMAT_VERSION, &v, &err) != 0 ||
	    !get_text(o, "p", 1, out->player_id, sizeof out->player_id) ||
	    !get_text(o, "b", 1, out->build, sizeof out->build) ||
	    cc_json_get_int(o, "pv", true, INT32_MIN, INT32_MAX, &pv, &err) != 0 ||
	    cc_json_get_double(o, "r", true, -HUGE_VAL, HUGE_VAL, &out->rating, &err) != 0 ||
	    cc_json_get_double(o, "d", true, -HUGE_VAL, HUGE_VAL, &out->deviation, &err) != 0 ||
	    cc_json_get_int(o, "q", true, -INT53, INT53, &out->queued_at_ms, &err) != 0 ||
	    cc_json_get_int(o, "e", true, -INT53, INT53, &out->expires_at_ms, &err) != 0 ||
	    cc_json_get_object(o, "rtt", true, &rtt, &err) != 0)
		goto out;
	out->protocol_version = (int32_t)pv;
	out->party_size = 1;
	if (cJSON_GetObjectItemCaseSensitive(o, "pt")) {
		int64_t ps;
		if (!get_text(o, "pt", CC_UUID_BUF - 1, out->party_id, sizeof out->party_id) ||
		    cc_json_get_int(o, "ps", true, 1, CC_FORMATION_MAX_TEAM_SIZE, &ps, &err) != 0)
			goto out;
		out->party_size = (int)ps;
	}
	cJSON_ArrayForEach(it, rtt)
	{
		if (out->n_rtt == CC_CANDIDATE_MAX_REGIONS || !cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
		    it->valuedouble < 0 || !it->string || !*it->string || strlen(it->string) > CC_CANDIDATE_REGION_MAX)
			goto out;
		struct cc_candidate_rtt *r = &out->rtt[out->n_rtt++];
		memcpy(r->region, it->string, strlen(it->string) + 1);
		r->rtt_ms = it->valuedouble;
	}
	ok = true;
out:
	cJSON_Delete(o);
	return ok;
}

/* ---- transactions -------------------------------------------------------- */

/*
 * Runs the n commands as MULTI ... EXEC in one round trip. 0 when every
 * command ran; CC_EDB for an error reply (WRONGTYPE ...) or an aborted
 * transaction; otherwise cc_redis_pipeline's error.
 */
static int run_multi(struct cc_redis *r, size_t n, const int *argcs, const char **const *argvs,
		     const size_t *const *argvlens)
{
	enum { MAX_CMDS = 8 };
	static const char *multi[] = { "MULTI" }, *exec[] = { "EXEC" };
	int all_argcs[MAX_CMDS + 2];
	const char **all_argvs[MAX_CMDS + 2];
	const size_t *all_lens[MAX_CMDS + 2];
	redisReply *replies[MAX_CMDS + 2] = { 0 };

	if (n > MAX_CMDS)
		CC_BUG("run_multi: too many commands");
	all_argcs[0] = 1, all_argvs[0] = multi, all_lens[0] = NULL;
	for (size_t i = 0; i < n; i++) {
		all_argcs[i + 1] = argcs[i];
		all_argvs[i + 1] = argvs[i];
		all_lens[i + 1] = argvlens ? argvlens[i] : NULL;
	}
	all_argcs[n + 1] = 1, all_argvs[n + 1] = exec, all_lens[n + 1] = NULL;
	int rc = cc_redis_pipeline(r, n + 2, all_argcs, (const char **const *)all_argvs, all_lens, replies);
	if (rc != 0)
		return rc;
	const redisReply *done = replies[n + 1];
	if (!done || done->type != REDIS_REPLY_ARRAY || done->elements != n)
		rc = CC_EDB; /* EXECABORT, or a nil (aborted) transaction */
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (done->element[i]->type == REDIS_REPLY_ERROR)
			rc = CC_EDB;
	cc_redis_replies_free(replies, n + 2);
	return rc;
}

int cc_candidate_index_put(struct cc_candidate_index *idx, const char *playlist, const struct cc_candidate *c)
{
	char h[KEY_MAX], z[KEY_MAX], score[24];
	struct cc_redis *r = NULL;
	char *value = NULL;
	int rc;

	if (!idx)
		return 0;
	if (!playlist_valid(playlist) || !c || !candidate_valid(c))
		return CC_EINVAL;
	if (!(value = candidate_encode(c)))
		return CC_ENOMEM;
	make_key(h, playlist, "h");
	make_key(z, playlist, "z");
	snprintf(score, sizeof score, "%lld", (long long)c->queued_at_ms);
	const char *hset[] = { "HSET", h, c->ticket_id, value };
	const char *zadd[] = { "ZADD", z, score, c->ticket_id };
	const int argcs[] = { 4, 4 };
	const char **const argvs[] = { hset, zadd };
	if ((rc = acquire(idx, &r)) != 0)
		goto out;
	rc = run_multi(r, 2, argcs, argvs, NULL);
	release(idx, r, rc);
out:
	free(value);
	return index_result(rc);
}

int cc_candidate_index_remove(struct cc_candidate_index *idx, const char *playlist, const char *ticket_id)
{
	char h[KEY_MAX], z[KEY_MAX];
	struct cc_redis *r = NULL;
	int rc;

	if (!idx)
		return 0;
	if (!playlist_valid(playlist) || !ticket_id || !*ticket_id)
		return CC_EINVAL;
	make_key(h, playlist, "h");
	make_key(z, playlist, "z");
	const char *hdel[] = { "HDEL", h, ticket_id };
	const char *zrem[] = { "ZREM", z, ticket_id };
	const int argcs[] = { 3, 3 };
	const char **const argvs[] = { hdel, zrem };
	if ((rc = acquire(idx, &r)) != 0)
		return rc;
	rc = run_multi(r, 2, argcs, argvs, NULL);
	release(idx, r, rc);
	return index_result(rc);
}

/* ---- read ---------------------------------------------------------------- */

/* True when the last command on r failed because a key holds another type. */
static bool wrong_type(const struct cc_redis *r)
{
	return strncmp(cc_redis_last_error(r), "WRONGTYPE", 9) == 0;
}

/*
 * Deletes the entries of stale[0..n) (ids and the values the read saw) if
 * they still hold those values, so a concurrent put is never undone.
 * Best effort: the caller ignores the result.
 */
static int cleanup(struct cc_redis *r, const char *h, const char *z, const redisReply *const *ids,
		   const redisReply *const *values, size_t n)
{
	size_t argc = 5 + 2 * n;
	const char **argv = calloc(argc, sizeof *argv);
	size_t *lens = calloc(argc, sizeof *lens);
	int rc = CC_ENOMEM;
	if (!argv || !lens)
		goto out;
	argv[0] = "EVAL", argv[1] = cleanup_script, argv[2] = "2", argv[3] = h, argv[4] = z;
	for (size_t i = 0; i < 5; i++)
		lens[i] = strlen(argv[i]);
	for (size_t i = 0; i < n; i++) {
		bool missing = values[i]->type != REDIS_REPLY_STRING;
		argv[5 + 2 * i] = ids[i]->str;
		lens[5 + 2 * i] = ids[i]->len;
		argv[6 + 2 * i] = missing ? "" : values[i]->str;
		lens[6 + 2 * i] = missing ? 0 : values[i]->len;
	}
	rc = cc_redis_command_argv(r, (int)argc, argv, lens, NULL);
out:
	free(argv);
	free(lens);
	return rc;
}

/*
 * The read itself, on a borrowed handle. A key of the wrong type (someone
 * else's data in our namespace) is deleted and the index reported empty,
 * so the caller's rebuild repairs it.
 */
static int read_on(struct cc_redis *r, const char *playlist, size_t limit, struct cc_candidate *out, size_t *n)
{
	char h[KEY_MAX], z[KEY_MAX], stop[24];
	redisReply *ids = NULL, *values = NULL;
	const redisReply **stale_ids = NULL, **stale_values = NULL;
	const char **argv = NULL;
	size_t *lens = NULL;
	size_t got = 0, n_stale = 0;
	int rc;

	make_key(h, playlist, "h");
	make_key(z, playlist, "z");
	snprintf(stop, sizeof stop, "%zu", limit - 1);
	rc = cc_redis_command(r, &ids, "ZRANGE", z, "0", stop, (char *)NULL);
	if (rc == 0 && ids->type != REDIS_REPLY_ARRAY)
		rc = CC_EDB;
	if (rc != 0 || ids->elements == 0)
		goto out_wrong_type;

	size_t k = ids->elements;
	argv = calloc(k + 2, sizeof *argv);
	lens = calloc(k + 2, sizeof *lens);
	stale_ids = calloc(k, sizeof *stale_ids);
	stale_values = calloc(k, sizeof *stale_values);
	if (!argv || !lens || !stale_ids || !stale_values) {
		rc = CC_ENOMEM;
		goto out;
	}
	argv[0] = "HMGET", lens[0] = 5, argv[1] = h, lens[1] = strlen(h);
	for (size_t i = 0; i < k; i++) {
		if (ids->element[i]->type != REDIS_REPLY_STRING) {
			rc = CC_EDB; /* not what ZRANGE answers: a broken server */
			goto out;
		}
		argv[i + 2] = ids->element[i]->str;
		lens[i + 2] = ids->element[i]->len;
	}
	rc = cc_redis_command_argv(r, (int)k + 2, argv, lens, &values);
	if (rc == 0 && (values->type != REDIS_REPLY_ARRAY || values->elements != k))
		rc = CC_EDB;
	if (rc != 0)
		goto out_wrong_type;

	for (size_t i = 0; i < k && got < limit; i++) {
		const redisReply *id = ids->element[i], *v = values->element[i];
		bool ok = v->type == REDIS_REPLY_STRING && strlen(id->str) == id->len &&
			  candidate_decode(id->str, v->str, v->len, &out[got]);
		if (ok) {
			got++;
		} else {
			stale_ids[n_stale] = id;
			stale_values[n_stale++] = v;
		}
	}
	if (n_stale > 0)
		(void)cleanup(r, h, z, stale_ids, stale_values, n_stale);
	/* Only unreadable entries: that is not "empty" (which would mean "rebuild"). */
	rc = got == 0 && n_stale > 0 ? CC_EDB : 0;
	goto out;

out_wrong_type:
	if (rc == CC_EDB && wrong_type(r))
		rc = cc_redis_command(r, NULL, "DEL", h, z, (char *)NULL);
out:
	if (rc == 0)
		*n = got;
	freeReplyObject(ids);
	freeReplyObject(values);
	free(argv);
	free(lens);
	free(stale_ids);
	free(stale_values);
	return rc;
}

int cc_candidate_index_read(struct cc_candidate_index *idx, const char *playlist, size_t limit,
			    struct cc_candidate *out, size_t *n)
{
	struct cc_redis *r = NULL;
	int rc;

	if (!idx)
		return CC_EUNAVAILABLE;
	if (!playlist_valid(playlist) || !out || !n || limit == 0)
		return CC_EINVAL;
	if (limit > CC_CANDIDATE_INDEX_READ_MAX)
		limit = CC_CANDIDATE_INDEX_READ_MAX;
	if ((rc = acquire(idx, &r)) != 0)
		return rc;
	rc = read_on(r, playlist, limit, out, n);
	release(idx, r, rc);
	return index_result(rc);
}

/* ---- rebuild ------------------------------------------------------------- */

/*
 * Writes candidates all[0..n) into the temporary keys th/tz in batches (one
 * HSET, one ZADD and two PEXPIREs per round trip). Invalid candidates are
 * skipped; *written counts the rest.
 */
static int write_batches(struct cc_redis *r, const char *th, const char *tz, const struct cc_candidate *all,
			 size_t n, size_t *written)
{
	const char *hset[2 + 2 * REBUILD_BATCH], *zadd[2 + 2 * REBUILD_BATCH];
	char *values[REBUILD_BATCH] = { 0 };
	char scores[REBUILD_BATCH][24];
	int rc = 0;

	*written = 0;
	for (size_t start = 0; start < n && rc == 0; start += REBUILD_BATCH) {
		size_t k = 0, end = n - start < REBUILD_BATCH ? n : start + REBUILD_BATCH;
		hset[0] = "HSET", hset[1] = th, zadd[0] = "ZADD", zadd[1] = tz;
		for (size_t i = start; i < end; i++) {
			if (!(values[k] = candidate_encode(&all[i])))
				continue; /* invalid (or OOM): left out, a put will bring it back */
			snprintf(scores[k], sizeof scores[k], "%lld", (long long)all[i].queued_at_ms);
			hset[2 + 2 * k] = all[i].ticket_id, hset[3 + 2 * k] = values[k];
			zadd[2 + 2 * k] = scores[k], zadd[3 + 2 * k] = all[i].ticket_id;
			k++;
		}
		if (k > 0) {
			const char *hexp[] = { "PEXPIRE", th, REBUILD_TTL_MS }, *zexp[] = { "PEXPIRE", tz, REBUILD_TTL_MS };
			const int argcs[] = { 2 + 2 * (int)k, 2 + 2 * (int)k, 3, 3 };
			const char **const argvs[] = { hset, zadd, hexp, zexp };
			rc = cc_redis_pipeline(r, 4, argcs, argvs, NULL, NULL);
			*written += k;
		}
		for (size_t i = 0; i < k; i++) {
			free(values[i]);
			values[i] = NULL;
		}
	}
	return rc;
}

static int rebuild_on(struct cc_candidate_index *idx, struct cc_redis *r, const char *playlist,
		      const struct cc_candidate *all, size_t n)
{
	char h[KEY_MAX], z[KEY_MAX], th[KEY_MAX], tz[KEY_MAX], tag[64];
	size_t written = 0;
	int rc;

	make_key(h, playlist, "h");
	make_key(z, playlist, "z");
	pthread_mutex_lock(&idx->lock);
	unsigned long seq = ++idx->rebuilds;
	pthread_mutex_unlock(&idx->lock);
	/*
	 * Unique across replicas (every container's matcher may be pid 1):
	 * random bits, then pid, counter and time in case getrandom fails.
	 */
	uint64_t salt = 0;
	if (getrandom(&salt, sizeof salt, GRND_NONBLOCK) != (ssize_t)sizeof salt)
		salt = (uint64_t)cc_clock_ms();
	snprintf(tag, sizeof tag, "rebuild:%016llx-%ld-%lu", (unsigned long long)salt, (long)getpid(), seq);
	snprintf(th, sizeof th, "cc:cand:%s:%s:h", playlist, tag);
	snprintf(tz, sizeof tz, "cc:cand:%s:%s:z", playlist, tag);

	rc = write_batches(r, th, tz, all, n, &written);
	if (rc == 0 && written > 0) {
		/* Swap both keys at once; RENAME carries the TTL over, so drop it. */
		const char *rh[] = { "RENAME", th, h }, *rz[] = { "RENAME", tz, z };
		const char *ph[] = { "PERSIST", h }, *pz[] = { "PERSIST", z };
		const int argcs[] = { 3, 3, 2, 2 };
		const char **const argvs[] = { rh, rz, ph, pz };
		rc = run_multi(r, 4, argcs, argvs, NULL);
	} else if (rc == 0) {
		const char *del[] = { "DEL", h, z };
		const int argcs[] = { 3 };
		const char **const argvs[] = { del };
		rc = run_multi(r, 1, argcs, argvs, NULL);
	}
	/* Still connected after a failure: drop the half-built keys now, not in 60 s. */
	if (rc != 0 && cc_redis_is_connected(r) && cc_redis_command(r, NULL, "DEL", th, tz, (char *)NULL) != 0) {
		/* nothing more to do: the TTL removes them */
	}
	return rc;
}

int cc_candidate_index_rebuild(struct cc_candidate_index *idx, const char *playlist,
			       const struct cc_candidate *all, size_t n)
{
	struct cc_redis *r = NULL;
	int rc;

	if (!idx)
		return 0;
	if (!playlist_valid(playlist) || (n > 0 && !all))
		return CC_EINVAL;
	if ((rc = acquire(idx, &r)) != 0)
		return rc;
	rc = rebuild_on(idx, r, playlist, all, n);
	release(idx, r, rc);
	return index_result(rc);
}

/* ---- a transaction's ticket moves ------------------------------------------ */

/* Counts a failed change; logs it unless a line was logged in the last interval. */
static void apply_failed(struct cc_candidate_index *idx, struct cc_metric *errors, const char *op,
			 const char *ticket_id, int rc)
{
	const char *const labels[] = { op };
	unsigned long skipped = 0;
	bool log_now = false;

	cc_metric_add(errors, labels, 1.0);
	int64_t now = cc_clock_ms();
	pthread_mutex_lock(&idx->lock);
	if (!idx->failure_logged || now - idx->last_log_ms >= CC_CANDIDATE_INDEX_LOG_INTERVAL_MS) {
		log_now = true;
		skipped = idx->suppressed;
		idx->suppressed = 0;
		idx->last_log_ms = now;
		idx->failure_logged = true;
	} else {
		idx->suppressed++;
	}
	pthread_mutex_unlock(&idx->lock);
	if (log_now)
		cc_log_warn("candidate_index_refresh_failed", CC_LOG_STR("op", op), CC_LOG_STR("ticket_id", ticket_id),
			    CC_LOG_STR("error", cc_errname(rc)), CC_LOG_INT("suppressed_since_last", skipped));
}

size_t cc_candidate_index_apply_moves(struct cc_candidate_index *idx, const struct cc_ticket_moves *moves,
				      struct cc_metric *errors)
{
	size_t failed = 0;
	if (!idx || !moves)
		return 0;
	if (moves->dropped) {
		apply_failed(idx, errors, "overflow", moves->n ? moves->v[0].id : "", CC_ETOOBIG);
		failed++;
	}
	for (size_t i = 0; i < moves->n && i < CC_TICKET_MOVES_MAX; i++) {
		const struct cc_ticket *t = &moves->v[i];
		bool put = t->state == CC_TICKET_QUEUED;
		int rc = put ? cc_candidate_index_put(idx, t->playlist, &t->cand)
			     : cc_candidate_index_remove(idx, t->playlist, t->id);
		if (rc != 0) {
			apply_failed(idx, errors, put ? "put" : "remove", t->id, rc);
			failed++;
		}
	}
	return failed;
}
