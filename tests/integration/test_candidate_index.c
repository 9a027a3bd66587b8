/*
 * The Redis candidate index against the harness Redis: order, limit,
 * removal, per-playlist isolation, rebuild, damaged data, and a Redis that
 * is down (an error within its budget, never a hang, never "empty").
 *
 * cc_candidate_index_apply_moves (cc-api's and cc-maintenance's one way
 * to apply a committed transaction's ticket moves): put or remove by
 * state, in order; every failure counted by op, an overflow never silent,
 * the log rate-limited, Redis down answered within its budget.
 *
 * Playlist names carry the test's pid, so runs sharing the harness Redis
 * never see each other's keys; every test deletes its keys at the end.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "store/candidate_index.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/redis.h"
#include "support.h"
#include "sys/banned.h"

#define TIMEOUT_MS 200
#define SLACK_MS 1500 /* scheduler and ASan headroom on top of a timeout */

static char casual[40], ranked[40], longest[40]; /* longest: a 32-byte name, the maximum */

static int harness_port(void)
{
	return (int)strtol(cc_test_env("CC_TEST_REDIS_PORT"), NULL, 10);
}

static struct cc_candidate_index *harness_index(size_t pool)
{
	struct cc_candidate_index *idx =
		cc_candidate_index_create(cc_test_env("CC_TEST_REDIS_HOST"), harness_port(), TIMEOUT_MS, pool);
	ck_assert_ptr_nonnull(idx);
	return idx;
}

/* A raw connection for looking under the index and damaging it on purpose. */
static struct cc_redis *raw_redis(void)
{
	struct cc_redis *r = cc_redis_create(cc_test_env("CC_TEST_REDIS_HOST"), harness_port(), 1000, 1000);
	ck_assert_ptr_nonnull(r);
	return r;
}

/* Runs one text command that must succeed; returns the reply (caller frees). */
static redisReply *raw(struct cc_redis *r, const char *a0, const char *a1, const char *a2, const char *a3,
		       const char *a4)
{
	redisReply *reply = NULL;
	const char *argv[] = { a0, a1, a2, a3, a4 };
	int argc = a1 ? a2 ? a3 ? a4 ? 5 : 4 : 3 : 2 : 1;
	int rc = cc_redis_command_argv(r, argc, argv, NULL, &reply);
	ck_assert_msg(rc == 0, "%s %s: %s (%s)", a0, a1 ? a1 : "", cc_errname(rc), cc_redis_last_error(r));
	return reply;
}

/* The integer answer of a command (ZCARD, HEXISTS, TTL, ...). */
static long long raw_int(struct cc_redis *r, const char *a0, const char *a1, const char *a2)
{
	redisReply *reply = raw(r, a0, a1, a2, NULL, NULL);
	ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
	long long v = reply->integer;
	freeReplyObject(reply);
	return v;
}

static void key(char *out, size_t len, const char *playlist, const char *suffix)
{
	snprintf(out, len, "cc:cand:%s:%s", playlist, suffix);
}

/* Deletes every key of both test playlists. */
static void drop_test_keys(void)
{
	struct cc_redis *r = raw_redis();
	const char *pls[] = { casual, ranked, longest };
	for (size_t i = 0; i < CC_ARRAY_LEN(pls); i++) {
		char pattern[80];
		key(pattern, sizeof pattern, pls[i], "*");
		redisReply *keys = raw(r, "KEYS", pattern, NULL, NULL, NULL);
		for (size_t k = 0; k < keys->elements; k++)
			freeReplyObject(raw(r, "DEL", keys->element[k]->str, NULL, NULL, NULL));
		freeReplyObject(keys);
	}
	cc_redis_free(r);
}

static void setup(void)
{
	snprintf(casual, sizeof casual, "casual-t%d", (int)getpid());
	snprintf(ranked, sizeof ranked, "ranked-t%d", (int)getpid());
	snprintf(longest, sizeof longest, "long-t%d-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", (int)getpid());
	longest[32] = '\0';
	drop_test_keys();
}

static void teardown(void)
{
	drop_test_keys();
}

