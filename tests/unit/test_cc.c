/* The result-code table: every code has a distinct name and description. */
#include <string.h>

#include "sys/cc.h"
#include "support.h"

START_TEST(test_names_are_distinct)
{
	static const int codes[] = {
#define CC__CODE(name, value, text) name,
		CC_ERRORS(CC__CODE)
#undef CC__CODE
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(codes); i++) {
		ck_assert_str_ne(cc_errname(codes[i]), "CC_E?");
		for (size_t j = i + 1; j < CC_ARRAY_LEN(codes); j++)
			ck_assert_str_ne(cc_errname(codes[i]), cc_errname(codes[j]));
	}
	ck_assert_str_eq(cc_errname(-9999), "CC_E?");
	ck_assert_str_eq(cc_strerror(-9999), "unknown error");
	ck_assert_str_eq(cc_strerror(CC_ETIMEOUT), "timed out");
}
END_TEST

START_TEST(test_version_is_baked_in)
{
	ck_assert_ptr_nonnull(strstr(cc_build_version, "git "));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cc");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_names_are_distinct);
	tcase_add_test(tc, test_version_is_baked_in);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
