/*
 * The HTTP server, driven over loopback by libcurl and raw sockets:
 * routing and captures, 404/405, body caps (Content-Length and chunked),
 * the error shape, request ids, path refusals, oversized headers,
 * concurrency, the access metrics, and option/route validation.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "http_fetch.h"
#include "sys/http_server.h"
#include "sys/metrics.h"
#include "support.h"
#include "sys/banned.h"

#define TEST_MAX_BODY 1000

/* ---- handlers ------------------------------------------------------------ */

static void add_str(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static int h_echo(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	cJSON *o = cJSON_CreateObject();
	(void)ctx;
	add_str(o, "method", req->method);
	add_str(o, "path", req->path);
	add_str(o, "route", req->route);
	add_str(o, "id", cc_http_param(req, "id"));
	add_str(o, "a", cc_http_param(req, "a"));
	add_str(o, "b", cc_http_param(req, "b"));
	add_str(o, "missing", cc_http_param(req, "nope"));
	add_str(o, "q", cc_http_query(req, "q"));
	add_str(o, "custom", cc_http_header(req, "x-CUSTOM-header"));
	add_str(o, "remote", req->remote);
	add_str(o, "request_id", req->request_id);
	cJSON_AddNumberToObject(o, "body_len", (double)req->body_len);
	add_str(o, "body", req->body);
	cc_http_respond_json(resp, 200, o);
	return 0;
}

static int h_error(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	cc_http_error(resp, 422, "bad_thing", "the thing is \"bad\"", false);
	return 0;
}

static int h_cooldown(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	cc_http_error_too_many(resp, "cooldown", "wait a little", 17);
	return 0;
}

static int h_unavailable(const struct cc_http_request *req, struct cc_http_response *resp,
			 void *ctx)
{
	(void)req;
	(void)ctx;
	cc_http_error_unavailable(resp, "steam_unavailable", "Steam is down");
	return 0;
}

static int h_fail(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)resp;
	(void)ctx;
	return CC_ERETRY_EXHAUSTED; /* unanswered: the server maps it */
}

static int h_silent(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)resp;
	(void)ctx;
	return 0; /* a bug: no answer */
}

static int h_text(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	ck_assert_int_eq(cc_http_response_header(resp, "Location", "/v1/queue/x"), 0);
	return cc_http_respond_text(resp, 201, NULL, "created", 7);
}

/* Handlers wait here until `want` of them are inside at once (or a deadline). */
static pthread_mutex_t rv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rv_cond = PTHREAD_COND_INITIALIZER;
static int rv_inside, rv_want;

static int h_rendezvous(const struct cc_http_request *req, struct cc_http_response *resp,
			void *ctx)
{
	struct timespec deadline;
	bool met;

	(void)req;
	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 5;
	pthread_mutex_lock(&rv_lock);
	rv_inside++;
	pthread_cond_broadcast(&rv_cond);
	while (rv_inside < rv_want && pthread_cond_timedwait(&rv_cond, &rv_lock, &deadline) == 0)
		;
	met = rv_inside >= rv_want;
	pthread_mutex_unlock(&rv_lock);
	if (!met)
		cc_http_error_unavailable(resp, "not_concurrent", "handlers did not overlap");
	else
		cc_http_error(resp, 200, "met", "all handlers were inside at once", false);
	return 0;
}

static const struct cc_http_route routes[] = {
	{ "GET", "/v1/queue/{id}", h_echo },
	{ "DELETE", "/v1/queue/{id}", h_echo },
	{ "POST", "/v1/queue/{id}/heartbeat", h_echo },
	{ "GET", "/v1/things/{a}/{b}", h_echo },
	{ "POST", "/echo", h_echo },
	{ "GET", "/", h_echo },
	{ "GET", "/error", h_error },
	{ "GET", "/cooldown", h_cooldown },
	{ "GET", "/unavailable", h_unavailable },
	{ "GET", "/fail", h_fail },
	{ "GET", "/silent", h_silent },
	{ "GET", "/text", h_text },
	{ "GET", "/rendezvous", h_rendezvous },
};

static struct cc_http_server *server;
static int port;

static void start_server(void)
{
	struct cc_http_server_options o = {
		.name = "test",
		.port = 0,
		.max_body_bytes = TEST_MAX_BODY, /* header caps: the defaults */
		.routes = routes,
		.n_routes = CC_ARRAY_LEN(routes),
	};
	server = cc_http_server_start(&o);
	ck_assert_ptr_nonnull(server);
	port = cc_http_server_port(server);
	ck_assert_int_gt(port, 0);
}

