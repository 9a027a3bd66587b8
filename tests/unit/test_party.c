/*
 * The pure party rules (game/party.h): who may do what, the per-playlist
 * size cap, and the join code's form. tests/integration/parties_api.sh
 * proves cc-api's mapping of each verdict to HTTP.
 */
#include <string.h>

#include "support.h"
#include "game/party.h"
#include "game/playlist.h"
#include "sys/banned.h"

START_TEST(test_who_may_do_what)
{
	static const struct {
		enum cc_party_action action;
		struct cc_party_actor a;
		enum cc_party_verdict want;
	} cases[] = {
		{ CC_PARTY_LEAVE, { .member = true }, CC_PARTY_OK },
		{ CC_PARTY_LEAVE, { .member = false }, CC_PARTY_NOT_MEMBER },
		{ CC_PARTY_INVITE, { .member = true, .leader = true }, CC_PARTY_OK },
		{ CC_PARTY_INVITE, { .member = true }, CC_PARTY_NOT_LEADER },
		{ CC_PARTY_QUEUE, { .member = true }, CC_PARTY_NOT_LEADER },
		{ CC_PARTY_QUEUE, { .member = true, .leader = true }, CC_PARTY_OK },
		{ CC_PARTY_DISBAND, { .member = true }, CC_PARTY_NOT_LEADER },
		{ CC_PARTY_DISBAND, { .member = false, .leader = false }, CC_PARTY_NOT_MEMBER },
		{ CC_PARTY_KICK, { .member = true, .leader = true, .target_member = true }, CC_PARTY_OK },
		{ CC_PARTY_KICK, { .member = true, .target_member = true }, CC_PARTY_NOT_LEADER },
		{ CC_PARTY_KICK, { .member = true, .leader = true, .target_member = true, .target_self = true },
		  CC_PARTY_TARGET_SELF },
		{ CC_PARTY_KICK, { .member = true, .leader = true }, CC_PARTY_TARGET_NOT_MEMBER },
		{ CC_PARTY_PROMOTE, { .member = true, .leader = true, .target_member = true }, CC_PARTY_OK },
		{ CC_PARTY_PROMOTE, { .member = true, .leader = true }, CC_PARTY_TARGET_NOT_MEMBER },
		{ CC_PARTY_PROMOTE, { .member = true, .target_member = true }, CC_PARTY_NOT_LEADER },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++)
		ck_assert_msg(cc_party_may(cases[i].action, &cases[i].a) == cases[i].want, "case %zu: got %s, want %s", i,
			      cc_party_verdict_name(cc_party_may(cases[i].action, &cases[i].a)),
			      cc_party_verdict_name(cases[i].want));
}
END_TEST

START_TEST(test_size_caps)
{
	const struct cc_playlist *casual = cc_playlist_find("casual"), *ranked = cc_playlist_find("ranked");
	ck_assert_ptr_nonnull(casual);
	ck_assert_ptr_nonnull(ranked);
	ck_assert_int_eq(cc_party_cap(casual), 3);
	ck_assert_int_eq(cc_party_cap(ranked), 1);
	ck_assert(cc_party_size_fits(casual, 1) && cc_party_size_fits(casual, 3));
	ck_assert(!cc_party_size_fits(casual, 4) && !cc_party_size_fits(casual, 0));
	ck_assert(cc_party_size_fits(ranked, 1) && !cc_party_size_fits(ranked, 2));
	ck_assert_int_eq(cc_party_cap(NULL), 0);
	ck_assert(!cc_party_size_fits(NULL, 1));
	/* A playlist that states no cap is solo only; one above its team size is refused by the list check. */
	struct cc_playlist pl = *casual;
	pl.max_party_size = 0;
	ck_assert_int_eq(cc_party_cap(&pl), 1);
	char why[160];
	pl.max_party_size = 4;
	ck_assert_int_eq(cc_playlist_list_check(&pl, 1, why, sizeof why), CC_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "max_party_size"));
	ck_assert_int_eq(cc_playlists_check(why, sizeof why), 0);
	/* No playlist lets a party exceed CC_PARTY_MAX_MEMBERS. */
	size_t n;
	const struct cc_playlist *all = cc_playlists(&n);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_le(cc_party_cap(&all[i]), CC_PARTY_MAX_MEMBERS);
}
END_TEST

START_TEST(test_join_codes)
{
	unsigned char bytes[CC_PARTY_JOIN_CODE_LEN];
	char code[CC_PARTY_JOIN_CODE_LEN + 1];
	for (int round = 0; round < 256; round++) {
		for (size_t i = 0; i < sizeof bytes; i++)
			bytes[i] = (unsigned char)(round * 31 + i * 7);
		cc_party_join_code_from_bytes(bytes, code);
		ck_assert_msg(cc_party_join_code_valid(code), "code %s", code);
	}
	ck_assert(!cc_party_join_code_valid(NULL));
	ck_assert(!cc_party_join_code_valid(""));
	ck_assert(!cc_party_join_code_valid("ABCDEFG"));
	ck_assert(!cc_party_join_code_valid("ABCDEFGHJ"));
	ck_assert(!cc_party_join_code_valid("ABCDEFG0")); /* 0 is not in the alphabet */
	ck_assert(!cc_party_join_code_valid("abcdefgh"));
	ck_assert(cc_party_join_code_valid("ABCDEF23"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("party");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, test_who_may_do_what);
	tcase_add_test(tc, test_size_caps);
	tcase_add_test(tc, test_join_codes);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
