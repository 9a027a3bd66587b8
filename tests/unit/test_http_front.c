/*
 * The HTTP front (sys/http_front) through a real cc_http_server over
 * loopback, with raw sockets: the head check as a table, the answers the
 * HTTP library used to give itself (HTTP/2 preface, Content-Length: -1, a
 * line without a colon, thousands of headers) now in the SPEC shape with
 * X-Request-Id, 415 and duplicate Authorization, the per-address cap while
 * a second address (127.0.0.2) is still served, and the header and body
 * deadlines against trickling clients.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "http_fetch.h"
#include "support.h"
#include "sys/clock.h"
#include "sys/http_front.h"
#include "sys/http_server.h"
#include "sys/metrics.h"
#include "sys/banned.h"

#define PER_ADDRESS 4
#define HEADER_MS 1000
#define BODY_MS 1000

static int h_ok(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	cc_http_respond_json(resp, 200, cJSON_CreateObject());
	return 0;
}

static const struct cc_http_route routes[] = {
	{ "GET", "/ok", h_ok },
	{ "POST", "/ok", h_ok },
};

static struct cc_http_server *server;
static int port;
static bool keep; /* the server runs with keep_alive (the "kept" cases) */

static void start_server(void)
{
	struct cc_http_server_options o = {
		.name = "front",
		.port = 0,
		.keep_alive = keep,
		.max_per_address = PER_ADDRESS,
		.header_timeout_ms = HEADER_MS,
		.body_timeout_ms = BODY_MS,
		.routes = routes,
		.n_routes = CC_ARRAY_LEN(routes),
	};
	server = cc_http_server_start(&o);
	ck_assert_ptr_nonnull(server);
	port = cc_http_server_port(server);
}

static void stop_server(void)
{
	cc_http_server_stop(server);
	server = NULL;
	cc_metrics_reset();
	keep = false;
}

static void start_server_kept(void)
{
	keep = true;
	start_server();
}

/* ---- raw client ------------------------------------------------------------- */

/* A connected socket from source address src ("127.0.0.1", "127.0.0.2") to the server. */
static int connect_from(const char *src)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, b = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, src, &a.sin_addr);
	ck_assert_msg(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind %s: %s", src, strerror(errno));
	inet_pton(AF_INET, "127.0.0.1", &b.sin_addr);
	b.sin_port = htons((uint16_t)port);
	ck_assert_msg(connect(fd, (struct sockaddr *)&b, sizeof(b)) == 0, "connect: %s", strerror(errno));
	return fd;
}

static void send_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
		if (n <= 0)
			return; /* the server may have closed: the reply says why */
		data += n;
		len -= (size_t)n;
	}
}

/*
 * Reads until EOF or until timeout_ms passes. Returns the bytes read (out
 * NUL-terminated); *eof says whether the server closed.
 */
static size_t read_reply(int fd, char *out, size_t cap, long timeout_ms, bool *eof)
{
	int64_t end = cc_clock_ms() + timeout_ms;
	size_t used = 0;
	*eof = false;
	for (;;) {
		int64_t left = end - cc_clock_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t n = recv(fd, out + used, cap - 1 - used, 0);
		if (n <= 0) {
			*eof = true;
			break;
		}
		used += (size_t)n;
		if (used == cap - 1)
			break;
	}
	out[used] = '\0';
	return used;
}

/*
 * Reads one whole answer (its head, then Content-Length bytes of body), or
 * until EOF or timeout_ms. Returns the bytes read (out NUL-terminated).
 */
static size_t read_one_reply(int fd, char *out, size_t cap, long timeout_ms, bool *eof)
{
	int64_t end = cc_clock_ms() + timeout_ms;
	size_t used = 0;
	*eof = false;
	out[0] = '\0';
	for (;;) {
		const char *head_end = strstr(out, "\r\n\r\n");
		if (head_end) {
			const char *cl = strcasestr(out, "\r\nContent-Length: ");
			size_t want = (size_t)(head_end + 4 - out) + (cl && cl < head_end ? strtoul(cl + 18, NULL, 10) : 0);
			if (used >= want)
				break;
		}
		int64_t left = end - cc_clock_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t n = recv(fd, out + used, cap - 1 - used, 0);
		if (n <= 0) {
			*eof = true;
			break;
		}
		used += (size_t)n;
		out[used] = '\0';
		if (used == cap - 1)
			break;
	}
	out[used] = '\0';
	return used;
}

