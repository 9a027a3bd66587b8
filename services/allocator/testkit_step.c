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
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "sys/log.h"
#include "sys/banned.h"

void allocator_testkit_step(const char *step)
{
	const char *at = getenv("COSMIC_CLASH_TESTKIT_CRASH_AT");
	if (!at || strcmp(at, step) != 0)
		return;
	cc_log_warn("testkit_crash", CC_LOG_STR("step", step));
	raise(SIGKILL);
}
