/*
 * http_server.c - routes, limits and bookkeeping over libmicrohttpd 0.9.75.
 *
 * Life of a request in libmicrohttpd's callbacks, all on the connection's
 * thread:
 *   uri_logged()      request line read: allocate struct request_state and
 *                     note the raw URI (the only place MHD shows it before
 *                     percent-decoding) and the start time;
 *   access() first    headers read: request id, header caps, path checks,
 *                     routing, Content-Length cap; refusals are answered here;
 *   access() n times  body chunks: kept up to the cap, then discarded;
 *   access() last     body complete: run the handler, queue the answer;
 *   completed()       log one line, count metrics, free the state.
 */
#include "sys/charset.h"
#include "sys/http_server.h"
#include "sys/http_front.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <sodium.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/ws.h"
#include "sys/banned.h"

struct compiled_route {
	char *method;			   /* owned copy */
	char *pattern;			   /* owned copy, for logs and labels */
	char *storage;			   /* owned: pattern split into NUL-ended segments */
	cc_http_handler handler;
	size_t n_segs;
	const char *segs[CC_HTTP_MAX_SEGMENTS];	 /* literal text, or the capture name */
	bool is_param[CC_HTTP_MAX_SEGMENTS];
};

struct cc_http_server {
	struct MHD_Daemon *daemon;
	char name[32];			/* for logs */
	int port;			/* actually bound */
	size_t max_body;		/* body cap in bytes */
	size_t max_header_bytes;	/* request line + headers cap */
	unsigned max_headers;		/* header line cap */
	void *ctx;			/* handed to handlers */
	struct compiled_route *routes;	/* n_routes of them, owned */
	size_t n_routes;
	struct cc_metric *requests;	/* cosmic_clash_http_requests_total */
	struct cc_metric *duration;	/* cosmic_clash_http_request_duration_seconds */
	struct cc_http_front *front;	/* accept loop, caps, deadlines, head check */
	bool keep_alive;		/* false: every answer closes its connection */
};

/* Everything about one request; lives from uri_logged() to completed(). */
struct request_state {
	struct cc_http_server *server;
	int64_t start_ns;		/* cc_clock_ns() at the request line */
	char *raw_uri;			/* as sent, owned */
	bool started;			/* access() saw the headers */
	bool too_big;			/* body went over the cap: discarding */
	const struct compiled_route *route; /* matched route, or NULL */
	const char *route_label;	/* pattern, "unmatched", "invalid" */
	char method[16];		/* copy for the completion log ("" if too long) */
	char *path;			/* decoded path, owned */
	char *segbuf;			/* decoded path split into segments, owned */
	char *body;			/* owned, body_len bytes + NUL */
	size_t body_len, body_cap;
	uint64_t bytes_in;		/* body bytes received, kept or not */
	size_t bytes_out;		/* body bytes answered */
	int status;			/* answered status, 0 = none yet */
	bool upgraded;			/* the socket went to a WebSocket hub */
	bool has_body;			/* the head announced a body (Content-Length > 0 or chunked) */
	bool body_done;			/* the body was read to its end (on_complete) */
	bool http10;			/* an HTTP/1.0 request */
	bool kept;			/* the answer left the connection open for another request */
	char request_id[CC_HTTP_REQUEST_ID_MAX + 1];
	char remote[INET6_ADDRSTRLEN];
	struct cc_http_request req;
	struct cc_http_response resp;
};

static const char oom_body[] =
	"{\"error\":{\"code\":\"out_of_memory\",\"message\":\"the server is out of memory\","
	"\"retryable\":true}}";

/* ---- responses ------------------------------------------------------------ */

/* Drops the response body (headers stay). */
static void response_clear_body(struct cc_http_response *resp)
{
	cJSON_Delete(resp->json);
	free(resp->body);
	resp->json = NULL;
	resp->body = NULL;
	resp->body_len = 0;
	resp->content_type[0] = '\0';
	resp->oom__ = false;
}

/* Frees what the response owns. */
static void response_release(struct cc_http_response *resp)
{
	response_clear_body(resp);
}

void cc_http_respond_json(struct cc_http_response *resp, int status, cJSON *body)
{
	response_clear_body(resp);
	resp->status = status;
	resp->json = body;
	if (!body) {
		resp->status = 503;
		resp->oom__ = true;
	}
}

int cc_http_respond_text(struct cc_http_response *resp, int status, const char *content_type,
			 const char *text, size_t len)
{
	response_clear_body(resp);
	resp->status = status;
	snprintf(resp->content_type, sizeof(resp->content_type), "%s",
		 content_type ? content_type : "text/plain; charset=utf-8");
	resp->body = malloc(len + 1);
	if (!resp->body) {
		resp->status = 503;
		resp->oom__ = true;
		return CC_ENOMEM;
	}
	if (len)
		memcpy(resp->body, text, len);
	resp->body[len] = '\0';
	resp->body_len = len;
	return 0;
}

/* True for an RFC 9110 token character. */
static bool token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

int cc_http_response_header(struct cc_http_response *resp, const char *name, const char *value)
{
	static const char *const owned[] = { "Content-Type",  "Content-Length",
					     "Transfer-Encoding", "Connection",
					     "Cache-Control", "X-Request-Id" };
	size_t nlen = name ? strlen(name) : 0, vlen = value ? strlen(value) : 0, slot;

	if (nlen == 0 || !value)
		return CC_EINVAL;
	if (nlen > CC_HTTP_HEADER_NAME_MAX || vlen > CC_HTTP_HEADER_VALUE_MAX)
		return CC_ETOOBIG;
	for (size_t i = 0; i < nlen; i++)
		if (!token_char((unsigned char)name[i]))
			return CC_EINVAL;
	for (size_t i = 0; i < vlen; i++)
		if ((unsigned char)value[i] < 0x20 && value[i] != '\t')
			return CC_EINVAL; /* CR, LF: no header injection */
	for (size_t i = 0; i < CC_ARRAY_LEN(owned); i++)
		if (strcasecmp(name, owned[i]) == 0)
			return CC_EINVAL;
	for (slot = 0; slot < resp->n_headers; slot++)
		if (strcasecmp(resp->headers[slot].name, name) == 0)
			break;
	if (slot == CC_HTTP_MAX_HEADERS)
		return CC_ETOOBIG;
	memcpy(resp->headers[slot].name, name, nlen + 1);
	memcpy(resp->headers[slot].value, value, vlen + 1);
	if (slot == resp->n_headers)
		resp->n_headers++;
	return 0;
}

