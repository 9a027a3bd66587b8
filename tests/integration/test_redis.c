/*
 * The Redis connection against the harness Redis and against sockets that
 * misbehave on purpose: every failure must come back as an error code within
 * its time budget, and the handle must recover on its own once Redis does.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/redis.h"
#include "support.h"
#include "sys/banned.h"

#define SLACK_MS 1500 /* scheduler and ASan headroom on top of a timeout */

/* A handle on the harness Redis. */
static struct cc_redis *harness_redis(int connect_timeout_ms, int command_timeout_ms)
{
	const char *host = cc_test_env("CC_TEST_REDIS_HOST");
	int port = (int)strtol(cc_test_env("CC_TEST_REDIS_PORT"), NULL, 10);
	struct cc_redis *r = cc_redis_create(host, port, connect_timeout_ms, command_timeout_ms);
	ck_assert_ptr_nonnull(r);
	return r;
}


/* A loopback port with nothing listening (bound, then released). */
static int dead_port(void)
{
	int port;
	close(cc_test_listener(1, &port));
	return port;
}

/* A plain blocking connection to 127.0.0.1:port (fills a listener's backlog). */
static int connect_plain(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/*
 * Sends PING until it succeeds or deadline_ms (monotonic) passes, pausing
 * briefly between calls. Returns the last result; *calls counts the calls.
 */
static int ping_until_ok(struct cc_redis *r, int64_t deadline_ms, int *calls)
{
	int rc;
	*calls = 0;
	for (;;) {
		rc = cc_redis_command(r, NULL, "PING", (char *)NULL);
		(*calls)++;
		if (rc == 0 || cc_clock_ms() >= deadline_ms)
			return rc;
		poll(NULL, 0, 10);
	}
}

START_TEST(test_binary_round_trip)
{
	struct cc_redis *r = harness_redis(1000, 1000);
	static const char key[] = "cc:test:bin\0key"; /* the NUL is part of the key */
	char value[256];
	redisReply *reply = NULL;

	for (size_t i = 0; i < sizeof(value); i++)
		value[i] = (char)i;
	const char *set[] = { "SET", key, value };
	const size_t set_len[] = { 3, sizeof(key) - 1, sizeof(value) };
	ck_assert_int_eq(cc_redis_command_argv(r, 3, set, set_len, &reply), 0);
	ck_assert_int_eq(reply->type, REDIS_REPLY_STATUS);
	ck_assert_str_eq(reply->str, "OK");
	freeReplyObject(reply);

	const char *get[] = { "GET", key };
	const size_t get_len[] = { 3, sizeof(key) - 1 };
	ck_assert_int_eq(cc_redis_command_argv(r, 2, get, get_len, &reply), 0);
	ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
	ck_assert_uint_eq(reply->len, sizeof(value));
	ck_assert_int_eq(memcmp(reply->str, value, sizeof(value)), 0);
	freeReplyObject(reply);

	/* The key cut at its NUL is a different, absent key. */
	ck_assert_int_eq(cc_redis_command(r, &reply, "GET", "cc:test:bin", (char *)NULL), 0);
	ck_assert_int_eq(reply->type, REDIS_REPLY_NIL);
	freeReplyObject(reply);

	const char *del[] = { "DEL", key };
	ck_assert_int_eq(cc_redis_command_argv(r, 2, del, get_len, NULL), 0);
	ck_assert_uint_eq(cc_redis_connect_attempts(r), 1);
	cc_redis_free(r);
}
END_TEST

START_TEST(test_error_reply_keeps_connection)
{
	struct cc_redis *r = harness_redis(1000, 1000);
	redisReply *reply = (redisReply *)&reply; /* must stay untouched on error */

	ck_assert_int_eq(cc_redis_command(r, NULL, "SET", "cc:test:str", "abc", (char *)NULL), 0);
	ck_assert_int_eq(cc_redis_command(r, &reply, "INCR", "cc:test:str", (char *)NULL), CC_EDB);
	ck_assert_ptr_eq(reply, (redisReply *)&reply);
	ck_assert_msg(strstr(cc_redis_last_error(r), "not an integer"), "last error: %s",
		      cc_redis_last_error(r));
	ck_assert(cc_redis_is_connected(r));
	ck_assert_int_eq(cc_redis_command(r, NULL, "DEL", "cc:test:str", (char *)NULL), 0);
	ck_assert_uint_eq(cc_redis_connect_attempts(r), 1);
	cc_redis_free(r);
}
END_TEST

/* Nothing listening: refused at once, then no network work until the retry interval. */
START_TEST(test_refused_fast_and_paced)
{
	struct cc_redis *r = cc_redis_create("127.0.0.1", dead_port(), 3000, 1000);
	ck_assert_ptr_nonnull(r);

	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_redis_command(r, NULL, "PING", (char *)NULL), CC_EUNAVAILABLE);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took < 1000, "refused connect took %lld ms (connect timeout is 3000)", (long long)took);
	ck_assert_msg(strstr(cc_redis_last_error(r), "refused"), "last error: %s", cc_redis_last_error(r));
	ck_assert_uint_eq(cc_redis_connect_attempts(r), 1);

	/* Within the retry interval calls fail without connecting. */
	int64_t t1 = cc_clock_ms();
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(cc_redis_command(r, NULL, "PING", (char *)NULL), CC_EUNAVAILABLE);
	if (cc_clock_ms() - t0 < CC_REDIS_RETRY_INTERVAL_MS)
		ck_assert_uint_eq(cc_redis_connect_attempts(r), 1);
	ck_assert_msg(cc_clock_ms() - t1 < 250, "1000 calls on a down Redis took %lld ms",
		      (long long)(cc_clock_ms() - t1));

	/* Eventually it tries again, but not before the interval. */
	int64_t deadline = t0 + CC_REDIS_RETRY_INTERVAL_MS + 3000;
	while (cc_redis_connect_attempts(r) < 2 && cc_clock_ms() < deadline) {
		ck_assert_int_eq(cc_redis_command(r, NULL, "PING", (char *)NULL), CC_EUNAVAILABLE);
		poll(NULL, 0, 5);
	}
	ck_assert_msg(cc_redis_connect_attempts(r) == 2, "attempts %lu after %lld ms",
		      cc_redis_connect_attempts(r), (long long)(cc_clock_ms() - t0));
	ck_assert_int_ge(cc_clock_ms() - t0, CC_REDIS_RETRY_INTERVAL_MS);
	cc_redis_free(r);
}
END_TEST

