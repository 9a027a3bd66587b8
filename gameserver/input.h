/*
 * input.h - cc-gameserver's input pipeline for one player (SPEC 11, issue
 * 12): the sequence-range guard, the jitter buffer and stall detection.
 * server.c owns one struct gs_input_state per admitted peer; nothing here
 * does I/O, logs or allocates (plain values, the caller's memory).
 *
 * Wire: an input message carries the newest u16 sequence and up to
 * CC_WIRE_MAX_INPUTS inputs, newest first (redundancy: a lost packet is
 * covered by the next). Sequences wrap at 2^16; they are unwrapped into a
 * 64-bit count against the newest seen (cc_wire_seq_diff), so neither a
 * u16 wrap nor any number of messages can wrap the count (a peer that
 * advances it by the most the guard allows, GS_INPUT_MAX_AHEAD, at the rate
 * limit needs ~10^11 years).
 *
 * Sequence-range guard. The guard is measured against the newest sequence
 * RECEIVED (not the last consumed), and an out-of-range sequence can
 * resync the stream, so no stall, loss burst or wrap can lock an honest
 * client out. For a message whose newest_seq is d = seq_diff(wire, newest):
 *   -GS_INPUT_MAX_BEHIND <= d <= GS_INPUT_MAX_AHEAD: in range. Its inputs
 *       newer than the last consumed are buffered (late and duplicate
 *       packets just fill holes).
 *   anything else: out of range. The message is dropped (counted in
 *       out_of_range; never counted as a bad message: an honest client
 *       that was frozen and counts sequences by its clock sends one). When
 *       GS_INPUT_RESYNC_AFTER out-of-range messages in a row are each
 *       1..GS_INPUT_MAX_INPUTS_STEP newer than the previous one (a live
 *       stream, not noise), the stream resyncs: the buffer is emptied, the
 *       held input stays, and the next tick consumes the newest input of
 *       that message (counted in resyncs, not in out_of_range). An isolated wild sequence (a
 *       hostile jump, a stale duplicate) therefore changes nothing.
 *
 * Jitter buffer (fixed target depth, why: the client predicts its own ship,
 * so a steady extra tick of delay costs nothing visible while a stall
 * costs a misprediction; an adaptive target would chase the jitter, the
 * min-occupancy drain below already removes the latency jitter did not
 * need). One input is consumed per tick, in sequence order:
 *   - the next sequence is there: consume it;
 *   - nothing newer than the last consumed was received: the stream ran
 *     dry: the last input is held (stalled);
 *   - the next sequence is missing but newer ones are there: wait at most
 *     gap_wait_ticks (holding the last input: a reordered packet may still
 *     bring it), then give it up as lost and consume the oldest newer one.
 *     Never skipped before something newer is there: never stranded.
 *   - depth = newest received - last consumed, after the tick. Past
 *     max_depth (a burst: a backlog that arrived at once after a stall)
 *     the oldest are skipped at once down to target_depth; and when the
 *     depth stayed above target_depth on every tick of drain_ticks ticks,
 *     the excess (the smallest depth seen minus the target) is skipped:
 *     a burst adds at most max_depth ticks of latency for at most two
 *     drain windows, then none.
 * Skipped inputs (burst, drain) count in skipped, given-up gaps in lost.
 *
 * Stall: dry_ticks counts ticks in a row on which no new input was consumed
 * (held or waiting on a gap, and before the first input); gs_input_stalled()
 * is true while it is non-zero: the snapshot's CC_WIRE_PF_INPUT_STALLED.
 */
#ifndef CC_GAMESERVER_INPUT_H
#define CC_GAMESERVER_INPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "game/wire.h"

#define GS_INPUT_WINDOW 64	     /* ring of buffered inputs (power of two, > max_depth + CC_WIRE_MAX_INPUTS) */
#define GS_INPUT_MAX_AHEAD 1024	     /* newest_seq this far past the newest received: in range (17 s of ticks) */
#define GS_INPUT_MAX_BEHIND 64	     /* ... this far behind it: a late or duplicate packet, in range */
#define GS_INPUT_RESYNC_AFTER 2	     /* out-of-range messages in a row, each a small step newer, that resync */
#define GS_INPUT_MAX_INPUTS_STEP 64  /* "a small step": a live stream with some loss */

/* One tick of a player's controls, as the sim takes them (axes -127..127). */
struct gs_input {
	int64_t seq;		       /* unwrapped sequence */
	int8_t throttle, strafe, lift; /* forward, right, up */
	int8_t pitch, yaw, roll;
	uint8_t buttons; /* CC_WIRE_BTN_* */
};

struct gs_input_options {
	int target_depth;   /* inputs kept buffered, the floor the drain cuts to (default 1) */
	int max_depth;	    /* a backlog deeper than this is cut to target at once (default 8, < GS_INPUT_WINDOW - 16) */
	int drain_ticks;    /* depth above target on every tick of this many: the excess is skipped (default 30) */
	int gap_wait_ticks; /* a missing input with newer ones present is waited for this long (default 2) */
};

#define GS_INPUT_OPTIONS_DEFAULT ((struct gs_input_options){ 1, 8, 30, 2 })

struct gs_input_state {
	struct gs_input_options o;
	int64_t last_consumed; /* unwrapped sequence of the input last applied (0 = none yet) */
	int64_t newest;	       /* newest unwrapped sequence received (0 = none yet) */
	struct gs_input ring[GS_INPUT_WINDOW]; /* by seq % window; valid when have[] and .seq match */
	bool have[GS_INPUT_WINDOW];
	struct gs_input current; /* what the sim applies (held when nothing new) */
	int gap_waited;		 /* ticks spent waiting on the current gap */
	int window_ticks;	 /* ticks into the current drain window */
	int64_t window_min;	 /* smallest depth seen in it */
	uint16_t oor_last;	 /* newest_seq of the last out-of-range message */
	int oor_run;		 /* out-of-range messages in a row, each a small step newer */
	uint32_t dry_ticks;	 /* ticks in a row with no new input consumed */
	/* Counters (monotonic, for metrics and tests). */
	uint64_t consumed, held, lost, skipped, out_of_range, resyncs;
};

/* An empty pipeline with options o (NULL: GS_INPUT_OPTIONS_DEFAULT); out-of-range options are clamped. */
void gs_input_state_init(struct gs_input_state *st, const struct gs_input_options *o);

/* Takes a decoded input message (the guard, then the buffer). Returns true when it was in range or resynced. */
bool gs_input_receive(struct gs_input_state *st, const struct cc_wire_input_msg *in);

/* The input to apply this tick (NULL before the first one); advances the stream by one tick. */
const struct gs_input *gs_input_next(struct gs_input_state *st);

/* The wire sequence of the last consumed input (what a snapshot acknowledges). */
static inline uint16_t gs_input_ack(const struct gs_input_state *st) { return (uint16_t)st->last_consumed; }

/* Some input was consumed (the snapshot's has_input). */
static inline bool gs_input_started(const struct gs_input_state *st) { return st->last_consumed != 0; }

/* The stream ran dry on the last tick: the server is holding the last input (or has none yet). */
static inline bool gs_input_stalled(const struct gs_input_state *st) { return st->dry_ticks > 0; }

/* Inputs received but not yet consumed (newest - last consumed). */
static inline int64_t gs_input_depth(const struct gs_input_state *st)
{
	return st->newest > st->last_consumed ? st->newest - st->last_consumed : 0;
}

#endif