static void stop_server(void)
{
	cc_http_server_stop(server);
	server = NULL;
	cc_metrics_reset();
}

/* ---- helpers ------------------------------------------------------------- */

/* GET path; asserts an answer arrived. */
static struct cc_test_reply get(const char *path)
{
	struct cc_test_request rq = { .path = path };
	struct cc_test_reply r;
	ck_assert_msg(cc_test_fetch(port, &rq, &r) == 0, "GET %s: %s", path, r.error);
	return r;
}

/* Parses the reply body as JSON (the caller deletes it). */
static cJSON *json_of(const struct cc_test_reply *r)
{
	cJSON *j = cJSON_Parse(r->body);
	ck_assert_msg(j != NULL, "body is not JSON: %s", r->body);
	return j;
}

static const char *str_at(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * Asserts the body is exactly {"error":{"code","message","retryable"}}
 * (plus retry_after_seconds when expected >= 0).
 */
static void assert_error_shape(const struct cc_test_reply *r, long status, const char *code,
			       bool retryable, int retry_after)
{
	cJSON *j = json_of(r);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	const cJSON *rt = cJSON_GetObjectItemCaseSensitive(e, "retryable");
	ck_assert_int_eq(r->status, status);
	ck_assert_str_eq(r->content_type, "application/json");
	ck_assert_str_eq(r->cache_control, "no-store");
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert(cJSON_IsObject(e));
	ck_assert_int_eq(cJSON_GetArraySize(e), retry_after >= 0 ? 4 : 3);
	ck_assert_str_eq(str_at(e, "code"), code);
	ck_assert_ptr_nonnull(str_at(e, "message"));
	ck_assert(cJSON_IsBool(rt) && cJSON_IsTrue(rt) == retryable);
	if (retry_after >= 0) {
		const cJSON *ra = cJSON_GetObjectItemCaseSensitive(e, "retry_after_seconds");
		ck_assert(cJSON_IsNumber(ra));
		ck_assert_int_eq(ra->valueint, retry_after);
	}
	cJSON_Delete(j);
}

/* Sends a raw GET for path and returns the status. */
static int raw_get_status(const char *path, char *reply, size_t cap)
{
	char req[4096];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
	ck_assert_int_ge(cc_test_raw(port, req, (size_t)n, false, reply, cap, 5000), 0);
	return cc_test_raw_status(reply);
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(test_routing_and_params)
{
	const char *const hdrs[] = { "X-Custom-Header: hello", NULL };
	struct cc_test_request rq = { .path = "/v1/queue/abc-123?q=a%20b&z=1", .headers = hdrs };
	struct cc_test_reply r;
	cJSON *j;

	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.content_type, "application/json");
	ck_assert_str_eq(r.cache_control, "no-store");
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, "method"), "GET");
	ck_assert_str_eq(str_at(j, "path"), "/v1/queue/abc-123");
	ck_assert_str_eq(str_at(j, "route"), "/v1/queue/{id}");
	ck_assert_str_eq(str_at(j, "id"), "abc-123");
	ck_assert_ptr_null(str_at(j, "missing"));
	ck_assert_str_eq(str_at(j, "q"), "a b");
	ck_assert_str_eq(str_at(j, "custom"), "hello");
	ck_assert_str_eq(str_at(j, "remote"), "127.0.0.1");
	ck_assert_str_eq(str_at(j, "body"), "");
	cJSON_Delete(j);
	cc_test_reply_release(&r);

	r = get("/v1/things/one%20two/three");
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, "route"), "/v1/things/{a}/{b}");
	ck_assert_str_eq(str_at(j, "a"), "one two");
	ck_assert_str_eq(str_at(j, "b"), "three");
	cJSON_Delete(j);
	cc_test_reply_release(&r);

	r = get("/");
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, "route"), "/");
	cJSON_Delete(j);
	cc_test_reply_release(&r);
}
END_TEST

struct status_case {
	const char *method;
	const char *path;
	long status;
	const char *code;
	const char *allow;
};

static const struct status_case status_cases[] = {
	{ "GET", "/v1/nope", 404, "not_found", "" },
	{ "GET", "/v1/queue/", 404, "not_found", "" },	   /* a capture is never empty */
	{ "GET", "/v1/queue", 404, "not_found", "" },
	{ "GET", "/v1/queue/a/b", 404, "not_found", "" },
	{ "GET", "//v1/queue/a", 404, "not_found", "" },
	{ "GET", "/v1/queue/a/heartbeat", 405, "method_not_allowed", "POST" },
	{ "PUT", "/v1/queue/abc", 405, "method_not_allowed", "GET, DELETE" },
	{ "get", "/v1/queue/abc", 405, "method_not_allowed", "GET, DELETE" },
	{ "POST", "/error", 405, "method_not_allowed", "GET" },
};

