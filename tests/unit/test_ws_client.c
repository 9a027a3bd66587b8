/*
 * sys/ws_client against the sys/ws hub behind the real HTTP server's
 * upgrade, over loopback sockets: the handshake (extra headers reach the
 * server, the subprotocol is selected), a refusal's status, body and
 * Retry-After (401, 404, 429), messages both ways (a UTF-8 one too), the
 * server's pings answered (the hub drops a peer that does not pong), the
 * server's close code and reason, a clean close from the client, a message
 * over the client's cap refused with 1009 (never delivered), invalid UTF-8
 * from the server refused with 1007, the idle timeout; and, against a raw
 * peer in the test, a 101 with a wrong Sec-WebSocket-Accept, a peer that
 * hangs up after the 101, bytes that follow the 101 in the same segment,
 * a port nobody listens on and a listener that never answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/http_server.h"
#include "sys/ws.h"
#include "sys/ws_client.h"
#include "support.h"
#include "sys/banned.h"

/* ---- the server: a hub behind the HTTP server -------------------------------- */

static struct cc_ws_hub *hub;
static struct cc_http_server *server;
static int port;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int last_close_code;
static unsigned n_closed;
static char seen_auth[128]; /* the Authorization header of the last upgrade */

#define SERVER_MAX_MESSAGE 4096
#define CLIENT_MAX_MESSAGE 256

/*
 * The server's replies: "close <code> <reason>" closes with it; "big <n>"
 * sends n bytes; "bad" sends invalid UTF-8; anything else is echoed.
 */
static void on_message(void *ctx, uint64_t id, void *user, const char *msg, size_t len)
{
	(void)ctx;
	(void)user;
	char buf[64];
	snprintf(buf, sizeof buf, "%.*s", (int)(len < 63 ? len : 63), msg);
	int code, n;
	char reason[32] = "";
	if (sscanf(buf, "close %d %31s", &code, reason) >= 1) {
		ck_assert_int_eq(cc_ws_close(hub, id, code, reason), 0);
		return;
	}
	if (sscanf(buf, "big %d", &n) == 1) {
		char *big = malloc((size_t)n);
		memset(big, 'b', (size_t)n);
		ck_assert_int_eq(cc_ws_send_text(hub, id, big, (size_t)n), 0);
		free(big);
		return;
	}
	if (strcmp(buf, "bad") == 0) {
		ck_assert_int_eq(cc_ws_send_text(hub, id, "bad \xc3\x28 utf8", 12), 0);
		return;
	}
	ck_assert_int_eq(cc_ws_send_text(hub, id, msg, len), 0);
}

static void on_close(void *ctx, uint64_t id, void *user, int code)
{
	(void)ctx;
	(void)id;
	(void)user;
	pthread_mutex_lock(&mu);
	last_close_code = code;
	n_closed++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static int h_ws(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)ctx;
	const char *auth = cc_http_header(req, "Authorization");
	pthread_mutex_lock(&mu);
	snprintf(seen_auth, sizeof seen_auth, "%s", auth ? auth : "");
	pthread_mutex_unlock(&mu);
	const char *offered = cc_http_header(req, "Sec-WebSocket-Protocol");
	const char *proto = offered && strstr(offered, "cc.v1") ? "cc.v1" : NULL;
	(void)cc_http_respond_websocket(req, resp, hub, proto, NULL);
	return 0;
}

static int h_private(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)ctx;
	(void)req;
	cc_http_error(resp, 401, "unauthorized", "no session", false);
	return 0;
}

static int h_busy(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)ctx;
	(void)req;
	cc_http_error_too_many(resp, "too_many_connections", "over the cap", 7);
	return 0;
}

static const struct cc_http_route routes[] = {
	{ "GET", "/ws", h_ws },
	{ "GET", "/private", h_private },
	{ "GET", "/busy", h_busy },
};

static unsigned ping_ms = 10000, pong_ms = 10000;

