/* The monotonic clock (clock.h). */
#include "sys/clock.h"

#include "sys/cc.h"

#include "sys/banned.h"

#define NS_PER_S 1000000000LL

int64_t cc_clock_ns(void)
{
	struct timespec ts;
	/* Cannot fail for CLOCK_MONOTONIC with a valid pointer (POSIX, Linux). */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int64_t cc_clock_ms(void)
{
	return cc_clock_ns() / 1000000;
}

double cc_clock_seconds(void)
{
	return (double)cc_clock_ns() / 1e9;
}

struct timespec cc_clock_timespec(int64_t ns)
{
	if (ns < 0)
		ns = 0;
	return (struct timespec){ .tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S) };
}

int cc_clock_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	if (pthread_condattr_init(&attr) != 0)
		return CC_ENOMEM;
	int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cond, &attr) == 0
			 ? 0
			 : CC_ENOMEM;
	pthread_condattr_destroy(&attr);
	return rc;
}
