/*
 * ws_client.h - a client-side RFC 6455 (WebSocket) connection over plain
 * TCP (no TLS: ws:// only), for test tooling and load generators.
 *
 * What it owns: the socket, the libwslay client context (framing, masking
 * with keys from getrandom(2), ping answers, reassembly of fragmented
 * messages) and the bytes read past the handshake. Nothing else.
 *
 * Opening: cc_ws_client_connect() resolves the host, connects and sends
 * the HTTP/1.1 upgrade request (Host, Upgrade, Connection, a fresh
 * Sec-WebSocket-Key, Sec-WebSocket-Version: 13, the caller's extra header
 * lines, and Sec-WebSocket-Protocol when protocols is set), all within
 * timeout_ms (name resolution excepted: pass an address literal when that
 * matters). It accepts only a 101 that carries Upgrade: websocket, an
 * "upgrade" token in Connection, the right Sec-WebSocket-Accept
 * (cc_ws_accept_key of sys/ws.h) and, if any, a Sec-WebSocket-Protocol the
 * request offered. Any other status is a refusal: its status, the first
 * CC_WS_CLIENT_BODY_MAX bytes of its body and its Retry-After are stored
 * in *refusal so the caller can tell a 401 from a 404 or a 429.
 *
 * Running: the connection is poll-friendly. Poll cc_ws_client_fd() for
 * cc_ws_client_events() (POLLIN, plus POLLOUT while frames wait to go out),
 * then call cc_ws_client_service(c, 0); or let service wait itself
 * (timeout_ms > 0). service reads what arrived, answers pings, delivers
 * each whole text message to on_message, and sends what is queued. It
 * never blocks past its timeout. The client closes the connection itself,
 * with a close frame carrying the code, when the server sends
 *   1009 message too big  a message over max_message_bytes (never delivered);
 *   1007 invalid payload  a text message that is not well-formed UTF-8;
 *   1003 unsupported data a binary message (this client speaks text only);
 *   1002 protocol error   a frame libwslay refuses (e.g. a masked server frame).
 * and drops it without one (close code 1006) when no frame at all arrived
 * for idle_timeout_ms (when set) or the peer hung up.
 *
 * Closing: cc_ws_client_close() queues a close frame; service then runs
 * until the server's close arrives (or close_timeout_ms), and the
 * connection has ended. When the server closes first its close is echoed.
 * Once ended, cc_ws_client_close_code() says why: the code of the server's
 * close frame (1005 when it had none), or 1006 when none arrived (peer hung
 * up, read error, idle timeout, or our close went unanswered);
 * cc_ws_client_close_sent() the code we sent (0: none).
 *
 * Ownership: the client copies its options' strings it needs. A message
 * passed to on_message is the client's and lives until the callback
 * returns (it is NUL-terminated for convenience; len excludes the NUL).
 * on_message runs on the thread that called service, inside that call; it
 * may queue sends and call cc_ws_client_close, but must not free the
 * client. cc_ws_client_free() closes the socket (without a close
 * handshake if none was made) and frees everything. One client is used by
 * one thread at a time.
 */
#ifndef CC_WS_CLIENT_H
#define CC_WS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_WS_CLIENT_BODY_MAX 4096		   /* bytes of a refusal's body kept */
#define CC_WS_CLIENT_HEAD_MAX 8192		   /* bytes of the handshake answer's head */
#define CC_WS_CLIENT_DEFAULT_MAX_MESSAGE (64 * 1024)
#define CC_WS_CLIENT_DEFAULT_CLOSE_TIMEOUT_MS 1000

struct cc_ws_client;

/* A whole text message arrived (msg[len] is a NUL the client added). */
typedef void (*cc_ws_client_on_message)(void *ctx, const char *msg, size_t len);

struct cc_ws_client_options {
	const char *host;	     /* IPv4/IPv6 literal or name */
	int port;		     /* 1..65535 */
	const char *target;	     /* request target: "/v1/events?after=12" */
	const char *headers;	     /* extra header lines, each ending "\r\n"; NULL = none */
	const char *protocols;	     /* Sec-WebSocket-Protocol offered ("a, b"); NULL = none */
	int timeout_ms;		     /* connect + handshake deadline; <= 0 = 5000 */
	size_t max_message_bytes;    /* inbound message cap (1009 beyond); 0 = default */
	int idle_timeout_ms;	     /* no frame this long: dropped (1006); 0 = never */
	int close_timeout_ms;	     /* wait for the server's close answer; 0 = default */
	cc_ws_client_on_message on_message; /* may be NULL */
	void *ctx;		     /* passed to on_message */
};

