/* The monotonic clock (sys/clock.h): units agree, it never goes back, timespecs convert exactly. */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "support.h"
#include "sys/cc.h"
#include "sys/clock.h"

#include "sys/banned.h"

/* ms, ns and seconds read the same clock: each lies between two ns readings. */
START_TEST(test_units_agree)
{
	for (int i = 0; i < 1000; i++) {
		int64_t before = cc_clock_ns();
		int64_t ms = cc_clock_ms();
		double s = cc_clock_seconds();
		int64_t after = cc_clock_ns();
		ck_assert_int_le(before, after);
		ck_assert_int_le(before / 1000000, ms);
		ck_assert_int_le(ms, after / 1000000);
		ck_assert_msg(s >= (double)before / 1e9 - 1e-6 && s <= (double)after / 1e9 + 1e-6,
			      "seconds %.9f outside [%lld, %lld] ns", s, (long long)before, (long long)after);
	}
}
END_TEST

/* Never backwards, and it moves: a deadline 20 ms ahead is reached (waited for, with a deadline of its own). */
START_TEST(test_monotonic_and_moving)
{
	int64_t start = cc_clock_ms(), last = cc_clock_ns(), spins = 0;
	while (cc_clock_ms() < start + 20) {
		int64_t now = cc_clock_ns();
		ck_assert_int_ge(now, last);
		last = now;
		ck_assert_msg(++spins < 2000000000, "the clock did not move 20 ms in 2e9 reads");
	}
}
END_TEST

static const struct {
	int64_t ns;
	time_t sec;
	long nsec;
} spans[] = {
	{ 0, 0, 0 },
	{ 1, 0, 1 },
	{ 999999999, 0, 999999999 },
	{ 1000000000, 1, 0 },
	{ 1500000000, 1, 500000000 },
	{ 86400LL * 1000000000 + 7, 86400, 7 },
	{ -1, 0, 0 }, /* clamped */
	{ INT64_MIN, 0, 0 },
};

START_TEST(test_timespec_table)
{
	struct timespec ts = cc_clock_timespec(spans[_i].ns);
	ck_assert_msg(ts.tv_sec == spans[_i].sec && ts.tv_nsec == spans[_i].nsec, "case %d: %lld.%09ld", _i,
		      (long long)ts.tv_sec, ts.tv_nsec);
}
END_TEST

/* A deadline built with cc_clock_timespec is CLOCK_MONOTONIC's: sleeping to it lands after it. */
START_TEST(test_timespec_is_monotonic_time)
{
	int64_t deadline = cc_clock_ns() + 5000000;
	struct timespec until = cc_clock_timespec(deadline);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) != 0) {
	}
	ck_assert_int_ge(cc_clock_ns(), deadline);
}
END_TEST

/*
 * A condition from cc_clock_cond_init times out at a cc_clock_timespec
 * deadline, not before it: on CLOCK_REALTIME (the default) that deadline,
 * counted from boot, lies decades in the past and the wait returns at once.
 */
START_TEST(test_cond_waits_on_the_monotonic_clock)
{
	pthread_cond_t cond;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	ck_assert_int_eq(cc_clock_cond_init(&cond), 0);
	int64_t deadline = cc_clock_ns() + 20000000;
	struct timespec until = cc_clock_timespec(deadline);
	pthread_mutex_lock(&lock);
	int rc;
	while ((rc = pthread_cond_timedwait(&cond, &lock, &until)) == 0) {
	}
	pthread_mutex_unlock(&lock);
	ck_assert_int_eq(rc, ETIMEDOUT);
	int64_t now = cc_clock_ns();
	ck_assert_int_ge(now, deadline);
	ck_assert_int_lt(now - deadline, 60LL * 1000000000); /* 20 ms, with a loaded machine's slack */
	pthread_cond_destroy(&cond);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("clock");
	tcase_add_test(tc, test_units_agree);
	tcase_add_test(tc, test_monotonic_and_moving);
	tcase_add_loop_test(tc, test_timespec_table, 0, CC_ARRAY_LEN(spans));
	tcase_add_test(tc, test_timespec_is_monotonic_time);
	tcase_add_test(tc, test_cond_waits_on_the_monotonic_clock);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
