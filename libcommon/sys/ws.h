/*
 * ws.h - a server-side RFC 6455 (WebSocket) connection hub.
 *
 * The HTTP server answers the upgrade handshake (see
 * cc_http_respond_upgrade in sys/http_server.h) and hands the raw socket
 * to a hub with cc_ws_hub_adopt(). From then on the hub alone reads and
 * writes it. Framing is Debian's libwslay (wslay_event_*); the hub adds
 * the policy libwslay does not have.
 *
 * Threads: one hub = one thread running epoll over every connection it
 * owns (plus an eventfd for wake-ups), so N idle connections cost no
 * threads. Every callback below (on_message, on_close, release) runs on
 * that hub thread, one at a time, and must not block: a callback that
 * waits on a database stalls every connection of the hub. A callback may
 * call cc_ws_send_text / cc_ws_close (they never block, also from the hub
 * thread). cc_ws_send_text, cc_ws_close and cc_ws_hub_open_count may be
 * called from any thread at any time between start and stop.
 *
 * Connections are named by a 64-bit id, never reused within a hub, so a
 * send to a connection that has gone is a harmless CC_ENOTFOUND rather
 * than a use-after-free.
 *
 * Sending: cc_ws_send_text copies the message onto the connection's send
 * backlog and wakes the hub thread; it never waits for the socket. A
 * connection whose backlog (queued, not yet written bytes, or messages)
 * would go over max_backlog_bytes / max_backlog_messages is a slow reader:
 * the message is refused (CC_ETOOBIG), the connection is closed with 1013
 * (try again later) and counted in dropped_slow; nobody else waits for it.
 *
 * Receiving: inbound text messages (reassembled from fragments) reach
 * on_message. The hub closes a connection, with a close frame carrying
 * this code, when the client sends:
 *   1002 protocol error   an unmasked frame, a fragmented (FIN=0) or
 *                         oversized (> 125 bytes) control frame, reserved
 *                         bits or opcodes, a continuation without a start;
 *   1003 unsupported data a binary message (the hub speaks text only);
 *   1007 invalid payload  a text message that is not well-formed UTF-8
 *                         (sys/utf8), or a close reason that is not;
 *   1008 policy violation (reason "rate_limited") frames (any but pong and
 *                         close, continuations included, counted as each
 *                         starts) faster than a token bucket allows: bursts
 *                         of rate_messages, refilled at rate_messages per
 *                         rate_window_ms;
 *   1009 message too big  a frame or message over max_message_bytes.
 * and, on its own account:
 *   1000 normal           the client closed (its code is echoed back);
 *   1001 going away       the hub stops (cc_ws_hub_stop);
 *   1011 internal error   out of memory;
 *   1013 try again later  the send backlog cap (above);
 *   no close frame        no pong within pong_timeout_ms of a ping (a
 *                         dead peer cannot read one): on_close sees 1006.
 * A ping goes to every connection every ping_interval_ms. After the hub
 * sends a close frame it waits at most close_timeout_ms for the client's
 * answer, then drops the socket.
 *
 * Ownership: the hub copies its options. cc_ws_hub_adopt takes the socket
 * and any bytes already read past the handshake (copied). The hub never
 * closes an adopted socket itself: when a connection ends it stops using
 * the fd, calls on_close, then release(release_cls) exactly once, which
 * must close the socket (the HTTP server gives it back to libmicrohttpd,
 * whose per-address and total caps therefore count the connection until
 * then). A message passed to on_message lives until the callback returns.
 * user pointers are the caller's; the hub only passes them back.
 */
#ifndef CC_WS_H
#define CC_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

