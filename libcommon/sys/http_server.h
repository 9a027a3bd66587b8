/*
 * http_server.h - the HTTP server every service runs its routes on.
 *
 * A thin layer over libmicrohttpd 0.9.75 that gives every route the same
 * behaviour: segment routing with {name} captures, a bounded request body,
 * the SPEC section 2 error shape, request ids, one access-log line and two
 * metrics per request. Handlers see a struct cc_http_request and fill a
 * struct cc_http_response; they never touch libmicrohttpd.
 *
 * Threads: one thread per connection (MHD_USE_THREAD_PER_CONNECTION with an
 * internal accept thread). Handlers may block on the database; with a
 * thread pool one slow handler would stall every connection sharing its
 * pool thread, here it stalls only its own client. max_connections bounds
 * the threads; connections beyond it are closed at accept. A handler runs
 * on the connection's thread and may run concurrently with any other, so
 * ctx must be thread-safe.
 *
 * Connections first pass sys/http_front: the per-address cap
 * (max_per_address: 429 too_many_connections) and total cap
 * (max_connections: 503 server_busy), the header deadline
 * (header_timeout_ms from the accept, independent of activity: 408
 * request_timeout), and a check of the raw head before libmicrohttpd reads
 * it (505 http_version_not_supported, 400 malformed_request, 413, 431; see
 * cc_http_head_check), so the library never answers anything itself. A body
 * must arrive within body_timeout_ms of its head (408, then closed).
 * Without keep_alive every answer says "Connection: close". With it, a
 * follow-up request on a kept connection passes the same check, deadlines
 * and caps: after each answer the connection's thread waits in
 * cc_http_front_conn_next_head() (http_front.h) and the library reads only
 * a head that passed; a request pipelined before the previous answer ends
 * the connection unserved. An answer closes anyway for HTTP/1.0, a request
 * saying "Connection: close", a refusal before its body was read, and a
 * chunked request (its length cannot be checked).
 *
 * Before any handler runs, the server refuses, in this order:
 *   - 431 headers_too_large: the request line and headers add up to more
 *     than max_header_bytes (each header counted as name + value + 4 for
 *     ": " and CRLF, the request line as sent plus CRLF, then the blank
 *     line), or there are more than max_headers header lines;
 *   - 400 invalid_path: the raw path is not /-rooted, has a bad %XX escape,
 *     escapes a '/' (%2f), decodes to a byte outside printable ASCII
 *     (0x20..0x7e: NUL, controls, DEL, non-ASCII), or contains "..";
 *   - 414 path_too_long: more than CC_HTTP_MAX_PATH bytes;
 *   - 404 not_found: no route has this path;
 *   - 405 method_not_allowed (+ Allow: every method the path has);
 *   - 400 invalid_request: the Authorization header is given more than once;
 *   - 415 unsupported_media_type: a body (Content-Length > 0 or chunked)
 *     whose Content-Type is not application/json (a charset parameter,
 *     if any, must be utf-8);
 *   - 413 body_too_large: Content-Length over max_body_bytes, answered
 *     before the body is read (the connection is closed afterwards); a
 *     chunked body that grows over the cap is discarded as it arrives and
 *     answered 413 when it ends, or, if it runs on past max_body_bytes +
 *     CC_HTTP_DISCARD_MAX, the connection is closed without an answer
 *     (libmicrohttpd 0.9.75 cannot answer in the middle of an upload).
 *
 * libmicrohttpd 0.9.75 must hold the whole request line and header block
 * in the connection's memory pool, and answers what does not fit itself
 * (HTML). The front refuses a head over 2 * max_header_bytes raw bytes or
 * max_headers lines before the library reads it, so the pool
 * (connection_memory_limit, by default CC_HTTP_MEMORY_LIMIT_FACTOR times
 * max_header_bytes, at least 2 * max_header_bytes + 64 * max_headers +
 * 4 KiB) always holds what is let through; the exact cap above is then
 * applied to what the library parsed. A request the library still closed
 * without our answer (a client that hangs up first, a deadline) is logged
 * as "http_request_unanswered" and counted with status "unanswered".
 *
 * Every answer carries X-Request-Id (the client's when it is 1-64 bytes of
 * [A-Za-z0-9._-], else 32 random hex digits) and Cache-Control: no-store
 * unless the handler chose another (cache_control: static assets that a
 * browser may keep and revalidate); JSON answers carry Content-Type:
 * application/json.
 *
 * Per request: one log line "http_request" (server, method, route, path,
 * status, duration_ms, request_id, remote, bytes_in, bytes_out; never
 * headers, query or body), cosmic_clash_http_requests_total{route,method,
 * status} and cosmic_clash_http_request_duration_seconds{route}. route is
 * the matched pattern (or "unmatched" / "invalid"), never the raw path, so
 * the series stay bounded; an unusual method is counted as "OTHER". These
 * are recorded when the answer is queued, before its first byte is sent,
 * so a client holding its reply has been counted; the duration therefore
 * excludes sending. An answer that then fails to go out is logged again as
 * "http_response_not_delivered".
 *
 * Ownership: the server copies the route table and the bind address. A
 * request and everything it points to lives until the handler returns.
 * A response owns its cJSON tree and body and the server frees them.
 */