/* Builds the error object; NULL on OOM. */
static cJSON *error_object(const char *code, const char *message, bool retryable, cJSON **inner)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(root, "error");

	if (!err || !cJSON_AddStringToObject(err, "code", code ? code : "error") ||
	    !cJSON_AddStringToObject(err, "message", message ? message : "") ||
	    !cJSON_AddBoolToObject(err, "retryable", retryable)) {
		cJSON_Delete(root);
		return NULL;
	}
	*inner = err;
	return root;
}

void cc_http_error(struct cc_http_response *resp, int status, const char *code,
		   const char *message, bool retryable)
{
	cJSON *inner;
	cc_http_respond_json(resp, status, error_object(code, message, retryable, &inner));
}

void cc_http_error_too_many(struct cc_http_response *resp, const char *code, const char *message,
			    unsigned retry_after_seconds)
{
	cJSON *inner, *root = error_object(code, message, true, &inner);
	char seconds[16];

	if (root && !cJSON_AddNumberToObject(inner, "retry_after_seconds", retry_after_seconds)) {
		cJSON_Delete(root);
		root = NULL;
	}
	cc_http_respond_json(resp, 429, root);
	snprintf(seconds, sizeof(seconds), "%u", retry_after_seconds);
	if (root && cc_http_response_header(resp, "Retry-After", seconds) != 0)
		cc_http_error(resp, 500, "internal_error", "too many response headers", false);
}

void cc_http_error_unavailable(struct cc_http_response *resp, const char *code,
			       const char *message)
{
	cc_http_error(resp, 503, code, message, true);
}

void cc_http_error_from_result(struct cc_http_response *resp, int rc)
{
	switch (rc) {
	case CC_EINVAL:
		cc_http_error(resp, 400, "invalid_request", "the request is invalid", false);
		break;
	case CC_EUNAUTHORIZED:
		cc_http_error(resp, 401, "unauthorized", "a valid session is required", false);
		break;
	case CC_EFORBIDDEN:
		cc_http_error(resp, 403, "forbidden", "this action is not allowed", false);
		break;
	case CC_ENOTFOUND:
		cc_http_error(resp, 404, "not_found", "no such resource", false);
		break;
	case CC_ECONFLICT:
		cc_http_error(resp, 409, "conflict", "the resource changed; reload and retry", false);
		break;
	case CC_ESTATE:
		cc_http_error(resp, 409, "invalid_state", "not allowed in the resource's state", false);
		break;
	case CC_ETOOBIG:
		cc_http_error(resp, 413, "body_too_large", "the request body is too large", false);
		break;
	case CC_ENOMEM:
	case CC_EUNAVAILABLE:
	case CC_ETIMEOUT:
	case CC_ESERIALIZATION:
	case CC_ERETRY_EXHAUSTED:
	case CC_EIO:
	case CC_EDB:
		cc_http_error_unavailable(resp, "service_unavailable",
					  "a dependency is unavailable; retry later");
		break;
	case CC_ENOTIMPL:
		cc_http_error(resp, 503, "not_configured", "this feature is not configured", false);
		break;
	default:
		cc_http_error(resp, 500, "internal_error", "internal error", false);
		break;
	}
}

/* ---- request accessors ------------------------------------------------- */

const char *cc_http_param(const struct cc_http_request *req, const char *name)
{
	for (size_t i = 0; name && i < req->n_params__; i++)
		if (strcmp(req->param_names__[i], name) == 0)
			return req->param_values__[i];
	return NULL;
}

const char *cc_http_query(const struct cc_http_request *req, const char *name)
{
	return name ? MHD_lookup_connection_value(req->conn__, MHD_GET_ARGUMENT_KIND, name) : NULL;
}

const char *cc_http_header(const struct cc_http_request *req, const char *name)
{
	return name ? MHD_lookup_connection_value(req->conn__, MHD_HEADER_KIND, name) : NULL;
}

struct header_join {
	const char *name;
	char *buf;
	size_t cap, len; /* len: bytes the whole join needs (may pass cap) */
	unsigned n;
};

static enum MHD_Result join_named(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				  const char *value, size_t value_size)
{
	struct header_join *j = cls;
	(void)kind;
	if (key_size != strlen(j->name) || strncasecmp(key, j->name, key_size) != 0 || !value)
		return MHD_YES;
	if (j->n++) {
		if (j->len + 2 < j->cap)
			memcpy(j->buf + j->len, ", ", 2);
		j->len += 2;
	}
	if (j->len + value_size < j->cap)
		memcpy(j->buf + j->len, value, value_size);
	j->len += value_size;
	return MHD_YES;
}

size_t cc_http_header_join(const struct cc_http_request *req, const char *name, char *buf, size_t cap)
{
	struct header_join j = { name, buf, cap, 0, 0 };
	if (!name || !buf || cap == 0)
		return 0;
	MHD_get_connection_values_n(req->conn__, MHD_HEADER_KIND, join_named, &j);
	buf[j.len < cap ? j.len : 0] = '\0';
	return j.len;
}

/* ---- paths and routes ---------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decodes the path part of a raw request URI into a malloc'd string.
 * Returns 0, 400 (refused: see the header), 414 (too long) or 503 (OOM);
 * *out is set only on 0.
 */