static void start(void)
{
	struct cc_ws_hub_options ho = {
		.name = "test",
		.max_message_bytes = SERVER_MAX_MESSAGE,
		.ping_interval_ms = ping_ms,
		.pong_timeout_ms = pong_ms,
		.close_timeout_ms = 500,
		.on_message = on_message,
		.on_close = on_close,
	};
	hub = cc_ws_hub_start(&ho);
	ck_assert_ptr_nonnull(hub);
	struct cc_http_server_options o = {
		.name = "test",
		.routes = routes,
		.n_routes = CC_ARRAY_LEN(routes),
	};
	server = cc_http_server_start(&o);
	ck_assert_ptr_nonnull(server);
	port = cc_http_server_port(server);
	pthread_mutex_lock(&mu);
	last_close_code = 0;
	n_closed = 0;
	seen_auth[0] = '\0';
	pthread_mutex_unlock(&mu);
}

static void start_fast_ping(void)
{
	ping_ms = 200;
	pong_ms = 300;
	start();
}

static void stop(void)
{
	cc_ws_hub_stop(hub);
	cc_http_server_stop(server);
	hub = NULL;
	server = NULL;
}

static unsigned closed_count(void)
{
	pthread_mutex_lock(&mu);
	unsigned n = n_closed;
	pthread_mutex_unlock(&mu);
	return n;
}

/* Waits for the hub's on_close with a deadline; returns its code (0: none came). */
static int wait_closed(unsigned before, int timeout_ms)
{
	int64_t deadline = cc_clock_ms() + timeout_ms;
	while (closed_count() == before && cc_clock_ms() < deadline)
		usleep(2000);
	pthread_mutex_lock(&mu);
	int code = n_closed == before ? 0 : last_close_code;
	pthread_mutex_unlock(&mu);
	return code;
}

/* ---- the client side ---------------------------------------------------------- */

struct inbox {
	int n;
	char last[8192];
	size_t last_len;
};

static void collect(void *ctx, const char *msg, size_t len)
{
	struct inbox *in = ctx;
	in->n++;
	ck_assert_uint_lt(len, sizeof in->last);
	memcpy(in->last, msg, len);
	in->last[len] = '\0';
	ck_assert(msg[len] == '\0');
	in->last_len = len;
}

static struct cc_ws_client *open_client(int to_port, const char *target, struct inbox *in, int *rc_out,
					struct cc_ws_client_refusal *ref)
{
	struct cc_ws_client_options o = {
		.host = "127.0.0.1",
		.port = to_port,
		.target = target,
		.headers = "Authorization: Bearer s1.test-token\r\nX-Test: 1\r\n",
		.protocols = "chat, cc.v1",
		.timeout_ms = 2000,
		.max_message_bytes = CLIENT_MAX_MESSAGE,
		.on_message = collect,
		.ctx = in,
	};
	struct cc_ws_client *c = NULL;
	*rc_out = cc_ws_client_connect(&o, &c, ref);
	return c;
}

static struct cc_ws_client *must_open(struct inbox *in)
{
	int rc;
	struct cc_ws_client_refusal ref;
	struct cc_ws_client *c = open_client(port, "/ws", in, &rc, &ref);
	ck_assert_msg(rc == 0 && c, "connect: %s (%s, HTTP %d)", cc_errname(rc), ref.reason, ref.status);
	return c;
}

/* Services c until in has more than before messages or the deadline; returns whether it came. */
static bool await_message(struct cc_ws_client *c, struct inbox *in, int before, int timeout_ms)
{
	int64_t deadline = cc_clock_ms() + timeout_ms;
	while (in->n == before && cc_clock_ms() < deadline)
		if (cc_ws_client_service(c, 50) == 0)
			break;
	return in->n > before;
}

/* Services c until it ends or the deadline; returns whether it ended. */
static bool await_end(struct cc_ws_client *c, int timeout_ms)
{
	int64_t deadline = cc_clock_ms() + timeout_ms;
	while (cc_clock_ms() < deadline)
		if (cc_ws_client_service(c, 50) == 0)
			return true;
	return false;
}

