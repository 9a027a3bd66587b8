/*
 * events.h - cc-player's side of GET /v1/events (contracts/v1/events.json):
 * one player's WebSocket stream (sys/ws_client.h), opened with its session
 * token as "Authorization: Bearer", resumed with ?after=<the highest
 * position seen>, and each message decoded into a struct pc_event for the
 * demo's state machine (demo.c), which is the same one its ticket reads
 * feed.
 *
 * Ownership: a stream owns its connection; pc_stream_free() closes it. An
 * event handed to the callback lives until the callback returns. One
 * stream is used by one thread (the worker that owns the player).
 */
#ifndef PC_EVENTS_H
#define PC_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/ws_client.h"

/* One decoded message: a resource event (the outbox envelope) or stream.ready / stream.resync. */
struct pc_event {
	char event[64];			 /* "ticket.proposed", "stream.ready", ... */
	int64_t position;		 /* 0 when absent */
	char resource_type[32];		 /* "" for stream.* */
	char resource_id[CC_UUID_BUF];
	int64_t revision;		 /* 0 when absent */
	char proposal_id[CC_UUID_BUF];	 /* payload.proposal_id ("" none) */
	char match_id[CC_UUID_BUF];	 /* payload.match_id ("" none) */
	char reason[64];		 /* payload.reason or stream.resync's reason */
	int64_t replayed;		 /* stream.ready's replayed */
};

/* Called for every message that decodes (others are logged and skipped). */
typedef void (*pc_event_cb)(void *ctx, const struct pc_event *ev);

struct pc_stream;

/*
 * Opens GET /v1/events[?after=after] on base_url ("http://host:port"; an
 * https URL is refused: CC_EINVAL) with Authorization: Bearer token.
 * after < 0: no after (a live-only stream). Returns 0 with *out set, or
 * cc_ws_client_connect's result with *refusal filled (refusal->status
 * tells a 401 from a 404, a 429 or a 503).
 */
int pc_stream_open(const char *base_url, const char *token, int64_t after, int timeout_ms, pc_event_cb cb,
		   void *ctx, struct pc_stream **out, struct cc_ws_client_refusal *refusal) CC_MUST_CHECK;

/* Closes (1000, without waiting for the answer) and frees. NULL: no-op. */
void pc_stream_free(struct pc_stream *s);

/* For poll(2): the socket (-1 once ended) and the events it waits for. */
int pc_stream_fd(const struct pc_stream *s);
short pc_stream_events(const struct pc_stream *s);

/* Reads and delivers what arrived, waiting up to timeout_ms. Returns 1 while open, 0 once ended. */
int pc_stream_service(struct pc_stream *s, int timeout_ms);

/* Once ended: the server's close code (1006: none came) and reason. */
int pc_stream_close_code(const struct pc_stream *s);
const char *pc_stream_close_reason(const struct pc_stream *s);

/* Decodes one message; false (with why) when it is no JSON object with a string "event". */
bool pc_event_decode(const char *msg, size_t len, struct pc_event *ev, const char **why);

#endif
