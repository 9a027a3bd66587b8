/*
 * http_front.h - the front door of an HTTP server: the listening socket,
 * per-address and total connection caps, the header and body deadlines, and
 * a check of every request head before libmicrohttpd reads a byte of it.
 *
 * Why it exists: libmicrohttpd 0.9.75 answers some requests itself, with a
 * fixed HTML body and no X-Request-Id (an HTTP/2 preface, a head that does
 * not fit its pool, "Content-Length: -1", a header line without a colon),
 * has only an idle timeout (a client sending a byte every few seconds keeps
 * a connection forever), and silently resets connections over its limits.
 * The front owns the accept loop instead:
 *
 *   accept   -> over max_connections: 503 server_busy; over
 *               max_per_address from that address: 429 too_many_connections
 *               (Retry-After: 1); both in the SPEC error shape, then closed.
 *   pending  -> the head is read with MSG_PEEK (nothing is consumed; the
 *               socket's SO_RCVLOWAT makes poll wake only for new bytes) until
 *               the blank line; cc_http_head_check() judges it: a refusal is
 *               answered here in the SPEC shape; an acceptable head hands the
 *               socket, untouched, to the HTTP library (handoff). No blank
 *               line within header_timeout_ms of the accept: 408
 *               request_timeout, whatever the client trickled meanwhile.
 *   handed   -> the server reports phases (cc_http_front_conn_phase): the
 *               body must be complete body_timeout_ms after its head, the
 *               next head (keep-alive, checked as above: see "Keep-alive"
 *               below) header_timeout_ms after an answer; a
 *               sweep every CC_HTTP_FRONT_SWEEP_MS answers 408 and shuts the
 *               socket down when one passes. The handler's own time is not
 *               limited here.
 *
 * One thread (the front's) does accept, peek, refusals and sweeps; it never
 * blocks on a client (non-blocking sockets, poll with the nearest deadline).
 * A refused connection lingers up to CC_HTTP_FRONT_LINGER_MS, its input
 * drained, so the client reads the answer instead of a reset.
 *
 * Ownership: the front owns the listening socket from start to stop and
 * every socket until handoff; after a successful handoff the HTTP library
 * owns it and the front only holds the registration (conn_open .. conn_close)
 * made from the library's connection callbacks.
 */
#ifndef CC_HTTP_FRONT_H
#define CC_HTTP_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "sys/cc.h"

#define CC_HTTP_FRONT_SWEEP_MS 100	 /* how often handed connections' deadlines are checked */
#define CC_HTTP_FRONT_LINGER_MS 1000	 /* a refused connection is drained this long at most */
#define CC_HTTP_FRONT_MAX_LINGERING 64	 /* refused connections lingering at once; beyond: closed */
#define CC_HTTP_FRONT_REQUEST_ID_MAX 64	 /* bytes of an X-Request-Id kept */

struct cc_metric;
struct cc_http_front;
struct cc_http_front_conn;

/* What a head may be (cc_http_head_check). */
struct cc_http_head_limits {
	size_t max_head_bytes; /* request line + headers + blank line, raw bytes (431 beyond) */
	unsigned max_headers;  /* header lines (431 beyond) */
	size_t max_body;       /* a larger Content-Length is 413 */
};

/* The verdict on the bytes of a request head seen so far. */
struct cc_http_head_verdict {
	int status;		/* 0 = incomplete, 200 = acceptable, else the refusal's status */
	const char *code;	/* refusal: SPEC error code (static) */
	const char *message;	/* refusal: message for humans (static) */
	char method[16];	/* the method when the request line parsed ("" otherwise) */
	char request_id[CC_HTTP_FRONT_REQUEST_ID_MAX + 1]; /* the client's valid X-Request-Id, or "" */
	/* status 200 only: */
	size_t head_len;	/* bytes of the head, blank line (and leading empty lines) included */
	uint64_t content_length; /* the declared body (0 when none) */
	bool chunked;		/* Transfer-Encoding given: the body's length is not known here */
};

/*
 * Judges buf[0..len) as the start of an HTTP/1.x request. Refuses, in the
 * SPEC shape's codes:
 *   505 http_version_not_supported  a version other than HTTP/1.0 or 1.1
 *                                   (the HTTP/2 preface "PRI * HTTP/2.0");
 *   400 malformed_request           a request line that is not "METHOD SP
 *                                   target SP version", a header line without
 *                                   a colon or with an empty or spaced name, a
 *                                   folded line, a control byte, a bare CR,
 *                                   a Content-Length that is not digits,
 *                                   twice, or beside Transfer-Encoding;
 *   413 body_too_large              a Content-Length over max_body;
 *   431 headers_too_large           over max_headers lines, or no end of
 *                                   the head within max_head_bytes.
 * A problem in a complete line is reported at once, before the head ends.
 * Lines may end in CRLF or LF. Pure: no allocation, no I/O.
 */
void cc_http_head_check(const char *buf, size_t len, const struct cc_http_head_limits *lim,
			struct cc_http_head_verdict *v);

/*
 * Hands an accepted socket whose head passed to the HTTP library. Returns
 * true when the library took it; false when it could not, in which case
 * the library has already closed fd.
 */
typedef bool (*cc_http_front_handoff)(void *cls, int fd, const struct sockaddr *addr,
				       socklen_t addr_len);