START_TEST(test_not_found_and_method_not_allowed)
{
	const struct status_case *c = &status_cases[_i];
	struct cc_test_request rq = { .method = c->method, .path = c->path };
	struct cc_test_reply r;

	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	ck_assert_msg(r.status == c->status, "%s %s: %ld, want %ld", c->method, c->path, r.status,
		      c->status);
	assert_error_shape(&r, c->status, c->code, false, -1);
	ck_assert_str_eq(r.allow, c->allow);
	cc_test_reply_release(&r);
}
END_TEST

START_TEST(test_body_within_cap)
{
	char body[TEST_MAX_BODY];
	struct cc_test_reply r;
	cJSON *j;

	memset(body, 'x', sizeof(body));
	body[10] = '\0'; /* bodies are bytes: NULs survive in body_len */
	for (int chunked = 0; chunked < 2; chunked++) {
		struct cc_test_request rq = { .method = "POST", .path = "/echo", .body = body,
					      .body_len = sizeof(body), .chunked = chunked };
		ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
		ck_assert_msg(r.status == 200, "chunked=%d: %ld %s", chunked, r.status, r.body);
		j = json_of(&r);
		ck_assert_int_eq(cJSON_GetObjectItem(j, "body_len")->valueint, TEST_MAX_BODY);
		ck_assert_str_eq(str_at(j, "body"), "xxxxxxxxxx");
		cJSON_Delete(j);
		cc_test_reply_release(&r);
	}
}
END_TEST

START_TEST(test_body_over_cap_by_content_length)
{
	char body[TEST_MAX_BODY + 1];
	struct cc_test_request rq = { .method = "POST", .path = "/echo", .body = body,
				      .body_len = sizeof(body) };
	struct cc_test_reply r;
	char reply[4096];
	static const char head[] = "POST /v1/queue/a/heartbeat HTTP/1.1\r\nHost: t\r\n"
				   "Content-Length: 100000000\r\n\r\n0123456789";

	memset(body, 'x', sizeof(body));
	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	assert_error_shape(&r, 413, "body_too_large", false, -1);
	cc_test_reply_release(&r);

	/* 100 MB announced, 10 bytes sent, write side left open: the 413
	 * arrives without the server waiting for the rest. */
	ck_assert_int_gt(cc_test_raw(port, head, sizeof(head) - 1, false, reply, sizeof(reply), 5000), 0);
	ck_assert_msg(cc_test_raw_status(reply) == 413, "reply: %s", reply);
	ck_assert_ptr_nonnull(strstr(reply, "\"body_too_large\""));

	r = get("/v1/queue/still-alive");
	ck_assert_int_eq(r.status, 200);
	cc_test_reply_release(&r);
}
END_TEST

START_TEST(test_body_over_cap_chunked)
{
	size_t len = 5 * TEST_MAX_BODY;
	char *body = malloc(len);
	struct cc_test_request rq = { .method = "POST", .path = "/echo", .body = body,
				      .body_len = len, .chunked = true };
	struct cc_test_reply r;

	memset(body, 'y', len);
	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	assert_error_shape(&r, 413, "body_too_large", false, -1);
	cc_test_reply_release(&r);
	free(body);

	/* A chunked body that runs on past the discard budget is cut off. */
	len = TEST_MAX_BODY + CC_HTTP_DISCARD_MAX + 100000;
	body = malloc(len);
	memset(body, 'z', len);
	rq.body = body;
	rq.body_len = len;
	ck_assert_int_ne(cc_test_fetch(port, &rq, &r), 0);
	ck_assert_int_eq(r.status, 0);
	cc_test_reply_release(&r);
	free(body);

	r = get("/v1/queue/still-alive");
	ck_assert_int_eq(r.status, 200);
	cc_test_reply_release(&r);
}
END_TEST

