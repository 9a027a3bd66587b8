/* Strict UTF-8: every boundary RFC 3629 draws, in both directions. */
#include <string.h>

#include "sys/cc.h"
#include "support.h"
#include "sys/utf8.h"

#include "sys/banned.h"

static const struct {
	const char *bytes;
	size_t len;     /* 0: strlen(bytes) */
	size_t seq_len; /* what cc_utf8_decode returns for the first sequence */
	uint32_t cp;    /* its code point when seq_len > 0 */
} cases[] = {
	{ "A", 0, 1, 0x41 },
	{ "\0", 1, 1, 0 },
	{ "\x7f", 0, 1, 0x7F },
	{ "\xc2\x80", 0, 2, 0x80 },
	{ "\xdf\xbf", 0, 2, 0x7FF },
	{ "\xe0\xa0\x80", 0, 3, 0x800 },
	{ "\xed\x9f\xbf", 0, 3, 0xD7FF },
	{ "\xee\x80\x80", 0, 3, 0xE000 },
	{ "\xef\xbf\xbd", 0, 3, 0xFFFD },
	{ "\xf0\x90\x80\x80", 0, 4, 0x10000 },
	{ "\xf4\x8f\xbf\xbf", 0, 4, 0x10FFFF },
	{ "\x80", 0, 0, 0 },		     /* lone continuation */
	{ "\xc0\xaf", 0, 0, 0 },	     /* overlong '/' */
	{ "\xc1\xbf", 0, 0, 0 },	     /* overlong */
	{ "\xe0\x9f\xbf", 0, 0, 0 },	     /* overlong 3-byte */
	{ "\xf0\x8f\xbf\xbf", 0, 0, 0 },     /* overlong 4-byte */
	{ "\xed\xa0\x80", 0, 0, 0 },	     /* surrogate D800 */
	{ "\xed\xbf\xbf", 0, 0, 0 },	     /* surrogate DFFF */
	{ "\xf4\x90\x80\x80", 0, 0, 0 },     /* above U+10FFFF */
	{ "\xf5\x80\x80\x80", 0, 0, 0 },     /* lead byte past F4 */
	{ "\xff", 0, 0, 0 },
	{ "\xc3", 0, 0, 0 },		     /* cut short */
	{ "\xe2\x82", 0, 0, 0 },	     /* cut short */
	{ "\xe2\x82\xac", 2, 0, 0 },	     /* cut short by avail */
	{ "\xc3(", 0, 0, 0 },		     /* bad continuation */
	{ "\xf0\x90\x80(", 0, 0, 0 },	     /* bad last continuation */
	{ "", 0, 0, 0 },		     /* nothing to decode */
};

START_TEST(test_decode_table)
{
	size_t len = cases[_i].len ? cases[_i].len : strlen(cases[_i].bytes);
	uint32_t cp = 0xDEADBEEF;
	size_t n = cc_utf8_decode((const unsigned char *)cases[_i].bytes, len, &cp);
	ck_assert_msg(n == cases[_i].seq_len, "case %d: length %zu", _i, n);
	ck_assert_uint_eq(cp, n ? cases[_i].cp : 0xDEADBEEF); /* untouched on failure */
	/* A single sequence is valid exactly when it decodes to its full length. */
	ck_assert_int_eq(cc_utf8_valid(cases[_i].bytes, len), len == 0 || n == len);
}
END_TEST

START_TEST(test_valid_strings)
{
	ck_assert(cc_utf8_valid("plain ascii", 11));
	ck_assert(cc_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80", 14));
	ck_assert(!cc_utf8_valid("caf\xc3\xa9 \xe2\x82", 8));
	ck_assert(!cc_utf8_valid("ok\xffok", 5));
	ck_assert(cc_utf8_valid(NULL, 0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("decode");
	tcase_add_loop_test(tc, test_decode_table, 0, CC_ARRAY_LEN(cases));
	tcase_add_test(tc, test_valid_strings);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