/* Close codes (RFC 6455 section 7.4.1 and the IANA registry). */
#define CC_WS_CLOSE_NORMAL 1000
#define CC_WS_CLOSE_GOING_AWAY 1001
#define CC_WS_CLOSE_PROTOCOL 1002
#define CC_WS_CLOSE_UNSUPPORTED 1003
#define CC_WS_CLOSE_ABNORMAL 1006 /* never sent: the connection ended without a close frame */
#define CC_WS_CLOSE_INVALID_PAYLOAD 1007
#define CC_WS_CLOSE_POLICY 1008
#define CC_WS_CLOSE_TOO_BIG 1009
#define CC_WS_CLOSE_INTERNAL 1011
#define CC_WS_CLOSE_TRY_LATER 1013

#define CC_WS_DEFAULT_MAX_CONNECTIONS 4096
#define CC_WS_DEFAULT_MAX_MESSAGE (64 * 1024)
#define CC_WS_DEFAULT_MAX_BACKLOG_BYTES (1024 * 1024)
#define CC_WS_DEFAULT_MAX_BACKLOG_MESSAGES 1024
#define CC_WS_DEFAULT_PING_INTERVAL_MS 20000
#define CC_WS_DEFAULT_PONG_TIMEOUT_MS 10000
#define CC_WS_DEFAULT_CLOSE_TIMEOUT_MS 2000
#define CC_WS_DEFAULT_RATE_MESSAGES 50
#define CC_WS_DEFAULT_RATE_WINDOW_MS 1000
#define CC_WS_REASON_MAX 123 /* bytes of a close reason (125 - the code) */

struct cc_metric;
struct cc_ws_hub;

/*
 * Connection id is registered with the hub: the first callback of every
 * adopted connection, on the hub thread. Sends to id are accepted from now
 * on (and already since cc_ws_hub_adopt returned).
 */
typedef void (*cc_ws_on_open)(void *ctx, uint64_t id, void *user);

/* A text message arrived on connection id (msg is not NUL-terminated). */
typedef void (*cc_ws_on_message)(void *ctx, uint64_t id, void *user, const char *msg,
				 size_t len);

/*
 * Connection id ended. code: the close code the hub sent, or the client's
 * when the client closed first, or 1006 when none was exchanged. After
 * this call the id is gone: sends answer CC_ENOTFOUND. A code the hub
 * queued counts even when a stuck reader never received the frame.
 */
typedef void (*cc_ws_on_close)(void *ctx, uint64_t id, void *user, int code);

/* Closes an adopted socket (see Ownership). Called once per adopt that succeeded. */
typedef void (*cc_ws_release)(void *release_cls);

struct cc_ws_hub_options {
	const char *name;		 /* for logs; NULL = "ws" */
	unsigned max_connections;	 /* adopt beyond: CC_EUNAVAILABLE; 0 = default */
	size_t max_message_bytes;	 /* inbound frame / message (1009 beyond); 0 = default */
	size_t max_backlog_bytes;	 /* per connection, outbound queued bytes; 0 = default */
	unsigned max_backlog_messages;	 /* per connection, outbound queued messages; 0 = default */
	unsigned ping_interval_ms;	 /* 0 = default */
	unsigned pong_timeout_ms;	 /* 0 = default */
	unsigned close_timeout_ms;	 /* 0 = default */
	unsigned rate_messages;		 /* inbound burst, refilled per window (1008 beyond); 0 = default */
	unsigned rate_window_ms;	 /* 0 = default */
	cc_ws_on_open on_open;		 /* may be NULL */
	cc_ws_on_message on_message;	 /* may be NULL */
	cc_ws_on_close on_close;	 /* may be NULL */
	void *ctx;			 /* passed to both */
	/* Metrics hooks, each may be NULL; no labels. */
	struct cc_metric *open_gauge;	 /* connections open now */
	struct cc_metric *sent_counter;	 /* text messages handed to the framer for sending */
	struct cc_metric *dropped_slow;	 /* connections closed 1013 for their backlog */
	struct cc_metric *closed_counter; /* connections ended, any reason */
	struct cc_metric *send_latency;	 /* histogram, seconds: cc_ws_send_text_since's since_ns
					    to the message's hand-over to the framer */
};

