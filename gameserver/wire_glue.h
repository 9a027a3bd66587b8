/*
 * wire_glue.h - between cc-gameserver and game/wire (the codec): the
 * refusal reasons of our admission mapped to the wire's, and the messages built from the match (welcome,
 * snapshot, kickoff, state, goal, end) so server.c names no field layout.
 *
 * The input pipeline (sequence guard, jitter buffer, stall) is
 * gameserver/input.h's; the snapshot reports its ack and stalled bit.
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
#include "input.h"

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

/* Message builders: fill *m (its id included) from the match. */
void gs_wire_snapshot(struct cc_wire_msg *m, const struct gs_match *match, const bool *connected,
		      const struct gs_input_state *const *inputs);
void gs_wire_kickoff(struct cc_wire_msg *m, const struct gs_match *match);
void gs_wire_match_state(struct cc_wire_msg *m, const struct gs_match *match);

/* The lifecycle state's name for logs ("PLAYING"). */
const char *gs_wire_state_name(int state);

#endif