/* A listener whose backlog is full drops our SYN: the connect timeout must fire. */
START_TEST(test_connect_timeout)
{
	int port;
	int lfd = cc_test_listener(0, &port);
	int filler = connect_plain(port); /* backlog 0 holds one connection; ours waits */
	struct cc_redis *r = cc_redis_create("127.0.0.1", port, 300, 1000);
	ck_assert_ptr_nonnull(r);

	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_redis_command(r, NULL, "PING", (char *)NULL), CC_EUNAVAILABLE);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took >= 290 && took < 300 + SLACK_MS, "connect gave up after %lld ms", (long long)took);
	ck_assert_msg(strstr(cc_redis_last_error(r), "timed out"), "last error: %s", cc_redis_last_error(r));
	cc_redis_free(r);
	close(filler);
	close(lfd);
}
END_TEST

/* Accepted by the kernel, never answered: the command timeout must fire. */
START_TEST(test_silent_server_times_out)
{
	int port;
	int lfd = cc_test_listener(16, &port);
	struct cc_redis *r = cc_redis_create("127.0.0.1", port, 1000, 300);
	ck_assert_ptr_nonnull(r);

	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_redis_command(r, NULL, "PING", (char *)NULL), CC_EUNAVAILABLE);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took >= 290 && took < 300 + SLACK_MS, "command gave up after %lld ms", (long long)took);
	ck_assert_msg(strstr(cc_redis_last_error(r), "timed out"), "last error: %s", cc_redis_last_error(r));
	ck_assert(!cc_redis_is_connected(r));

	cc_redis_free(r);

	/* A pipeline has the same bound and leaves the caller's array alone. */
	r = cc_redis_create("127.0.0.1", port, 1000, 300);
	const char *ping[] = { "PING" };
	const char **argvs[] = { ping, ping };
	const int argcs[] = { 1, 1 };
	redisReply *replies[2] = { (redisReply *)&t0, (redisReply *)&t0 };
	t0 = cc_clock_ms();
	ck_assert_int_eq(cc_redis_pipeline(r, 2, argcs, argvs, NULL, replies), CC_EUNAVAILABLE);
	took = cc_clock_ms() - t0;
	ck_assert_msg(took >= 290 && took < 300 + SLACK_MS, "pipeline gave up after %lld ms",
		      (long long)took);
	ck_assert_ptr_eq(replies[0], (redisReply *)&t0);
	ck_assert_ptr_eq(replies[1], (redisReply *)&t0);
	cc_redis_free(r);
	close(lfd);
}
END_TEST

