/*
 * wire_glue.h - cc-gameserver's view of the wire format: channel numbers,
 * message ids, the per-id rule table the dispatcher checks (channel, payload
 * length bounds, direction), the decoders and encoders the server calls,
 * and each peer's input sequence bookkeeping.
 *
 * The byte layouts themselves belong to game/wire (contracts/gameserver-
 * protocol.md); this file adapts them to the server's needs so server.c
 * names no byte offsets.
 *
 * Input pipeline (issue 11 part): an input message carries the newest
 * sequence number and up to GS_INPUT_REDUNDANCY inputs, newest first, so a
 * lost packet is covered by the next one. The server keeps a window of
 * received inputs past the last one it consumed and consumes one per tick,
 * in order. A sequence that never arrives is given up only when a newer
 * one proves it lost (is present), so the stream is never stranded; a
 * backlog past GS_INPUT_BACKLOG_MAX is trimmed to its newest inputs so a
 * burst cannot add lasting latency.
 */
#ifndef CC_GAMESERVER_WIRE_GLUE_H
#define CC_GAMESERVER_WIRE_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "game/join_token.h"

struct gs_match;

#define GS_PROTOCOL_VERSION 1
#define GS_CHANNELS 3
#define GS_CH_CONTROL 0  /* reliable */
#define GS_CH_INPUT 1    /* unreliable sequenced */
#define GS_CH_SNAPSHOT 2 /* unreliable sequenced */

enum gs_msg_id {
	GS_MSG_HELLO = 1,    /* c->s ch0 */
	GS_MSG_WELCOME = 2,  /* s->c ch0 */
	GS_MSG_REFUSAL = 3,  /* s->c ch0 */
	GS_MSG_INPUT = 4,    /* c->s ch1 */
	GS_MSG_SNAPSHOT = 5, /* s->c ch2 */
	GS_MSG_STATE = 6,    /* s->c ch0 */
	GS_MSG_GOAL = 7,     /* s->c ch0 */
	GS_MSG_ENDED = 8,    /* s->c ch0 */
	GS_MSG_PING = 9,     /* c->s ch0 */
	GS_MSG_PONG = 10,    /* s->c ch0 */
};

struct gs_msg_rule {
	uint16_t id;
	bool from_client;    /* the server accepts it */
	int channel;         /* the channel it must travel on */
	size_t min_payload;  /* bytes after the id */
	size_t max_payload;
};

/* The rule of id, or NULL for an id we do not know. */
const struct gs_msg_rule *gs_wire_rule(uint16_t id);

#define GS_NAME_MAX 32
struct gs_hello {
	uint16_t protocol_version;
	uint16_t tick_rate;
	char token[CC_JOIN_TOKEN_BUF]; /* "" when the hello carries a name */
	char name[GS_NAME_MAX + 1];    /* community mode: "" in allocated */
};

/* Decodes a hello payload. Returns 0, or CC_EINVAL with *why a fixed phrase. */
int gs_wire_hello_decode(const uint8_t *p, size_t len, struct gs_hello *out, const char **why) CC_MUST_CHECK;

#define GS_INPUT_REDUNDANCY 4
#define GS_INPUT_BACKLOG_MAX 8
#define GS_INPUT_WINDOW 32 /* power of two */

/* One tick of a player's controls, as the sim takes them. */
struct gs_input {
	uint32_t seq;
	int8_t throttle, strafe, lift; /* -127..127: forward, right, up */
	int8_t pitch, yaw, roll;       /* -127..127 */
	uint8_t buttons;               /* bit 0 boost */
};

struct gs_input_state {
	uint32_t last_consumed;  /* sequence of the input last applied (0 = none yet) */
	uint32_t newest;         /* newest sequence received */
	struct gs_input ring[GS_INPUT_WINDOW]; /* by seq % window */
	bool have[GS_INPUT_WINDOW];
	struct gs_input current; /* what the sim applies this tick (repeats when none arrived) */
	uint64_t lost;           /* sequences given up as lost */
};

void gs_input_state_init(struct gs_input_state *st);

/* Decodes an input payload into st. Returns 0, or CC_EINVAL with *why a bad-message kind. */
int gs_wire_input_receive(struct gs_input_state *st, const uint8_t *p, size_t len, const char **why) CC_MUST_CHECK;

/* The input to apply this tick (NULL before the first one), advancing last_consumed. */
const struct gs_input *gs_input_next(struct gs_input_state *st);

/* Encoders: each returns the bytes written into buf (cap), 0 when it does not fit. */
#define GS_REFUSAL_MAX 256
size_t gs_wire_refusal(uint8_t *buf, size_t cap, const char *reason, const char *detail);
#define GS_WELCOME_MAX 32
size_t gs_wire_welcome(uint8_t *buf, size_t cap, int slot, int team, uint32_t tick, int state);
#define GS_PONG_MAX 32
size_t gs_wire_pong(uint8_t *buf, size_t cap, const uint8_t *ping, size_t ping_len, uint32_t tick);
size_t gs_wire_state_event(uint8_t *buf, size_t cap, uint32_t tick, int state);
size_t gs_wire_goal_event(uint8_t *buf, size_t cap, uint32_t tick, int team, int slot, const int score[2]);
size_t gs_wire_ended_event(uint8_t *buf, size_t cap, uint32_t tick, const int score[2], bool overtime);
#define GS_SNAPSHOT_MAX 1200
size_t gs_wire_snapshot(uint8_t *buf, size_t cap, const struct gs_match *m, const uint32_t *acks);

/* The lifecycle state's name for logs ("PLAYING"). */
const char *gs_wire_state_name(int state);

#endif
