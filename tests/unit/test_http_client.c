/*
 * The HTTP client against a tiny loopback server run by the test itself in a
 * thread. The server misbehaves on request (by path) so each outcome of
 * cc_http_client_do() can be forced: a status, a slow or silent answer, an
 * oversize body, a hang-up. Timing bounds are asserted, and Check's own
 * test timeout turns any hang into a failure.
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
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/http_client.h"
#include "support.h"
#include "sys/banned.h"

#define SLACK_MS       1500  /* scheduler and ASan headroom on top of a timeout */
#define HANGUP_WAIT_MS 10000 /* how long the server waits for a client to give up */

/* What the server saw of the last request. */
struct seen_request {
	char method[16];
	char path[256];
	char head[8192];	/* request line and headers, NUL-terminated */
	char body[1536 * 1024]; /* room for a body past libcurl's 100-continue threshold (1 MiB) */
	size_t body_len;
};

static struct {
	int lfd; /* listening socket */
	int port;
	int stop[2]; /* closing stop[1] ends the server thread */
	pthread_t thread;
	pthread_mutex_t mu; /* guards requests and last */
	int requests;	    /* requests read so far */
	struct seen_request last;
} srv;

/* Sends all of buf; false when the client went away. */
static bool send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static bool send_text(int fd, const char *text)
{
	return send_all(fd, text, strlen(text));
}

/* Waits until the client closes its end (or HANGUP_WAIT_MS): the server never answers first. */
static void wait_for_hangup(int fd)
{
	char buf[4096];
	int64_t deadline = cc_clock_ms() + HANGUP_WAIT_MS;
	while (cc_clock_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) > 0 && recv(fd, buf, sizeof(buf), 0) <= 0)
			return;
	}
}

/* Reads one request (head, then Content-Length bytes of body) into *req. */
static bool read_request(int fd, struct seen_request *req)
{
	size_t len = 0;
	char *end = NULL;
	memset(req, 0, sizeof(*req));
	while (!end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (len + 1 >= sizeof(req->head) || poll(&p, 1, 5000) <= 0)
			return false;
		ssize_t n = recv(fd, req->head + len, sizeof(req->head) - 1 - len, 0);
		if (n <= 0)
			return false;
		len += (size_t)n;
		req->head[len] = '\0';
		end = strstr(req->head, "\r\n\r\n");
	}
	/* Whatever followed the blank line is the start of the body. */
	size_t head_len = (size_t)(end - req->head) + 4;
	size_t extra = len - head_len;
	memcpy(req->body, end + 4, extra);
	req->body_len = extra;
	*end = '\0';
	sscanf(req->head, "%15s %255s", req->method, req->path);
	const char *cl = strcasestr(req->head, "\r\nContent-Length:");
	size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0;
	if (want > sizeof(req->body))
		return false;
	while (req->body_len < want) {
		ssize_t n = recv(fd, req->body + req->body_len, want - req->body_len, 0);
		if (n <= 0)
			return false;
		req->body_len += (size_t)n;
	}
	return true;
}