/* The server closes our connection: one clean error, then a reconnect. */
START_TEST(test_client_kill_then_reconnect)
{
	struct cc_redis *r = harness_redis(1000, 1000);
	struct cc_redis *admin = harness_redis(1000, 1000);
	redisReply *reply = NULL;
	char id[32];

	ck_assert_int_eq(cc_redis_command(r, &reply, "CLIENT", "ID", (char *)NULL), 0);
	ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
	long long first_id = reply->integer;
	freeReplyObject(reply);
	snprintf(id, sizeof(id), "%lld", first_id);
	ck_assert_int_eq(cc_redis_command(admin, &reply, "CLIENT", "KILL", "ID", id, (char *)NULL), 0);
	ck_assert_int_eq(reply->integer, 1);
	freeReplyObject(reply);

	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_redis_command(r, NULL, "PING", (char *)NULL), CC_EUNAVAILABLE);
	ck_assert(!cc_redis_is_connected(r));

	int calls;
	int rc = ping_until_ok(r, t0 + CC_REDIS_RETRY_INTERVAL_MS + 5000, &calls);
	ck_assert_msg(rc == 0, "no reconnect after %lld ms and %d calls: %s (%s)", (long long)(cc_clock_ms() - t0),
		      calls, cc_errname(rc), cc_redis_last_error(r));
	ck_assert_int_ge(cc_clock_ms() - t0, CC_REDIS_RETRY_INTERVAL_MS);
	ck_assert_uint_eq(cc_redis_connect_attempts(r), 2); /* one reconnect, not one per call */

	ck_assert_int_eq(cc_redis_command(r, &reply, "CLIENT", "ID", (char *)NULL), 0);
	ck_assert_int_ne(reply->integer, first_id);
	freeReplyObject(reply);
	cc_redis_free(admin);
	cc_redis_free(r);
}
END_TEST

/* Redis itself holds the reply back (BLPOP) past our command timeout. */
START_TEST(test_blocking_command_times_out)
{
	struct cc_redis *r = harness_redis(1000, 300);
	redisReply *reply = NULL;

	ck_assert_int_eq(cc_redis_command(r, NULL, "DEL", "cc:test:empty", (char *)NULL), 0);
	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_redis_command(r, &reply, "BLPOP", "cc:test:empty", "5", (char *)NULL),
			 CC_EUNAVAILABLE);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took >= 290 && took < 300 + SLACK_MS, "BLPOP returned after %lld ms", (long long)took);
	ck_assert_ptr_null(reply);

	/* The late BLPOP answer must not be taken for the next command's reply. */
	int calls;
	ck_assert_int_eq(ping_until_ok(r, t0 + CC_REDIS_RETRY_INTERVAL_MS + 5000, &calls), 0);
	ck_assert_int_eq(cc_redis_command(r, &reply, "ECHO", "mine", (char *)NULL), 0);
	ck_assert_str_eq(reply->str, "mine");
	freeReplyObject(reply);
	cc_redis_free(r);
}
END_TEST

START_TEST(test_pipeline)
{
	enum { N = 50 };
	struct cc_redis *r = harness_redis(1000, 2000);
	char keys[N][32], values[N][16];
	const char *set[N][3], *get[N][2];
	const char **set_argvs[N], **get_argvs[N];
	int set_argcs[N], get_argcs[N];
	redisReply *replies[N];

	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "cc:test:pipe:%d", i);
		snprintf(values[i], sizeof(values[i]), "v%d", i * 7);
		set[i][0] = "SET", set[i][1] = keys[i], set[i][2] = values[i];
		get[i][0] = "GET", get[i][1] = keys[i];
		set_argvs[i] = set[i], get_argvs[i] = get[i];
		set_argcs[i] = 3, get_argcs[i] = 2;
	}
	ck_assert_int_eq(cc_redis_pipeline(r, N, set_argcs, set_argvs, NULL, NULL), 0);
	ck_assert_int_eq(cc_redis_pipeline(r, N, get_argcs, get_argvs, NULL, replies), 0);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(replies[i]->type, REDIS_REPLY_STRING);
		ck_assert_str_eq(replies[i]->str, values[i]);
	}
	cc_redis_replies_free(replies, N);
	ck_assert_ptr_null(replies[0]);

	/* An error in the middle: with slots it is reply 1; without, CC_EDB. */
	const char *a[] = { "SET", "cc:test:pipe:s", "x" }, *b[] = { "INCR", "cc:test:pipe:s" },
		   *c[] = { "SET", "cc:test:pipe:t", "after" };
	const char **mixed[] = { a, b, c };
	const int mixed_argcs[] = { 3, 2, 3 };
	ck_assert_int_eq(cc_redis_pipeline(r, 3, mixed_argcs, mixed, NULL, replies), 0);
	ck_assert_int_eq(replies[0]->type, REDIS_REPLY_STATUS);
	ck_assert_int_eq(replies[1]->type, REDIS_REPLY_ERROR);
	ck_assert_int_eq(replies[2]->type, REDIS_REPLY_STATUS);
	cc_redis_replies_free(replies, 3);
	ck_assert_int_eq(cc_redis_pipeline(r, 3, mixed_argcs, mixed, NULL, NULL), CC_EDB);
	ck_assert_msg(strstr(cc_redis_last_error(r), "not an integer"), "last error: %s",
		      cc_redis_last_error(r));

	/* Every reply was consumed: the next command gets its own answer. */
	redisReply *reply = NULL;
	ck_assert_int_eq(cc_redis_command(r, &reply, "GET", "cc:test:pipe:t", (char *)NULL), 0);
	ck_assert_str_eq(reply->str, "after");
	freeReplyObject(reply);
	ck_assert_uint_eq(cc_redis_connect_attempts(r), 1);
	cc_redis_free(r);
}
END_TEST