static int decode_path(const char *raw, char **out)
{
	size_t len = strcspn(raw, "?");
	char *path;
	size_t n = 0;

	if (len == 0 || raw[0] != '/')
		return 400;
	if (len > CC_HTTP_MAX_PATH)
		return 414;
	path = malloc(len + 1);
	if (!path)
		return 503;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)raw[i];
		if (c == '%') {
			int hi = i + 2 < len ? hexval(raw[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(raw[i + 2]) : -1;
			if (hi < 0 || lo < 0)
				goto out_refuse;
			c = (unsigned char)(hi * 16 + lo);
			if (c == '/')
				goto out_refuse; /* %2f would smuggle a separator */
			i += 2;
		}
		if (c < 0x20 || c > 0x7e)
			goto out_refuse;
		path[n++] = (char)c;
	}
	path[n] = '\0';
	if (strstr(path, ".."))
		goto out_refuse;
	*out = path;
	return 0;

out_refuse:
	free(path);
	return 400;
}

/*
 * Splits "/a/b" into {"a","b"} in buf (a copy the caller owns). "/" is one
 * empty segment. Returns the count, or -1 when there are too many.
 */
static int split_segments(char *buf, const char **segs, size_t max)
{
	size_t n = 0;
	char *p = buf + 1; /* past the leading '/' */

	for (;;) {
		char *slash = strchr(p, '/');
		if (n == max)
			return -1;
		segs[n++] = p;
		if (!slash)
			return (int)n;
		*slash = '\0';
		p = slash + 1;
	}
}

/* True when route matches the segments; fills the request's captures. */
static bool route_matches(const struct compiled_route *r, const char *const *segs, size_t n,
			  struct cc_http_request *req)
{
	size_t n_params = 0;

	if (r->n_segs != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!r->is_param[i]) {
			if (strcmp(r->segs[i], segs[i]) != 0)
				return false;
			continue;
		}
		if (!*segs[i])
			return false; /* a capture is never empty */
		if (req) {
			req->param_names__[n_params] = r->segs[i];
			req->param_values__[n_params] = segs[i];
		}
		n_params++;
	}
	if (req)
		req->n_params__ = n_params;
	return true;
}

/* Validates one pattern and fills r (storage owned by r). NULL or a reason. */
static const char *compile_route(const struct cc_http_route *in, struct compiled_route *r)
{
	size_t n_params = 0;
	int n;

	if (!in->method || !*in->method || strlen(in->method) > 15 || !in->handler)
		return "route needs a method (<= 15 bytes) and a handler";
	for (const char *p = in->method; *p; p++)
		if (*p < 'A' || *p > 'Z')
			return "route method must be upper-case letters";
	if (!in->pattern || in->pattern[0] != '/' || strlen(in->pattern) > CC_HTTP_MAX_PATH)
		return "route pattern must start with '/'";
	r->handler = in->handler;
	r->method = strdup(in->method);
	r->pattern = strdup(in->pattern);
	r->storage = strdup(in->pattern);
	if (!r->method || !r->pattern || !r->storage)
		return "out of memory";
	n = split_segments(r->storage, r->segs, CC_HTTP_MAX_SEGMENTS);
	if (n < 0)
		return "route pattern has too many segments";
	r->n_segs = (size_t)n;
	for (size_t i = 0; i < r->n_segs; i++) {
		char *s = (char *)r->segs[i];
		size_t len = strlen(s);
		if (len >= 2 && s[0] == '{' && s[len - 1] == '}') {
			s[len - 1] = '\0';
			r->segs[i] = ++s;
			r->is_param[i] = true;
			if (!*s || ++n_params > CC_HTTP_MAX_PARAMS)
				return "route has an empty capture name or too many captures";
			if (!cc_charset_all(s, strlen(s), CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "_"))
				return "capture names are [a-z0-9_]";
			for (size_t j = 0; j < i; j++)
				if (r->is_param[j] && strcmp(r->segs[j], s) == 0)
					return "duplicate capture name";
			continue;
		}
		for (const char *p = s; *p; p++)
			if (*p < 0x21 || *p > 0x7e || strchr("{}%?", *p))
				return "literal segments are printable ASCII without {}%?";
		if (strstr(s, ".."))
			return "literal segment contains ..";
	}
	return NULL;
}

static void routes_free(struct compiled_route *routes, size_t n)
{
	for (size_t i = 0; routes && i < n; i++) {
		free(routes[i].method);
		free(routes[i].pattern);
		free(routes[i].storage);
	}
	free(routes);
}

/* ---- the request's life ---------------------------------------------------- */

static bool valid_request_id(const char *id)
{
	return cc_charset_valid(id, CC_HTTP_REQUEST_ID_MAX, CC_CHARSET_ALNUM, "._-");
}

static void set_request_id(struct request_state *st, struct MHD_Connection *conn)
{
	const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
	unsigned char rnd[16];

	if (valid_request_id(given)) {
		snprintf(st->request_id, sizeof(st->request_id), "%s", given);
		return;
	}
	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2hex(st->request_id, sizeof(st->request_id), rnd, sizeof(rnd));
}

static void set_remote(struct request_state *st, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(st->remote, sizeof(st->remote), "unknown");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
			  st->remote, sizeof(st->remote));
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
			  st->remote, sizeof(st->remote));
}

/* The metrics label for a method: the common ones, else "OTHER". */
static const char *method_label(const char *method)
{
	static const char *const known[] = { "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS" };
	for (size_t i = 0; i < CC_ARRAY_LEN(known); i++)
		if (strcmp(method, known[i]) == 0)
			return known[i];
	return "OTHER";
}

/* Seconds since the request line arrived. */
static double elapsed(const struct request_state *st)
{
	return (double)(cc_clock_ns() - st->start_ns) / 1e9;
}

/*
 * The access log line and metrics of an answered request. Done as the
 * answer is queued, not when MHD finishes sending it, so a client that has
 * its reply can rely on being counted (tests, /metrics after a request).
 */
static void record_answer(struct request_state *st)
{
	const struct cc_http_server *s = st->server;
	double seconds = elapsed(st);
	char status[16];

	snprintf(status, sizeof(status), "%d", st->status);
	cc_log_info("http_request", CC_LOG_STR("server", s->name), CC_LOG_STR("method", st->method),
		    CC_LOG_STR("route", st->route_label), CC_LOG_STR("path", st->path),
		    CC_LOG_INT("status", st->status), CC_LOG_DBL("duration_ms", seconds * 1000.0),
		    CC_LOG_STR("request_id", st->request_id), CC_LOG_STR("remote", st->remote),
		    CC_LOG_INT("bytes_in", st->bytes_in), CC_LOG_INT("bytes_out", st->bytes_out));
	cc_metric_add(s->requests,
		      (const char *const[]){ st->route_label, method_label(st->method), status }, 1);
	cc_metric_observe(s->duration, (const char *const[]){ st->route_label }, seconds);
}