START_TEST(test_error_shapes)
{
	struct cc_test_reply r = get("/error");
	cJSON *j;

	assert_error_shape(&r, 422, "bad_thing", false, -1);
	j = json_of(&r);
	ck_assert_str_eq(str_at(cJSON_GetObjectItem(j, "error"), "message"), "the thing is \"bad\"");
	cJSON_Delete(j);
	cc_test_reply_release(&r);

	r = get("/cooldown");
	assert_error_shape(&r, 429, "cooldown", true, 17);
	ck_assert_str_eq(r.retry_after, "17");
	cc_test_reply_release(&r);

	r = get("/unavailable");
	assert_error_shape(&r, 503, "steam_unavailable", true, -1);
	cc_test_reply_release(&r);

	r = get("/fail"); /* a CC_E* result the handler left unanswered */
	assert_error_shape(&r, 503, "service_unavailable", true, -1);
	cc_test_reply_release(&r);

	r = get("/silent");
	assert_error_shape(&r, 500, "internal_error", false, -1);
	cc_test_reply_release(&r);

	r = get("/text");
	ck_assert_int_eq(r.status, 201);
	ck_assert_str_eq(r.body, "created");
	ck_assert_str_eq(r.content_type, "text/plain; charset=utf-8");
	ck_assert_str_eq(r.cache_control, "no-store");
	cc_test_reply_release(&r);
}
END_TEST

struct result_case {
	int rc;
	int status;
	const char *code;
	bool retryable;
};

static const struct result_case result_cases[] = {
	{ CC_EINVAL, 400, "invalid_request", false },
	{ CC_EUNAUTHORIZED, 401, "unauthorized", false },
	{ CC_EFORBIDDEN, 403, "forbidden", false },
	{ CC_ENOTFOUND, 404, "not_found", false },
	{ CC_ECONFLICT, 409, "conflict", false },
	{ CC_ESTATE, 409, "invalid_state", false },
	{ CC_ETOOBIG, 413, "body_too_large", false },
	{ CC_ENOMEM, 503, "service_unavailable", true },
	{ CC_EUNAVAILABLE, 503, "service_unavailable", true },
	{ CC_ETIMEOUT, 503, "service_unavailable", true },
	{ CC_ESERIALIZATION, 503, "service_unavailable", true },
	{ CC_ERETRY_EXHAUSTED, 503, "service_unavailable", true },
	{ CC_EIO, 503, "service_unavailable", true },
	{ CC_EDB, 503, "service_unavailable", true },
	{ CC_ENOTIMPL, 503, "not_configured", false },
	{ -999, 500, "internal_error", false },
};

START_TEST(test_error_from_result)
{
	const struct result_case *c = &result_cases[_i];
	struct cc_http_response resp = { 0 };
	const cJSON *e;

	cc_http_error_from_result(&resp, c->rc);
	ck_assert_int_eq(resp.status, c->status);
	e = cJSON_GetObjectItemCaseSensitive(resp.json, "error");
	ck_assert_str_eq(str_at(e, "code"), c->code);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "retryable")) == c->retryable);
	cJSON_Delete(resp.json);
}
END_TEST

