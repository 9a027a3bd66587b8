/* The character-set validator (sys/charset.h), table-driven over the rules the tree uses. */
#include <string.h>

#include "support.h"
#include "sys/cc.h"
#include "sys/charset.h"

#include "sys/banned.h"

#define REGION CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "-"
#define TOKEN CC_CHARSET_ALNUM, "-._~+/="

static const struct {
	const char *s;
	size_t len;     /* bytes of s examined (NUL bytes included when asked) */
	unsigned classes;
	const char *extra;
	size_t span;    /* expected cc_charset_span */
} spans[] = {
	{ "", 0, CC_CHARSET_ALNUM, NULL, 0 },
	{ "eu-west", 7, REGION, 7 },
	{ "eu-West", 7, REGION, 3 },
	{ "eu_west", 7, REGION, 2 },
	{ "eu-west", 7, CC_CHARSET_LOWER, NULL, 2 }, /* NULL extra: classes only */
	{ "EU-1", 4, CC_CHARSET_UPPER | CC_CHARSET_DIGIT, "_", 2 },
	{ "aZ09-._~+/=", 11, TOKEN, 11 },
	{ "ab cd", 5, TOKEN, 2 },
	{ "ab:cd", 5, TOKEN, 2 },
	{ "ab\"cd", 5, TOKEN, 2 },
	{ "ab\0cd", 5, TOKEN, 2 },                    /* NUL is never in a set ... */
	{ "ab\0cd", 5, CC_CHARSET_ALNUM, "", 2 },     /* ... not even via an empty extra */
	{ "caf\xc3\xa9", 5, CC_CHARSET_ALNUM, NULL, 3 }, /* bytes >= 0x80 never */
	{ "0123456789abcdefABCDEF", 22, CC_CHARSET_DIGIT, "abcdefABCDEF", 22 },
	{ "0123g", 5, CC_CHARSET_DIGIT, "abcdef", 4 },
	{ "`{@[/:", 6, CC_CHARSET_ALNUM, NULL, 0 },  /* the neighbours of each range */
	{ "az", 1, CC_CHARSET_LOWER, NULL, 1 },       /* only len bytes are read */
};

START_TEST(test_span_table)
{
	size_t got = cc_charset_span(spans[_i].s, spans[_i].len, spans[_i].classes, spans[_i].extra);
	ck_assert_msg(got == spans[_i].span, "case %d ('%s'): span %zu, want %zu", _i, spans[_i].s, got,
		      spans[_i].span);
	ck_assert_int_eq(cc_charset_all(spans[_i].s, spans[_i].len, spans[_i].classes, spans[_i].extra),
			 spans[_i].span == spans[_i].len);
}
END_TEST

/* Every byte against every class: exactly the ASCII ranges, nothing from the locale. */
START_TEST(test_every_byte)
{
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		ck_assert_int_eq(cc_charset_has(c, CC_CHARSET_LOWER, NULL), b >= 'a' && b <= 'z');
		ck_assert_int_eq(cc_charset_has(c, CC_CHARSET_UPPER, NULL), b >= 'A' && b <= 'Z');
		ck_assert_int_eq(cc_charset_has(c, CC_CHARSET_DIGIT, NULL), b >= '0' && b <= '9');
		ck_assert_int_eq(cc_charset_has(c, 0, "-_"), b == '-' || b == '_');
		ck_assert(!cc_charset_has(c, 0, NULL));
	}
}
END_TEST

static const struct {
	const char *s; /* NULL allowed */
	size_t max;
	bool valid;
} names[] = {
	{ NULL, 8, false },
	{ "", 8, false },
	{ "a", 8, true },
	{ "abcdefgh", 8, true },  /* exactly max */
	{ "abcdefghi", 8, false }, /* one over */
	{ "abc-1", 8, true },
	{ "abc_1", 8, false },
	{ "-", 1, true },
};

START_TEST(test_valid_table)
{
	ck_assert_msg(cc_charset_valid(names[_i].s, names[_i].max, REGION) == names[_i].valid, "case %d", _i);
}
END_TEST

/* A long string is judged without reading it all: its bytes past max + 1 are never touched. */
START_TEST(test_valid_reads_at_most_max_plus_one)
{
	char unterminated[4] = { 'a', 'b', 'c', 'd' }; /* no NUL: ASan flags any read past it */
	ck_assert(!cc_charset_valid(unterminated, 3, CC_CHARSET_LOWER, NULL));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("charset");
	TCase *tc = tcase_create("charset");
	tcase_add_loop_test(tc, test_span_table, 0, CC_ARRAY_LEN(spans));
	tcase_add_test(tc, test_every_byte);
	tcase_add_loop_test(tc, test_valid_table, 0, CC_ARRAY_LEN(names));
	tcase_add_test(tc, test_valid_reads_at_most_max_plus_one);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