/* The front's registration of a connection (set when the library started it). */
static struct cc_http_front_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* The hub is done with an upgraded socket: the library closes it (and its front slot). */
static void ws_release(void *cls)
{
	MHD_upgrade_action(cls, MHD_UPGRADE_ACTION_CLOSE);
}

/* The 101 is out: the socket goes to the hub (on the connection's thread, which then ends). */
static void upgraded(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
		     size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct request_state *st = cls;
	(void)con_cls;
	cc_http_front_conn_phase(st->server->front, conn_of(conn), CC_HTTP_PHASE_UPGRADED);
	st->upgraded = true;
	int rc = cc_ws_hub_adopt(st->resp.ws_hub__, sock, extra_in, extra_in_size, st->remote,
				 st->resp.ws_user__, ws_release, urh, NULL);
	if (rc != 0) {
		cc_log_warn("ws_adopt_refused", CC_LOG_STR("server", st->server->name),
			    CC_LOG_STR("remote", st->remote), CC_LOG_STR("reason", cc_strerror(rc)));
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
	}
}

/* True when the comma-separated list holds token (case-insensitive). */
static bool list_has_token(const char *list, const char *token)
{
	size_t tl = strlen(token);
	for (const char *p = list; p && *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if ((size_t)(t - p) == tl && strncasecmp(p, token, tl) == 0)
			return true;
		p = e;
	}
	return false;
}

struct named_count {
	const char *name;
	unsigned n;
};

static enum MHD_Result count_named(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				   const char *value, size_t value_size)
{
	struct named_count *t = cls;
	(void)kind;
	(void)value;
	(void)value_size;
	if (key_size == strlen(t->name) && strncasecmp(key, t->name, key_size) == 0)
		t->n++;
	return MHD_YES;
}

/* How many times the request carries header name. */
static unsigned header_times(struct MHD_Connection *conn, const char *name)
{
	struct named_count t = { name, 0 };
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, count_named, &t);
	return t.n;
}

int cc_http_respond_websocket(const struct cc_http_request *req, struct cc_http_response *resp,
			      struct cc_ws_hub *hub, const char *protocol, void *user)
{
	const char *up = cc_http_header(req, "Upgrade");
	const char *conn = cc_http_header(req, "Connection");
	const char *ver = cc_http_header(req, "Sec-WebSocket-Version");
	const char *key = cc_http_header(req, "Sec-WebSocket-Key");
	char accept[29];
	if (strcmp(req->method, "GET") != 0 || !up || !list_has_token(up, "websocket") || !conn ||
	    !list_has_token(conn, "upgrade")) {
		cc_http_error(resp, 400, "invalid_upgrade",
			      "a WebSocket upgrade needs GET, Upgrade: websocket and Connection: Upgrade",
			      false);
		return CC_EINVAL;
	}
	/* RFC 6455 4.1: each of these appears once; with two, which would we believe? */
	if (header_times(req->conn__, "Sec-WebSocket-Key") > 1 || header_times(req->conn__, "Sec-WebSocket-Version") > 1) {
		cc_http_error(resp, 400, "invalid_upgrade",
			      "Sec-WebSocket-Key and Sec-WebSocket-Version must each appear once", false);
		return CC_EINVAL;
	}
	if (!ver || strcmp(ver, "13") != 0) {
		cc_http_error(resp, 426, "upgrade_required", "Sec-WebSocket-Version must be 13", false);
		if (cc_http_response_header(resp, "Sec-WebSocket-Version", "13") != 0)
			cc_http_error(resp, 500, "internal_error", "could not answer", false);
		return CC_EINVAL;
	}
	if (!key || cc_ws_accept_key(key, accept) != 0) {
		cc_http_error(resp, 400, "invalid_upgrade",
			      "Sec-WebSocket-Key must be the base64 of 16 bytes", false);
		return CC_EINVAL;
	}
	response_clear_body(resp);
	if (cc_http_response_header(resp, "Sec-WebSocket-Accept", accept) != 0 ||
	    (protocol && cc_http_response_header(resp, "Sec-WebSocket-Protocol", protocol) != 0)) {
		cc_http_error(resp, 500, "internal_error", "bad WebSocket subprotocol", false);
		return CC_EINVAL;
	}
	resp->status = 101;
	resp->ws_hub__ = hub;
	resp->ws_user__ = user;
	return 0;
}

/* True when the request's own Connection header holds token. */
static bool request_connection_has(struct MHD_Connection *conn, const char *token)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION);
	return v && list_has_token(v, token);
}

/* Whether this answer may leave the connection open (see answer()). */
static bool keep_connection(const struct request_state *st, struct MHD_Connection *conn)
{
	return st->server->keep_alive && !st->http10 && (!st->has_body || st->body_done) &&
	       !request_connection_has(conn, "close") &&
	       cc_http_front_conn_reusable(st->server->front, conn_of(conn));
}

/* Queues st->resp on the connection. Returns MHD's verdict. */
static enum MHD_Result answer(struct request_state *st, struct MHD_Connection *conn)
{
	struct cc_http_response *resp = &st->resp;
	struct MHD_Response *r;
	const char *ctype = resp->content_type;
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ret;