/* A candidate whose fields all derive from n, so a read can be checked field by field. */
static struct cc_candidate make(int n, int64_t queued_at_ms)
{
	struct cc_candidate c = { 0 };
	snprintf(c.ticket_id, sizeof c.ticket_id, "00000000-0000-4000-8000-%012d", n);
	snprintf(c.player_id, sizeof c.player_id, "11111111-0000-4000-8000-%012d", n);
	snprintf(c.build, sizeof c.build, "1.2.%d", n);
	c.protocol_version = 3 + n;
	c.rating = 1500.25 + n;
	c.deviation = 350.0 / (n + 1);
	c.queued_at_ms = queued_at_ms;
	c.expires_at_ms = queued_at_ms + 30000;
	c.party_size = 1;
	if (n % 2) { /* every other one queued by a party (issue 26): the index keeps it */
		snprintf(c.party_id, sizeof c.party_id, "22222222-0000-4000-8000-%012d", n);
		c.party_size = 2 + n % 2;
	}
	c.n_rtt = (size_t)(n % 3);
	for (size_t i = 0; i < c.n_rtt; i++) {
		snprintf(c.rtt[i].region, sizeof c.rtt[i].region, "region-%zu", i);
		c.rtt[i].rtt_ms = 10.125 * (double)(i + 1) + n;
	}
	return c;
}

static void assert_same(const struct cc_candidate *a, const struct cc_candidate *b)
{
	ck_assert_str_eq(a->ticket_id, b->ticket_id);
	ck_assert_str_eq(a->player_id, b->player_id);
	ck_assert_str_eq(a->build, b->build);
	ck_assert_int_eq(a->protocol_version, b->protocol_version);
	ck_assert_double_eq(a->rating, b->rating);
	ck_assert_double_eq(a->deviation, b->deviation);
	ck_assert_int_eq(a->queued_at_ms, b->queued_at_ms);
	ck_assert_int_eq(a->expires_at_ms, b->expires_at_ms);
	ck_assert_str_eq(a->party_id, b->party_id);
	ck_assert_int_eq(a->party_size, b->party_size);
	ck_assert_uint_eq(a->n_rtt, b->n_rtt);
	for (size_t i = 0; i < a->n_rtt; i++) {
		ck_assert_str_eq(a->rtt[i].region, b->rtt[i].region);
		ck_assert_double_eq(a->rtt[i].rtt_ms, b->rtt[i].rtt_ms);
	}
}

static void put(struct cc_candidate_index *idx, const char *playlist, const struct cc_candidate *c)
{
	int rc = cc_candidate_index_put(idx, playlist, c);
	ck_assert_msg(rc == 0, "put %s: %s", c->ticket_id, cc_errname(rc));
}

/* Reads up to limit entries (must succeed); returns the count. */
static size_t read_ok(struct cc_candidate_index *idx, const char *playlist, size_t limit,
		      struct cc_candidate *out)
{
	size_t n = 12345;
	int rc = cc_candidate_index_read(idx, playlist, limit, out, &n);
	ck_assert_msg(rc == 0, "read %s: %s", playlist, cc_errname(rc));
	ck_assert_uint_le(n, limit);
	return n;
}

START_TEST(test_order_and_round_trip)
{
	struct cc_candidate_index *idx = harness_index(2);
	struct cc_candidate got[8];
	/* Put out of order; 3 and 4 tie on queued_at, so the id decides (as in PostgreSQL). */
	const int64_t base = 1700000000000LL;
	struct cc_candidate c[] = { make(4, base + 20), make(1, base + 50), make(3, base + 20), make(2, base - 5),
				    make(5, 1000) /* expired long ago: still returned, the caller filters */ };
	for (size_t i = 0; i < CC_ARRAY_LEN(c); i++)
		put(idx, casual, &c[i]);
	const size_t order[] = { 4, 3, 2, 0, 1 };
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 5);
	for (size_t i = 0; i < 5; i++)
		assert_same(&got[i], &c[order[i]]);

	/* A put refreshes in place: new expiry and RTT, same position, no duplicate. */
	c[0].expires_at_ms += 10000;
	c[0].rtt[0].rtt_ms = 99.5;
	put(idx, casual, &c[0]);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 5);
	assert_same(&got[3], &c[0]);
	cc_candidate_index_free(idx);
}
END_TEST