/* Answers one request according to its path. */
static void serve(int fd, const struct seen_request *req)
{
	char head[512];
	static char filler[65536];
	memset(filler, 'a', sizeof(filler));
	unsigned long n = 0;

	if (strcmp(req->path, "/ok") == 0) {
		send_text(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n"
			      "Connection: close\r\n\r\n{\"ok\":true}");
	} else if (strcmp(req->path, "/unavailable") == 0) {
		send_text(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
			      "Content-Length: 4\r\nConnection: close\r\n\r\ndown");
	} else if (strcmp(req->path, "/redirect") == 0) {
		send_text(
		    fd,
		    "HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	} else if (strcmp(req->path, "/echo") == 0) {
		snprintf(
		    head, sizeof(head),
		    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %zu\r\n"
		    "Connection: close\r\n\r\n",
		    req->body_len);
		if (send_text(fd, head) && strcmp(req->method, "HEAD") != 0)
			send_all(fd, req->body, req->body_len);
	} else if (sscanf(req->path, "/bytes/%lu", &n) == 1) {
		snprintf(head, sizeof(head),
			 "HTTP/1.1 200 OK\r\nContent-Length: %lu\r\nConnection: close\r\n\r\n", n);
		for (bool ok = send_text(fd, head); ok && n > 0;) {
			size_t chunk = n < sizeof(filler) ? n : sizeof(filler);
			ok = send_all(fd, filler, chunk);
			n -= chunk;
		}
	} else if (sscanf(req->path, "/chunked/%lu", &n) == 1) {
		/* No length up front: only the client's own count can stop it. */
		bool ok = send_text(
		    fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
		while (ok && n > 0) {
			size_t chunk = n < 4096 ? n : 4096;
			snprintf(head, sizeof(head), "%zx\r\n", chunk);
			ok = send_text(fd, head) && send_all(fd, filler, chunk) && send_text(fd, "\r\n");
			n -= chunk;
		}
		if (ok)
			send_text(fd, "0\r\n\r\n");
	} else if (strcmp(req->path, "/trickle") == 0) {
		/* Always some progress, never done: only a whole-request deadline ends it. */
		bool ok =
		    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n");
		for (int64_t deadline = cc_clock_ms() + HANGUP_WAIT_MS; ok && cc_clock_ms() < deadline;) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			if (poll(&p, 1, 50) > 0)
				break; /* the client hung up */
			ok = send_all(fd, "a", 1);
		}
	} else if (strcmp(req->path, "/silent") == 0) {
		wait_for_hangup(fd);
	}
	/* Anything else ("/hangup"): close without a word. */
}

static void *server_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = srv.lfd, .events = POLLIN },
				       { .fd = srv.stop[0], .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int fd = accept(srv.lfd, NULL, NULL);
		if (fd < 0)
			continue;
		struct seen_request *req = malloc(sizeof(*req));
		if (req && read_request(fd, req)) {
			pthread_mutex_lock(&srv.mu);
			srv.requests++;
			srv.last = *req;
			pthread_mutex_unlock(&srv.mu);
			serve(fd, req);
		}
		free(req);
		close(fd);
	}
	return NULL;
}


static void server_start(void)
{
	srv.lfd = cc_test_listener(64, &srv.port);
	ck_assert_int_eq(pipe(srv.stop), 0);
	srv.requests = 0;
	pthread_mutex_init(&srv.mu, NULL);
	ck_assert_int_eq(pthread_create(&srv.thread, NULL, server_main, NULL), 0);
}

static void server_stop(void)
{
	close(srv.stop[1]);
	pthread_join(srv.thread, NULL);
	close(srv.stop[0]);
	close(srv.lfd);
	pthread_mutex_destroy(&srv.mu);
}

static int server_requests(void)
{
	pthread_mutex_lock(&srv.mu);
	int n = srv.requests;
	pthread_mutex_unlock(&srv.mu);
	return n;
}

/* "http://127.0.0.1:<port><path>" of the test server. */
static const char *url_of(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "http://127.0.0.1:%d%s", srv.port, path);
	return buf;
}

/* GET path with the given limits; returns the result, *took_ms the duration. */
static int get(const char *path, long timeout_ms, size_t max_bytes, struct cc_http_client_response *resp,
	       int64_t *took_ms)
{
	char url[128];
	struct cc_http_client_request req = { .url = url_of(path, url, sizeof(url)),
					      .timeout_ms = timeout_ms,
					      .max_response_bytes = max_bytes };
	int64_t t0 = cc_clock_ms();
	int rc = cc_http_client_do(&req, resp);
	if (took_ms)
		*took_ms = cc_clock_ms() - t0;
	return rc;
}

