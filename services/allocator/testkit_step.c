/*
 * testkit_step.c - cc-testkit-allocator's crash hook: stops the process at
 * a named step of work.c ("claimed", "allocated", "delivered",
 * "published") so a test can prove that a restart after a crash there
 * yields one allocation and one published roster.
 *
 * COSMIC_CLASH_TESTKIT_CRASH_AT=<step> makes the first arrival at that
 * step raise SIGKILL (no cleanup, no flush: a real crash). Linked ONLY into
 * cc-testkit-allocator (the Makefile leaves testkit_*.c out of
 * cc-allocator), so the production binary has no way to crash itself; a
 * test checks that cc-allocator lacks this symbol.
 *
 * COSMIC_CLASH_TESTKIT_STALL_AT=<step> with _STALL_UNTIL=<path>: the first
 * worker thread to arrive at that step waits there until the file path
 * exists (a worker stalled past its claim lease while the others go on),
 * logging testkit_stalled and testkit_resumed; the end of that worker's
 * pass ("pass_done") then logs testkit_pass_done, so a test knows when
 * whatever the stalled worker did next is done.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocator.h"
#include "sys/log.h"
#include "sys/banned.h"

static atomic_bool stalled_once;
static _Thread_local bool stalled_here;

/* The stall of COSMIC_CLASH_TESTKIT_STALL_AT (see above). */
static void stall(const char *step)
{
	const char *at = getenv("COSMIC_CLASH_TESTKIT_STALL_AT"), *until = getenv("COSMIC_CLASH_TESTKIT_STALL_UNTIL");
	if (strcmp(step, "pass_done") == 0 && stalled_here) {
		stalled_here = false;
		cc_log_warn("testkit_pass_done", CC_LOG_STR("step", step));
		return;
	}
	if (!at || !until || strcmp(at, step) != 0 || atomic_exchange(&stalled_once, true))
		return;
	cc_log_warn("testkit_stalled", CC_LOG_STR("step", step));
	while (access(until, F_OK) != 0) {
		struct timespec ts = { 0, 10 * 1000 * 1000 }; /* waiting for the test's file, not a synchronisation */
		nanosleep(&ts, NULL);
	}
	stalled_here = true;
	cc_log_warn("testkit_resumed", CC_LOG_STR("step", step));
}

void allocator_testkit_step(const char *step)
{
	stall(step);
	const char *at = getenv("COSMIC_CLASH_TESTKIT_CRASH_AT");
	if (!at || strcmp(at, step) != 0)
		return;
	cc_log_warn("testkit_crash", CC_LOG_STR("step", step));
	raise(SIGKILL);
}