START_TEST(test_limit_and_remove)
{
	struct cc_candidate_index *idx = harness_index(2);
	struct cc_candidate got[4];
	for (int i = 0; i < 50; i++) {
		struct cc_candidate c = make(i, 1000 + i);
		put(idx, casual, &c);
	}
	ck_assert_uint_eq(read_ok(idx, casual, 3, got), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(got[i].queued_at_ms, 1000 + i);

	struct cc_candidate first = make(0, 0), second = make(1, 0);
	ck_assert_int_eq(cc_candidate_index_remove(idx, casual, first.ticket_id), 0);
	ck_assert_int_eq(cc_candidate_index_remove(idx, casual, first.ticket_id), 0); /* absent is fine */
	ck_assert_int_eq(cc_candidate_index_remove(idx, ranked, second.ticket_id), 0); /* other playlist: no effect */
	ck_assert_uint_eq(read_ok(idx, casual, 2, got), 2);
	ck_assert_str_eq(got[0].ticket_id, second.ticket_id);

	/* Both structures lost the ticket, not just one. */
	struct cc_redis *r = raw_redis();
	char h[80], z[80];
	key(h, sizeof h, casual, "h");
	key(z, sizeof z, casual, "z");
	ck_assert_int_eq(raw_int(r, "HLEN", h, NULL), 49);
	ck_assert_int_eq(raw_int(r, "ZCARD", z, NULL), 49);
	cc_redis_free(r);
	cc_candidate_index_free(idx);
}
END_TEST

START_TEST(test_playlists_isolated)
{
	struct cc_candidate_index *idx = harness_index(2);
	struct cc_candidate got[8];
	struct cc_candidate a = make(1, 100), b = make(2, 200), fresh = make(3, 300);
	put(idx, casual, &a);
	put(idx, ranked, &b);
	ck_assert_uint_eq(read_ok(idx, ranked, 8, got), 1);
	ck_assert_str_eq(got[0].ticket_id, b.ticket_id);

	/* Rebuilding casual, even to empty, leaves ranked as it was. */
	ck_assert_int_eq(cc_candidate_index_rebuild(idx, casual, &fresh, 1), 0);
	ck_assert_int_eq(cc_candidate_index_rebuild(idx, casual, NULL, 0), 0);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 0);
	ck_assert_uint_eq(read_ok(idx, ranked, 8, got), 1);
	assert_same(&got[0], &b);

	/* A name that could reach into another namespace is refused. */
	size_t n;
	ck_assert_int_eq(cc_candidate_index_put(idx, "ranked:h", &a), CC_EINVAL);
	ck_assert_int_eq(cc_candidate_index_rebuild(idx, "*", NULL, 0), CC_EINVAL);
	ck_assert_int_eq(cc_candidate_index_read(idx, "", 8, got, &n), CC_EINVAL);
	ck_assert_int_eq(cc_candidate_index_remove(idx, NULL, a.ticket_id), CC_EINVAL);
	cc_candidate_index_free(idx);
}
END_TEST

START_TEST(test_rebuild_replaces)
{
	struct cc_candidate_index *idx = harness_index(2);
	enum { N = 300 }; /* more than one write batch */
	static struct cc_candidate all[N], got[N];
	struct cc_candidate old = make(9999, 1);
	put(idx, casual, &old);
	for (int i = 0; i < N; i++)
		all[i] = make(i, 5000 + (N - i)); /* newest first: the index must sort */
	ck_assert_int_eq(cc_candidate_index_rebuild(idx, casual, all, N), 0);
	ck_assert_uint_eq(read_ok(idx, casual, N, got), N);
	for (int i = 0; i < N; i++)
		assert_same(&got[i], &all[N - 1 - i]);

	/* Live keys carry no TTL and no temporary key is left behind. */
	struct cc_redis *r = raw_redis();
	char h[80], z[80], pattern[80];
	key(h, sizeof h, casual, "h");
	key(z, sizeof z, casual, "z");
	key(pattern, sizeof pattern, casual, "rebuild:*");
	ck_assert_int_eq(raw_int(r, "PTTL", h, NULL), -1);
	ck_assert_int_eq(raw_int(r, "PTTL", z, NULL), -1);
	redisReply *left = raw(r, "KEYS", pattern, NULL, NULL, NULL);
	ck_assert_uint_eq(left->elements, 0);
	freeReplyObject(left);
	ck_assert_int_eq(raw_int(r, "HEXISTS", h, old.ticket_id), 0);
	cc_redis_free(r);

	/* The longest playlist name still gives distinct temporary keys. */
	ck_assert_int_eq(cc_candidate_index_rebuild(idx, longest, all, 2), 0);
	ck_assert_uint_eq(read_ok(idx, longest, N, got), 2);
	ck_assert_int_eq(cc_candidate_index_rebuild(idx, "casual-and-thirty-three-bytes-xxx", all, 2), CC_EINVAL);
	cc_candidate_index_free(idx);
}
END_TEST