START_TEST(test_response_header_rules)
{
	struct cc_http_response resp = { 0 };
	char name[16], longv[CC_HTTP_HEADER_VALUE_MAX + 2];

	ck_assert_int_eq(cc_http_response_header(&resp, "ETag", "\"r1\""), 0);
	ck_assert_int_eq(cc_http_response_header(&resp, "etag", "\"r2\""), 0); /* replaces */
	ck_assert_int_eq(resp.n_headers, 1);
	ck_assert_str_eq(resp.headers[0].value, "\"r2\"");
	ck_assert_int_eq(cc_http_response_header(&resp, "X-A", "v\r\nSet-Cookie: x=1"), CC_EINVAL);
	ck_assert_int_eq(cc_http_response_header(&resp, "X-A", "v\n"), CC_EINVAL);
	ck_assert_int_eq(cc_http_response_header(&resp, "Bad Name", "v"), CC_EINVAL);
	ck_assert_int_eq(cc_http_response_header(&resp, "X:A", "v"), CC_EINVAL);
	ck_assert_int_eq(cc_http_response_header(&resp, "", "v"), CC_EINVAL);
	ck_assert_int_eq(cc_http_response_header(&resp, "content-type", "text/html"), CC_EINVAL);
	ck_assert_int_eq(cc_http_response_header(&resp, "X-Request-Id", "forged"), CC_EINVAL);
	memset(longv, 'v', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	ck_assert_int_eq(cc_http_response_header(&resp, "X-Long", longv), CC_ETOOBIG);
	for (int i = 1; i < CC_HTTP_MAX_HEADERS; i++) {
		snprintf(name, sizeof(name), "X-H%d", i);
		ck_assert_int_eq(cc_http_response_header(&resp, name, "v"), 0);
	}
	ck_assert_int_eq(cc_http_response_header(&resp, "X-One-Too-Many", "v"), CC_ETOOBIG);
	ck_assert_int_eq(resp.n_headers, CC_HTTP_MAX_HEADERS);
}
END_TEST

START_TEST(test_request_id)
{
	static const char *const bad_ids[] = {
		"X-Request-Id: has space", "X-Request-Id: slash/no", "X-Request-Id: quote\"",
		"X-Request-Id: 0123456789012345678901234567890123456789012345678901234567890123x",
	};
	const char *const good[] = {
		"X-Request-Id: Ab9._-0123456789012345678901234567890123456789012345678901234567", NULL
	};
	struct cc_test_request rq = { .path = "/v1/queue/x", .headers = good };
	struct cc_test_reply r;
	char first[128] = "";

	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	ck_assert_str_eq(r.request_id, "Ab9._-0123456789012345678901234567890123456789012345678901234567");
	cc_test_reply_release(&r);
	for (size_t i = 0; i <= CC_ARRAY_LEN(bad_ids); i++) {
		const char *const hdrs[] = { i < CC_ARRAY_LEN(bad_ids) ? bad_ids[i] : NULL, NULL };
		rq.headers = hdrs;
		ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
		ck_assert_int_eq(strlen(r.request_id), 32);
		ck_assert_int_eq(strspn(r.request_id, "0123456789abcdef"), 32);
		ck_assert_str_ne(r.request_id, first); /* fresh every time */
		snprintf(first, sizeof(first), "%s", r.request_id);
		cc_test_reply_release(&r);
	}
	/* Error answers carry it too. */
	r = get("/nowhere");
	ck_assert_int_eq(strlen(r.request_id), 32);
	cc_test_reply_release(&r);
}
END_TEST

static const char *const refused_paths[] = {
	"/v1/queue/..",	     "/v1/queue/%2e%2e",     "/v1/queue/.%2E",	 "/v1/../v1/queue/x",
	"/v1/queue/a%2fb",   "/v1/queue/a%2Fb",	     "/v1/queue/a%00b",	 "/v1/queue/%0a",
	"/v1/queue/%7f",     "/v1/queue/%c3%a9",     "/v1/queue/%zz",	 "/v1/queue/%4",
	"/v1/queue/%",	     "/v1/queue/a\x01",      "/v1/queue/caf\xc3\xa9", "*",
	"http://t/v1/queue/x",
};

START_TEST(test_refused_paths)
{
	char reply[4096];
	int status = raw_get_status(refused_paths[_i], reply, sizeof(reply));

	ck_assert_msg(status == 400, "%s answered %d: %s", refused_paths[_i], status, reply);
	ck_assert_msg(strstr(reply, "\"invalid_path\""), "%s: %s", refused_paths[_i], reply);
}
END_TEST

START_TEST(test_path_too_long)
{
	char path[CC_HTTP_MAX_PATH + 16], reply[4096];
	struct cc_http_server_options o = { .port = 0, .connection_memory_limit = 64 * 1024,
					    .routes = routes, .n_routes = CC_ARRAY_LEN(routes) };
	struct cc_http_server *big = cc_http_server_start(&o);
	char req[CC_HTTP_MAX_PATH + 128];
	int n;

	ck_assert_ptr_nonnull(big);
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
	ck_assert_int_gt(cc_test_raw(cc_http_server_port(big), req, (size_t)n, false, reply,
				     sizeof(reply), 5000), 0);
	ck_assert_msg(cc_test_raw_status(reply) == 414, "%s", reply);
	ck_assert_ptr_nonnull(strstr(reply, "\"path_too_long\""));
	cc_http_server_stop(big);
}
END_TEST

/*
 * A raw request for /v1/queue/x of exactly `total` bytes (request line,
 * headers, blank line) in `lines` header lines: Host, Connection, then
 * X-N: 1 lines and one X-Pad line that fills the rest. Caller frees.
 */
static char *request_of_size(size_t total, int lines)
{
	static const char head[] = "GET /v1/queue/x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n";
	char *req = malloc(total + 1);
	size_t used = sizeof(head) - 1;

	ck_assert_ptr_nonnull(req);
	memcpy(req, head, used);
	for (int i = 0; i < lines - 3; i++)
		used += (size_t)snprintf(req + used, total + 1 - used, "X-%d: 1\r\n", i);
	ck_assert_uint_le(used + sizeof("X-Pad: \r\n\r\n") - 1, total);
	used += (size_t)snprintf(req + used, total + 1 - used, "X-Pad: ");
	memset(req + used, 'p', total - used - 4);
	memcpy(req + total - 4, "\r\n\r\n", 5);
	return req;
}

/* Sends request_of_size(total, lines) and returns the status. */
static int raw_status_of_size(size_t total, int lines, char *reply, size_t cap)
{
	char *req = request_of_size(total, lines);
	ck_assert_int_gt(cc_test_raw(port, req, total, false, reply, cap, 5000), 0);
	free(req);
	return cc_test_raw_status(reply);
}

/* The caps are exact: at the limit the request is served, one past it is 431 JSON. */
START_TEST(test_header_caps_are_exact)
{
	char reply[4096];
	size_t cap = CC_HTTP_DEFAULT_MAX_HEADER_BYTES;
	int n = CC_HTTP_DEFAULT_MAX_HEADERS;

	ck_assert_int_eq(raw_status_of_size(cap, 4, reply, sizeof(reply)), 200);
	ck_assert_int_eq(raw_status_of_size(cap + 1, 4, reply, sizeof(reply)), 431);
	ck_assert_msg(strstr(reply, "\"headers_too_large\""), "%s", reply);
	ck_assert_int_eq(raw_status_of_size(4096, n, reply, sizeof(reply)), 200);
	ck_assert_int_eq(raw_status_of_size(4096, n + 1, reply, sizeof(reply)), 431);
	ck_assert_msg(strstr(reply, "\"headers_too_large\""), "%s", reply);
}
END_TEST

/* Caps set by the caller are honoured; a pool too small for them is refused. */
START_TEST(test_header_caps_configurable)
{
	struct cc_http_server_options o = { .port = 0, .max_header_bytes = 2048, .max_headers = 5,
					    .routes = routes, .n_routes = CC_ARRAY_LEN(routes) };
	struct cc_http_server *small = cc_http_server_start(&o);
	int saved = port;
	char reply[4096];

	ck_assert_ptr_nonnull(small);
	port = cc_http_server_port(small);
	ck_assert_int_eq(raw_status_of_size(2048, 5, reply, sizeof(reply)), 200);
	ck_assert_int_eq(raw_status_of_size(2049, 5, reply, sizeof(reply)), 431);
	ck_assert_int_eq(raw_status_of_size(1024, 6, reply, sizeof(reply)), 431);
	port = saved;
	cc_http_server_stop(small);

	o.connection_memory_limit = 4095; /* under 2 x 2048 */
	ck_assert_ptr_null(cc_http_server_start(&o));
}
END_TEST

/* Fills hdr with n "X-H<i>: 1" lines (curl's header list takes them CRLF-joined). */
static void many_small_headers(char *hdr, size_t cap, int n)
{
	size_t used = 0;
	hdr[0] = '\0';
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(hdr + used, cap - used, "%sX-H%d: 1", i ? "\r\n" : "", i);
	ck_assert_uint_lt(used + 1, cap);
}

/*
 * Oversized headers get the JSON 431, never libmicrohttpd's HTML page,
 * however far past the library's pool they go, and the server keeps
 * answering.
 */
START_TEST(test_oversized_headers)
{
	size_t big = 400 * 1024;
	char *hdr = malloc(big + 16), *path = malloc(big + 16);
	const char *const hdrs[] = { hdr, NULL };
	struct cc_test_request rq = { .path = "/v1/queue/x", .headers = hdrs };
	struct cc_test_reply r;

	/* One 40 KB header. */
	snprintf(hdr, big, "X-Big: ");
	memset(hdr + 7, 'a', 40000);
	hdr[40007] = '\0';
	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	assert_error_shape(&r, 431, "headers_too_large", false, -1);
	cc_test_reply_release(&r);

	/* 2,000 small headers (about 24 KB): over both caps, within the pool. */
	many_small_headers(hdr, big, 2000);
	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	assert_error_shape(&r, 431, "headers_too_large", false, -1);
	cc_test_reply_release(&r);

	/* A 12 KB path is under the header cap: our own 414, in JSON. */
	path[0] = '/';
	memset(path + 1, 'p', 12000);
	path[12001] = '\0';
	rq = (struct cc_test_request){ .path = path };
	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	assert_error_shape(&r, 414, "path_too_long", false, -1);
	cc_test_reply_release(&r);

	/* Far past libmicrohttpd's pool: the front refuses it first, in JSON too. */
	rq = (struct cc_test_request){ .path = "/v1/queue/x", .headers = hdrs };
	snprintf(hdr, big, "X-Huge: ");
	memset(hdr + 8, 'a', big - 8);
	hdr[big] = '\0';
	ck_assert_int_eq(cc_test_fetch(port, &rq, &r), 0);
	assert_error_shape(&r, 431, "headers_too_large", false, -1);
	cc_test_reply_release(&r);

	r = get("/v1/queue/still-alive");
	ck_assert_int_eq(r.status, 200);
	cc_test_reply_release(&r);
	free(hdr);
	free(path);
}
END_TEST

#define CLIENTS 16
#define PER_CLIENT 25

struct client {
	int id;
	int ok; /* answers that matched */
};

static void *client_run(void *arg)
{
	struct client *c = arg;
	char path[64], want[64];
	for (int i = 0; i < PER_CLIENT; i++) {
		struct cc_test_request rq = { .path = path };
		struct cc_test_reply r;
		snprintf(path, sizeof(path), "/v1/queue/c%d-%d", c->id, i);
		snprintf(want, sizeof(want), "\"id\":\"c%d-%d\"", c->id, i);
		if (cc_test_fetch(port, &rq, &r) == 0 && r.status == 200 && strstr(r.body, want))
			c->ok++;
		else
			fprintf(stderr, "client %d: %ld %s %s\n", c->id, r.status, r.error, r.body);
		cc_test_reply_release(&r);
	}
	return NULL;
}

START_TEST(test_parallel_requests_all_answered)
{
	pthread_t t[CLIENTS];
	struct client c[CLIENTS];
	char *text, line[256];
	int total = 0;

	for (int i = 0; i < CLIENTS; i++) {
		c[i] = (struct client){ .id = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, client_run, &c[i]), 0);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(t[i], NULL);
		total += c[i].ok;
	}
	ck_assert_int_eq(total, CLIENTS * PER_CLIENT);
	/* Counted under the pattern, never the raw path. */
	text = cc_metrics_render();
	snprintf(line, sizeof(line),
		 "cosmic_clash_http_requests_total{route=\"/v1/queue/{id}\",method=\"GET\",status=\"200\"} %d\n",
		 CLIENTS * PER_CLIENT);
	ck_assert_msg(strstr(text, line), "no %s in\n%.3000s", line, text);
	snprintf(line, sizeof(line),
		 "cosmic_clash_http_request_duration_seconds_count{route=\"/v1/queue/{id}\"} %d\n",
		 CLIENTS * PER_CLIENT);
	ck_assert_msg(strstr(text, line), "no %s in\n%.3000s", line, text);
	ck_assert_ptr_null(strstr(text, "c0-0"));
	free(text);
}
END_TEST