/* Starts the hub's thread. NULL (logged) on a bad option or no memory/thread. */
struct cc_ws_hub *cc_ws_hub_start(const struct cc_ws_hub_options *opts);

/*
 * Closes every connection (1001 "shutdown", waiting up to close_timeout_ms
 * for the clients' answers), calls on_close and release for each and stops
 * the thread, but keeps the hub: from now on an adopt is refused
 * (CC_EUNAVAILABLE, on_close with id 0) and a send answers CC_ENOTFOUND.
 * For a server whose HTTP threads may still hand over sockets while it
 * stops. NULL or already drained: no-op.
 */
void cc_ws_hub_drain(struct cc_ws_hub *h);

/*
 * cc_ws_hub_drain, then frees the hub. NULL: no-op. Nothing may use the
 * hub during or after it.
 */
void cc_ws_hub_stop(struct cc_ws_hub *h);

/*
 * Hands an upgraded socket to the hub. extra/extra_len: bytes the HTTP
 * library read past the handshake (copied; may be NULL/0). remote: for
 * logs (copied; may be NULL). On success stores the new id (if id_out) and
 * returns 0; from then on release is called exactly once. On failure
 * (CC_EUNAVAILABLE: max_connections or stopping; CC_ENOMEM; CC_EINVAL)
 * returns the code, never calls release nor closes fd (the caller closes
 * it), and calls on_close(ctx, 0, user, 1013) on the calling thread (the
 * one exception to "callbacks run on the hub thread") so user can be freed.
 */
int cc_ws_hub_adopt(struct cc_ws_hub *h, int fd, const char *extra, size_t extra_len,
		    const char *remote, void *user, cc_ws_release release, void *release_cls,
		    uint64_t *id_out) CC_MUST_CHECK;

/*
 * Queues a text message (copied; must be UTF-8, not checked) for id. Never
 * blocks. Returns 0, CC_ENOTFOUND (no such open connection, or closing),
 * CC_ETOOBIG (the backlog cap: the connection is being closed 1013), or
 * CC_ENOMEM.
 */
int cc_ws_send_text(struct cc_ws_hub *h, uint64_t id, const char *msg, size_t len);

/*
 * cc_ws_send_text, timed: since_ns (cc_clock_ns(), e.g. when the event
 * reached this process) to the moment the hub hands the message to the
 * framer is observed in the send_latency histogram. 0 = not timed.
 */
int cc_ws_send_text_since(struct cc_ws_hub *h, uint64_t id, const char *msg, size_t len, int64_t since_ns);

/*
 * The upgrade that would have handed user to the hub never happened (the
 * client hung up before the 101 went out): calls on_close(ctx, 0, user,
 * 1006) on the calling thread so user can be freed, like a refused adopt.
 * NULL hub: no-op.
 */
void cc_ws_hub_abandon(struct cc_ws_hub *h, void *user);

/*
 * Starts closing id with code (1000..4999, not 1005/1006/1015) and reason
 * (UTF-8, cut to CC_WS_REASON_MAX bytes; may be NULL). Queued messages go
 * out first. Returns 0, CC_ENOTFOUND, or CC_EINVAL (a bad code).
 */
int cc_ws_close(struct cc_ws_hub *h, uint64_t id, int code, const char *reason);

/* Connections open now (adopted and not yet released). */
unsigned cc_ws_hub_open_count(struct cc_ws_hub *h);

/*
 * The Sec-WebSocket-Accept value for a Sec-WebSocket-Key (RFC 6455 4.2.2):
 * base64(SHA-1(key + GUID)), 28 characters + NUL into out. Returns 0, or
 * CC_EINVAL when key is not the base64 of 16 bytes (24 characters).
 */
int cc_ws_accept_key(const char *key, char out[29]) CC_MUST_CHECK;

#endif
