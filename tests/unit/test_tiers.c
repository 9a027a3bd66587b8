/*
 * tiers.c without a database: the default bands, cc_tier_for, and the
 * band-list rules of cc_tier_bands_validate (each rule refused on its own,
 * several problems named at once, messages escaped and bounded). The
 * loader is proven against PostgreSQL in tests/integration/test_tiers.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "game/tiers.h"
#include "sys/banned.h"

#define MAX_CASE_BANDS 4

struct validate_case {
	const char *what;
	struct cc_tier_band bands[MAX_CASE_BANDS];
	size_t n;
	const char *want; /* NULL: valid; else a substring of the message */
};

static const struct validate_case validate_cases[] = {
	{ "a custom list", { { "ROOKIE", 0 }, { "ACE_1", 2000 } }, 2, NULL },
	{ "one band", { { "ALL", -100 } }, 1, NULL },
	{ "a name of exactly 32 bytes", { { "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345", 0 } }, 1, NULL },
	{ "no bands", { { "X", 0 } }, 0, "no bands" },
	{ "PROVISIONAL", { { "BRONZE", 0 }, { "PROVISIONAL", 1000 } }, 2,
	  "band 2 \"PROVISIONAL\": PROVISIONAL is a status, not a band" },
	{ "provisional in lower case", { { "provisional", 0 } }, 1, "PROVISIONAL is a status" },
	{ "Provisional in mixed case", { { "Provisional", 0 } }, 1, "PROVISIONAL is a status" },
	{ "empty name", { { "GOLD", 0 }, { "", 100 } }, 2, "band 2: empty name" },
	{ "lower-case name", { { "gold", 0 } }, 1, "band 1 \"gold\": a name may hold only A-Z, 0-9 and _" },
	{ "space in a name", { { "GOLD STAR", 0 } }, 1, "may hold only" },
	{ "hyphen in a name", { { "GOLD-1", 0 } }, 1, "may hold only" },
	{ "non-ASCII name, escaped", { { "G\xc3\x96LD", 0 } }, 1, "\"G\\xc3\\x96LD\": a name may hold only" },
	{ "newline and quote, escaped", { { "A\n\"B", 0 } }, 1, "\"A\\x0a\\x22B\"" },
	{ "duplicate name", { { "GOLD", 0 }, { "SILVER", 10 }, { "GOLD", 20 } }, 3, "bands 1 and 3 are both named \"GOLD\"" },
	{ "shared threshold, not adjacent", { { "A", 0 }, { "B", 1500 }, { "C", 1600 }, { "D", 1500 } }, 4,
	  "bands \"B\" and \"D\" share the threshold 1500" },
	{ "NaN threshold", { { "A", 0 }, { "B", NAN } }, 2, "band 2 \"B\": threshold nan is not a finite number" },
	{ "infinite threshold", { { "A", INFINITY } }, 1, "threshold inf is not a finite number" },
	{ "minus infinity", { { "A", -INFINITY }, { "B", 0 } }, 2, "threshold -inf is not a finite number" },
	{ "descending", { { "GOLD", 1500 }, { "SILVER", 1200 } }, 2,
	  "band 2 \"SILVER\": threshold 1200 is below the previous band's 1500 (bands must ascend)" },
	{ "several problems at once", { { "PROVISIONAL", 0 }, { "bad", 0 } }, 2,
	  "band 1 \"PROVISIONAL\": PROVISIONAL is a status, not a band; band 2 \"bad\": a name may hold only A-Z, 0-9 "
	  "and _; bands \"PROVISIONAL\" and \"bad\" share the threshold 0" },
};

START_TEST(validate_table)
{
	const struct validate_case *c = &validate_cases[_i];
	char err[1024];
	int rc = cc_tier_bands_validate(c->bands, c->n, err, sizeof(err));
	if (!c->want) {
		ck_assert_msg(rc == 0, "%s: refused: %s", c->what, err);
		ck_assert_str_eq(err, "");
		return;
	}
	ck_assert_msg(rc == CC_EINVAL, "%s: accepted", c->what);
	ck_assert_msg(strstr(err, c->want), "%s: message \"%s\" lacks \"%s\"", c->what, err, c->want);
}
END_TEST

