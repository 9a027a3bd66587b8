/*
 * cc-player's latency recorder (tests/player/latency.c): percentiles are
 * exact nearest-rank order statistics of every sample, whatever the order
 * the samples arrived in; the cap holds and what it refuses is counted.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../player/latency.h"
#include "support.h"

#define MS 1000000u /* samples are nanoseconds */

/* Fills l with 1..n ms, in a shuffled order when shuffle is set. */
static void fill(struct pc_latency *l, size_t n, bool shuffle)
{
	for (size_t i = 0; i < n; i++) {
		size_t v = shuffle ? (i * 7919) % n : i; /* 7919 is prime: a permutation when n is not a multiple */
		ck_assert_int_eq(pc_latency_add(l, (uint64_t)(v + 1) * MS), 0);
	}
}

static const struct {
	size_t n;        /* samples 1..n ms */
	bool shuffle;
	double p;        /* percentile asked */
	double expect;   /* ms: the ceil(p/100 * n)-th smallest */
} cases[] = {
	{ 10, false, 50, 5 },    { 10, false, 90, 9 },    { 10, false, 99, 10 },
	{ 10, false, 100, 10 },  { 10, false, 10, 1 },    { 10, false, 0.1, 1 },
	{ 100, true, 50, 50 },   { 100, true, 99, 99 },   { 100, true, 99.5, 100 },
	{ 1000, true, 99, 990 }, { 1000, true, 99.9, 999 }, { 1, false, 50, 1 },
	{ 1, false, 99, 1 },     { 3, true, 50, 2 },      { 3, true, 34, 2 },
	{ 3, true, 33, 1 },
};

START_TEST(test_percentile_nearest_rank)
{
	struct pc_latency l;
	pc_latency_init(&l, 0);
	fill(&l, cases[_i].n, cases[_i].shuffle);
	ck_assert_msg(pc_latency_percentile_ms(&l, cases[_i].p) == cases[_i].expect,
		      "case %d: p%.1f of 1..%zu ms: expected %.1f, got %.3f", _i, cases[_i].p, cases[_i].n,
		      cases[_i].expect, pc_latency_percentile_ms(&l, cases[_i].p));
	pc_latency_release(&l);
}
END_TEST

START_TEST(test_empty_and_out_of_range)
{
	struct pc_latency l;
	pc_latency_init(&l, 0);
	ck_assert(pc_latency_percentile_ms(&l, 50) == 0.0);
	ck_assert(pc_latency_mean_ms(&l) == 0.0);
	fill(&l, 4, false);
	ck_assert(pc_latency_percentile_ms(&l, 0) == 0.0);
	ck_assert(pc_latency_percentile_ms(&l, -1) == 0.0);
	ck_assert(pc_latency_percentile_ms(&l, 100.5) == 0.0);
	ck_assert(pc_latency_mean_ms(&l) == 2.5);
	pc_latency_release(&l);
	pc_latency_release(&l); /* twice is harmless */
	pc_latency_release(NULL);
}
END_TEST

/* Growth past the first allocation keeps every sample. */
START_TEST(test_many_samples_kept)
{
	struct pc_latency l;
	pc_latency_init(&l, 0);
	fill(&l, 100000, true);
	ck_assert_uint_eq(l.n, 100000);
	ck_assert_uint_eq(l.dropped, 0);
	ck_assert(pc_latency_percentile_ms(&l, 50) == 50000);
	ck_assert(pc_latency_percentile_ms(&l, 100) == 100000);
	pc_latency_release(&l);
}
END_TEST

START_TEST(test_cap_counts_drops)
{
	struct pc_latency l, all;
	pc_latency_init(&l, 3);
	for (int i = 1; i <= 3; i++)
		ck_assert_int_eq(pc_latency_add(&l, (uint64_t)i * MS), 0);
	ck_assert_int_eq(pc_latency_add(&l, 4 * MS), CC_ETOOBIG);
	ck_assert_int_eq(pc_latency_add(&l, 5 * MS), CC_ETOOBIG);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_uint_eq(l.dropped, 2);
	ck_assert(pc_latency_percentile_ms(&l, 100) == 3);

	/* Merging keeps to the destination's cap and carries the source's drops. */
	pc_latency_init(&all, 4);
	ck_assert_int_eq(pc_latency_merge(&all, &l), 0);
	ck_assert_int_eq(pc_latency_merge(&all, &l), CC_ETOOBIG);
	ck_assert_uint_eq(all.n, 4);
	ck_assert_uint_eq(all.dropped, 2 + 2 + 2);
	ck_assert(pc_latency_percentile_ms(&all, 50) == 1); /* 1, 1, 2, 3 */
	pc_latency_release(&all);
	pc_latency_release(&l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("player_latency");
	TCase *tc = tcase_create("core");
	tcase_add_loop_test(tc, test_percentile_nearest_rank, 0, (int)(sizeof cases / sizeof cases[0]));
	tcase_add_test(tc, test_empty_and_out_of_range);
	tcase_add_test(tc, test_many_samples_kept);
	tcase_add_test(tc, test_cap_counts_drops);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