static void send_expect_echo(struct cc_ws_client *c, struct inbox *in, const char *text)
{
	int before = in->n;
	ck_assert_int_eq(cc_ws_client_send_text(c, text, strlen(text)), 0);
	ck_assert_msg(await_message(c, in, before, 2000), "no echo of %s", text);
	ck_assert_str_eq(in->last, text);
}

/* ---- tests: against the hub ------------------------------------------------------- */

START_TEST(test_handshake_and_messages)
{
	struct inbox in = { 0 };
	struct cc_ws_client *c = must_open(&in);
	ck_assert_str_eq(cc_ws_client_protocol(c), "cc.v1");
	ck_assert_int_ge(cc_ws_client_fd(c), 0);
	ck_assert(cc_ws_client_events(c) & POLLIN);
	pthread_mutex_lock(&mu);
	ck_assert_str_eq(seen_auth, "Bearer s1.test-token");
	pthread_mutex_unlock(&mu);
	send_expect_echo(c, &in, "hello");
	send_expect_echo(c, &in, "h\xc3\xa9llo \xf0\x9f\x9a\x80");
	/* a message at the client's cap still arrives */
	char at_cap[CLIENT_MAX_MESSAGE + 1];
	memset(at_cap, 'c', CLIENT_MAX_MESSAGE);
	at_cap[CLIENT_MAX_MESSAGE] = '\0';
	send_expect_echo(c, &in, at_cap);
	ck_assert_uint_eq(cc_ws_client_messages(c), 3);
	ck_assert_int_eq(cc_ws_client_close_code(c), 0);
	ck_assert(cc_ws_client_open(c));
	/* a clean close from the client: the hub hears 1000 and answers it */
	unsigned before = closed_count();
	ck_assert_int_eq(cc_ws_client_close(c, 1000, "bye"), 0);
	ck_assert_int_eq(cc_ws_client_close(c, 1000, "again"), CC_ESTATE);
	ck_assert_int_eq(cc_ws_client_send_text(c, "late", 4), CC_ESTATE);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(cc_ws_client_close_code(c), 1000);
	ck_assert_int_eq(cc_ws_client_close_sent(c), 1000);
	ck_assert_int_eq(wait_closed(before, 2000), 1000);
	ck_assert_int_eq(cc_ws_client_events(c), 0);
	ck_assert_int_eq(cc_ws_client_service(c, 0), 0);
	cc_ws_client_free(c);
}
END_TEST

struct refusal_case {
	const char *target;
	int rc;
	int status;
	const char *needle;
	int retry_after;
};

static const struct refusal_case refusals[] = {
	{ "/private", CC_EUNAUTHORIZED, 401, "\"unauthorized\"", -1 },
	{ "/nowhere", CC_ENOTFOUND, 404, "not_found", -1 },
	{ "/busy", CC_EUNAVAILABLE, 429, "too_many_connections", 7 },
};

START_TEST(test_refusal_status_and_body)
{
	const struct refusal_case *k = &refusals[_i];
	struct inbox in = { 0 };
	struct cc_ws_client_refusal ref;
	int rc;
	struct cc_ws_client *c = open_client(port, k->target, &in, &rc, &ref);
	ck_assert_ptr_null(c);
	ck_assert_msg(rc == k->rc, "%s: %s", k->target, cc_errname(rc));
	ck_assert_int_eq(ref.status, k->status);
	ck_assert_msg(strstr(ref.body, k->needle), "%s: body %s", k->target, ref.body);
	ck_assert_uint_eq(ref.body_len, strlen(ref.body));
	ck_assert_int_eq(ref.retry_after_s, k->retry_after);
}
END_TEST

