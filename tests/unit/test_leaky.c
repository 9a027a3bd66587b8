/*
 * sys/leaky: a burst up to the capacity passes, then arrivals pass at the
 * drain rate; a refused arrival costs nothing; a duty-cycled sender gets
 * the rate on average and never more (no window edge to exploit); time
 * that goes backwards drains nothing.
 */
#include "support.h"
#include "sys/leaky.h"

#include "sys/banned.h"

#define MS 1000000LL

START_TEST(test_burst_then_rate)
{
	struct cc_leaky b;
	cc_leaky_init(&b, 100, 10, 0); /* 100/s, burst 10 */
	int taken = 0;
	for (int i = 0; i < 50; i++)
		taken += cc_leaky_take(&b, 1, 0);
	ck_assert_int_eq(taken, 10);
	ck_assert(!cc_leaky_take(&b, 1, 5 * MS)); /* 0.5 drained: one does not fit yet */
	ck_assert(cc_leaky_take(&b, 1, 10 * MS)); /* 1 drained */
	/* Over one second at 1000 arrivals/s: ~100 more pass, not 1000. */
	taken = 0;
	for (int64_t t = 10 * MS; t < 1010 * MS; t += MS)
		taken += cc_leaky_take(&b, 1, t);
	ck_assert_msg(taken >= 99 && taken <= 101, "%d passed in 1 s at the rate 100/s", taken);
}
END_TEST

START_TEST(test_refused_costs_nothing)
{
	struct cc_leaky b;
	cc_leaky_init(&b, 1000, 1000, 0);
	ck_assert(cc_leaky_take(&b, 900, 0));
	ck_assert(!cc_leaky_take(&b, 200, 0)); /* does not fit: level stays 900 */
	ck_assert(cc_leaky_level(&b, 0) == 900);
	ck_assert(cc_leaky_take(&b, 100, 0));
	ck_assert(!cc_leaky_take(&b, 2000, 1000 * 1000 * MS)); /* larger than the capacity: never fits */
	ck_assert(cc_leaky_level(&b, 1000 * 1000 * MS) == 0);
	cc_leaky_reset(&b, 0);
	ck_assert(cc_leaky_level(&b, 0) == 0);
}
END_TEST

/* A sender that floods for 100 ms then idles 100 ms gets the rate on average (a window counter would give it 2x). */
START_TEST(test_duty_cycle)
{
	struct cc_leaky b;
	cc_leaky_init(&b, 200, 200, 0);
	long taken = 0;
	for (int64_t t = 0; t < 20000 * MS; t += MS / 10) {
		bool on = (t / (100 * MS)) % 2 == 0;
		if (on)
			taken += cc_leaky_take(&b, 1, t);
	}
	/* 20 s at 200/s = 4000, plus the one initial burst of 200. */
	ck_assert_msg(taken <= 4000 + 200 + 1, "%ld passed in 20 s at 200/s", taken);
	ck_assert_msg(taken >= 3900, "%ld passed: the bucket refused below its rate", taken);
}
END_TEST

START_TEST(test_clock_backwards)
{
	struct cc_leaky b;
	cc_leaky_init(&b, 100, 5, 1000 * MS);
	for (int i = 0; i < 5; i++)
		ck_assert(cc_leaky_take(&b, 1, 1000 * MS));
	ck_assert(!cc_leaky_take(&b, 1, 0)); /* earlier than the last call: nothing drained */
	ck_assert(cc_leaky_level(&b, 900 * MS) == 5);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("leaky");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_burst_then_rate);
	tcase_add_test(tc, test_refused_costs_nothing);
	tcase_add_test(tc, test_duty_cycle);
	tcase_add_test(tc, test_clock_backwards);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
