/*
 * wire_glue.h - between cc-gameserver and game/wire (the codec): the
 * refusal reasons of our admission mapped to the wire's, each peer's input
 * sequence bookkeeping, and the messages built from the match (welcome,
 * snapshot, kickoff, state, goal, end) so server.c names no field layout.
 *
 * Input pipeline (issue 11 part): an input message carries the newest u16
 * sequence number and up to CC_WIRE_MAX_INPUTS inputs, newest first, so a
 * lost packet is covered by the next one. Sequences wrap at 2^16; the
 * server unwraps them against the newest it has seen (serial arithmetic,
 * cc_wire_seq_diff), so the stream survives a wrap. It keeps a window of
 * received inputs past the last one it consumed and consumes one per tick,
 * in order. A sequence that never arrives is given up only when a newer one
 * proves it lost (is present), so the stream is never stranded; a backlog
 * past GS_INPUT_BACKLOG_MAX is trimmed to its newest inputs so a burst
 * cannot add lasting latency. With nothing new, the last input holds.
 *
 * Ownership: plain values; nothing allocates.
 */
#ifndef CC_GAMESERVER_WIRE_GLUE_H
#define CC_GAMESERVER_WIRE_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "game/wire.h"

struct gs_match;

#define GS_PROTOCOL_VERSION CC_WIRE_PROTOCOL_VERSION
#define GS_CHANNELS CC_WIRE_CHANNELS
#define GS_CH_CONTROL CC_WIRE_CH_CONTROL
#define GS_CH_INPUT CC_WIRE_CH_INPUT
#define GS_CH_SNAPSHOT CC_WIRE_CH_SNAPSHOT

/*
 * The wire reason (enum cc_wire_reason) for an admission refusal named by
 * game/token.h's names ("bad_signature", "expired", ...) or "token_replayed":
 * the wire keeps its list short, the log keeps the precise name.
 */
uint16_t gs_wire_reason_for_refusal(const char *refusal);

#define GS_INPUT_BACKLOG_MAX 8
#define GS_INPUT_WINDOW 32 /* power of two, > GS_INPUT_BACKLOG_MAX + CC_WIRE_MAX_INPUTS */

/* One tick of a player's controls, as the sim takes them (axes -127..127). */
struct gs_input {
	uint32_t seq;                  /* unwrapped sequence */
	int8_t throttle, strafe, lift; /* forward, right, up */
	int8_t pitch, yaw, roll;
	uint8_t buttons;               /* CC_WIRE_BTN_* */
};

struct gs_input_state {
	uint32_t last_consumed;  /* unwrapped sequence of the input last applied (0 = none yet) */
	uint32_t newest;         /* newest unwrapped sequence received (0 = none yet) */
	struct gs_input ring[GS_INPUT_WINDOW]; /* by seq % window */
	bool have[GS_INPUT_WINDOW];
	struct gs_input current; /* what the sim applies this tick (held when none arrived) */
	uint64_t lost;           /* sequences given up as lost */
};

void gs_input_state_init(struct gs_input_state *st);

/* Takes a decoded input message into st. */
void gs_input_receive(struct gs_input_state *st, const struct cc_wire_input_msg *in);

/* The input to apply this tick (NULL before the first one), advancing last_consumed. */
const struct gs_input *gs_input_next(struct gs_input_state *st);

/* The wire sequence of the last consumed input (what a snapshot acknowledges). */
static inline uint16_t gs_input_ack(const struct gs_input_state *st) { return (uint16_t)st->last_consumed; }

/* Message builders: fill *m (its id included) from the match. */
void gs_wire_snapshot(struct cc_wire_msg *m, const struct gs_match *match, const bool *connected,
		      const struct gs_input_state *const *inputs);
void gs_wire_kickoff(struct cc_wire_msg *m, const struct gs_match *match);
void gs_wire_match_state(struct cc_wire_msg *m, const struct gs_match *match);

/* The lifecycle state's name for logs ("PLAYING"). */
const char *gs_wire_state_name(int state);

#endif