START_TEST(test_bad_options)
{
	struct cc_ws_client *c = (struct cc_ws_client *)1;
	struct cc_ws_client_refusal ref;
	struct cc_ws_client_options o = { .host = "127.0.0.1", .port = port, .target = "/ws" };
	o.headers = "X-Evil: 1\r\n\r\nGET / HTTP/1.1\r\n"; /* no request smuggling */
	ck_assert_int_eq(cc_ws_client_connect(&o, &c, &ref), CC_EINVAL);
	ck_assert_ptr_null(c);
	o.headers = "X-No-Crlf: 1";
	ck_assert_int_eq(cc_ws_client_connect(&o, &c, &ref), CC_EINVAL);
	o.headers = NULL;
	o.target = "/ws\r\nX: y";
	ck_assert_int_eq(cc_ws_client_connect(&o, &c, &ref), CC_EINVAL);
	o.target = "ws";
	ck_assert_int_eq(cc_ws_client_connect(&o, &c, &ref), CC_EINVAL);
	o.target = "/ws";
	o.port = 0;
	ck_assert_int_eq(cc_ws_client_connect(&o, &c, &ref), CC_EINVAL);
}
END_TEST

START_TEST(test_server_close_code_seen)
{
	struct inbox in = { 0 };
	struct cc_ws_client *c = must_open(&in);
	unsigned before = closed_count();
	ck_assert_int_eq(cc_ws_client_send_text(c, "close 4001 go-away", 18), 0);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(cc_ws_client_close_code(c), 4001);
	ck_assert_str_eq(cc_ws_client_close_reason(c), "go-away");
	ck_assert_int_eq(cc_ws_client_close_sent(c), 4001); /* echoed */
	ck_assert_int_eq(wait_closed(before, 2000), 4001);
	ck_assert_int_eq(in.n, 0);
	cc_ws_client_free(c);

	/* 1013 (slow reader / over capacity) reaches the client the same way */
	c = must_open(&in);
	ck_assert_int_eq(cc_ws_client_send_text(c, "close 1013 slow", 15), 0);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(cc_ws_client_close_code(c), 1013);
	cc_ws_client_free(c);
}
END_TEST

START_TEST(test_oversized_message_refused)
{
	struct inbox in = { 0 };
	struct cc_ws_client *c = must_open(&in);
	unsigned before = closed_count();
	ck_assert_int_eq(cc_ws_client_send_text(c, "big 1000", 8), 0);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(in.n, 0); /* never delivered */
	ck_assert_int_eq(cc_ws_client_close_sent(c), CC_WS_CLOSE_TOO_BIG);
	ck_assert_int_eq(wait_closed(before, 2000), CC_WS_CLOSE_TOO_BIG);
	cc_ws_client_free(c);
}
END_TEST

START_TEST(test_invalid_utf8_refused)
{
	struct inbox in = { 0 };
	struct cc_ws_client *c = must_open(&in);
	unsigned before = closed_count();
	ck_assert_int_eq(cc_ws_client_send_text(c, "bad", 3), 0);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(in.n, 0);
	ck_assert_int_eq(cc_ws_client_close_sent(c), CC_WS_CLOSE_INVALID_PAYLOAD);
	ck_assert_int_eq(wait_closed(before, 2000), CC_WS_CLOSE_INVALID_PAYLOAD);
	cc_ws_client_free(c);
}
END_TEST

START_TEST(test_idle_timeout)
{
	struct inbox in = { 0 };
	struct cc_ws_client_options o = { .host = "127.0.0.1", .port = port, .target = "/ws",
					  .timeout_ms = 2000, .idle_timeout_ms = 300,
					  .on_message = collect, .ctx = &in };
	struct cc_ws_client *c = NULL;
	ck_assert_int_eq(cc_ws_client_connect(&o, &c, NULL), 0);
	int64_t t0 = cc_clock_ms();
	ck_assert(await_end(c, 3000));
	ck_assert_int_ge(cc_clock_ms() - t0, 280);
	ck_assert_int_eq(cc_ws_client_close_code(c), CC_WS_CLOSE_ABNORMAL);
	cc_ws_client_free(c);
}
END_TEST