START_TEST(test_unreadable_entries_skipped_and_cleaned)
{
	struct cc_candidate_index *idx = harness_index(2);
	struct cc_redis *r = raw_redis();
	struct cc_candidate got[8];
	char h[80], z[80];
	key(h, sizeof h, casual, "h");
	key(z, sizeof z, casual, "z");
	struct cc_candidate good1 = make(1, 10), bad = make(2, 20), future = make(3, 30), good2 = make(4, 40);
	put(idx, casual, &good1);
	put(idx, casual, &bad);
	put(idx, casual, &future);
	put(idx, casual, &good2);
	freeReplyObject(raw(r, "HSET", h, bad.ticket_id, "{\"v\":1,\"p\":", NULL));
	freeReplyObject(raw(r, "HSET", h, future.ticket_id, "{\"v\":2,\"whatever\":true}", NULL));

	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 2);
	assert_same(&got[0], &good1);
	assert_same(&got[1], &good2);
	ck_assert_int_eq(raw_int(r, "HEXISTS", h, bad.ticket_id), 0);
	ck_assert_int_eq(raw_int(r, "HEXISTS", h, future.ticket_id), 0);
	ck_assert_int_eq(raw_int(r, "ZCARD", z, NULL), 2);

	/* Nothing but damage is "unreadable", not "empty"; once cleaned it is empty. */
	size_t n = 777;
	ck_assert_int_eq(cc_candidate_index_rebuild(idx, casual, NULL, 0), 0);
	put(idx, casual, &bad);
	freeReplyObject(raw(r, "HSET", h, bad.ticket_id, "", NULL));
	ck_assert_int_eq(cc_candidate_index_read(idx, casual, 8, got, &n), CC_EUNAVAILABLE);
	ck_assert_uint_eq(n, 777);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 0);

	/* A key of the wrong type is removed and reported empty, so a rebuild repairs it. */
	freeReplyObject(raw(r, "SET", z, "not a sorted set", NULL, NULL));
	ck_assert_int_eq(cc_candidate_index_put(idx, casual, &good1), CC_EUNAVAILABLE);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 0);
	ck_assert_int_eq(raw_int(r, "EXISTS", z, NULL), 0);
	put(idx, casual, &good1);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 1);
	cc_redis_free(r);
	cc_candidate_index_free(idx);
}
END_TEST

START_TEST(test_hash_and_zset_out_of_step)
{
	struct cc_candidate_index *idx = harness_index(2);
	struct cc_redis *r = raw_redis();
	struct cc_candidate got[8];
	char h[80], z[80];
	key(h, sizeof h, casual, "h");
	key(z, sizeof z, casual, "z");
	struct cc_candidate a = make(1, 10), b = make(2, 20);
	put(idx, casual, &a);
	put(idx, casual, &b);
	/* A member whose hash value is gone, and a hash value no member points at. */
	freeReplyObject(raw(r, "ZADD", z, "5", "ghost-ticket", NULL));
	freeReplyObject(raw(r, "HDEL", h, b.ticket_id, NULL, NULL));
	freeReplyObject(raw(r, "HSET", h, "orphan-ticket", "{}", NULL));

	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 1);
	assert_same(&got[0], &a);
	ck_assert_int_eq(raw_int(r, "ZCARD", z, NULL), 1);
	redisReply *score = raw(r, "ZSCORE", z, "ghost-ticket", NULL, NULL);
	ck_assert_int_eq(score->type, REDIS_REPLY_NIL);
	freeReplyObject(score);

	/* A put made again after the damage brings the ticket back whole. */
	put(idx, casual, &b);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 2);
	assert_same(&got[1], &b);
	cc_redis_free(r);
	cc_candidate_index_free(idx);
}
END_TEST