/*
 * Sends request on a fresh connection from 127.0.0.1 and returns the whole
 * reply. Without keep-alive every answer closes; with it one answer is read.
 */
static void exchange(const char *request, size_t len, char *reply, size_t cap)
{
	bool eof;
	int fd = connect_from("127.0.0.1");
	send_all(fd, request, len);
	if (keep)
		read_one_reply(fd, reply, cap, 5000, &eof);
	else
		read_reply(fd, reply, cap, 5000, &eof);
	close(fd);
	ck_assert_msg(eof || keep, "the server did not close after answering: %s", reply);
}

/*
 * The HTML check: no answer of ours, on a fresh or a kept connection, is
 * ever the HTTP library's own page (libmicrohttpd's errors are HTML).
 */
static void assert_not_html(const char *reply)
{
	ck_assert_msg(!strcasestr(reply, "<html") && !strcasestr(reply, "text/html") && !strcasestr(reply, "<title"),
		      "an HTML answer: %.600s", reply);
}

/* Asserts a raw reply is status + the SPEC error shape with code + an X-Request-Id. */
static void assert_shaped(const char *reply, int status, const char *code)
{
	const char *body = strstr(reply, "\r\n\r\n");
	cJSON *j, *e;
	assert_not_html(reply);
	ck_assert_msg(cc_test_raw_status(reply) == status, "want %d, got: %.400s", status, reply);
	ck_assert_msg(strstr(reply, "\r\nX-Request-Id: "), "no X-Request-Id: %.400s", reply);
	ck_assert_msg(strstr(reply, "\r\nContent-Type: application/json\r\n"), "not JSON: %.400s", reply);
	ck_assert_ptr_nonnull(body);
	j = cJSON_Parse(body + 4);
	ck_assert_msg(j, "body is not JSON: %s", body + 4);
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert(cJSON_IsObject(e));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "code")->valuestring, code);
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")));
	ck_assert(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(e, "retryable")));
	if (status == 429)
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "retry_after_seconds")));
	cJSON_Delete(j);
}

/* ---- the head check, as a table --------------------------------------------------- */