START_TEST(test_ok_and_status)
{
	struct cc_http_client_response resp;
	ck_assert_int_eq(get("/ok", 5000, 0, &resp, NULL), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_uint_eq(resp.body_len, 11);
	ck_assert_str_eq(resp.body, "{\"ok\":true}");
	ck_assert_str_eq(resp.content_type, "application/json");
	cc_http_client_response_release(&resp);
	ck_assert_ptr_null(resp.body);

	/* An HTTP error status is still a response, not a transport failure. */
	ck_assert_int_eq(get("/unavailable", 5000, 0, &resp, NULL), 0);
	ck_assert_int_eq(resp.status, 503);
	ck_assert_str_eq(resp.body, "down");
	cc_http_client_response_release(&resp);
	cc_http_client_response_release(NULL);
}
END_TEST

START_TEST(test_redirect_not_followed)
{
	struct cc_http_client_response resp;
	ck_assert_int_eq(get("/redirect", 5000, 0, &resp, NULL), 0);
	ck_assert_int_eq(resp.status, 302);
	ck_assert_uint_eq(resp.body_len, 0);
	ck_assert_str_eq(resp.body, "");
	ck_assert_int_eq(server_requests(), 1);
	cc_http_client_response_release(&resp);
}
END_TEST

/* Method, headers and body (binary, with a NUL) arrive exactly as sent. */
START_TEST(test_request_arrives_as_sent)
{
	static const char binary[] = "{\"a\":1}\0\x01\xff tail";
	static char large[1100 * 1024]; /* past 1 MiB libcurl would send "Expect: 100-continue" */
	static const struct {
		const char *method;
		const char *body;
		size_t body_len;
	} cases[] = {
		{ "POST", binary, sizeof(binary) - 1 },
		{ "PUT", "put-body", 8 },
		{ "PATCH", "patch", 5 },
		{ "DELETE", "gone", 4 },
		{ "DELETE", NULL, 0 },
		{ "GET", NULL, 0 },
		{ NULL, NULL, 0 },
		{ "POST", NULL, 0 },
		{ "HEAD", NULL, 0 },
		{ "POST", large, sizeof(large) },
	};
	const char *headers[] = { "Content-Type: application/octet-stream", "X-Cc-Test: yes, it is", NULL };
	char url[128];

	for (size_t i = 0; i < sizeof(large); i++)
		large[i] = (char)(i * 31);
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		struct cc_http_client_request req = { .method = cases[i].method,
						      .url = url_of("/echo", url, sizeof(url)),
						      .headers = headers,
						      .body = cases[i].body,
						      .body_len = cases[i].body_len,
						      .timeout_ms = 5000,
						      .max_response_bytes = 2 * sizeof(large) };
		struct cc_http_client_response resp;
		const char *method = cases[i].method ? cases[i].method : "GET";
		ck_assert_msg(cc_http_client_do(&req, &resp) == 0, "case %zu (%s) failed", i, method);
		ck_assert_int_eq(resp.status, 200);

		pthread_mutex_lock(&srv.mu);
		struct seen_request *seen = &srv.last;
		ck_assert_str_eq(seen->method, method);
		ck_assert_str_eq(seen->path, "/echo");
		ck_assert_msg(strstr(seen->head, "\r\nX-Cc-Test: yes, it is"), "case %zu head:\n%s", i,
			      seen->head);
		ck_assert_msg(strstr(seen->head, "\r\nContent-Type: application/octet-stream"), "case %zu",
			      i);
		ck_assert_msg(!strcasestr(seen->head, "Expect:"), "case %zu sent Expect", i);
		ck_assert_uint_eq(seen->body_len, cases[i].body_len);
		ck_assert_int_eq(memcmp(seen->body, cases[i].body ? cases[i].body : "", cases[i].body_len),
				 0);
		pthread_mutex_unlock(&srv.mu);

		/* The echo comes back byte for byte (HEAD: headers only). */
		size_t expect_len = strcmp(method, "HEAD") == 0 ? 0 : cases[i].body_len;
		ck_assert_uint_eq(resp.body_len, expect_len);
		ck_assert_int_eq(memcmp(resp.body, cases[i].body ? cases[i].body : "", expect_len), 0);
		ck_assert_int_eq(resp.body[resp.body_len], '\0');
		cc_http_client_response_release(&resp);
	}
	ck_assert_int_eq(server_requests(), (int)CC_ARRAY_LEN(cases));
}
END_TEST

/* The body cap, exactly at and one past the limit, announced or not. */
START_TEST(test_body_cap)
{
	static const struct {
		const char *path;
		int rc;
	} cases[] = {
		{ "/bytes/1000", 0 },
		{ "/bytes/1001", CC_ETOOBIG },
		{ "/chunked/1000", 0 },
		{ "/chunked/1001", CC_ETOOBIG },
		{ "/bytes/50000000", CC_ETOOBIG },
		{ "/chunked/50000000", CC_ETOOBIG },
		{ "/bytes/0", 0 },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		struct cc_http_client_response resp = { .status = -1 };
		int64_t took;
		int rc = get(cases[i].path, 10000, 1000, &resp, &took);
		ck_assert_msg(rc == cases[i].rc, "%s: got %s, want %s", cases[i].path, cc_errname(rc),
			      cc_errname(cases[i].rc));
		if (rc == 0) {
			unsigned long n = strtoul(strrchr(cases[i].path, '/') + 1, NULL, 10);
			ck_assert_uint_eq(resp.body_len, n);
			ck_assert_int_eq(resp.body[n], '\0');
			cc_http_client_response_release(&resp);
		} else {
			ck_assert_int_eq(resp.status, -1); /* untouched on failure */
			ck_assert_msg(took < 5000, "%s: aborting took %lld ms", cases[i].path,
				      (long long)took);
		}
	}
}
END_TEST