/* A loopback port with nothing listening (bound, then released). */
static int dead_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* A listener that never accepts: connects succeed (backlog), nothing ever answers. */
static int silent_listener(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Every call on idx answers CC_EUNAVAILABLE within budget_ms. */
static void assert_down(struct cc_candidate_index *idx, int64_t budget_ms)
{
	struct cc_candidate c = make(1, 10), got[4];
	size_t n = 42;
	for (int round = 0; round < 3; round++) {
		int64_t t0 = cc_clock_ms();
		ck_assert_int_eq(cc_candidate_index_read(idx, casual, 4, got, &n), CC_EUNAVAILABLE);
		ck_assert_int_eq(cc_candidate_index_put(idx, casual, &c), CC_EUNAVAILABLE);
		ck_assert_int_eq(cc_candidate_index_remove(idx, casual, c.ticket_id), CC_EUNAVAILABLE);
		ck_assert_int_eq(cc_candidate_index_rebuild(idx, casual, &c, 1), CC_EUNAVAILABLE);
		int64_t took = cc_clock_ms() - t0;
		ck_assert_msg(took < budget_ms, "round %d of four calls took %lld ms (budget %lld)", round,
			      (long long)took, (long long)budget_ms);
	}
	ck_assert_uint_eq(n, 42); /* untouched: "down" never looks like "empty" */
}

START_TEST(test_down_is_not_empty)
{
	struct cc_candidate got[4];
	size_t n = 42;
	/* Refused: fast. */
	struct cc_candidate_index *dead =
		cc_candidate_index_create("127.0.0.1", dead_port(), TIMEOUT_MS, 2);
	ck_assert_ptr_nonnull(dead);
	assert_down(dead, TIMEOUT_MS + SLACK_MS);
	cc_candidate_index_free(dead);

	/* Connected but silent: each wait ends at the timeout, later calls fail at once. */
	int port, fd = silent_listener(&port);
	struct cc_candidate_index *silent = cc_candidate_index_create("127.0.0.1", port, TIMEOUT_MS, 2);
	assert_down(silent, 2 * TIMEOUT_MS + SLACK_MS);
	cc_candidate_index_free(silent);
	close(fd);

	/* The same question to a live, empty Redis: 0 with *n == 0. */
	struct cc_candidate_index *live = harness_index(1);
	ck_assert_int_eq(cc_candidate_index_read(live, casual, 4, got, &n), 0);
	ck_assert_uint_eq(n, 0);
	cc_candidate_index_free(live);

	/* No index configured: a no-op for writers, "down" for readers. */
	struct cc_candidate c = make(1, 10);
	ck_assert_ptr_null(cc_candidate_index_create("", 6379, TIMEOUT_MS, 2));
	ck_assert_ptr_null(cc_candidate_index_create(NULL, 6379, TIMEOUT_MS, 2));
	ck_assert_int_eq(cc_candidate_index_put(NULL, casual, &c), 0);
	ck_assert_int_eq(cc_candidate_index_remove(NULL, casual, c.ticket_id), 0);
	ck_assert_int_eq(cc_candidate_index_rebuild(NULL, casual, &c, 1), 0);
	ck_assert_int_eq(cc_candidate_index_read(NULL, casual, 4, got, &n), CC_EUNAVAILABLE);
	cc_candidate_index_free(NULL);
}
END_TEST

enum { THREADS = 8, PER_THREAD = 40 };

struct worker {
	struct cc_candidate_index *idx;
	int id;
	int failures; /* calls that did not answer 0, or reads out of order */
};

/* Puts PER_THREAD candidates, reading after each; reads must stay ordered. */
static void *work(void *arg)
{
	struct worker *w = arg;
	struct cc_candidate got[16];
	for (int i = 0; i < PER_THREAD; i++) {
		int n = w->id * PER_THREAD + i;
		struct cc_candidate c = make(n, 100000 + n);
		size_t k = 0;
		if (cc_candidate_index_put(w->idx, casual, &c) != 0 ||
		    cc_candidate_index_read(w->idx, casual, 16, got, &k) != 0 || k == 0) {
			w->failures++;
			continue;
		}
		for (size_t j = 1; j < k; j++)
			if (got[j].queued_at_ms < got[j - 1].queued_at_ms)
				w->failures++;
	}
	return NULL;
}

START_TEST(test_concurrent_put_and_read)
{
	/* Fewer connections than threads: the pool must share them. */
	struct cc_candidate_index *idx = harness_index(3);
	pthread_t t[THREADS];
	struct worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .idx = idx, .id = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(w[i].failures == 0, "thread %d saw %d failures", i, w[i].failures);
	}
	static struct cc_candidate got[THREADS * PER_THREAD + 1];
	ck_assert_uint_eq(read_ok(idx, casual, CC_ARRAY_LEN(got), got), THREADS * PER_THREAD);
	for (int i = 0; i < THREADS * PER_THREAD; i++) {
		struct cc_candidate want = make(i, 100000 + i);
		assert_same(&got[i], &want);
	}
	cc_candidate_index_free(idx);
}
END_TEST