#ifndef CC_HTTP_SERVER_H
#define CC_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sys/cc.h"

#define CC_HTTP_DEFAULT_MAX_BODY (64 * 1024)       /* max_body_bytes when 0 */
#define CC_HTTP_DEFAULT_MAX_HEADER_BYTES (16 * 1024) /* max_header_bytes when 0 */
#define CC_HTTP_DEFAULT_MAX_HEADERS 100            /* max_headers when 0 */
#define CC_HTTP_MEMORY_LIMIT_FACTOR 4              /* pool = this * max_header_bytes when 0 */
#define CC_HTTP_DEFAULT_MAX_CONNECTIONS 256        /* max_connections when 0 */
#define CC_HTTP_DEFAULT_TIMEOUT_SECONDS 30         /* timeout_seconds when 0 */
#define CC_HTTP_DEFAULT_MAX_PER_ADDRESS 32         /* max_per_address when 0 */
#define CC_HTTP_DEFAULT_HEADER_TIMEOUT_MS 10000    /* header_timeout_ms when 0 */
#define CC_HTTP_DEFAULT_BODY_TIMEOUT_MS 20000      /* body_timeout_ms when 0 */
#define CC_HTTP_DISCARD_MAX (1024 * 1024)          /* chunked overflow read before closing */
#define CC_HTTP_MAX_PATH 2048                      /* decoded path bytes */
#define CC_HTTP_MAX_SEGMENTS 16                    /* segments in a route pattern */
#define CC_HTTP_MAX_PARAMS 8                       /* {name} captures in a pattern */
#define CC_HTTP_MAX_HEADERS 8                      /* extra response headers */
#define CC_HTTP_HEADER_NAME_MAX 64                 /* bytes, NUL excluded */
#define CC_HTTP_HEADER_VALUE_MAX 512               /* bytes, NUL excluded */
#define CC_HTTP_REQUEST_ID_MAX 64                  /* bytes of an X-Request-Id */

struct MHD_Connection;
struct cc_http_server;

/* What a handler sees. Every pointer stays valid until the handler returns. */
struct cc_http_request {
	const char *method;	 /* "GET", "POST", ... as sent */
	const char *path;	 /* percent-decoded path, no query string */
	const char *route;	 /* the matched route's pattern */
	const char *request_id;	 /* the X-Request-Id echoed back */
	const char *remote;	 /* client address ("127.0.0.1", "::1") */
	const char *body;	 /* the body, NUL-terminated ("" when none); may hold NULs */
	size_t body_len;	 /* bytes of body, terminator excluded */

	/* private: use the accessors below */
	struct MHD_Connection *conn__;
	size_t n_params__;
	const char *param_names__[CC_HTTP_MAX_PARAMS];
	const char *param_values__[CC_HTTP_MAX_PARAMS];
};

/* An extra response header (set through cc_http_response_header). */
struct cc_http_header {
	char name[CC_HTTP_HEADER_NAME_MAX + 1];
	char value[CC_HTTP_HEADER_VALUE_MAX + 1];
};

/*
 * What a handler fills, through the functions below rather than by hand.
 * Each cc_http_respond_* / cc_http_error* call replaces the previous body.
 */