	if (resp->status < 100 || resp->status > 599) {
		cc_log_error("http_handler_no_answer", CC_LOG_STR("route", st->route_label),
			     CC_LOG_INT("status", resp->status));
		cc_http_error(resp, 500, "internal_error", "the handler gave no answer", false);
	}
	if (resp->status == 101 && resp->ws_hub__) {
		r = MHD_create_response_for_upgrade(upgraded, st);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "websocket"); /* MHD adds Connection: Upgrade */
		MHD_add_response_header(r, "X-Request-Id", st->request_id);
		for (size_t i = 0; i < resp->n_headers; i++)
			MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value);
		cc_http_front_conn_phase(st->server->front, conn_of(conn), CC_HTTP_PHASE_ANSWERED);
		st->status = 101;
		record_answer(st);
		ret = MHD_queue_response(conn, 101, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (resp->json) {
		text = cJSON_PrintUnformatted(resp->json);
		ctype = "application/json";
		if (!text)
			cc_http_respond_json(resp, 503, NULL);
		else
			len = strlen(text);
	} else if (resp->body) {
		text = resp->body; /* handed to MHD, which frees it */
		len = resp->body_len;
		resp->body = NULL;
	}
	if (resp->oom__) {
		free(text);
		text = NULL;
		r = MHD_create_response_from_buffer(sizeof(oom_body) - 1, (void *)oom_body,
						    MHD_RESPMEM_PERSISTENT);
		len = sizeof(oom_body) - 1;
		ctype = "application/json";
	} else {
		r = MHD_create_response_from_buffer(len, text ? (void *)text : (void *)"",
						    text ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	}
	if (!r) {
		free(text);
		return MHD_NO;
	}
	if (*ctype)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
				resp->cache_control && !resp->json && !resp->oom__ ? resp->cache_control : "no-store");
	MHD_add_response_header(r, "X-Request-Id", st->request_id);
	for (size_t i = 0; i < resp->n_headers; i++)
		MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value);
	/*
	 * Keep the connection only when the front can check the next head
	 * (cc_http_front_conn_next_head) and nothing of this request is left
	 * unread; otherwise say so: the library then closes after the answer.
	 */
	st->kept = keep_connection(st, conn);
	if (!st->kept)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	cc_http_front_conn_phase(st->server->front, conn_of(conn), CC_HTTP_PHASE_ANSWERED);
	st->status = resp->status;
	st->bytes_out = len;
	record_answer(st);
	ret = MHD_queue_response(conn, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* True when method is one of the ", "-separated words of list. */
static bool method_listed(const char *list, const char *method)
{
	size_t len = strlen(method);
	for (const char *p = list; (p = strstr(p, method)) != NULL; p += len)
		if ((p == list || p[-1] == ' ') && (p[len] == '\0' || p[len] == ','))
			return true;
	return false;
}

/*
 * Resolves the route for st->path. Returns 0 (st->route set), 404, or 405
 * with the Allow header already on st->resp.
 */
static int resolve_route(struct request_state *st, const char *method)
{
	const struct cc_http_server *s = st->server;
	const char *segs[CC_HTTP_MAX_SEGMENTS];
	char allow[128] = "";
	int n;

	st->segbuf = strdup(st->path);
	if (!st->segbuf)
		return 503;
	n = split_segments(st->segbuf, segs, CC_HTTP_MAX_SEGMENTS);
	if (n < 0)
		return 404;
	for (size_t i = 0; i < s->n_routes; i++) {
		const struct compiled_route *r = &s->routes[i];
		if (strcmp(r->method, method) == 0 && route_matches(r, segs, (size_t)n, &st->req)) {
			st->route = r;
			st->route_label = r->pattern;
			return 0;
		}
	}
	/* The path may exist under other methods: 405 names them. */
	for (size_t i = 0; i < s->n_routes; i++) {
		const struct compiled_route *r = &s->routes[i];
		size_t used = strlen(allow);
		if (!route_matches(r, segs, (size_t)n, NULL))
			continue;
		if (!*allow)
			st->route_label = r->pattern;
		if (method_listed(allow, r->method))
			continue;
		snprintf(allow + used, sizeof(allow) - used, "%s%s", used ? ", " : "", r->method);
	}
	if (!*allow)
		return 404;
	if (cc_http_response_header(&st->resp, "Allow", allow) != 0)
		return 503;
	return 405;
}

/* Answers a refusal found before the handler; st->route_label is set. */
static enum MHD_Result refuse(struct request_state *st, struct MHD_Connection *conn, int status)
{
	switch (status) {
	case 400:
		cc_http_error(&st->resp, 400, "invalid_path", "the request path is not acceptable",
			      false);
		break;
	case 404:
		cc_http_error(&st->resp, 404, "not_found", "no such route", false);
		break;
	case 405:
		cc_http_error(&st->resp, 405, "method_not_allowed",
			      "the route does not accept this method", false);
		break;
	case 413:
		cc_http_error(&st->resp, 413, "body_too_large", "the request body is too large",
			      false);
		break;
	case 414:
		cc_http_error(&st->resp, 414, "path_too_long", "the request path is too long", false);
		break;
	case 415:
		cc_http_error(&st->resp, 415, "unsupported_media_type",
			      "a request body must be Content-Type: application/json", false);
		break;
	case 4001:
		cc_http_error(&st->resp, 400, "invalid_request",
			      "the Authorization header is given more than once", false);
		break;
	case 431:
		cc_http_error(&st->resp, 431, "headers_too_large",
			      "the request line and headers are too large or too many", false);
		break;
	default:
		cc_http_respond_json(&st->resp, 503, NULL);
		break;
	}
	return answer(st, conn);
}

/* What tally_header() adds up over one request's headers. */
struct header_tally {
	size_t bytes; /* name + value + 4 per header */
	size_t count; /* header lines */
};

static enum MHD_Result tally_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    size_t key_size, const char *value, size_t value_size)
{
	struct header_tally *t = cls;
	(void)kind;
	(void)key;
	(void)value;
	t->bytes += key_size + value_size + 4; /* ": " and CRLF */
	t->count++;
	return MHD_YES;
}

/*
 * True when the request line plus headers stay within the server's caps.
 * The sizes are recomputed from what MHD parsed, which is what the client
 * sent but for the whitespace MHD trims around values: MHD shows us no raw
 * header bytes.
 */
