/*
 * wait_estimate.h - a queued ticket's estimated wait (issue 26), from the
 * waits of recent matches of its queue. Pure: no I/O.
 *
 * A wait sample is one ticket of one proposal the matcher formed: the
 * seconds from that ticket's queued_at (kept across requeues) to the
 * proposal's creation, and the rating the ticket queued with. The caller
 * gathers the samples of the ticket's playlist whose proposal was formed
 * in a region the ticket reaches within SPEC 6's RTT limit, in the last
 * CC_WAIT_WINDOW_SECONDS, newest first, at most CC_WAIT_SAMPLES_MAX
 * (store/queue_stats.h reads them from PostgreSQL; bench/queue_sim from its
 * simulated history). The rule, applied here:
 *
 *   1. keep the samples whose rating lies within CC_WAIT_RATING_BAND of
 *      the ticket's (the band's edges included) and whose wait is finite,
 *      >= 0 and <= CC_WAIT_SAMPLE_MAX_SECONDS (others are ignored);
 *   2. fewer than CC_WAIT_MIN_SAMPLES kept: method no_history, no seconds;
 *   3. of those, the ones that waited longer than this ticket already has
 *      (waited_s): fewer than CC_WAIT_MIN_SAMPLES: beyond_history (the
 *      ticket has outwaited what the history knows), no seconds;
 *   4. else recent_matches: the median of (wait - waited_s) over the
 *      newest CC_WAIT_USE_MAX of them, rounded to whole seconds: how much
 *      longer this ticket is expected to wait until a match is proposed.
 * A ticket that is not QUEUED gets not_queued and no seconds. The caller
 * that cannot read the history at all answers unavailable (no seconds).
 */
#ifndef CC_GAME_WAIT_ESTIMATE_H
#define CC_GAME_WAIT_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>

#include "sys/cc.h"

#define CC_WAIT_WINDOW_SECONDS 900          /* samples formed in the last 15 minutes */
#define CC_WAIT_SAMPLES_MAX 256             /* the newest this many, before the band */
#define CC_WAIT_RATING_BAND 200.0           /* rating points either side of the ticket's */
#define CC_WAIT_MIN_SAMPLES 3               /* fewer is no history (or beyond it) */
#define CC_WAIT_USE_MAX 64                  /* the median is over the newest this many */
#define CC_WAIT_SAMPLE_MAX_SECONDS 86400.0  /* longer samples are corrupt: ignored */

enum cc_wait_method {
	CC_WAIT_RECENT_MATCHES, /* seconds is the estimate */
	CC_WAIT_NO_HISTORY,     /* too few recent matches in the ticket's band */
	CC_WAIT_BEYOND_HISTORY, /* the ticket already waited longer than the history knows */
	CC_WAIT_NOT_QUEUED,     /* the ticket is not waiting (any state but QUEUED) */
	CC_WAIT_UNAVAILABLE,    /* never from this rule: the caller could not read the history */
};

struct cc_wait_sample {
	double wait_s; /* queued_at to the proposal's creation, seconds */
	double rating; /* the sample ticket's rating */
};

struct cc_wait_estimate {
	enum cc_wait_method method;
	double seconds;  /* whole seconds >= 0 when method is RECENT_MATCHES, else 0 */
	size_t in_band;  /* samples the rule kept (step 1), for diagnostics */
};

/*
 * The estimate for a ticket (queued or not) of rating rating that has
 * waited waited_s (negative, from a clock step, counts as 0) over
 * samples[0..n) (newest first; beyond CC_WAIT_SAMPLES_MAX ignored).
 * Returns 0, or CC_EINVAL (out untouched) for out NULL, samples NULL with
 * n > 0, or a non-finite rating or waited_s while queued.
 */
CC_MUST_CHECK int cc_wait_estimate(bool queued, double rating, double waited_s,
				   const struct cc_wait_sample *samples, size_t n, struct cc_wait_estimate *out);

/* "recent_matches", "no_history", "beyond_history", "not_queued", "unavailable" (the contract's names); NULL outside the enum. */
const char *cc_wait_method_name(enum cc_wait_method m);

#endif