/* A reply over the cap is refused (and the connection, now mid-reply, dropped). */
START_TEST(test_reply_cap)
{
	struct cc_redis *r = harness_redis(1000, 10000);
	char offset[32];
	redisReply *reply = NULL;

	snprintf(offset, sizeof(offset), "%u", CC_REDIS_MAX_REPLY_BYTES);
	ck_assert_int_eq(cc_redis_command(r, NULL, "SETRANGE", "cc:test:big", offset, "x", (char *)NULL), 0);
	ck_assert_int_eq(cc_redis_command(r, &reply, "GET", "cc:test:big", (char *)NULL), CC_ETOOBIG);
	ck_assert_ptr_null(reply);
	ck_assert(!cc_redis_is_connected(r));
	cc_redis_free(r);

	r = harness_redis(1000, 1000);
	ck_assert_int_eq(cc_redis_command(r, NULL, "DEL", "cc:test:big", (char *)NULL), 0);
	cc_redis_free(r);
}
END_TEST

/* A request over the cap is refused before anything is sent or connected. */
START_TEST(test_request_cap)
{
	struct cc_redis *r = harness_redis(1000, 1000);
	size_t big_len = CC_REDIS_MAX_REQUEST_BYTES;
	char *big = calloc(1, big_len);
	ck_assert_ptr_nonnull(big);
	const char *argv[] = { "SET", "cc:test:huge", big };
	const size_t lens[] = { 3, 12, big_len };
	ck_assert_int_eq(cc_redis_command_argv(r, 3, argv, lens, NULL), CC_ETOOBIG);
	ck_assert_uint_eq(cc_redis_connect_attempts(r), 0);
	free(big);
	cc_redis_free(r);
}
END_TEST

START_TEST(test_invalid_arguments)
{
	static const struct {
		const char *host;
		int port, connect_ms, command_ms;
	} bad[] = {
		{ NULL, 6379, 100, 100 }, { "", 6379, 100, 100 }, { "h", 0, 100, 100 },
		{ "h", 65536, 100, 100 }, { "h", 6379, 0, 100 },  { "h", 6379, 100, -1 },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++)
		ck_assert_msg(
		    !cc_redis_create(bad[i].host, bad[i].port, bad[i].connect_ms, bad[i].command_ms),
		    "case %zu accepted", i);

	struct cc_redis *r = cc_redis_create("127.0.0.1", dead_port(), 100, 100);
	const char *null_arg[] = { "GET", NULL };
	const char *ping[] = { "PING" };
	const char **argvs[] = { ping };
	const int zero = 0;
	ck_assert_int_eq(cc_redis_command_argv(r, 0, ping, NULL, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_redis_command_argv(r, 2, null_arg, NULL, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_redis_command_argv(NULL, 1, ping, NULL, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_redis_pipeline(r, 0, &zero, argvs, NULL, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_redis_pipeline(r, 1, &zero, argvs, NULL, NULL), CC_EINVAL);
	/* "SET" plus 64 arguments: one more than CC_REDIS_MAX_ARGS. */
#define EIGHT "a", "a", "a", "a", "a", "a", "a", "a"
	ck_assert_int_eq(cc_redis_command(r, NULL, "SET", EIGHT, EIGHT, EIGHT, EIGHT, EIGHT, EIGHT, EIGHT,
					  EIGHT, (char *)NULL),
			 CC_EINVAL);
#undef EIGHT
	ck_assert_uint_eq(cc_redis_connect_attempts(r), 0);
	ck_assert_str_eq(cc_redis_last_error(NULL), "no redis handle");
	cc_redis_free(r);
	cc_redis_free(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("redis");
	TCase *tc = tcase_create("redis");
	tcase_set_timeout(tc, 30); /* a hang fails the test instead of the run */
	tcase_add_test(tc, test_binary_round_trip);
	tcase_add_test(tc, test_error_reply_keeps_connection);
	tcase_add_test(tc, test_refused_fast_and_paced);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_silent_server_times_out);
	tcase_add_test(tc, test_client_kill_then_reconnect);
	tcase_add_test(tc, test_blocking_command_times_out);
	tcase_add_test(tc, test_pipeline);
	tcase_add_test(tc, test_reply_cap);
	tcase_add_test(tc, test_request_cap);
	tcase_add_test(tc, test_invalid_arguments);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