static bool headers_within_caps(const struct request_state *st, struct MHD_Connection *conn,
				const char *method, const char *version)
{
	const struct cc_http_server *s = st->server;
	struct header_tally t = { 0, 0 };
	size_t line = strlen(method) + 1 + strlen(st->raw_uri) + 1 + strlen(version) + 2;

	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, tally_header, &t);
	return t.count <= s->max_headers && line + t.bytes + 2 <= s->max_header_bytes;
}

/*
 * True when ctype names application/json: the media type compared without
 * case, optional whitespace, and no parameter but charset=utf-8.
 */
static bool is_json_type(const char *ctype)
{
	static const char json[] = "application/json";
	const char *p = ctype;

	if (!p)
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, json, sizeof(json) - 1) != 0)
		return false;
	p += sizeof(json) - 1;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return true;
		if (*p++ != ';')
			return false;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "charset=", 8) != 0)
			return false;
		p += 8;
		if (strncasecmp(p, "utf-8", 5) == 0)
			p += 5;
		else if (strncasecmp(p, "\"utf-8\"", 7) == 0)
			p += 7;
		else
			return false;
	}
}

/* First call: headers are in. Either refuses now or prepares for the body. */
static enum MHD_Result on_headers(struct request_state *st, struct MHD_Connection *conn,
				  const char *method, const char *version)
{
	const char *cl;
	int status;

	st->started = true;
	st->http10 = strcmp(version, MHD_HTTP_VERSION_1_1) != 0;
	{
		const char *len = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		st->has_body = (len && strcmp(len, "0") != 0) ||
			       MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	}
	snprintf(st->method, sizeof(st->method), "%s", strlen(method) < sizeof(st->method) ? method : "");
	set_request_id(st, conn);
	set_remote(st, conn);
	st->route_label = "invalid";
	if (!headers_within_caps(st, conn, method, version))
		return refuse(st, conn, 431);
	status = decode_path(st->raw_uri, &st->path);
	if (status != 0)
		return refuse(st, conn, status);
	st->route_label = "unmatched";
	status = resolve_route(st, method);
	if (status != 0)
		return refuse(st, conn, status);
	if (header_times(conn, "Authorization") > 1)
		return refuse(st, conn, 4001); /* which one would we believe? */
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (((cl && strcmp(cl, "0") != 0) ||
	     MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING)) &&
	    !is_json_type(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE)))
		return refuse(st, conn, 415);
	cc_http_front_conn_phase(st->server->front, conn_of(conn), CC_HTTP_PHASE_BODY);
	if (cl) {
		char *end;
		unsigned long long declared;
		errno = 0;
		declared = strtoull(cl, &end, 10);
		/* Refuse before reading a byte: the client learns at once. */
		if (errno == ERANGE || declared > st->server->max_body)
			return refuse(st, conn, 413);
		if (end != cl && *end == '\0' && declared > 0)
			st->body_cap = (size_t)declared + 1;
	}
	return MHD_YES;
}

/*
 * A body chunk: kept while under the cap, discarded after. Returns MHD_NO
 * (close without an answer) only when a refused body runs on too long.
 */
static enum MHD_Result on_body(struct request_state *st, const char *data, size_t size)
{
	size_t max = st->server->max_body;