struct cc_http_response {
	int status;		/* HTTP status; 0 = not answered yet */
	cJSON *json;		/* owned JSON body, or NULL */
	char *body;		/* owned raw body when json is NULL, or NULL */
	size_t body_len;	/* bytes of body */
	char content_type[96];	/* of the raw body */
	size_t n_headers;	/* extra headers in use */
	struct cc_http_header headers[CC_HTTP_MAX_HEADERS];
	const char *cache_control; /* static text; NULL = "no-store"; JSON answers are always no-store */
	bool oom__;		/* private: a body could not be built */
	struct cc_ws_hub *ws_hub__; /* private: a WebSocket upgrade (cc_http_respond_websocket) */
	void *ws_user__;
};

/*
 * A route handler. It fills resp and returns 0, or returns a CC_E* code:
 * if resp is still unanswered the server answers with
 * cc_http_error_from_result(rc); if the handler answered, its answer
 * stands. Returning 0 without answering is a bug answered with 500.
 */
typedef int (*cc_http_handler)(const struct cc_http_request *req, struct cc_http_response *resp,
			       void *ctx);

struct cc_http_route {
	const char *method;	/* "GET", "POST", ... exact, upper case */
	const char *pattern;	/* "/v1/queue/{id}/heartbeat": literal or {name} segments */
	cc_http_handler handler;
};

struct cc_http_server_options {
	const char *name;		    /* for logs ("api", "admin"); NULL = "http" */
	const char *bind;		    /* IPv4 or IPv6 literal ("::" takes IPv4 too); NULL = "127.0.0.1" */
	int port;			    /* 0 = ephemeral (see cc_http_server_port) */
	unsigned max_connections;	    /* 0 = CC_HTTP_DEFAULT_MAX_CONNECTIONS */
	unsigned timeout_seconds;	    /* idle connection timeout; 0 = default; at least header_timeout_ms + 2 s */
	unsigned max_per_address;	    /* connections from one address; 0 = default */
	unsigned header_timeout_ms;	    /* accept -> end of the head, whatever trickles; 0 = default */
	unsigned body_timeout_ms;	    /* end of the head -> end of the body; 0 = default */
	bool keep_alive;		    /* reuse connections, every request checked (see above); false: close each */
	size_t max_body_bytes;		    /* 0 = CC_HTTP_DEFAULT_MAX_BODY */
	size_t max_header_bytes;	    /* request line + headers (431 beyond); 0 = default */
	unsigned max_headers;		    /* header lines (431 beyond); 0 = default */
	size_t connection_memory_limit;	    /* libmicrohttpd's pool per connection; 0 = derived
					       (see above); below the minimum above is refused */
	const struct cc_http_route *routes; /* first match (path and method) wins */
	size_t n_routes;
	void *ctx;			    /* passed to every handler */
};

/*
 * Validates the routes, binds and starts serving. Returns the server, or
 * NULL (logged as "http_server_start_failed" with the reason) on a bad
 * option or route pattern, a bind failure, or out of memory.
 */
struct cc_http_server *cc_http_server_start(const struct cc_http_server_options *opts);

/* Returns the port actually bound (the ephemeral one when port was 0). */
int cc_http_server_port(const struct cc_http_server *s);

/*
 * Stops accepting, closes connections, waits for running handlers and frees
 * the server. NULL is a harmless no-op.
 */
void cc_http_server_stop(struct cc_http_server *s);

/* ---- request accessors -------------------------------------------------- */

/* Returns the {name} capture of the matched route, or NULL if there is none. */
const char *cc_http_param(const struct cc_http_request *req, const char *name);

/*
 * Returns the decoded query argument, or NULL when absent or given without
 * a value ("?flag"). A value cut at an encoded NUL is the text before it.
 */
const char *cc_http_query(const struct cc_http_request *req, const char *name);

/* Returns a request header by case-insensitive name, or NULL (the first, when repeated). */
const char *cc_http_header(const struct cc_http_request *req, const char *name);

/*
 * Every value of a list header (RFC 9110 5.3: repeated lines mean one
 * comma-separated list, e.g. Sec-WebSocket-Protocol) joined with ", " into
 * buf (cap bytes, NUL-terminated). Returns the length the join needs: when
 * it is >= cap nothing fit and buf is "" (refuse the request). 0: absent.
 */