static const struct head_case {
	const char *head;
	int status;
	const char *code;
} head_cases[] = {
	{ "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n", 200, NULL },
	{ "GET /ok HTTP/1.0\n\n", 200, NULL },
	{ "\r\nGET /ok HTTP/1.1\r\n\r\n", 200, NULL },
	{ "GET /ok HTTP/1.1\r\nHost: a\r\n", 0, NULL },
	{ "GET /o", 0, NULL },
	{ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "http_version_not_supported" },
	{ "GET /ok HTTP/3.0\r\n\r\n", 505, "http_version_not_supported" },
	{ "GET /ok\r\n\r\n", 400, "malformed_request" },
	{ "GET  /ok HTTP/1.1\r\n\r\n", 400, "malformed_request" },
	{ "G(T /ok HTTP/1.1\r\n\r\n", 400, "malformed_request" },
	{ "GET /ok HTTP/1.1\r\nNoColonHere\r\n", 400, "malformed_request" },
	{ "GET /ok HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "malformed_request" },
	{ "GET /ok HTTP/1.1\r\n: x\r\n\r\n", 400, "malformed_request" },
	{ "GET /ok HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400, "malformed_request" },
	{ "GET /ok HTTP/1.1\r\nA: b\x01\r\n\r\n", 400, "malformed_request" },
	{ "GET /ok HTTP/1.1\r\nA: b\rc\r\n\r\n", 400, "malformed_request" },
	{ "POST /ok HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "malformed_request" },
	{ "POST /ok HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "malformed_request" },
	{ "POST /ok HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, "malformed_request" },
	{ "POST /ok HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400, "malformed_request" },
	{ "POST /ok HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "malformed_request" },
	{ "POST /ok HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413, "body_too_large" },
	{ "POST /ok HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413, "body_too_large" },
	{ "POST /ok HTTP/1.1\r\nContent-Length:  1000 \r\n\r\n", 200, NULL },
	{ "GET /ok HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", 431, "headers_too_large" },
};

START_TEST(test_head_check_table)
{
	const struct head_case *c = &head_cases[_i];
	struct cc_http_head_limits lim = { .max_head_bytes = 256, .max_headers = 2, .max_body = 1000 };
	struct cc_http_head_verdict v;
	cc_http_head_check(c->head, strlen(c->head), &lim, &v);
	ck_assert_msg(v.status == c->status, "%s: status %d, want %d", c->head, v.status, c->status);
	if (c->code)
		ck_assert_str_eq(v.code, c->code);
}
END_TEST

START_TEST(test_head_check_size_and_request_id)
{
	struct cc_http_head_limits lim = { .max_head_bytes = 64, .max_headers = 10, .max_body = 10 };
	struct cc_http_head_verdict v;
	char big[200];
	static const char with_id[] = "GET /ok HTTP/1.1\r\nX-Request-Id: abc-1.2_3\r\n\r\n";

	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /", 5);
	cc_http_head_check(big, sizeof(big), &lim, &v);
	ck_assert_int_eq(v.status, 431);
	cc_http_head_check(big, 63, &lim, &v);
	ck_assert_int_eq(v.status, 0); /* not yet over */
	cc_http_head_check(with_id, strlen(with_id), &lim, &v);
	ck_assert_int_eq(v.status, 200);
	ck_assert_str_eq(v.request_id, "abc-1.2_3");
	ck_assert_str_eq(v.method, "GET");
}
END_TEST

/* ---- what the library used to answer itself ---------------------------------------- */

static const struct wire_case {
	const char *what;
	const char *request;
	int status;
	const char *code;
} wire_cases[] = {
	{ "HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "http_version_not_supported" },
	{ "Content-Length: -1", "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400, "malformed_request" },
	{ "header line without a colon", "GET /ok HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400, "malformed_request" },
	{ "text/plain body", "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}",
	  415, "unsupported_media_type" },
	{ "body without Content-Type", "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}", 415,
	  "unsupported_media_type" },
	{ "JSON with another charset",
	  "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Type: application/json; charset=latin1\r\nContent-Length: 2\r\n\r\n{}",
	  415, "unsupported_media_type" },
	{ "two Authorization headers",
	  "GET /ok HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n", 400,
	  "invalid_request" },
	{ "JSON body", "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Type: Application/JSON; charset=UTF-8\r\nContent-Length: 2\r\n\r\n{}",
	  200, NULL },
	{ "no body, no Content-Type", "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 200, NULL },
};

START_TEST(test_library_answers_are_ours)
{
	const struct wire_case *c = &wire_cases[_i];
	char reply[8192];
	exchange(c->request, strlen(c->request), reply, sizeof(reply));
	if (c->code)
		assert_shaped(reply, c->status, c->code);
	else
		ck_assert_msg(cc_test_raw_status(reply) == c->status, "%s: %.300s", c->what, reply);
	assert_not_html(reply);
}
END_TEST

/* About 4,000 headers, and one header of 300 KB: both JSON 431s, and the server lives. */
START_TEST(test_thousands_of_headers)
{
	size_t cap = 400 * 1024, used = 0;
	char *req = malloc(cap), reply[8192];
	struct cc_test_reply r;
	struct cc_test_request rq = { .path = "/ok" };

	used += (size_t)snprintf(req, cap, "GET /ok HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < 4000; i++)
		used += (size_t)snprintf(req + used, cap - used, "X-H%d: 1\r\n", i);
	used += (size_t)snprintf(req + used, cap - used, "\r\n");
	exchange(req, used, reply, sizeof(reply));
	assert_shaped(reply, 431, "headers_too_large");

	used = (size_t)snprintf(req, cap, "GET /ok HTTP/1.1\r\nX-Big: ");
	memset(req + used, 'a', 300 * 1024);
	used += 300 * 1024;
	used += (size_t)snprintf(req + used, cap - used, "\r\n\r\n");
	exchange(req, used, reply, sizeof(reply));
	assert_shaped(reply, 431, "headers_too_large");
	free(req);

	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	ck_assert_int_eq(r.status, 200);
	cc_test_reply_release(&r);
}
END_TEST

/* ---- one address cannot take the server --------------------------------------------- */

START_TEST(test_per_address_cap_spares_other_addresses)
{
	int held[PER_ADDRESS];
	char reply[4096];
	bool eof;
	int fd;

	/* PER_ADDRESS slow clients from 127.0.0.1, each one byte into its head. */
	for (int i = 0; i < PER_ADDRESS; i++) {
		held[i] = connect_from("127.0.0.1");
		send_all(held[i], "G", 1);
	}
	/* One more from 127.0.0.1: refused in our shape. The front may not have
	 * accepted every held one yet: retry until it has (bounded). */
	int64_t end = cc_clock_ms() + 5000;
	for (;;) {
		fd = connect_from("127.0.0.1");
		send_all(fd, "GET /ok HTTP/1.1\r\n\r\n", 20);
		read_reply(fd, reply, sizeof(reply), 3000, &eof);
		close(fd);
		if (cc_test_raw_status(reply) == 429 || cc_clock_ms() > end)
			break;
	}
	assert_shaped(reply, 429, "too_many_connections");
	ck_assert_msg(strstr(reply, "\r\nRetry-After: 1\r\n"), "no Retry-After: %s", reply);

	/* Another address is served meanwhile. */
	fd = connect_from("127.0.0.2");
	send_all(fd, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n", 29);
	read_reply(fd, reply, sizeof(reply), 5000, &eof);
	close(fd);
	ck_assert_msg(cc_test_raw_status(reply) == 200, "127.0.0.2 was not served: %s", reply);

	/* Once the slow ones go, 127.0.0.1 is served again. */
	for (int i = 0; i < PER_ADDRESS; i++)
		close(held[i]);
	end = cc_clock_ms() + 5000;
	do {
		fd = connect_from("127.0.0.1");
		send_all(fd, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n", 29);
		read_reply(fd, reply, sizeof(reply), 3000, &eof);
		close(fd);
	} while (cc_test_raw_status(reply) != 200 && cc_clock_ms() < end);
	ck_assert_msg(cc_test_raw_status(reply) == 200, "127.0.0.1 not served after its slow clients left: %s", reply);
}
END_TEST

/*
 * Clients that send part of a head and then shut their sending side can
 * never finish it: their slots are freed at once, not at the header
 * deadline (and the front does not spin on their endless readability).
 */
START_TEST(test_half_closed_heads_release_their_slots)
{
	int held[PER_ADDRESS], fd;
	char reply[4096];
	bool eof;
	int64_t start;

	for (int i = 0; i < PER_ADDRESS; i++) {
		held[i] = connect_from("127.0.0.1");
		send_all(held[i], "GET /ok HT", 10);
		shutdown(held[i], SHUT_WR);
	}
	start = cc_clock_ms();
	do {
		fd = connect_from("127.0.0.1");
		send_all(fd, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n", 29);
		read_one_reply(fd, reply, sizeof(reply), 3000, &eof);
		close(fd);
	} while (cc_test_raw_status(reply) != 200 && cc_clock_ms() - start < 3000);
	ck_assert_msg(cc_test_raw_status(reply) == 200, "not served: %s", reply);
	ck_assert_msg(cc_clock_ms() - start < HEADER_MS / 2, "served only after %lld ms: the slots waited for the deadline",
		      (long long)(cc_clock_ms() - start));
	for (int i = 0; i < PER_ADDRESS; i++)
		close(held[i]);
}
END_TEST

/* ---- deadlines independent of activity ---------------------------------------------- */

/*
 * Trickles request bytes, one every 100 ms, for up to 10 s; returns the ms
 * from the first byte until the server answered/closed, with the reply.
 */
static int64_t trickle(const char *prefix, char *reply, size_t cap)
{
	int fd = connect_from("127.0.0.1");
	int64_t start = cc_clock_ms();
	bool eof = false;
	size_t used = 0;

	send_all(fd, prefix, strlen(prefix));
	reply[0] = '\0';
	while (cc_clock_ms() - start < 10000) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) > 0) {
			used = read_reply(fd, reply, cap, 2000, &eof);
			break;
		}
		if (send(fd, "a", 1, MSG_NOSIGNAL) != 1)
			break; /* reset: closed without an answer */
	}
	(void)used;
	close(fd);
	return cc_clock_ms() - start;
}

START_TEST(test_trickled_head_cut_at_deadline)
{
	char reply[4096];
	int64_t ms = trickle("GET /ok HTTP/1.1\r\nX-Slow: ", reply, sizeof(reply));
	ck_assert_msg(ms >= HEADER_MS - 50 && ms < HEADER_MS + 1500, "head cut after %lld ms (deadline %d): %s",
		      (long long)ms, HEADER_MS, reply);
	assert_shaped(reply, 408, "request_timeout");
}
END_TEST

START_TEST(test_trickled_body_cut_at_deadline)
{
	char reply[4096];
	int64_t ms = trickle("POST /ok HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 900\r\n\r\n",
			     reply, sizeof(reply));
	ck_assert_msg(ms >= BODY_MS - 50 && ms < BODY_MS + 1500, "body cut after %lld ms (deadline %d): %s",
		      (long long)ms, BODY_MS, reply);
	if (*reply) /* the 408 usually arrives; a reset may beat it */
		assert_shaped(reply, 408, "request_timeout");
}
END_TEST

/* A connection that sends nothing at all is closed at the header deadline too. */
START_TEST(test_silent_connection_cut)
{
	char reply[4096];
	bool eof;
	int fd = connect_from("127.0.0.1");
	int64_t start = cc_clock_ms();
	read_reply(fd, reply, sizeof(reply), 5000, &eof);
	close(fd);
	ck_assert(eof);
	ck_assert_int_lt(cc_clock_ms() - start, HEADER_MS + 1500);
	assert_shaped(reply, 408, "request_timeout");
}
END_TEST

/* ---- keep-alive: every request on a kept connection passes the front ---------------- */

static const char plain_get[] = "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n";

/* A connection from 127.0.0.1 whose first request was answered 200 and left open. */
static int kept_connection(void)
{
	char reply[4096];
	bool eof;
	int fd = connect_from("127.0.0.1");
	send_all(fd, plain_get, strlen(plain_get));
	read_one_reply(fd, reply, sizeof(reply), 5000, &eof);
	ck_assert_msg(cc_test_raw_status(reply) == 200 && !eof, "first request: %s", reply);
	ck_assert_msg(!strcasestr(reply, "\r\nConnection: close"), "keep-alive is off: %s", reply);
	return fd;
}

/* Many requests on one connection: each 200, each its own request id, the connection kept. */
START_TEST(test_kept_many_requests)
{
	char reply[4096];
	bool eof;
	int fd = kept_connection();
	for (int i = 0; i < 50; i++) {
		char req[128];
		int n = snprintf(req, sizeof(req), "GET /ok HTTP/1.1\r\nHost: a\r\nX-Request-Id: kept-%d\r\n\r\n", i);
		send_all(fd, req, (size_t)n);
		read_one_reply(fd, reply, sizeof(reply), 5000, &eof);
		ck_assert_msg(cc_test_raw_status(reply) == 200 && !eof, "request %d: %s", i, reply);
		snprintf(req, sizeof(req), "\r\nX-Request-Id: kept-%d\r\n", i);
		ck_assert_msg(strstr(reply, req), "request %d: not its id: %s", i, reply);
	}
	/* A POST with a body on the same connection, then a GET again. */
	static const char post[] = "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
	send_all(fd, post, strlen(post));
	read_one_reply(fd, reply, sizeof(reply), 5000, &eof);
	ck_assert_msg(cc_test_raw_status(reply) == 200 && !eof, "POST: %s", reply);
	send_all(fd, plain_get, strlen(plain_get));
	read_one_reply(fd, reply, sizeof(reply), 5000, &eof);
	ck_assert_msg(cc_test_raw_status(reply) == 200 && !eof, "GET after POST: %s", reply);
	close(fd);
}
END_TEST

/* Every hostile request of the table, as the second request of a kept connection: our shape. */
START_TEST(test_kept_second_request_shaped)
{
	const struct wire_case *c = &wire_cases[_i];
	char reply[8192];
	bool eof;
	int fd = kept_connection();
	send_all(fd, c->request, strlen(c->request));
	read_one_reply(fd, reply, sizeof(reply), 5000, &eof);
	close(fd);
	assert_not_html(reply);
	if (c->code)
		assert_shaped(reply, c->status, c->code);
	else
		ck_assert_msg(cc_test_raw_status(reply) == c->status, "%s: %.300s", c->what, reply);
}
END_TEST

/* An oversized second head (4,000 headers; one 300 KB header): JSON 431, never the library's. */
START_TEST(test_kept_oversized_second_head)
{
	size_t cap = 400 * 1024, used = 0;
	char *req = malloc(cap), reply[8192];
	bool eof;
	int fd = kept_connection();

	used += (size_t)snprintf(req, cap, "GET /ok HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < 4000; i++)
		used += (size_t)snprintf(req + used, cap - used, "X-H%d: 1\r\n", i);
	used += (size_t)snprintf(req + used, cap - used, "\r\n");
	send_all(fd, req, used);
	read_reply(fd, reply, sizeof(reply), 5000, &eof);
	close(fd);
	assert_shaped(reply, 431, "headers_too_large");

	fd = kept_connection();
	used = (size_t)snprintf(req, cap, "GET /ok HTTP/1.1\r\nX-Big: ");
	memset(req + used, 'a', 300 * 1024);
	used += 300 * 1024;
	used += (size_t)snprintf(req + used, cap - used, "\r\n\r\n");
	send_all(fd, req, used);
	read_reply(fd, reply, sizeof(reply), 5000, &eof);
	close(fd);
	free(req);
	assert_shaped(reply, 431, "headers_too_large");
}
END_TEST

/*
 * Trickles bytes on fd, one every 100 ms, until the server answers or
 * closes (at most 10 s); returns the ms from start to then, with the reply.
 */
static int64_t trickle_on(int fd, const char *prefix, char *reply, size_t cap)
{
	int64_t start = cc_clock_ms();
	bool eof = false;

	send_all(fd, prefix, strlen(prefix));
	reply[0] = '\0';
	while (cc_clock_ms() - start < 10000) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) > 0) {
			read_reply(fd, reply, cap, 2000, &eof);
			break;
		}
		if (send(fd, "a", 1, MSG_NOSIGNAL) != 1)
			break;
	}
	close(fd);
	return cc_clock_ms() - start;
}

/* Slowloris on the second request: 408 at the header deadline, counted from the first answer. */
START_TEST(test_kept_trickled_second_head_cut)
{
	char reply[4096];
	int64_t ms = trickle_on(kept_connection(), "GET /ok HTTP/1.1\r\nX-Slow: ", reply, sizeof(reply));
	ck_assert_msg(ms >= HEADER_MS - 150 && ms < HEADER_MS + 1500, "second head cut after %lld ms (deadline %d): %s",
		      (long long)ms, HEADER_MS, reply);
	assert_shaped(reply, 408, "request_timeout");
}
END_TEST

/* A trickled body of the second request: 408 at the body deadline. */
START_TEST(test_kept_trickled_second_body_cut)
{
	char reply[4096];
	int64_t ms = trickle_on(kept_connection(),
				"POST /ok HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 900\r\n\r\n",
				reply, sizeof(reply));
	ck_assert_msg(ms >= BODY_MS - 50 && ms < BODY_MS + 1500, "second body cut after %lld ms (deadline %d): %s",
		      (long long)ms, BODY_MS, reply);
	if (*reply)
		assert_shaped(reply, 408, "request_timeout");
}
END_TEST

/* A kept connection left idle is closed at the header deadline without a word (no stray 408). */
START_TEST(test_kept_idle_closed_quietly)
{
	char reply[4096];
	bool eof;
	int fd = kept_connection();
	int64_t start = cc_clock_ms();
	read_reply(fd, reply, sizeof(reply), HEADER_MS + 3000, &eof);
	close(fd);
	ck_assert_msg(eof, "an idle kept connection stayed open %lld ms", (long long)(cc_clock_ms() - start));
	ck_assert_msg(cc_clock_ms() - start >= HEADER_MS - 150 && cc_clock_ms() - start < HEADER_MS + 1500,
		      "closed after %lld ms (deadline %d)", (long long)(cc_clock_ms() - start), HEADER_MS);
	ck_assert_msg(reply[0] == '\0', "an idle kept connection was answered: %s", reply);
}
END_TEST

/*
 * Requests sent before the previous answer (pipelined) sit in the library's
 * buffer where the front cannot check them: the first is answered, the
 * connection then ends and the unchecked one is never served, so a
 * malformed one cannot draw the library's own HTML answer.
 */
START_TEST(test_pipelined_request_never_unchecked)
{
	static const char two[] = "GET /ok HTTP/1.1\r\nHost: a\r\n\r\nGET /ok HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n";
	static const char two_h2[] = "GET /ok HTTP/1.1\r\nHost: a\r\n\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	const char *cases[] = { two, two_h2 };
	char reply[8192];
	bool eof;

	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		/* on a fresh connection, and after a first kept request */
		for (int kept = 0; kept < 2; kept++) {
			int fd = kept ? kept_connection() : connect_from("127.0.0.1");
			int64_t start = cc_clock_ms();
			send_all(fd, cases[i], strlen(cases[i]));
			read_reply(fd, reply, sizeof(reply), 5000, &eof);
			close(fd);
			assert_not_html(reply);
			ck_assert_msg(eof, "still open after a pipelined request: %s", reply);
			/* at once: the front sees the unchecked bytes, it does not wait for a head */
			ck_assert_msg(cc_clock_ms() - start < HEADER_MS / 2, "case %zu kept %d: ended only after %lld ms", i,
				      kept, (long long)(cc_clock_ms() - start));
			ck_assert_msg(cc_test_raw_status(reply) == 200, "case %zu kept %d: %s", i, kept, reply);
			const char *second = strstr(reply + 1, "HTTP/1.");
			ck_assert_msg(!second || cc_test_raw_status(second) == 400 || cc_test_raw_status(second) == 505,
				      "the pipelined request was served: %s", reply);
			if (second)
				ck_assert_msg(strstr(second, "application/json"), "second answer not ours: %s", reply);
		}
	}
	/* the server is fine */
	int fd = kept_connection();
	close(fd);
}
END_TEST

/* Kept connections hold their address's slots: the next one is 429; closing one frees it. */
START_TEST(test_kept_connections_count_against_the_cap)
{
	int held[PER_ADDRESS], fd;
	char reply[4096];
	bool eof;

	for (int i = 0; i < PER_ADDRESS; i++)
		held[i] = kept_connection();
	fd = connect_from("127.0.0.1");
	send_all(fd, plain_get, strlen(plain_get));
	read_reply(fd, reply, sizeof(reply), 3000, &eof);
	close(fd);
	assert_shaped(reply, 429, "too_many_connections");
	close(held[0]);
	int64_t end = cc_clock_ms() + 3000;
	do {
		fd = connect_from("127.0.0.1");
		send_all(fd, plain_get, strlen(plain_get));
		read_one_reply(fd, reply, sizeof(reply), 3000, &eof);
		close(fd);
	} while (cc_test_raw_status(reply) != 200 && cc_clock_ms() < end);
	ck_assert_msg(cc_test_raw_status(reply) == 200, "not served after a kept connection closed: %s", reply);
	for (int i = 1; i < PER_ADDRESS; i++)
		close(held[i]);
}
END_TEST

/* "Connection: close" and HTTP/1.0 are honoured: the answer says close and the server closes. */
START_TEST(test_kept_close_requested)
{
	static const char *const reqs[] = { "GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
					    "GET /ok HTTP/1.0\r\n\r\n" };
	char reply[4096];
	bool eof;
	for (size_t i = 0; i < CC_ARRAY_LEN(reqs); i++) {
		int fd = connect_from("127.0.0.1");
		int64_t start = cc_clock_ms();
		send_all(fd, reqs[i], strlen(reqs[i]));
		read_reply(fd, reply, sizeof(reply), 5000, &eof);
		close(fd);
		ck_assert_msg(eof && cc_clock_ms() - start < HEADER_MS / 2, "%s: not closed at once", reqs[i]);
		ck_assert_msg(cc_test_raw_status(reply) == 200, "%s", reply);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("http_front");
	TCase *pure = tcase_create("head_check");
	TCase *tc = tcase_create("loopback");
	TCase *kept = tcase_create("loopback_kept");
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_loop_test(pure, test_head_check_table, 0, (int)CC_ARRAY_LEN(head_cases));
	tcase_add_test(pure, test_head_check_size_and_request_id);
	suite_add_tcase(s, pure);
	tcase_add_checked_fixture(tc, start_server, stop_server);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_library_answers_are_ours, 0, (int)CC_ARRAY_LEN(wire_cases));
	tcase_add_test(tc, test_thousands_of_headers);
	tcase_add_test(tc, test_per_address_cap_spares_other_addresses);
	tcase_add_test(tc, test_half_closed_heads_release_their_slots);
	tcase_add_test(tc, test_trickled_head_cut_at_deadline);
	tcase_add_test(tc, test_trickled_body_cut_at_deadline);
	tcase_add_test(tc, test_silent_connection_cut);
	suite_add_tcase(s, tc);
	/* The same hostile clients with keep-alive on, then the second request of a kept connection. */
	tcase_add_checked_fixture(kept, start_server_kept, stop_server);
	tcase_set_timeout(kept, 90);
	tcase_add_loop_test(kept, test_library_answers_are_ours, 0, (int)CC_ARRAY_LEN(wire_cases));
	tcase_add_test(kept, test_thousands_of_headers);
	tcase_add_test(kept, test_per_address_cap_spares_other_addresses);
	tcase_add_test(kept, test_half_closed_heads_release_their_slots);
	tcase_add_test(kept, test_trickled_head_cut_at_deadline);
	tcase_add_test(kept, test_trickled_body_cut_at_deadline);
	tcase_add_test(kept, test_silent_connection_cut);
	tcase_add_test(kept, test_kept_many_requests);
	tcase_add_loop_test(kept, test_kept_second_request_shaped, 0, (int)CC_ARRAY_LEN(wire_cases));
	tcase_add_test(kept, test_kept_oversized_second_head);
	tcase_add_test(kept, test_kept_trickled_second_head_cut);
	tcase_add_test(kept, test_kept_trickled_second_body_cut);
	tcase_add_test(kept, test_kept_idle_closed_quietly);
	tcase_add_test(kept, test_pipelined_request_never_unchecked);
	tcase_add_test(kept, test_kept_connections_count_against_the_cap);
	tcase_add_test(kept, test_kept_close_requested);
	suite_add_tcase(s, kept);
	rc = cc_test_run_suite(s);
	curl_global_cleanup();
	return rc;
}