#define OVERLAP 6

static void *rendezvous_client(void *arg)
{
	struct cc_test_reply *r = arg;
	struct cc_test_request rq = { .path = "/rendezvous" };
	cc_test_fetch(port, &rq, r);
	return NULL;
}

/* Handlers block (as on a database) without blocking each other. */
START_TEST(test_blocking_handlers_overlap)
{
	pthread_t t[OVERLAP];
	struct cc_test_reply r[OVERLAP];

	rv_inside = 0;
	rv_want = OVERLAP;
	for (int i = 0; i < OVERLAP; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, rendezvous_client, &r[i]), 0);
	for (int i = 0; i < OVERLAP; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < OVERLAP; i++) {
		ck_assert_msg(r[i].status == 200, "client %d: %ld %s (inside at once: %d)", i,
			      r[i].status, r[i].body, rv_inside);
		cc_test_reply_release(&r[i]);
	}
}
END_TEST

START_TEST(test_status_metrics)
{
	struct cc_test_reply r;
	char *text;
	static const char *const want[] = {
		"cosmic_clash_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"} 2\n",
		"cosmic_clash_http_requests_total{route=\"/error\",method=\"POST\",status=\"405\"} 1\n",
		"cosmic_clash_http_requests_total{route=\"invalid\",method=\"GET\",status=\"400\"} 1\n",
		"cosmic_clash_http_requests_total{route=\"/error\",method=\"GET\",status=\"422\"} 1\n",
		"cosmic_clash_http_requests_total{route=\"unmatched\",method=\"OTHER\",status=\"404\"} 1\n",
	};
	struct cc_test_request post = { .method = "POST", .path = "/error" };
	struct cc_test_request odd = { .method = "BREW", .path = "/v1/nope" };
	char reply[4096];

	cc_test_reply_release((r = get("/v1/nope/1"), &r));
	cc_test_reply_release((r = get("/v1/nope/2"), &r));
	cc_test_reply_release((r = get("/error"), &r));
	ck_assert_int_eq(cc_test_fetch(port, &post, &r), 0);
	cc_test_reply_release(&r);
	ck_assert_int_eq(cc_test_fetch(port, &odd, &r), 0);
	cc_test_reply_release(&r);
	ck_assert_int_eq(raw_get_status("/a%2fb", reply, sizeof(reply)), 400);
	/* Counted before the reply is sent, so no waiting is needed. */
	text = cc_metrics_render();
	for (size_t i = 0; i < CC_ARRAY_LEN(want); i++)
		ck_assert_msg(strstr(text, want[i]), "no %s in\n%.3000s", want[i], text);
	ck_assert_ptr_null(strstr(text, "nope"));
	free(text);
}
END_TEST

