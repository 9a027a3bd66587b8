/*
 * clock.h - the one monotonic clock of every binary.
 *
 * SPEC 2: deadlines come from PostgreSQL's now() or a monotonic clock,
 * never from comparing wall clocks. These read CLOCK_MONOTONIC, which never
 * goes backwards and is not moved by NTP steps; its zero is arbitrary (boot),
 * so a value means something only next to another value of the same clock
 * in the same machine. Nothing here allocates; everything is thread-safe.
 */
#ifndef CC_CLOCK_H
#define CC_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Nanoseconds on the monotonic clock. */
int64_t cc_clock_ns(void);

/* Milliseconds on the monotonic clock (truncated). */
int64_t cc_clock_ms(void);

/* Seconds on the monotonic clock, for durations reported as doubles (metrics). */
double cc_clock_seconds(void);

/*
 * The monotonic instant ns (a cc_clock_ns() value, e.g. a deadline) as a
 * timespec, for the waits that take an absolute CLOCK_MONOTONIC time:
 * clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ...) and
 * pthread_cond_timedwait() on a condition created with
 * pthread_condattr_setclock(CLOCK_MONOTONIC). A negative ns is clamped to 0.
 */
struct timespec cc_clock_timespec(int64_t ns);

/*
 * Initialises *cond so that pthread_cond_timedwait() measures its absolute
 * time on the monotonic clock (give it a cc_clock_timespec() deadline); a
 * wall-clock step then cannot stretch or cut a wait. Returns 0 or
 * CC_ENOMEM (*cond untouched); release with pthread_cond_destroy().
 */
int cc_clock_cond_init(pthread_cond_t *cond);

#endif