/* A handshake that did not end in a valid 101. */
struct cc_ws_client_refusal {
	int status;		     /* HTTP status of the answer; 0 when none came */
	int retry_after_s;	     /* its Retry-After in seconds; -1 when none */
	size_t body_len;	     /* bytes in body */
	char body[CC_WS_CLIENT_BODY_MAX + 1]; /* the body's first bytes, NUL-terminated */
	char reason[128];	     /* what went wrong, for logs ("connect: Connection refused") */
};

/*
 * Opens a WebSocket. On success stores the client in *out and returns 0.
 * Otherwise *out is NULL, refusal (may be NULL) is filled, and the result
 * is: CC_EUNAUTHORIZED 401, CC_EFORBIDDEN 403, CC_ENOTFOUND 404,
 * CC_EUNAVAILABLE 429 or 503, CC_ECONFLICT any other non-101 status;
 * CC_EIO no connection, a reset, or an answer that is no HTTP or a 101
 * that fails the checks above (refusal->status 101); CC_ETIMEOUT the
 * deadline; CC_EINVAL bad options; CC_ENOMEM.
 */
int cc_ws_client_connect(const struct cc_ws_client_options *opts, struct cc_ws_client **out,
			 struct cc_ws_client_refusal *refusal) CC_MUST_CHECK;

/* Closes the socket and frees the client. NULL: no-op. */
void cc_ws_client_free(struct cc_ws_client *c);

/* The socket to poll (never read or write it yourself). */
int cc_ws_client_fd(const struct cc_ws_client *c);

/* The poll(2) events service wants: POLLIN, | POLLOUT while frames wait. 0 once ended. */
short cc_ws_client_events(const struct cc_ws_client *c);

/*
 * Waits up to timeout_ms (0: not at all) for the socket, then reads,
 * delivers and sends what it can. Returns 1 while the connection is open,
 * 0 once it has ended (see cc_ws_client_close_code; later calls return 0).
 */
int cc_ws_client_service(struct cc_ws_client *c, int timeout_ms);

/* Whether the connection is still open (not ended). */
bool cc_ws_client_open(const struct cc_ws_client *c);

/* Queues a text message (copied; UTF-8, not checked). 0, CC_ESTATE once closing/ended, CC_ENOMEM. */
int cc_ws_client_send_text(struct cc_ws_client *c, const char *msg, size_t len) CC_MUST_CHECK;

/* Queues a ping with up to 125 bytes of payload. 0, CC_ESTATE, CC_EINVAL, CC_ENOMEM. */
int cc_ws_client_ping(struct cc_ws_client *c, const void *payload, size_t len) CC_MUST_CHECK;

/*
 * Starts a clean close with code (1000..4999, not 1005/1006/1015) and
 * reason (UTF-8, cut to 123 bytes; may be NULL). 0, CC_ESTATE when already
 * closing or ended, CC_EINVAL for a bad code.
 */
int cc_ws_client_close(struct cc_ws_client *c, int code, const char *reason) CC_MUST_CHECK;

/* Once ended: the server's close code (1005: a close without one), or 1006 when none came. 0 while open. */
int cc_ws_client_close_code(const struct cc_ws_client *c);

/* The server's close reason ("" when none). Never NULL. */
const char *cc_ws_client_close_reason(const struct cc_ws_client *c);

/* The close code this client sent (its own or an echo), 0 when none. */
int cc_ws_client_close_sent(const struct cc_ws_client *c);

/* The subprotocol the server selected ("" when none). Never NULL. */
const char *cc_ws_client_protocol(const struct cc_ws_client *c);

/* Text messages delivered, and pings answered, since the connection opened. */
uint64_t cc_ws_client_messages(const struct cc_ws_client *c);
uint64_t cc_ws_client_pings(const struct cc_ws_client *c);

#endif