START_TEST(default_is_valid)
{
	size_t n;
	const struct cc_tier_band *bands = cc_tier_default_bands(&n);
	char err[256];
	ck_assert_uint_ge(n, 2);
	ck_assert_msg(cc_tier_bands_validate(bands, n, err, sizeof(err)) == 0, "default refused: %s", err);
	ck_assert_int_eq(cc_tier_bands_validate(NULL, 3, err, sizeof(err)), CC_EINVAL);
}
END_TEST

/* A name filling all 33 bytes has no NUL: too long, and never read past. */
START_TEST(unterminated_name)
{
	struct cc_tier_band band;
	memset(band.name, 'A', sizeof(band.name));
	band.min_rating = 0;
	char err[512];
	ck_assert_int_eq(cc_tier_bands_validate(&band, 1, err, sizeof(err)), CC_EINVAL);
	ck_assert_msg(strstr(err, "band 1 \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"...: name longer than 32 bytes"), "%s", err);
}
END_TEST

START_TEST(too_many_bands)
{
	static struct cc_tier_band bands[CC_TIER_BANDS_MAX + 1];
	for (size_t i = 0; i < CC_ARRAY_LEN(bands); i++) {
		snprintf(bands[i].name, sizeof(bands[i].name), "B%zu", i);
		bands[i].min_rating = (double)i * 100;
	}
	char err[256];
	ck_assert_int_eq(cc_tier_bands_validate(bands, CC_TIER_BANDS_MAX, err, sizeof(err)), 0);
	ck_assert_int_eq(cc_tier_bands_validate(bands, CC_TIER_BANDS_MAX + 1, err, sizeof(err)), CC_EINVAL);
	ck_assert_str_eq(err, "65 bands, more than 64");
}
END_TEST

/* Small or absent buffers: still refused, message cut but terminated. */
START_TEST(small_error_buffers)
{
	static const struct cc_tier_band bad[] = { { "PROVISIONAL", 0 }, { "x", 0 }, { "y", 0 } };
	char err[16];
	memset(err, '#', sizeof(err));
	ck_assert_int_eq(cc_tier_bands_validate(bad, 3, err, sizeof(err)), CC_EINVAL);
	ck_assert_uint_eq(strlen(err), sizeof(err) - 1);
	ck_assert_int_eq(cc_tier_bands_validate(bad, 3, NULL, 0), CC_EINVAL);
	char one[1] = { '#' };
	ck_assert_int_eq(cc_tier_bands_validate(bad, 3, one, 1), CC_EINVAL);
	ck_assert_int_eq(one[0], '\0');
	/* a message that ends exactly at a separator still terminates */
	for (size_t len = 2; len < 120; len++) {
		char buf[120];
		ck_assert_int_eq(cc_tier_bands_validate(bad, 3, buf, len), CC_EINVAL);
		ck_assert_uint_lt(strlen(buf), len);
	}
}
END_TEST

struct tier_for_case {
	double rating;
	long games;
	const char *want;
};

static const struct tier_for_case tier_for_cases[] = {
	{ 1500, 0, "PROVISIONAL" },
	{ 3000, CC_TIER_PROVISIONAL_GAMES - 1, "PROVISIONAL" },
	{ -50, CC_TIER_PROVISIONAL_GAMES, "BRONZE" },
	{ 0, 10, "BRONZE" },
	{ 1199.99, 10, "BRONZE" },
	{ 1200, 10, "SILVER" },
	{ 1500, 50, "GOLD" },
	{ 2399, 50, "DIAMOND" },
	{ 2400, 50, "CHAMPION" },
	{ 5000, 50, "CHAMPION" },
};

START_TEST(tier_for_default)
{
	const struct tier_for_case *c = &tier_for_cases[_i];
	size_t n;
	const struct cc_tier_band *bands = cc_tier_default_bands(&n);
	ck_assert_str_eq(cc_tier_for(bands, n, c->rating, c->games), c->want);
}
END_TEST

static Suite *tiers_suite(void)
{
	Suite *s = suite_create("tiers");
	TCase *tc = tcase_create("core");
	tcase_add_loop_test(tc, validate_table, 0, CC_ARRAY_LEN(validate_cases));
	tcase_add_test(tc, default_is_valid);
	tcase_add_test(tc, unterminated_name);
	tcase_add_test(tc, too_many_bands);
	tcase_add_test(tc, small_error_buffers);
	tcase_add_loop_test(tc, tier_for_default, 0, CC_ARRAY_LEN(tier_for_cases));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(tiers_suite());
}
