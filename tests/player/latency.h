/*
 * latency.h - exact latency percentiles for cc-player.
 *
 * A recorder keeps every sample (nanoseconds) in a growable array with a
 * hard cap chosen at init, so p50/p99 are exact order statistics of what
 * was measured, not bucket estimates. One recorder belongs to one thread;
 * the threads' recorders are merged into one after they have stopped.
 * Samples past the cap are not stored but counted in `dropped`, and the
 * report says so rather than silently skewing the tail.
 *
 * Ownership: the recorder owns its array; pc_latency_release() frees it
 * (a zeroed or released recorder is a harmless no-op to release again).
 */
#ifndef PC_LATENCY_H
#define PC_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define PC_LATENCY_MAX_SAMPLES (64u * 1024 * 1024) /* cap of any one recorder */

struct pc_latency {
	uint64_t *ns;     /* samples, in arrival order until sorted */
	size_t n;         /* samples stored */
	size_t cap;       /* allocated slots */
	size_t max;       /* hard cap on n, fixed at init */
	uint64_t dropped; /* samples refused because n reached max or memory ran out */
	int sorted;       /* ns[0..n) is ascending */
};

/* Sets up an empty recorder holding at most max samples (0 or more than
 * PC_LATENCY_MAX_SAMPLES means PC_LATENCY_MAX_SAMPLES). Allocates nothing. */
void pc_latency_init(struct pc_latency *l, size_t max);

/* Stores one sample. Returns 0, or CC_ETOOBIG (cap reached) / CC_ENOMEM,
 * in which case the sample is counted in l->dropped. */
int pc_latency_add(struct pc_latency *l, uint64_t ns);

/* Appends every sample (and the dropped count) of src to dst, within dst's
 * cap. src is unchanged. Returns 0, or CC_ETOOBIG/CC_ENOMEM when some
 * samples had to be dropped (counted in dst->dropped). */
int pc_latency_merge(struct pc_latency *dst, const struct pc_latency *src);

/*
 * The p-th percentile (0 < p <= 100) in milliseconds by the nearest-rank
 * definition: the smallest sample with at least p% of the samples at or
 * below it (so p100 is the maximum). Sorts the samples on first use.
 * Returns 0.0 for an empty recorder or p outside (0, 100].
 */
double pc_latency_percentile_ms(struct pc_latency *l, double p);

/* Mean of the samples in milliseconds, 0.0 when empty. */
double pc_latency_mean_ms(const struct pc_latency *l);

/* Frees the samples and zeroes the recorder. NULL is a no-op. */
void pc_latency_release(struct pc_latency *l);

#endif
