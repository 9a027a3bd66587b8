/*
 * test_gs_reporter: cc-gameserver's control-plane reporter (gameserver/reporter.h)
 * when its queue fills: receipts (connect/disconnect, one pair per connection, so
 * a player reconnecting or resuming in a loop makes as many as it likes) are
 * refused past their share, and the match result still gets in. The API is a
 * closed port, so every job stays queued, retrying at the head.
 *
 * Heartbeats (issue 19), against a few lines of HTTP on loopback that
 * answers result 503 (so it retries at the head of the FIFO for ever) and
 * heartbeat 200 with a match_state the test sets: heartbeats still go out
 * every interval behind the retrying result; none goes while the tick
 * stands still (a hung loop looks dead), one goes again once it moves; a
 * phase change goes at once; "ended" goes without a tick; an answer's
 * FAILED is seen by cc_reporter_match_over.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support.h"
#include "../../gameserver/reporter.h"
#include "sys/clock.h"
#include "sys/banned.h"

/* ---- a tiny cc-api: one connection at a time, Connection: close ---- */

static int api_fd = -1, api_port;
static atomic_int results_seen, heartbeats_seen, api_stop;
static char last_heartbeat[128];
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *api_match_state = "IN_PROGRESS";

static void *api_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&api_stop)) {
		int c = accept(api_fd, NULL, NULL);
		if (c < 0)
			continue;
		char req[8192];
		size_t have = 0;
		ssize_t n;
		/* Headers, then Content-Length bytes of body. */
		char *body = NULL;
		long want = -1;
		while (have < sizeof req - 1 && (n = recv(c, req + have, sizeof req - 1 - have, 0)) > 0) {
			have += (size_t)n;
			req[have] = '\0';
			char *eoh = strstr(req, "\r\n\r\n");
			if (eoh && want < 0) {
				char *cl = strcasestr(req, "content-length:");
				want = cl ? strtol(cl + 15, NULL, 10) : 0;
				body = eoh + 4;
			}
			if (body && (long)(req + have - body) >= want)
				break;
		}
		char answer[512];
		pthread_mutex_lock(&api_lock);
		if (strstr(req, "/heartbeat ")) {
			atomic_fetch_add(&heartbeats_seen, 1);
			snprintf(last_heartbeat, sizeof last_heartbeat, "%s", body ? body : "");
			char json[160];
			snprintf(json, sizeof json, "{\"allocation_id\":\"a\",\"match_id\":\"m\",\"match_state\":\"%s\"}",
				 api_match_state);
			snprintf(answer, sizeof answer,
				 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
				 strlen(json), json);
		} else {
			atomic_fetch_add(&results_seen, 1);
			snprintf(answer, sizeof answer, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
		}
		pthread_mutex_unlock(&api_lock);
		(void)send(c, answer, strlen(answer), MSG_NOSIGNAL);
		close(c);
	}
	return NULL;
}

static pthread_t api_start(void)
{
	pthread_t t;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;
	api_fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(api_fd, 0);
	ck_assert_int_eq(bind(api_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(api_fd, 16), 0);
	ck_assert_int_eq(getsockname(api_fd, (struct sockaddr *)&sa, &len), 0);
	api_port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&t, NULL, api_thread, NULL), 0);
	return t;
}

static void api_stop_join(pthread_t t)
{
	atomic_store(&api_stop, 1);
	shutdown(api_fd, SHUT_RDWR);
	close(api_fd);
	pthread_join(t, NULL);
}

/* Waits up to ms for cond; false at the deadline. */
#define WAIT_MS(cond, ms)                                                       \
	({                                                                      \
		int64_t end_ = cc_clock_ms() + (ms);                            \
		while (!(cond) && cc_clock_ms() < end_) {                       \
			struct timespec ts_ = { 0, 5 * 1000000 };               \
			nanosleep(&ts_, NULL);                                  \
		}                                                               \
		(cond);                                                         \
	})

static void heartbeat_body(char *out, size_t cap)
{
	pthread_mutex_lock(&api_lock);
	snprintf(out, cap, "%s", last_heartbeat);
	pthread_mutex_unlock(&api_lock);
}