/* ---- applying ticket moves --------------------------------------------------- */

/* A move as the store records it: ticket n of playlist in state st, its candidate from make(). */
static struct cc_ticket move_of(int n, const char *playlist, enum cc_ticket_state st)
{
	struct cc_ticket t = { 0 };
	t.cand = make(n, 1000 + n);
	snprintf(t.id, sizeof t.id, "%s", t.cand.ticket_id);
	snprintf(t.player_id, sizeof t.player_id, "%s", t.cand.player_id);
	snprintf(t.playlist, sizeof t.playlist, "%s", playlist);
	t.state = st;
	t.expires_at_ms = t.cand.expires_at_ms;
	return t;
}

/* The value of errors{op="op"} in the rendered registry (0 when the series does not exist). */
static double errors_of(const char *op)
{
	char want[128];
	snprintf(want, sizeof want, "cosmic_clash_test_index_errors_total{op=\"%s\"} ", op);
	char *text = cc_metrics_render();
	ck_assert_ptr_nonnull(text);
	const char *at = strstr(text, want);
	double v = at ? strtod(at + strlen(want), NULL) : 0;
	free(text);
	return v;
}

static struct cc_metric *errors_counter(void)
{
	static const char *const labels[] = { "op", NULL };
	cc_metrics_reset();
	struct cc_metric *m = cc_counter("cosmic_clash_test_index_errors_total", "test", labels, 8);
	ck_assert_ptr_nonnull(m);
	return m;
}

/* How many lines of the log file at path name event. */
static int log_lines(const char *path, const char *event)
{
	char want[96], line[2048];
	int n = 0;
	snprintf(want, sizeof want, "\"event\":\"%s\"", event);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f))
		n += strstr(line, want) != NULL;
	fclose(f);
	return n;
}