size_t cc_http_header_join(const struct cc_http_request *req, const char *name, char *buf, size_t cap);

/* ---- responses ------------------------------------------------------------ */

struct cc_ws_hub;

/*
 * Answers a WebSocket opening handshake (RFC 6455 4.2.1) and, once the 101
 * is out, hands the socket to hub (sys/ws.h) with user. Checks, answering
 * in the SPEC error shape when one fails:
 *   400 invalid_upgrade   not GET, no "Upgrade: websocket", no "upgrade"
 *                         token in Connection, or a Sec-WebSocket-Key that
 *                         is not the base64 of 16 bytes, or a second
 *                         Sec-WebSocket-Key or Sec-WebSocket-Version;
 *   426 upgrade_required  Sec-WebSocket-Version other than 13 (the answer
 *                         carries Sec-WebSocket-Version: 13).
 * Otherwise answers 101 with Upgrade, Connection: Upgrade,
 * Sec-WebSocket-Accept and, when protocol is not NULL, Sec-WebSocket-Protocol:
 * protocol (the caller picks it among those the client offered). Returns 0
 * (upgrade queued) or CC_EINVAL (refused, answered). The front's
 * per-address and total caps count the connection until the hub releases
 * it (its phase becomes CC_HTTP_PHASE_UPGRADED: no deadline). When the hub
 * refuses it (full), the socket is closed and the hub's on_close sees id 0.
 * Stop the hub (cc_ws_hub_stop, which releases every socket) before the
 * server: libmicrohttpd waits for upgraded sockets to be given back.
 * When the 101 never goes out (the client hung up first), the server calls
 * cc_ws_hub_abandon(hub, user): on_close sees id 0 and can free user.
 */
int cc_http_respond_websocket(const struct cc_http_request *req, struct cc_http_response *resp,
			      struct cc_ws_hub *hub, const char *protocol, void *user);

/*
 * Answers status with a JSON body, taking ownership of body (even on
 * failure). A NULL body (a failed cJSON allocation) answers 503 out_of_memory.
 */
void cc_http_respond_json(struct cc_http_response *resp, int status, cJSON *body);

/*
 * Answers status with a copy of len bytes of text and the given
 * Content-Type (NULL = "text/plain; charset=utf-8"). Returns 0, or
 * CC_ENOMEM (the answer becomes 503 out_of_memory).
 */
int cc_http_respond_text(struct cc_http_response *resp, int status, const char *content_type,
			 const char *text, size_t len);

/*
 * Adds (or replaces, by case-insensitive name) an extra header. Returns 0,
 * CC_EINVAL for a name that is not a token, a value with control bytes (no
 * header injection), or a header the server owns (Content-Type,
 * Content-Length, Transfer-Encoding, Connection, Cache-Control,
 * X-Request-Id), or CC_ETOOBIG when a limit above is exceeded.
 */
int cc_http_response_header(struct cc_http_response *resp, const char *name, const char *value)
	CC_MUST_CHECK;

/*
 * Answers the SPEC error shape:
 *   {"error":{"code":"<code>","message":"<message>","retryable":<bool>}}
 * code is snake_case; message is for humans and must hold no secret.
 */
void cc_http_error(struct cc_http_response *resp, int status, const char *code,
		   const char *message, bool retryable);

/*
 * 429 with "retry_after_seconds" in the error object and a Retry-After
 * header; retryable is true.
 */
void cc_http_error_too_many(struct cc_http_response *resp, const char *code, const char *message,
			    unsigned retry_after_seconds);

/* 503 with retryable true: a dependency is down or the feature is not configured. */
void cc_http_error_unavailable(struct cc_http_response *resp, const char *code,
			       const char *message);

/*
 * Answers the error a CC_E* result means: EINVAL 400 invalid_request,
 * EUNAUTHORIZED 401, EFORBIDDEN 403, ENOTFOUND 404, ECONFLICT 409,
 * ESTATE 409 invalid_state, ETOOBIG 413; ENOMEM, EUNAVAILABLE, ETIMEOUT,
 * ESERIALIZATION, ERETRY_EXHAUSTED, EIO, EDB 503 retryable; ENOTIMPL 503
 * not_configured; anything else 500 internal_error.
 */
void cc_http_error_from_result(struct cc_http_response *resp, int rc);

#endif