	st->bytes_in += size;
	if (st->too_big || st->body_len + size > max) {
		st->too_big = true;
		free(st->body);
		st->body = NULL;
		st->body_len = 0;
		return st->bytes_in > (uint64_t)max + CC_HTTP_DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	if (st->body_len + size + 1 > st->body_cap || !st->body) {
		size_t cap = st->body_cap > st->body_len + size + 1 ? st->body_cap : 4096;
		char *grown;
		while (cap < st->body_len + size + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		grown = realloc(st->body, cap);
		if (!grown)
			return MHD_NO;
		st->body = grown;
		st->body_cap = cap;
	}
	memcpy(st->body + st->body_len, data, size);
	st->body_len += size;
	st->body[st->body_len] = '\0';
	return MHD_YES;
}

/* Last call: the body is complete. Runs the handler and answers. */
static enum MHD_Result on_complete(struct request_state *st, struct MHD_Connection *conn,
				   const char *method)
{
	struct cc_http_request *req = &st->req;
	int rc;

	if (st->too_big)
		return refuse(st, conn, 413);
	st->body_done = true;
	cc_http_front_conn_phase(st->server->front, conn_of(conn), CC_HTTP_PHASE_HANDLER);
	req->method = method;
	req->path = st->path;
	req->route = st->route->pattern;
	req->request_id = st->request_id;
	req->remote = st->remote;
	req->body = st->body ? st->body : "";
	req->body_len = st->body_len;
	req->conn__ = conn;
	rc = st->route->handler(req, &st->resp, st->server->ctx);
	if (rc != 0 && st->resp.status == 0)
		cc_http_error_from_result(&st->resp, rc);
	return answer(st, conn);
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct request_state *st = *con_cls;

	(void)cls;
	(void)url; /* already decoded by MHD: we decode st->raw_uri ourselves */
	if (!st)
		return MHD_NO; /* uri_logged() ran out of memory */
	if (st->status != 0) {
		*upload_data_size = 0; /* answered early; MHD closes after sending */
		return MHD_YES;
	}
	if (!st->started)
		return on_headers(st, conn, method, version ? version : "");
	if (*upload_data_size) {
		enum MHD_Result ret = on_body(st, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return ret;
	}
	return on_complete(st, conn, method);
}

static void *uri_logged(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct request_state *st;
	struct cc_http_server *s = cls;

	/*
	 * A request the front did not check (sent before the previous answer,
	 * so it sat in the library's buffer): never served. The front has shut
	 * the socket down already; no state makes access() drop it.
	 */
	if (!cc_http_front_conn_take_gate(s->front, conn_of(conn)))
		return NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->server = cls;
	st->start_ns = cc_clock_ns();
	st->raw_uri = strdup(uri ? uri : "");
	if (!st->raw_uri) {
		free(st);
		return NULL;
	}
	return st;
}

static const char *termination_name(enum MHD_RequestTerminationCode t)
{
	switch (t) {
	case MHD_REQUEST_TERMINATED_COMPLETED_OK:
		return "completed";
	case MHD_REQUEST_TERMINATED_WITH_ERROR:
		return "error_or_refused_by_library";
	case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
		return "timeout";
	case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
		return "shutdown";
	case MHD_REQUEST_TERMINATED_READ_ERROR:
		return "read_error";
	case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
		return "client_abort";
	}
	return "unknown";
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct request_state *st = *con_cls;
	struct cc_http_server *s = cls;
	const char *route;
	/* kept: the answer went out whole and left the connection open for another request */
	bool kept = st && st->kept && !st->upgraded && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;

	/* it closes now, unless a WebSocket hub holds it (its slot stays taken) or it is kept */
	if (!kept && !(st && st->upgraded))
		cc_http_front_conn_done(s->front, conn_of(conn));
	if (!st)
		return;
	*con_cls = NULL;
	/* a 101 that never went out: the hub never saw user; let it free it */
	if (st->resp.ws_hub__ && !st->upgraded)
		cc_ws_hub_abandon(st->resp.ws_hub__, st->resp.ws_user__);
	route = st->route_label ? st->route_label : "unrouted";
	if (st->status && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
		cc_log_info("http_response_not_delivered", CC_LOG_STR("server", s->name),
			    CC_LOG_STR("route", route), CC_LOG_INT("status", st->status),
			    CC_LOG_STR("request_id", st->request_id),
			    CC_LOG_STR("reason", termination_name(toe)));
	} else if (!st->status && cc_http_front_conn_was_cut(s->front, conn_of(conn))) {
		/* A deadline cut it: the front answered 408 and counted it. */
	} else if (!st->status) {
		/* The client went away (or, past the front, the library refused it). */
		cc_log_info("http_request_unanswered", CC_LOG_STR("server", s->name),
			    CC_LOG_STR("method", st->method), CC_LOG_STR("route", route),
			    CC_LOG_STR("reason", termination_name(toe)),
			    CC_LOG_DBL("duration_ms", elapsed(st) * 1000.0),
			    CC_LOG_INT("bytes_in", st->bytes_in));
		cc_metric_add(s->requests,
			      (const char *const[]){ route, method_label(st->method), "unanswered" }, 1);
	}
	response_release(&st->resp);
	free(st->raw_uri);
	free(st->path);
	free(st->segbuf);
	free(st->body);
	free(st);
	/*
	 * Keep-alive: this thread now waits for the next head and lets the
	 * library read it only once the front's check passed; the library does
	 * not touch the socket while we are in its callback.
	 */
	if (kept && !cc_http_front_conn_next_head(s->front, conn_of(conn)))
		cc_http_front_conn_done(s->front, conn_of(conn));
}

/* MHD's own diagnostics (MHD_USE_ERROR_LOG) into our log, one line each. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct cc_http_server *s = cls;
	char line[512];
	size_t len;

	vsnprintf(line, sizeof(line), fmt, ap);
	len = strlen(line);
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	cc_log_warn("http_library", CC_LOG_STR("server", s->name), CC_LOG_STR("detail", line));
}

/* The library started or closed a connection the front handed it. */
static void connection_notice(void *cls, struct MHD_Connection *conn, void **socket_context,
			      enum MHD_ConnectionNotificationCode toe)
{
	struct cc_http_server *s = cls;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ca = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		*socket_context = fd && ca ? cc_http_front_conn_open(s->front, fd->connect_fd, ca->client_addr) : NULL;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		/* Called before the library closes the socket: the front stops touching it here. */
		cc_http_front_conn_close(s->front, *socket_context);
		*socket_context = NULL;
	}
}

/* The front hands over a socket whose head passed its check. */
static bool handoff(void *cls, int fd, const struct sockaddr *addr, socklen_t addr_len)
{
	struct cc_http_server *s = cls;
	/* MHD closes fd itself when it refuses it. */
	return MHD_add_connection(s->daemon, fd, addr, addr_len) == MHD_YES;
}

/* A bound, listening, non-blocking socket for ss, or -1 (why in *why). */
static int listen_on(const struct sockaddr_storage *ss, bool v6, const char **why)
{
	int one = 1, zero = 0;
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		*why = "socket() failed";
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)); /* "::" takes IPv4 too */
	if (bind(fd, (const struct sockaddr *)ss, v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0) {
		*why = errno == EADDRINUSE ? "address already in use" : "bind failed";
		close(fd);
		return -1;
	}
	if (listen(fd, 511) != 0) {
		*why = "listen failed";
		close(fd);
		return -1;
	}
	return fd;
}

/* The port fd is bound to. */
static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* ---- the server ---------------------------------------------------------- */

static void declare_metrics(struct cc_http_server *s)
{
	static const char *const req_labels[] = { "route", "method", "status", NULL };
	static const char *const dur_labels[] = { "route", NULL };
	static const double buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
					  0.5,	 1,    2.5,   5,    10 };

	s->requests = cc_counter("cosmic_clash_http_requests_total",
				 "HTTP requests by route pattern, method and status.", req_labels,
				 2000);
	s->duration = cc_histogram("cosmic_clash_http_request_duration_seconds",
				   "HTTP request durations by route pattern.", dur_labels, 200,
				   buckets, CC_ARRAY_LEN(buckets));
}

/* Parses bind + port into ss. Returns false on a bad address. */
static bool parse_bind(const char *bind, int port, struct sockaddr_storage *ss, bool *v6)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, bind, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*v6 = false;
		return true;
	}
	if (inet_pton(AF_INET6, bind, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*v6 = true;
		return true;
	}
	return false;
}