/* The hub pings every 200 ms and drops a peer that has not ponged within 300 ms. */
START_TEST(test_server_pings_answered)
{
	struct inbox in = { 0 };
	struct cc_ws_client *c = must_open(&in);
	int64_t end = cc_clock_ms() + 1500;
	while (cc_clock_ms() < end)
		ck_assert_msg(cc_ws_client_service(c, 50) == 1, "dropped: close %d", cc_ws_client_close_code(c));
	ck_assert_uint_ge(cc_ws_client_pings(c), 3);
	ck_assert_uint_eq(closed_count(), 0);
	send_expect_echo(c, &in, "still here");
	/* our own ping is answered too (the connection stays up) */
	ck_assert_int_eq(cc_ws_client_ping(c, "p", 1), 0);
	ck_assert_int_eq(cc_ws_client_ping(c, NULL, 126), CC_EINVAL);
	send_expect_echo(c, &in, "after ping");
	cc_ws_client_free(c);
}
END_TEST

/* Without service calls nobody pongs: the hub drops the connection, the client sees it. */
START_TEST(test_unanswered_pings_drop)
{
	struct inbox in = { 0 };
	struct cc_ws_client *c = must_open(&in);
	unsigned before = closed_count();
	ck_assert_int_eq(wait_closed(before, 3000), CC_WS_CLOSE_ABNORMAL);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(cc_ws_client_close_code(c), CC_WS_CLOSE_ABNORMAL);
	cc_ws_client_free(c);
}
END_TEST

/* ---- tests: against a raw peer ---------------------------------------------------- */

enum raw_mode { RAW_HANG_UP, RAW_BAD_ACCEPT, RAW_EXTRA_THEN_CLOSE, RAW_SILENT };

struct raw_peer {
	int listen_fd;
	int port;
	enum raw_mode mode;
	pthread_t thread;
};

