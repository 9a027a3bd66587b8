/*
 * The estimated wait rule (game/wait_estimate.h): each method, the rating
 * band's edges, the conditioning on the wait so far, and hostile input
 * (no samples, NaN, negative and huge waits, more samples than the cap).
 * tests/integration/queue_wait_estimate.sh proves the wiring through
 * cc-api and cc-matcher.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "game/wait_estimate.h"
#include "sys/banned.h"

static struct cc_wait_estimate est(double rating, double waited, const struct cc_wait_sample *s, size_t n)
{
	struct cc_wait_estimate e;
	memset(&e, 0x5a, sizeof e);
	ck_assert_int_eq(cc_wait_estimate(true, rating, waited, s, n, &e), 0);
	return e;
}

START_TEST(test_method_names)
{
	ck_assert_str_eq(cc_wait_method_name(CC_WAIT_RECENT_MATCHES), "recent_matches");
	ck_assert_str_eq(cc_wait_method_name(CC_WAIT_NO_HISTORY), "no_history");
	ck_assert_str_eq(cc_wait_method_name(CC_WAIT_BEYOND_HISTORY), "beyond_history");
	ck_assert_str_eq(cc_wait_method_name(CC_WAIT_NOT_QUEUED), "not_queued");
	ck_assert_str_eq(cc_wait_method_name(CC_WAIT_UNAVAILABLE), "unavailable");
	ck_assert_ptr_null(cc_wait_method_name((enum cc_wait_method)42));
}
END_TEST

START_TEST(test_recent_matches_is_the_median)
{
	struct cc_wait_sample s[] = { { 10, 1500 }, { 30, 1500 }, { 20, 1500 } };
	struct cc_wait_estimate e = est(1500, 0, s, 3);
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_double_eq(e.seconds, 20);
	ck_assert_uint_eq(e.in_band, 3);
	/* Even count: the mean of the middle two, rounded to whole seconds. */
	struct cc_wait_sample t[] = { { 10, 1500 }, { 13, 1500 }, { 40, 1500 }, { 2, 1500 } };
	e = est(1500, 0, t, 4);
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_double_eq(e.seconds, 12); /* (10 + 13) / 2 = 11.5 -> 12 */
}
END_TEST

START_TEST(test_no_history)
{
	struct cc_wait_estimate e = est(1500, 0, NULL, 0);
	ck_assert_int_eq(e.method, CC_WAIT_NO_HISTORY);
	ck_assert_double_eq(e.seconds, 0);
	struct cc_wait_sample s[] = { { 10, 1500 }, { 30, 1500 } };
	e = est(1500, 0, s, 2); /* one short of CC_WAIT_MIN_SAMPLES */
	ck_assert_int_eq(e.method, CC_WAIT_NO_HISTORY);
	ck_assert_uint_eq(e.in_band, 2);
}
END_TEST

START_TEST(test_band_edges)
{
	const double b = CC_WAIT_RATING_BAND;
	/* On both edges: in. */
	struct cc_wait_sample in[] = { { 5, 1500 - b }, { 5, 1500 + b }, { 5, 1500 } };
	struct cc_wait_estimate e = est(1500, 0, in, 3);
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_uint_eq(e.in_band, 3);
	/* Just beyond either edge: out, so two in band is no history. */
	struct cc_wait_sample out[] = { { 5, 1500 - b - 0.001 }, { 5, 1500 + b + 0.001 }, { 5, 1500 }, { 5, 1500 } };
	e = est(1500, 0, out, 4);
	ck_assert_int_eq(e.method, CC_WAIT_NO_HISTORY);
	ck_assert_uint_eq(e.in_band, 2);
	/* Out-of-band samples never weigh on the median. */
	struct cc_wait_sample mix[] = { { 500, 2500 }, { 4, 1490 }, { 500, 500 }, { 6, 1510 }, { 5, 1500 } };
	e = est(1500, 0, mix, 5);
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_double_eq(e.seconds, 5);
}
END_TEST

START_TEST(test_conditioned_on_the_wait_so_far)
{
	struct cc_wait_sample s[] = { { 5, 1500 }, { 10, 1500 }, { 40, 1500 }, { 50, 1500 }, { 60, 1500 } };
	/* Waited 20 s: the samples that waited longer are 40, 50, 60 -> 20, 30, 40 more. */
	struct cc_wait_estimate e = est(1500, 20, s, 5);
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_double_eq(e.seconds, 30);
	/* Waited 45 s: only two samples waited longer: beyond the history. */
	e = est(1500, 45, s, 5);
	ck_assert_int_eq(e.method, CC_WAIT_BEYOND_HISTORY);
	ck_assert_double_eq(e.seconds, 0);
	ck_assert_uint_eq(e.in_band, 5);
	/* Waited exactly a sample's wait: that sample does not count as longer. */
	e = est(1500, 40, s, 5);
	ck_assert_int_eq(e.method, CC_WAIT_BEYOND_HISTORY);
	/* A clock step's negative wait counts as zero. */
	e = est(1500, -1e9, s, 5);
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_double_eq(e.seconds, 40);
}
END_TEST