/* Slow in different ways; each must end at the deadline, not at the server's pleasure. */
START_TEST(test_timeouts)
{
	static const char *const paths[] = { "/silent", "/trickle" };
	for (size_t i = 0; i < CC_ARRAY_LEN(paths); i++) {
		struct cc_http_client_response resp;
		int64_t took;
		int rc = get(paths[i], 500, 0, &resp, &took);
		ck_assert_msg(rc == CC_ETIMEOUT, "%s: got %s", paths[i], cc_errname(rc));
		ck_assert_msg(took >= 490 && took < 500 + SLACK_MS, "%s: returned after %lld ms", paths[i],
			      (long long)took);
	}
}
END_TEST

/* The kernel accepts the connection but no process ever reads it. */
START_TEST(test_never_accepted)
{
	int port;
	int lfd = cc_test_listener(16, &port);
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	struct cc_http_client_request req = { .url = url, .timeout_ms = 500 };
	struct cc_http_client_response resp;
	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_http_client_do(&req, &resp), CC_ETIMEOUT);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took >= 490 && took < 500 + SLACK_MS, "returned after %lld ms", (long long)took);
	close(lfd);
}
END_TEST

/* A full backlog drops our SYN: the connect timeout, shorter than the total, ends it. */
START_TEST(test_connect_timeout)
{
	int port;
	int lfd = cc_test_listener(0, &port);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int filler = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(filler, (struct sockaddr *)&a, sizeof(a)), 0);

	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	struct cc_http_client_request req = { .url = url, .timeout_ms = 8000, .connect_timeout_ms = 300 };
	struct cc_http_client_response resp;
	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_http_client_do(&req, &resp), CC_ETIMEOUT);
	int64_t took = cc_clock_ms() - t0;
	ck_assert_msg(took >= 290 && took < 300 + SLACK_MS, "returned after %lld ms", (long long)took);
	close(filler);
	close(lfd);
}
END_TEST

START_TEST(test_unavailable_and_io)
{
	int port;
	close(cc_test_listener(1, &port)); /* a port with nothing behind it */
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	struct cc_http_client_request req = { .url = url, .timeout_ms = 5000 };
	struct cc_http_client_response resp;
	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_http_client_do(&req, &resp), CC_EUNAVAILABLE);
	ck_assert_msg(cc_clock_ms() - t0 < 1000, "refused connect took %lld ms", (long long)(cc_clock_ms() - t0));

	/* RFC 6761: .invalid never resolves. */
	req.url = "http://nonexistent.invalid/";
	ck_assert_int_eq(cc_http_client_do(&req, &resp), CC_EUNAVAILABLE);

	/* Connected, then closed without a response. */
	ck_assert_int_eq(get("/hangup", 5000, 0, &resp, NULL), CC_EIO);
}
END_TEST

START_TEST(test_invalid_requests)
{
	char url[128];
	const char *ok_url = url_of("/ok", url, sizeof(url));
	const char *crlf[] = { "X-A: b\r\nX-Injected: 1", NULL };
	const char *no_colon[] = { "X-A b", NULL };
	const char *no_name[] = { ": b", NULL };
	const char *too_many[CC_HTTP_CLIENT_MAX_HEADERS + 2];
	for (size_t i = 0; i < CC_HTTP_CLIENT_MAX_HEADERS + 1; i++)
		too_many[i] = "X-A: b";
	too_many[CC_HTTP_CLIENT_MAX_HEADERS + 1] = NULL;
	const struct cc_http_client_request cases[] = {
		{ .url = NULL },
		{ .url = "" },
		{ .url = "ftp://127.0.0.1/" },
		{ .url = "file:///etc/passwd" },
		{ .url = "127.0.0.1/ok" },
		{ .url = ok_url, .method = "GET\r\nX-Injected: 1" },
		{ .url = ok_url, .method = "BREW" },
		{ .url = ok_url, .method = "GET", .body = "x", .body_len = 1 },
		{ .url = ok_url, .method = "HEAD", .body = "x", .body_len = 1 },
		{ .url = ok_url, .headers = crlf },
		{ .url = ok_url, .headers = no_colon },
		{ .url = ok_url, .headers = no_name },
		{ .url = ok_url, .headers = too_many },
		{ .url = ok_url, .timeout_ms = -1 },
		{ .url = ok_url, .connect_timeout_ms = -1 },
	};
	struct cc_http_client_response resp;
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		int rc = cc_http_client_do(&cases[i], &resp);
		ck_assert_msg(rc == CC_EINVAL, "case %zu: got %s", i, cc_errname(rc));
	}
	ck_assert_int_eq(cc_http_client_do(NULL, &resp), CC_EINVAL);
	ck_assert_int_eq(cc_http_client_do(&cases[0], NULL), CC_EINVAL);
	ck_assert_int_eq(server_requests(), 0);

	/* Exactly the maximum number of headers is fine. */
	too_many[CC_HTTP_CLIENT_MAX_HEADERS] = NULL;
	struct cc_http_client_request max = { .url = ok_url, .headers = too_many };
	ck_assert_int_eq(cc_http_client_do(&max, &resp), 0);
	cc_http_client_response_release(&resp);
}
END_TEST