START_TEST(test_apply_moves_by_state)
{
	struct cc_metric *errors = errors_counter();
	struct cc_candidate_index *idx = harness_index(1);
	static struct cc_ticket_moves moves;
	struct cc_candidate got[8];

	/* 1 and 2 are in the index; a transaction requeues 3, ends 1, requeues 4 in another playlist. */
	struct cc_candidate one = make(1, 1001), two = make(2, 1002);
	ck_assert_int_eq(cc_candidate_index_put(idx, casual, &one), 0);
	ck_assert_int_eq(cc_candidate_index_put(idx, casual, &two), 0);
	cc_ticket_moves_reset(&moves);
	moves.v[moves.n++] = move_of(3, casual, CC_TICKET_QUEUED);
	moves.v[moves.n++] = move_of(1, casual, CC_TICKET_EXPIRED);
	moves.v[moves.n++] = move_of(4, ranked, CC_TICKET_QUEUED);
	ck_assert_uint_eq(cc_candidate_index_apply_moves(idx, &moves, errors), 0);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 2); /* 2 (untouched) and 3, oldest first */
	assert_same(&got[0], &two);
	assert_same(&got[1], &moves.v[0].cand);
	ck_assert_uint_eq(read_ok(idx, ranked, 8, got), 1);
	assert_same(&got[0], &moves.v[2].cand);

	/* In order: a ticket put then ended in one transaction ends absent. */
	cc_ticket_moves_reset(&moves);
	moves.v[moves.n++] = move_of(5, casual, CC_TICKET_QUEUED);
	moves.v[moves.n++] = move_of(5, casual, CC_TICKET_MATCHED);
	ck_assert_uint_eq(cc_candidate_index_apply_moves(idx, &moves, errors), 0);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 2);
	ck_assert_double_eq(errors_of("put") + errors_of("remove") + errors_of("overflow"), 0);

	/* An overflow (rows the store could not record) is one failure, counted, never silent. */
	cc_ticket_moves_reset(&moves);
	moves.v[moves.n++] = move_of(6, casual, CC_TICKET_QUEUED);
	moves.dropped = 3;
	ck_assert_uint_eq(cc_candidate_index_apply_moves(idx, &moves, errors), 1);
	ck_assert_double_eq(errors_of("overflow"), 1);
	ck_assert_uint_eq(read_ok(idx, casual, 8, got), 3); /* the recorded row still applied */

	/* No index: nothing done, nothing counted. */
	ck_assert_uint_eq(cc_candidate_index_apply_moves(NULL, &moves, errors), 0);
	ck_assert_double_eq(errors_of("overflow"), 1);
	cc_candidate_index_free(idx);
}
END_TEST

START_TEST(test_apply_moves_redis_down)
{
	struct cc_metric *errors = errors_counter();
	static struct cc_ticket_moves moves;
	char path[] = "/tmp/cc-index-log.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	cc_log_init("test_candidate_index", CC_LOG_INFO);
	cc_log_set_fd(fd);

	/* Connected but silent: the first change waits out the timeout, the rest fail at once. */
	int port, lfd = silent_listener(&port);
	struct cc_candidate_index *idx = cc_candidate_index_create("127.0.0.1", port, TIMEOUT_MS, 1);
	ck_assert_ptr_nonnull(idx);
	cc_ticket_moves_reset(&moves);
	for (int i = 0; i < CC_TICKET_MOVES_MAX; i++)
		moves.v[moves.n++] = move_of(i, casual, i % 4 == 0 ? CC_TICKET_EXPIRED : CC_TICKET_QUEUED);
	int64_t t0 = cc_clock_ms();
	ck_assert_uint_eq(cc_candidate_index_apply_moves(idx, &moves, errors), CC_TICKET_MOVES_MAX);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took < 2 * TIMEOUT_MS + SLACK_MS, "%d moves with Redis silent took %lld ms", CC_TICKET_MOVES_MAX,
		      (long long)took);
	ck_assert_double_eq(errors_of("remove"), CC_TICKET_MOVES_MAX / 4);
	ck_assert_double_eq(errors_of("put"), CC_TICKET_MOVES_MAX - CC_TICKET_MOVES_MAX / 4);
	/* A second transaction's failures are counted too, but not logged again within the interval. */
	ck_assert_uint_eq(cc_candidate_index_apply_moves(idx, &moves, errors), CC_TICKET_MOVES_MAX);
	ck_assert_double_eq(errors_of("put") + errors_of("remove"), 2 * CC_TICKET_MOVES_MAX);
	cc_log_set_fd(-1);
	close(fd);
	ck_assert_int_eq(log_lines(path, "candidate_index_refresh_failed"), 1);
	unlink(path);
	cc_candidate_index_free(idx);
	close(lfd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("candidate_index");
	TCase *tc = tcase_create("candidate_index");
	tcase_set_timeout(tc, 30); /* a hang fails the test instead of the run */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_order_and_round_trip);
	tcase_add_test(tc, test_limit_and_remove);
	tcase_add_test(tc, test_playlists_isolated);
	tcase_add_test(tc, test_rebuild_replaces);
	tcase_add_test(tc, test_unreadable_entries_skipped_and_cleaned);
	tcase_add_test(tc, test_hash_and_zset_out_of_step);
	tcase_add_test(tc, test_down_is_not_empty);
	tcase_add_test(tc, test_concurrent_put_and_read);
	tcase_add_test(tc, test_apply_moves_by_state);
	tcase_add_test(tc, test_apply_moves_redis_down);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