struct cc_http_front_options {
	const char *name;		/* for logs */
	int listen_fd;			/* bound and listening; owned by the front from start */
	unsigned max_connections;	/* pending + handed, all addresses */
	unsigned max_per_address;	/* pending + handed, one address (IPv4 as ::ffff:a.b.c.d) */
	unsigned header_timeout_ms;	/* accept (or last answer) -> end of the head */
	unsigned body_timeout_ms;	/* end of the head -> end of the body */
	struct cc_http_head_limits head; /* what cc_http_head_check allows */
	cc_http_front_handoff handoff;
	void *handoff_cls;
	struct cc_metric *requests;	/* cosmic_clash_http_requests_total: refusals counted here */
};

/*
 * Starts the front's thread. Returns the front, or NULL (logged; listen_fd
 * closed) on a bad option or when the thread or memory cannot be had.
 */
struct cc_http_front *cc_http_front_start(const struct cc_http_front_options *opts);

/*
 * Stops the thread, closes the listening socket and every socket not yet
 * handed off. Call before stopping the HTTP library; registrations still
 * open are released by cc_http_front_free(). NULL is a harmless no-op.
 */
void cc_http_front_stop(struct cc_http_front *f);

/* Frees the front after cc_http_front_stop() and the library's stop. NULL: no-op. */
void cc_http_front_free(struct cc_http_front *f);

/* Phases of a handed connection, each with its deadline (see above). */
enum cc_http_conn_phase {
	CC_HTTP_PHASE_HEAD,	/* waiting for a head: header_timeout_ms */
	CC_HTTP_PHASE_BODY,	/* reading a body: body_timeout_ms */
	CC_HTTP_PHASE_HANDLER,	/* the handler runs: no deadline */
	CC_HTTP_PHASE_ANSWERED,	/* the answer is going out: header_timeout_ms, then closed
				   without a word, since the library may be writing */
	CC_HTTP_PHASE_UPGRADED,	/* handed to a WebSocket hub (sys/ws.h): no deadline; the
				   slot is held until the library's "closed" callback */
	CC_HTTP_PHASE_KEPT,	/* keep-alive: the connection's own thread waits in
				   cc_http_front_conn_next_head, which keeps the header
				   deadline itself (no sweep) */
};

/*
 * Registers a socket the library now serves (from its "connection started"
 * callback), in PHASE_HEAD. Returns the registration, or NULL when out of
 * memory (the connection is then served without deadlines; logged).
 */
struct cc_http_front_conn *cc_http_front_conn_open(struct cc_http_front *f, int fd,
						   const struct sockaddr *addr);

/* Moves a registration to a phase, restarting its deadline. NULL: no-op. */
void cc_http_front_conn_phase(struct cc_http_front *f, struct cc_http_front_conn *c,
			      enum cc_http_conn_phase phase);

/* True when a deadline cut this connection (its request was answered 408). */
bool cc_http_front_conn_was_cut(struct cc_http_front *f, struct cc_http_front_conn *c);

/*
 * The connection will carry no further request (its answer is out and it
 * closes): its address's slot is freed now rather than when the library
 * gets round to closing it, which lags. Idempotent; NULL: no-op.
 */
void cc_http_front_conn_done(struct cc_http_front *f, struct cc_http_front_conn *c);

/*
 * Keep-alive. A follow-up request on a kept connection passes the same
 * head check, deadlines and refusals as the first one, because the library
 * never reads it unchecked:
 *
 *   - the front registers a connection when it hands it over, with the
 *     bytes its checked head and declared body occupy;
 *   - after an answer went out (the library's "completed" callback, on the
 *     connection's own thread, which the library does not use meanwhile),
 *     cc_http_front_conn_next_head() first checks that the library has read
 *     exactly those bytes (TCP_INFO's bytes received minus what is still
 *     queued): more means the client pipelined a request that now sits,
 *     unchecked, in the library's buffer, so the connection ends (the
 *     answer given stays delivered; the pipelined request is never served).
 *     Then it waits, peeking as the front does before a handoff, for the
 *     next head: no byte within header_timeout_ms of the answer: closed
 *     without a word (an idle kept connection; an answer could cross the
 *     client's next request); part of a head: 408 request_timeout; a
 *     refused head: its answer in the SPEC shape; the client gone or the
 *     front stopping: the end. Only a head that passed is left for the
 *     library to read, with its bytes added to the expected count;
 *   - the library must take each request only after that: the server asks
 *     cc_http_front_conn_take_gate() when a request line was parsed and
 *     drops a request it says was not checked.
 *   - a request whose body length is not known from its head (chunked)
 *     cannot be counted: cc_http_front_conn_reusable() says false and its
 *     answer closes the connection.
 * The per-address and total caps count a kept connection as long as it is
 * open, idle or not.
 */

/* True when the connection may carry another request after this answer (see above). NULL: false. */
bool cc_http_front_conn_reusable(struct cc_http_front *f, struct cc_http_front_conn *c);

/*
 * A request line was parsed on c: true when its head was checked (and
 * consumes that check), false when it was not (drop the request). NULL: true.
 */
bool cc_http_front_conn_take_gate(struct cc_http_front *f, struct cc_http_front_conn *c);

/*
 * Waits, on the library's connection thread after an answer went out, for
 * the next request head on c (see above). Returns true when a head passed
 * (the library may read it); false when the connection ends: its socket is
 * then shut down (after any refusal went out), so the library closes it.
 * NULL: false.
 */
bool cc_http_front_conn_next_head(struct cc_http_front *f, struct cc_http_front_conn *c);

/*
 * Releases a registration (from the library's "connection closed" callback,
 * before it closes the socket), freeing its address's slot. NULL: no-op.
 */
void cc_http_front_conn_close(struct cc_http_front *f, struct cc_http_front_conn *c);

#endif