START_TEST(test_heartbeats_beside_a_retrying_result)
{
	pthread_t t = api_start();
	char url[64], body[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", api_port);
	struct cc_reporter *r = cc_reporter_start(url, "local-test", "workload-token", 1000);
	ck_assert_ptr_nonnull(r);
	/* The result fails (503) and retries at the head of the FIFO for the whole test. */
	ck_assert_int_eq(cc_reporter_post(r, "result", "{\"score\":[0,0]}", 60000), 0);
	ck_assert_msg(WAIT_MS(atomic_load(&results_seen) >= 1, 5000), "the result was never attempted");
	ck_assert_int_eq(cc_reporter_heartbeat_start(r, 50), 0);
	cc_reporter_heartbeat_set(r, CC_REPORTER_PHASE_PLAYING, 100);
	ck_assert_msg(WAIT_MS(atomic_load(&heartbeats_seen) >= 1, 2000),
		      "no heartbeat within 2 s while the result retried: heartbeats wait behind the FIFO");
	heartbeat_body(body, sizeof body);
	ck_assert_str_eq(body, "{\"phase\":\"playing\",\"tick\":100}");

	/* The tick stands still (a hung loop): nothing more is sent, whatever the interval. */
	int seen = atomic_load(&heartbeats_seen);
	uint64_t withheld = cc_reporter_heartbeats_withheld(r);
	ck_assert_msg(WAIT_MS(cc_reporter_heartbeats_withheld(r) >= withheld + 4, 2000), "heartbeats were not withheld");
	ck_assert_msg(atomic_load(&heartbeats_seen) == seen, "%d heartbeats sent while the tick stood still at 100",
		      atomic_load(&heartbeats_seen) - seen);
	ck_assert(!cc_reporter_match_over(r, NULL, 0));

	/* It moves again: sent again; the control plane says FAILED: seen. */
	pthread_mutex_lock(&api_lock);
	api_match_state = "FAILED";
	pthread_mutex_unlock(&api_lock);
	cc_reporter_heartbeat_set(r, CC_REPORTER_PHASE_PLAYING, 160);
	ck_assert_msg(WAIT_MS(atomic_load(&heartbeats_seen) > seen, 2000), "no heartbeat after the tick moved");
	char state[16] = "";
	ck_assert_msg(WAIT_MS(cc_reporter_match_over(r, state, sizeof state), 2000), "an answer's FAILED was not seen");
	ck_assert_str_eq(state, "FAILED");

	/* Ended: sent at once (a phase change), and again without a tick (the loop finished on purpose). */
	seen = atomic_load(&heartbeats_seen);
	cc_reporter_heartbeat_set(r, CC_REPORTER_PHASE_ENDED, 160);
	ck_assert_msg(WAIT_MS(atomic_load(&heartbeats_seen) >= seen + 3, 2000), "ended heartbeats were withheld");
	heartbeat_body(body, sizeof body);
	ck_assert_str_eq(body, "{\"phase\":\"ended\",\"tick\":160}");
	ck_assert_int_ge(atomic_load(&results_seen), 2); /* still retrying all along */
	cc_reporter_free(r);
	api_stop_join(t);
}
END_TEST

START_TEST(test_result_gets_in_past_a_receipt_flood)
{
	/* Port 9 on loopback: nothing listens, every request fails and is retried. */
	struct cc_reporter *r = cc_reporter_start("http://127.0.0.1:9", "local-test", "workload-token", 200);
	ck_assert_ptr_nonnull(r);
	int accepted = 0, rc = 0;
	for (int i = 0; i < 2 * CC_REPORTER_QUEUE_MAX; i++) {
		char conn[32];
		snprintf(conn, sizeof conn, "gs-test-%d", i);
		rc = i % 2 ? cc_reporter_disconnect(r, "00000000-0000-4000-8000-000000000001", "duplicate_session")
			   : cc_reporter_connect(r, "00000000-0000-4000-8000-000000000001", conn);
		if (rc != 0)
			break;
		accepted++;
	}
	ck_assert_msg(rc == CC_ETOOBIG, "a receipt flood was never refused (last rc %d after %d)", rc, accepted);
	ck_assert_int_le(accepted, CC_REPORTER_QUEUE_MAX);
	rc = cc_reporter_post(r, "result", "{\"match_id\":\"m\"}", 1000);
	ck_assert_msg(rc == 0, "the result was refused (%d) behind %d queued receipts: the match would never be recorded",
		      rc, accepted);
	/* Receipts stay refused: the result's room is not theirs. */
	ck_assert_int_eq(cc_reporter_connect(r, "00000000-0000-4000-8000-000000000001", "gs-test-late"), CC_ETOOBIG);
	cc_reporter_free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gs_reporter");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_result_gets_in_past_a_receipt_flood);
	tcase_add_test(tc, test_heartbeats_beside_a_retrying_result);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