static int dummy(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)resp;
	(void)ctx;
	return 0;
}

struct bad_start {
	const char *why;
	const char *bind;
	int port;
	struct cc_http_route route;
};

static const struct bad_start bad_starts[] = {
	{ "no leading slash", NULL, 0, { "GET", "v1/x", dummy } },
	{ "empty capture", NULL, 0, { "GET", "/v1/{}", dummy } },
	{ "upper-case capture", NULL, 0, { "GET", "/v1/{Id}", dummy } },
	{ "duplicate capture", NULL, 0, { "GET", "/v1/{id}/{id}", dummy } },
	{ "half a capture", NULL, 0, { "GET", "/v1/{id", dummy } },
	{ "dot-dot literal", NULL, 0, { "GET", "/v1/..", dummy } },
	{ "lower-case method", NULL, 0, { "get", "/v1/x", dummy } },
	{ "no handler", NULL, 0, { "GET", "/v1/x", NULL } },
	{ "too many segments", NULL, 0, { "GET", "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17", dummy } },
	{ "bad bind", "localhost", 0, { "GET", "/x", dummy } },
	{ "bad port", NULL, 70000, { "GET", "/x", dummy } },
	{ "negative port", NULL, -1, { "GET", "/x", dummy } },
};

START_TEST(test_bad_start_refused)
{
	const struct bad_start *b = &bad_starts[_i];
	struct cc_http_server_options o = { .bind = b->bind, .port = b->port, .routes = &b->route,
					    .n_routes = 1 };
	struct cc_http_server *s = cc_http_server_start(&o);
	ck_assert_msg(s == NULL, "started despite %s", b->why);
	cc_http_server_stop(NULL);
}
END_TEST

