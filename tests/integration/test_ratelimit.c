/*
 * sys/ratelimit against the harness Redis: two limiters (two replicas)
 * share one bucket; the per-process fallback when Redis is unreachable
 * (never refusing because of Redis, never slow); the refill rate and the
 * Retry-After it reports; unlimited and invalid arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "support.h"
#include "sys/clock.h"
#include "sys/ratelimit.h"
#include "sys/banned.h"

/* A bucket name no earlier run used (keys outlive a run until they expire). */
static void fresh_key(char *out, size_t cap, const char *what)
{
	unsigned char r[8];
	char hex[17];
	randombytes_buf(r, sizeof r);
	sodium_bin2hex(hex, sizeof hex, r, sizeof r);
	snprintf(out, cap, "test:%s:%s", what, hex);
}

static struct cc_ratelimiter *harness_limiter(void)
{
	struct cc_ratelimit_options o = {
		.redis_host = cc_test_env("CC_TEST_REDIS_HOST"),
		.redis_port = (int)strtol(cc_test_env("CC_TEST_REDIS_PORT"), NULL, 10),
		.redis_timeout_ms = 500,
		.key_prefix = "cc:rl:test:",
	};
	struct cc_ratelimiter *rl = cc_ratelimiter_create(&o);
	ck_assert_ptr_nonnull(rl);
	return rl;
}

static struct cc_ratelimiter *dead_limiter(void)
{
	int port;
	close(cc_test_listener(1, &port)); /* nothing listens there now */
	struct cc_ratelimit_options o = { .redis_host = "127.0.0.1", .redis_port = port, .redis_timeout_ms = 200,
					  .key_prefix = "cc:rl:test:" };
	struct cc_ratelimiter *rl = cc_ratelimiter_create(&o);
	ck_assert_ptr_nonnull(rl);
	return rl;
}

/* Takes n tokens; returns how many were allowed; *shared: all decided by Redis. */
static int take_n(struct cc_ratelimiter *rl, const char *key, unsigned per_minute, unsigned burst, int n,
		  bool *shared, unsigned *last_retry)
{
	int allowed = 0;
	*shared = true;
	for (int i = 0; i < n; i++) {
		struct cc_ratelimit_verdict v;
		ck_assert_int_eq(cc_ratelimit_take(rl, key, per_minute, burst, &v), 0);
		allowed += v.allowed;
		*shared &= v.shared;
		if (!v.allowed)
			*last_retry = v.retry_after_seconds;
	}
	return allowed;
}

START_TEST(test_two_replicas_share_a_bucket)
{
	struct cc_ratelimiter *a = harness_limiter(), *b = harness_limiter();
	char key[64];
	bool shared_a, shared_b;
	unsigned retry = 0;

	fresh_key(key, sizeof key, "share");
	/* 6 a minute, burst 6: 4 through a, then b gets only the other 2. */
	ck_assert_int_eq(take_n(a, key, 6, 6, 4, &shared_a, &retry), 4);
	ck_assert_int_eq(take_n(b, key, 6, 6, 4, &shared_b, &retry), 2);
	ck_assert(shared_a && shared_b);
	/* One token every 10 s: the wait reported is 10 s or just under. */
	ck_assert_msg(retry >= 9 && retry <= 10, "retry after %u s", retry);
	cc_ratelimiter_free(a);
	cc_ratelimiter_free(b);
}
END_TEST

START_TEST(test_refill)
{
	struct cc_ratelimiter *rl = harness_limiter();
	char key[64];
	bool shared;
	unsigned retry = 0;
	int64_t deadline;
	int got = 0;

	fresh_key(key, sizeof key, "refill");
	/* 600 a minute = 10 a second, burst 2. */
	ck_assert_int_eq(take_n(rl, key, 600, 2, 5, &shared, &retry), 2);
	ck_assert_uint_eq(retry, 1);
	/* A token comes back within about 100 ms: wait for it as a state. */
	deadline = cc_clock_ms() + 3000;
	while (!got && cc_clock_ms() < deadline) {
		got = take_n(rl, key, 600, 2, 1, &shared, &retry);
		if (!got)
			usleep(20000);
	}
	ck_assert_msg(got == 1, "no token came back within 3 s at 10 a second");
	cc_ratelimiter_free(rl);
}
END_TEST

START_TEST(test_redis_down_falls_back_per_process)
{
	struct cc_ratelimiter *rl = dead_limiter();
	char key[64];
	bool shared;
	unsigned retry = 0;
	int64_t start = cc_clock_ms();

	fresh_key(key, sizeof key, "down");
	/* Limited all the same, by the process, and fast (a dead Redis is not retried per call). */
	ck_assert_int_eq(take_n(rl, key, 60, 3, 50, &shared, &retry), 3);
	ck_assert(!shared);
	ck_assert_uint_eq(retry, 1);
	ck_assert_msg(cc_clock_ms() - start < 2000, "50 decisions took %lld ms with Redis down",
		      (long long)(cc_clock_ms() - start));
	cc_ratelimiter_free(rl);
}
END_TEST

START_TEST(test_without_redis_and_unlimited)
{
	struct cc_ratelimit_options o = { .key_prefix = "x:" };
	struct cc_ratelimiter *rl = cc_ratelimiter_create(&o);
	struct cc_ratelimit_verdict v;
	char long_key[CC_RATELIMIT_KEY_MAX + 2];
	bool shared;
	unsigned retry = 0;

	ck_assert_ptr_nonnull(rl);
	ck_assert_int_eq(take_n(rl, "a", 60, 1, 3, &shared, &retry), 1);
	ck_assert_int_eq(take_n(rl, "b", 60, 1, 3, &shared, &retry), 1); /* another bucket */
	ck_assert_int_eq(take_n(rl, "c", 0, 0, 100, &shared, &retry), 100); /* 0 = unlimited */
	memset(long_key, 'k', sizeof long_key - 1);
	long_key[sizeof long_key - 1] = '\0';
	ck_assert_int_eq(cc_ratelimit_take(rl, long_key, 1, 1, &v), CC_EINVAL);
	ck_assert_int_eq(cc_ratelimit_take(rl, "", 1, 1, &v), CC_EINVAL);
	ck_assert_int_eq(cc_ratelimit_take(rl, "a", 1, 0, &v), CC_EINVAL);
	ck_assert_int_eq(cc_ratelimit_take(NULL, "a", 1, 1, &v), CC_EINVAL);
	cc_ratelimiter_free(rl);
	cc_ratelimiter_free(NULL);
	o = (struct cc_ratelimit_options){ .redis_host = "127.0.0.1", .redis_port = 0, .redis_timeout_ms = 1,
					   .key_prefix = "x:" };
	ck_assert_ptr_null(cc_ratelimiter_create(&o));
	ck_assert_ptr_null(cc_ratelimiter_create(NULL));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tc = tcase_create("redis");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_replicas_share_a_bucket);
	tcase_add_test(tc, test_refill);
	tcase_add_test(tc, test_redis_down_falls_back_per_process);
	tcase_add_test(tc, test_without_redis_and_unlimited);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
