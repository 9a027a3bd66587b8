/*
 * leaky.h - a leaky bucket: a level that drains at a fixed rate and takes
 * amounts only while they fit under a capacity.
 *
 * Used for per-connection packet and byte limits: every arrival adds its
 * cost, the bucket leaks rate units per second, and an arrival that would
 * overflow it is refused (the level stays where it was: a refused arrival
 * costs nothing, so a sender that backs off is served again as soon as the
 * bucket drained). Unlike a window counter there is no reset at a window
 * edge, so a duty-cycled sender gets exactly rate on average, never more.
 *
 * Time is the caller's (monotonic nanoseconds, sys/clock.h), so tests drive
 * it. Plain values; nothing allocates; not thread-safe (one owner).
 */
#ifndef CC_LEAKY_H
#define CC_LEAKY_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"

struct cc_leaky {
	double level;	 /* units in the bucket */
	double capacity; /* the most it holds (the burst) */
	double rate;	 /* units drained per second */
	double per_ns;	 /* rate / 1e9: one multiply per drain */
	int64_t last_ns; /* when level was last drained */
};

/* An empty bucket draining rate units/s, holding at most capacity, as of now_ns. */
void cc_leaky_init(struct cc_leaky *b, double rate, double capacity, int64_t now_ns);

/*
 * Drains the bucket up to now_ns, then adds amount when level + amount <=
 * capacity. Returns true when it fit (taken), false when it did not (the
 * level is unchanged). A now_ns before the last call drains nothing.
 */
CC_MUST_CHECK bool cc_leaky_take(struct cc_leaky *b, double amount, int64_t now_ns);

/*
 * Gives back amount taken by the last cc_leaky_take (a packet this bucket
 * took that another limit then refused: it must cost nothing here either).
 */
void cc_leaky_untake(struct cc_leaky *b, double amount);

/* The level after draining up to now_ns. */
double cc_leaky_level(struct cc_leaky *b, int64_t now_ns);

/* Empties the bucket as of now_ns (rate and capacity kept). */
void cc_leaky_reset(struct cc_leaky *b, int64_t now_ns);

#endif