struct cc_http_server *cc_http_server_start(const struct cc_http_server_options *opts)
{
	struct cc_http_server *s = NULL;
	struct sockaddr_storage ss;
	size_t pool, min_pool;
	int listen_fd = -1;
	unsigned max_conn, idle_timeout;
	const char *why = NULL, *bind = opts && opts->bind ? opts->bind : "127.0.0.1";
	/* No listening socket of MHD's own: the front accepts and hands over (http_front.h). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC |
			 MHD_ALLOW_UPGRADE;
	bool v6 = false;

	if (!opts || opts->port < 0 || opts->port > 65535 || (opts->n_routes && !opts->routes)) {
		why = "bad options (port 0..65535, routes)";
		goto out_fail;
	}
	if (!parse_bind(bind, opts->port, &ss, &v6)) {
		why = "bind is not an IPv4 or IPv6 address";
		goto out_fail;
	}
	if (sodium_init() < 0) {
		why = "libsodium failed to initialise";
		goto out_fail;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->routes = calloc(opts->n_routes + 1, sizeof(*s->routes)))) {
		why = "out of memory";
		goto out_fail;
	}
	snprintf(s->name, sizeof(s->name), "%s", opts->name ? opts->name : "http");
	s->n_routes = opts->n_routes;
	for (size_t i = 0; i < opts->n_routes && !why; i++)
		why = compile_route(&opts->routes[i], &s->routes[i]);
	if (why)
		goto out_fail;
	s->max_body = opts->max_body_bytes ? opts->max_body_bytes : CC_HTTP_DEFAULT_MAX_BODY;
	s->max_header_bytes = opts->max_header_bytes ? opts->max_header_bytes
						     : CC_HTTP_DEFAULT_MAX_HEADER_BYTES;
	s->max_headers = opts->max_headers ? opts->max_headers : CC_HTTP_DEFAULT_MAX_HEADERS;
	/*
	 * The pool must hold what the front lets through (2 * the cap raw, plus
	 * the library's bookkeeping per header line), or MHD answers with its
	 * HTML 431 first.
	 */
	if (s->max_header_bytes > (1u << 22) || s->max_headers > 100000) {
		why = "max_header_bytes or max_headers out of range";
		goto out_fail;
	}
	min_pool = 2 * s->max_header_bytes + 64 * (size_t)s->max_headers + 4096;
	pool = opts->connection_memory_limit ? opts->connection_memory_limit
					     : CC_HTTP_MEMORY_LIMIT_FACTOR * s->max_header_bytes;
	if (!opts->connection_memory_limit && pool < min_pool)
		pool = min_pool;
	if (pool < min_pool) {
		why = "connection_memory_limit must be at least 2 * max_header_bytes + 64 * max_headers + 4096";
		goto out_fail;
	}
	s->keep_alive = opts->keep_alive;
	max_conn = opts->max_connections ? opts->max_connections : CC_HTTP_DEFAULT_MAX_CONNECTIONS;
	s->ctx = opts->ctx;
	declare_metrics(s);
	listen_fd = listen_on(&ss, v6, &why);
	if (listen_fd < 0)
		goto out_fail;
	s->port = bound_port(listen_fd);
	/*
	 * The library's idle timer keeps running while a kept connection waits
	 * in its "completed" callback for the next head (up to the header
	 * deadline): it must outlast that wait, or the head that passed would
	 * find its connection timed out.
	 */
	{
		unsigned header_ms = opts->header_timeout_ms ? opts->header_timeout_ms : CC_HTTP_DEFAULT_HEADER_TIMEOUT_MS;
		idle_timeout = opts->timeout_seconds ? opts->timeout_seconds : CC_HTTP_DEFAULT_TIMEOUT_SECONDS;
		if (idle_timeout < header_ms / 1000 + 2)
			idle_timeout = header_ms / 1000 + 2;
	}
	/* The logger goes first so MHD's own start-up errors reach it too. */
	s->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, access_cb, s,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
		/* The front counts first; the margin covers connections MHD still
		 * holds for a moment after their "closed" notice. */
		MHD_OPTION_CONNECTION_LIMIT, max_conn + 16,
		MHD_OPTION_NOTIFY_CONNECTION, connection_notice, s,
		MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
		MHD_OPTION_URI_LOG_CALLBACK, uri_logged, s,
		MHD_OPTION_NOTIFY_COMPLETED, completed, s,
		MHD_OPTION_END);
	if (!s->daemon) {
		why = "could not start (see http_library lines)";
		goto out_fail;
	}
	{
		struct cc_http_front_options fo = {
			.name = s->name,
			.listen_fd = listen_fd,
			.max_connections = max_conn,
			.max_per_address = opts->max_per_address ? opts->max_per_address
								 : CC_HTTP_DEFAULT_MAX_PER_ADDRESS,
			.header_timeout_ms = opts->header_timeout_ms ? opts->header_timeout_ms
								     : CC_HTTP_DEFAULT_HEADER_TIMEOUT_MS,
			.body_timeout_ms = opts->body_timeout_ms ? opts->body_timeout_ms
								 : CC_HTTP_DEFAULT_BODY_TIMEOUT_MS,
			.head = { .max_head_bytes = 2 * s->max_header_bytes,
				  .max_headers = s->max_headers,
				  .max_body = s->max_body },
			.handoff = handoff,
			.handoff_cls = s,
			.requests = s->requests,
		};
		listen_fd = -1; /* the front owns it now, even when it fails */
		s->front = cc_http_front_start(&fo);
		if (!s->front) {
			why = "could not start the front (see http_front_start_failed)";
			goto out_fail;
		}
	}
	cc_log_info("http_server_started", CC_LOG_STR("server", s->name), CC_LOG_STR("bind", bind),
		    CC_LOG_INT("port", s->port), CC_LOG_INT("routes", s->n_routes));
	return s;

out_fail:
	cc_log_error("http_server_start_failed", CC_LOG_STR("server", opts && opts->name ? opts->name : "http"),
		     CC_LOG_STR("bind", bind), CC_LOG_INT("port", opts ? opts->port : -1),
		     CC_LOG_STR("reason", why));
	if (listen_fd >= 0)
		close(listen_fd);
	cc_http_server_stop(s);
	return NULL;
}

int cc_http_server_port(const struct cc_http_server *s)
{
	return s ? s->port : -1;
}

void cc_http_server_stop(struct cc_http_server *s)
{
	if (!s)
		return;
	/* No new connections first; then the library closes its own (each "closed" notice
	 * reaches the front, which is still there); then the front goes. */
	cc_http_front_stop(s->front);
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	cc_http_front_free(s->front);
	routes_free(s->routes, s->n_routes);
	free(s);
}