static void *raw_main(void *arg)
{
	struct raw_peer *p = arg;
	int fd = accept(p->listen_fd, NULL, NULL);
	if (fd < 0)
		return NULL;
	char head[4096];
	size_t n = 0;
	while (n + 1 < sizeof head) {
		ssize_t r = recv(fd, head + n, sizeof head - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		head[n] = '\0';
		if (strstr(head, "\r\n\r\n"))
			break;
	}
	head[n] = '\0';
	if (p->mode == RAW_SILENT) {
		usleep(1500 * 1000);
		close(fd);
		return NULL;
	}
	char key[64] = "", accept_key[29] = "";
	const char *k = strcasestr(head, "\r\nSec-WebSocket-Key: ");
	if (k)
		sscanf(k + 21, "%63[^\r]", key);
	if (cc_ws_accept_key(key, accept_key) != 0)
		snprintf(accept_key, sizeof accept_key, "none");
	if (p->mode == RAW_BAD_ACCEPT)
		snprintf(accept_key, sizeof accept_key, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	char ans[512];
	int al = snprintf(ans, sizeof ans,
			  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			  "Sec-WebSocket-Accept: %s\r\n\r\n", accept_key);
	/* the extra case: a text frame "early" and a close 1001 in the same segment as the 101 */
	if (p->mode == RAW_EXTRA_THEN_CLOSE) {
		static const char frames[] = { (char)0x81, 5, 'e', 'a', 'r', 'l', 'y', (char)0x88, 2, 0x03, (char)0xe9 };
		memcpy(ans + al, frames, sizeof frames);
		al += (int)sizeof frames;
	}
	(void)send(fd, ans, (size_t)al, MSG_NOSIGNAL);
	if (p->mode == RAW_EXTRA_THEN_CLOSE)
		usleep(300 * 1000); /* let the client answer the close */
	close(fd);
	return NULL;
}

static void raw_start(struct raw_peer *p, enum raw_mode mode)
{
	p->mode = mode;
	p->listen_fd = cc_test_listener(4, &p->port);
	ck_assert_int_eq(pthread_create(&p->thread, NULL, raw_main, p), 0);
}

static void raw_stop(struct raw_peer *p)
{
	pthread_join(p->thread, NULL);
	close(p->listen_fd);
}

START_TEST(test_peer_hangs_up)
{
	struct raw_peer p;
	raw_start(&p, RAW_HANG_UP);
	struct inbox in = { 0 };
	int rc;
	struct cc_ws_client_refusal ref;
	struct cc_ws_client *c = open_client(p.port, "/x", &in, &rc, &ref);
	ck_assert_msg(rc == 0, "%s %s", cc_errname(rc), ref.reason);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(cc_ws_client_close_code(c), CC_WS_CLOSE_ABNORMAL);
	ck_assert_int_eq(cc_ws_client_close_sent(c), 0);
	cc_ws_client_free(c);
	raw_stop(&p);
}
END_TEST

START_TEST(test_bad_accept_refused)
{
	struct raw_peer p;
	raw_start(&p, RAW_BAD_ACCEPT);
	struct inbox in = { 0 };
	int rc;
	struct cc_ws_client_refusal ref;
	struct cc_ws_client *c = open_client(p.port, "/x", &in, &rc, &ref);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(rc, CC_EIO);
	ck_assert_int_eq(ref.status, 101);
	ck_assert_msg(strstr(ref.reason, "Sec-WebSocket-Accept"), "%s", ref.reason);
	raw_stop(&p);
}
END_TEST

START_TEST(test_bytes_after_the_101)
{
	struct raw_peer p;
	raw_start(&p, RAW_EXTRA_THEN_CLOSE);
	struct inbox in = { 0 };
	int rc;
	struct cc_ws_client_refusal ref;
	struct cc_ws_client *c = open_client(p.port, "/x", &in, &rc, &ref);
	ck_assert_msg(rc == 0, "%s %s", cc_errname(rc), ref.reason);
	ck_assert(await_end(c, 2000));
	ck_assert_int_eq(in.n, 1);
	ck_assert_str_eq(in.last, "early");
	ck_assert_int_eq(cc_ws_client_close_code(c), 1001);
	cc_ws_client_free(c);
	raw_stop(&p);
}
END_TEST

START_TEST(test_connect_failures)
{
	/* nobody listens: refused at once */
	int lp;
	int lfd = cc_test_listener(1, &lp);
	close(lfd);
	struct inbox in = { 0 };
	int rc;
	struct cc_ws_client_refusal ref;
	struct cc_ws_client *c = open_client(lp, "/x", &in, &rc, &ref);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(rc, CC_EIO);
	ck_assert_int_eq(ref.status, 0);
	ck_assert_msg(strstr(ref.reason, "connect"), "%s", ref.reason);
	/* a peer that accepts and never answers: the deadline */
	struct raw_peer p;
	raw_start(&p, RAW_SILENT);
	struct cc_ws_client_options o = { .host = "127.0.0.1", .port = p.port, .target = "/x", .timeout_ms = 300 };
	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_ws_client_connect(&o, &c, &ref), CC_ETIMEOUT);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took >= 280 && took < 1200, "took %lld ms", (long long)took);
	raw_stop(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ws_client");
	TCase *tc = tcase_create("hub");
	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_handshake_and_messages);
	tcase_add_loop_test(tc, test_refusal_status_and_body, 0, (int)CC_ARRAY_LEN(refusals));
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_server_close_code_seen);
	tcase_add_test(tc, test_oversized_message_refused);
	tcase_add_test(tc, test_invalid_utf8_refused);
	tcase_add_test(tc, test_idle_timeout);
	tcase_add_test(tc, test_peer_hangs_up);
	tcase_add_test(tc, test_bad_accept_refused);
	tcase_add_test(tc, test_bytes_after_the_101);
	tcase_add_test(tc, test_connect_failures);
	suite_add_tcase(s, tc);
	TCase *tp = tcase_create("ping");
	tcase_add_checked_fixture(tp, start_fast_ping, stop);
	tcase_set_timeout(tp, 30);
	tcase_add_test(tp, test_server_pings_answered);
	tcase_add_test(tp, test_unanswered_pings_drop);
	suite_add_tcase(s, tp);
	return cc_test_run_suite(s);
}