START_TEST(test_port_in_use_refused)
{
	struct cc_http_server_options o = { .port = port, .routes = routes, .n_routes = 1 };
	ck_assert_ptr_null(cc_http_server_start(&o));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("http_server");
	TCase *tc = tcase_create("loopback");
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_checked_fixture(tc, start_server, stop_server);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_routing_and_params);
	tcase_add_loop_test(tc, test_not_found_and_method_not_allowed, 0, (int)CC_ARRAY_LEN(status_cases));
	tcase_add_test(tc, test_body_within_cap);
	tcase_add_test(tc, test_body_over_cap_by_content_length);
	tcase_add_test(tc, test_body_over_cap_chunked);
	tcase_add_test(tc, test_error_shapes);
	tcase_add_loop_test(tc, test_error_from_result, 0, (int)CC_ARRAY_LEN(result_cases));
	tcase_add_test(tc, test_response_header_rules);
	tcase_add_test(tc, test_request_id);
	tcase_add_loop_test(tc, test_refused_paths, 0, (int)CC_ARRAY_LEN(refused_paths));
	tcase_add_test(tc, test_path_too_long);
	tcase_add_test(tc, test_header_caps_are_exact);
	tcase_add_test(tc, test_header_caps_configurable);
	tcase_add_test(tc, test_oversized_headers);
	tcase_add_test(tc, test_parallel_requests_all_answered);
	tcase_add_test(tc, test_blocking_handlers_overlap);
	tcase_add_test(tc, test_status_metrics);
	tcase_add_loop_test(tc, test_bad_start_refused, 0, (int)CC_ARRAY_LEN(bad_starts));
	tcase_add_test(tc, test_port_in_use_refused);
	suite_add_tcase(s, tc);
	rc = cc_test_run_suite(s);
	curl_global_cleanup();
	return rc;
}