/* Many threads at once: the one-time global set-up and per-call handles hold. */
static void *client_thread(void *arg)
{
	int *failures = arg;
	for (int i = 0; i < 5; i++) {
		struct cc_http_client_response resp;
		if (get("/ok", 10000, 0, &resp, NULL) != 0 || resp.status != 200) {
			(*failures)++;
			continue;
		}
		cc_http_client_response_release(&resp);
	}
	return NULL;
}

START_TEST(test_concurrent_calls)
{
	enum { THREADS = 4 };
	pthread_t t[THREADS];
	int failures[THREADS] = { 0 };
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, client_thread, &failures[i]), 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(failures[i], 0);
	}
	ck_assert_int_eq(server_requests(), THREADS * 5);
}
END_TEST

START_TEST(test_url_escape)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{ "", 0, "" },
		{ "AZaz09-._~", 10, "AZaz09-._~" },
		{ "a b&c=d/e?f#g+h%", 16, "a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh%25" },
		{ "\0\xff", 2, "%00%FF" },
		{ "\xc3\xa9", 2, "%C3%A9" },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		char *got = cc_http_url_escape(cases[i].in, cases[i].len);
		ck_assert_ptr_nonnull(got);
		ck_assert_str_eq(got, cases[i].out);
		free(got);
	}
	ck_assert_ptr_null(cc_http_url_escape(NULL, 0));
}
END_TEST

START_TEST(test_url_redact)
{
	static const struct {
		const char *in;
		int rc;
		const char *out;
	} cases[] = {
		{ "https://user:pw@api.steampowered.com:8443/ISteamUserAuth/AuthenticateUserTicket/v1/"
		  "?key=SECRETKEY&appid=480&ticket=abcd#frag",
		  0, "https://api.steampowered.com:8443/ISteamUserAuth/AuthenticateUserTicket/v1/" },
		{ "http://example.com", 0, "http://example.com/" },
		{ "http://example.com/a/b?x=1", 0, "http://example.com/a/b" },
		{ "not a url", CC_EINVAL, "(unparsable url)" },
		{ NULL, CC_EINVAL, "(unparsable url)" },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++) {
		char out[256];
		ck_assert_int_eq(cc_http_url_redact(cases[i].in, out, sizeof(out)), cases[i].rc);
		ck_assert_str_eq(out, cases[i].out);
	}
	char small[12];
	ck_assert_int_eq(cc_http_url_redact("http://example.com/long/path", small, sizeof(small)), 0);
	ck_assert_str_eq(small, "http://exam");
	ck_assert_int_eq(cc_http_url_redact("http://x/", NULL, 0), CC_EINVAL);
}
END_TEST

int main(void)
{
	/* The server is on loopback: a proxy from the environment must not intercept it. */
	setenv("no_proxy", "*", 1);

	Suite *s = suite_create("http_client");
	TCase *tc = tcase_create("http_client");
	tcase_set_timeout(tc, 60); /* a hang fails the test instead of the run */
	tcase_add_checked_fixture(tc, server_start, server_stop);
	tcase_add_test(tc, test_ok_and_status);
	tcase_add_test(tc, test_redirect_not_followed);
	tcase_add_test(tc, test_request_arrives_as_sent);
	tcase_add_test(tc, test_body_cap);
	tcase_add_test(tc, test_timeouts);
	tcase_add_test(tc, test_never_accepted);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_unavailable_and_io);
	tcase_add_test(tc, test_invalid_requests);
	tcase_add_test(tc, test_concurrent_calls);
	tcase_add_test(tc, test_url_escape);
	tcase_add_test(tc, test_url_redact);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