START_TEST(test_not_queued)
{
	struct cc_wait_sample s[] = { { 5, 1500 }, { 10, 1500 }, { 40, 1500 } };
	struct cc_wait_estimate e;
	ck_assert_int_eq(cc_wait_estimate(false, 1500, 0, s, 3, &e), 0);
	ck_assert_int_eq(e.method, CC_WAIT_NOT_QUEUED);
	ck_assert_double_eq(e.seconds, 0);
	/* Not queued needs no finite inputs: nothing is estimated. */
	ck_assert_int_eq(cc_wait_estimate(false, NAN, INFINITY, NULL, 0, &e), 0);
	ck_assert_int_eq(e.method, CC_WAIT_NOT_QUEUED);
}
END_TEST

START_TEST(test_hostile_input)
{
	struct cc_wait_estimate e = { .method = CC_WAIT_NOT_QUEUED, .seconds = 7 };
	struct cc_wait_sample ok[] = { { 5, 1500 }, { 10, 1500 }, { 40, 1500 } };
	ck_assert_int_eq(cc_wait_estimate(true, 1500, 0, ok, 3, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_wait_estimate(true, 1500, 0, NULL, 3, &e), CC_EINVAL);
	ck_assert_int_eq(cc_wait_estimate(true, NAN, 0, ok, 3, &e), CC_EINVAL);
	ck_assert_int_eq(cc_wait_estimate(true, INFINITY, 0, ok, 3, &e), CC_EINVAL);
	ck_assert_int_eq(cc_wait_estimate(true, 1500, NAN, ok, 3, &e), CC_EINVAL);
	ck_assert_int_eq(cc_wait_estimate(true, 1500, INFINITY, ok, 3, &e), CC_EINVAL);
	ck_assert_int_eq(e.method, CC_WAIT_NOT_QUEUED); /* untouched on refusal */
	ck_assert_double_eq(e.seconds, 7);

	/* Corrupt samples are ignored, never averaged in: NaN, infinite, negative, beyond a day. */
	struct cc_wait_sample bad[] = {
		{ NAN, 1500 }, { INFINITY, 1500 }, { -5, 1500 }, { CC_WAIT_SAMPLE_MAX_SECONDS + 1, 1500 },
		{ 1e300, 1500 }, { 5, NAN }, { 5, INFINITY }, { 5, -INFINITY },
	};
	e = est(1500, 0, bad, CC_ARRAY_LEN(bad));
	ck_assert_int_eq(e.method, CC_WAIT_NO_HISTORY);
	ck_assert_uint_eq(e.in_band, 0);
	/* A whole day is still a sample; the answer stays finite. */
	struct cc_wait_sample huge[] = { { CC_WAIT_SAMPLE_MAX_SECONDS, 1500 }, { CC_WAIT_SAMPLE_MAX_SECONDS, 1500 },
					 { CC_WAIT_SAMPLE_MAX_SECONDS, 1500 } };
	e = est(1500, 0, huge, 3);
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_double_eq(e.seconds, CC_WAIT_SAMPLE_MAX_SECONDS);
	/* A huge wait so far is beyond any history. */
	e = est(1500, 1e300, huge, 3);
	ck_assert_int_eq(e.method, CC_WAIT_BEYOND_HISTORY);
}
END_TEST

START_TEST(test_caps)
{
	/* More than CC_WAIT_SAMPLES_MAX: the ones past the cap are not read (here they would all be 1000 s). */
	static struct cc_wait_sample many[CC_WAIT_SAMPLES_MAX + 100];
	for (size_t i = 0; i < CC_ARRAY_LEN(many); i++)
		many[i] = (struct cc_wait_sample){ i < CC_WAIT_SAMPLES_MAX ? 0.5 : 1000, 1500 };
	struct cc_wait_estimate e = est(1500, 0, many, CC_ARRAY_LEN(many));
	ck_assert_int_eq(e.method, CC_WAIT_RECENT_MATCHES);
	ck_assert_uint_eq(e.in_band, CC_WAIT_SAMPLES_MAX);
	ck_assert_double_eq(e.seconds, 1); /* round(0.5) */
	/* Only the newest CC_WAIT_USE_MAX longer samples make the median: newest 10 s, older 100 s. */
	for (size_t i = 0; i < CC_WAIT_SAMPLES_MAX; i++)
		many[i] = (struct cc_wait_sample){ i < CC_WAIT_USE_MAX ? 10 : 100, 1500 };
	e = est(1500, 0, many, CC_WAIT_SAMPLES_MAX);
	ck_assert_double_eq(e.seconds, 10);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wait_estimate");
	TCase *tc = tcase_create("rule");
	tcase_add_test(tc, test_method_names);
	tcase_add_test(tc, test_recent_matches_is_the_median);
	tcase_add_test(tc, test_no_history);
	tcase_add_test(tc, test_band_edges);
	tcase_add_test(tc, test_conditioned_on_the_wait_so_far);
	tcase_add_test(tc, test_not_queued);
	tcase_add_test(tc, test_hostile_input);
	tcase_add_test(tc, test_caps);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
