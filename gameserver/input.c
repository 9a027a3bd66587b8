/*
 * input.c - see input.h.
 */
#include "input.h"

#include <string.h>

#include "sys/banned.h"

/* Unwrapped sequences start here so that 0 keeps meaning "none". */
#define FIRST_BASE 65536

/* cc_wire_seq_diff, inlined: a - b in serial arithmetic (RFC 1982), -32768..32767. */
static inline int seq_diff(uint16_t a, uint16_t b)
{
	return (int16_t)(uint16_t)(a - b);
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void gs_input_state_init(struct gs_input_state *st, const struct gs_input_options *o)
{
	memset(st, 0, sizeof *st);
	st->o = o ? *o : GS_INPUT_OPTIONS_DEFAULT;
	/* The ring must hold the deepest backlog plus one message's redundancy. */
	st->o.max_depth = clampi(st->o.max_depth, 1, GS_INPUT_WINDOW - CC_WIRE_MAX_INPUTS - 1);
	st->o.target_depth = clampi(st->o.target_depth, 0, st->o.max_depth);
	st->o.drain_ticks = clampi(st->o.drain_ticks, 1, 3600);
	st->o.gap_wait_ticks = clampi(st->o.gap_wait_ticks, 0, st->o.max_depth);
}

static bool present(const struct gs_input_state *st, int64_t seq)
{
	size_t i = (size_t)seq % GS_INPUT_WINDOW;
	return st->have[i] && st->ring[i].seq == seq;
}

/*
 * The guard: the unwrapped sequence of in's newest input, or 0 when the
 * message is out of range and dropped. A confirmed out-of-range stream
 * resyncs here (see input.h).
 */
static int64_t guard(struct gs_input_state *st, const struct cc_wire_input_msg *in)
{
	if (st->newest == 0)
		return FIRST_BASE + in->newest_seq;
	int d = seq_diff(in->newest_seq, (uint16_t)st->newest);
	if (d >= -GS_INPUT_MAX_BEHIND && d <= GS_INPUT_MAX_AHEAD) {
		st->oor_run = 0;
		return st->newest + d;
	}
	int step = st->oor_run ? seq_diff(in->newest_seq, st->oor_last) : 0;
	st->oor_run = st->oor_run && step >= 1 && step <= GS_INPUT_MAX_INPUTS_STEP ? st->oor_run + 1 : 1;
	st->oor_last = in->newest_seq;
	if (st->oor_run < GS_INPUT_RESYNC_AFTER) {
		st->out_of_range++;
		return 0;
	}
	/*
	 * Resync: a fresh numbering above everything used so far, whose low 16
	 * bits are the wire's (acks stay in the client's numbering). The held
	 * input stays; the next tick consumes this message's newest input.
	 */
	st->resyncs++;
	st->oor_run = 0;
	memset(st->have, 0, sizeof st->have);
	int64_t top = st->newest > st->last_consumed ? st->newest : st->last_consumed;
	int64_t newest = ((top >> 16) + 2) * 65536 + in->newest_seq;
	if (st->consumed)
		st->last_consumed = newest - 1;
	st->newest = newest;
	st->gap_waited = 0;
	st->window_ticks = 0;
	return newest;
}

bool gs_input_receive(struct gs_input_state *st, const struct cc_wire_input_msg *in)
{
	if (in->count == 0)
		return false;
	int64_t newest = guard(st, in);
	if (newest == 0)
		return false;
	int64_t top = newest > st->newest ? newest : st->newest;
	for (uint16_t i = 0; i < in->count && i < CC_WIRE_MAX_INPUTS; i++) {
		int64_t seq = newest - i;
		if (seq <= st->last_consumed || seq <= top - GS_INPUT_WINDOW)
			break; /* applied or given up, or too old for the ring: redundancy we no longer need */
		const struct cc_wire_input *w = &in->inputs[i];
		size_t k = (size_t)seq % GS_INPUT_WINDOW;
		st->ring[k] = (struct gs_input){ .seq = seq, .strafe = w->thrust[0], .lift = w->thrust[1],
						 .throttle = w->thrust[2], .pitch = w->turn[0], .yaw = w->turn[1],
						 .roll = w->turn[2], .buttons = w->buttons };
		st->have[k] = true;
	}
	st->newest = top;
	return true;
}

/* Gives up everything up to and including seq (a burst cut or the drain). */
static void skip_to(struct gs_input_state *st, int64_t seq)
{
	if (seq <= st->last_consumed)
		return;
	st->skipped += (uint64_t)(seq - st->last_consumed);
	st->last_consumed = seq;
	st->gap_waited = 0;
}

static void consume(struct gs_input_state *st, int64_t seq)
{
	size_t k = (size_t)seq % GS_INPUT_WINDOW;
	st->lost += (uint64_t)(seq - st->last_consumed - 1);
	st->current = st->ring[k];
	st->have[k] = false;
	st->last_consumed = seq;
	st->gap_waited = 0;
	st->consumed++;
}

/* One tick's consumption; true when a new input was consumed. */
static bool advance(struct gs_input_state *st)
{
	if (st->newest == 0)
		return false;
	if (st->consumed == 0 && st->last_consumed < st->newest - 1)
		st->last_consumed = st->newest - 1; /* the first input: start from the newest, no delay */
	if (st->newest <= st->last_consumed)
		return false; /* ran dry */
	/* A burst: more than max_depth would remain after this tick; cut to the target. */
	if (st->newest - st->last_consumed - 1 > st->o.max_depth)
		skip_to(st, st->newest - st->o.target_depth - 1);
	int64_t next = st->last_consumed + 1;
	if (present(st, next)) {
		consume(st, next);
		return true;
	}
	if (st->gap_waited < st->o.gap_wait_ticks) {
		st->gap_waited++; /* a reordered packet may still bring it */
		return false;
	}
	for (int64_t seq = next + 1; seq <= st->newest; seq++)
		if (present(st, seq)) {
			consume(st, seq); /* the gap is given up: counted lost */
			return true;
		}
	/* Nothing newer is present after all (cannot happen: the newest is always stored): hold. */
	return false;
}

const struct gs_input *gs_input_next(struct gs_input_state *st)
{
	bool got = advance(st);
	if (got) {
		st->dry_ticks = 0;
	} else {
		st->dry_ticks++;
		st->held += st->consumed > 0;
	}
	if (st->consumed) {
		/* The drain: depth above the target on every tick of a window is latency jitter did not need. */
		int64_t depth = gs_input_depth(st);
		if (st->window_ticks == 0 || depth < st->window_min)
			st->window_min = depth;
		if (++st->window_ticks >= st->o.drain_ticks) {
			if (st->window_min > st->o.target_depth)
				skip_to(st, st->last_consumed + (st->window_min - st->o.target_depth));
			st->window_ticks = 0;
		}
	}
	return st->consumed ? &st->current : NULL;
}
