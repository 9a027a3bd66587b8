/*
 * game/playlist: the compiled list is valid and what the services read
 * from it (lookup, the profile playlist, names for messages, formation
 * parameters, the arena rule); the list check refuses every kind of bad
 * entry with a message naming it; the published contract's Playlist enum
 * (contracts/v1/openapi.json) lists exactly the compiled playlists, so a
 * client generated from it accepts every playlist the server reports.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "game/arenas.h"
#include "game/playlist.h"
#include "support.h"
#include "sys/banned.h"

#define CONTRACT_MAX (4 * 1024 * 1024)

START_TEST(test_compiled_list_is_valid)
{
	char why[160] = "unset";
	size_t n = 0;
	const struct cc_playlist *list = cc_playlists(&n);
	ck_assert_msg(cc_playlists_check(why, sizeof why) == 0, "compiled list: %s", why);
	ck_assert_int_ge(n, 2);
	for (size_t i = 0; i < n; i++) {
		ck_assert_ptr_eq(cc_playlist_find(list[i].name), &list[i]);
		struct cc_formation_params p;
		cc_playlist_formation_params(&list[i], &p);
		ck_assert_msg(cc_formation_params_valid(&p), "playlist %s: formation parameters invalid", list[i].name);
		ck_assert_int_eq(p.team_size, list[i].team_size);
		ck_assert_int_eq(p.ranked, list[i].ranked);
		ck_assert_double_eq(p.tolerance_cap, list[i].tolerance_cap);
		ck_assert_double_eq(p.max_rtt_ms, CC_FORMATION_DEFAULT_MAX_RTT_MS);
	}
	const struct cc_playlist *profile = cc_playlist_profile();
	ck_assert_ptr_nonnull(profile);
	ck_assert(profile->ranked && profile->profile);
}
END_TEST

/* SPEC 6's two playlists, as the rest of the system has known them. */
START_TEST(test_spec_playlists)
{
	const struct cc_playlist *casual = cc_playlist_find("casual"), *ranked = cc_playlist_find("ranked");
	ck_assert_ptr_nonnull(casual);
	ck_assert_ptr_nonnull(ranked);
	ck_assert_int_eq(casual->team_size, 3);
	ck_assert(!casual->ranked && casual->arenas == CC_PLAYLIST_ARENAS_ALL && !casual->profile);
	ck_assert_int_eq(ranked->team_size, 1);
	ck_assert(ranked->ranked && ranked->arenas == CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE);
	ck_assert_ptr_eq(cc_playlist_profile(), ranked);
	/* The tolerance defaults queue_sim.c chose (README). */
	ck_assert_double_eq(ranked->tolerance_start, 50);
	ck_assert_double_eq(ranked->tolerance_growth_per_s, 5);
	ck_assert_double_eq(ranked->tolerance_cap, 600);
}
END_TEST

START_TEST(test_find_is_exact)
{
	static const char *const misses[] = { "", "Casual", "casual ", " casual", "casua", "casuals", "arcade" };
	for (size_t i = 0; i < CC_ARRAY_LEN(misses); i++)
		ck_assert_msg(!cc_playlist_find(misses[i]), "'%s' was found", misses[i]);
	ck_assert_ptr_null(cc_playlist_find(NULL));
}
END_TEST

START_TEST(test_name_syntax)
{
	static const struct {
		const char *name;
		bool ok;
	} cases[] = {
		{ "casual", true },
		{ "duo", true },
		{ "a", true },
		{ "r2_v2", true },
		{ "abcdefghijklmnopqrstuvwxyz012345", true }, /* 32 */
		{ "abcdefghijklmnopqrstuvwxyz0123456", false }, /* 33 */
		{ "", false },
		{ "2v2", false },
		{ "_duo", false },
		{ "Duo", false },
		{ "du-o", false },
		{ "du o", false },
		{ "duo\n", false },
		{ "d\xc3\xbc", false },
		{ NULL, false },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(cases); i++)
		ck_assert_msg(cc_playlist_name_valid(cases[i].name) == cases[i].ok, "case %zu ('%s')", i,
			      cases[i].name ? cases[i].name : "(null)");
}
END_TEST

#define CASUAL { .name = "casual", .team_size = 3, .arenas = CC_PLAYLIST_ARENAS_ALL }
#define RANKED                                                                                                \
	{ .name = "ranked", .team_size = 1, .ranked = true, .tolerance_start = 50, .tolerance_growth_per_s = 5, \
	  .tolerance_cap = 600, .arenas = CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE, .profile = true }

/* A bad list (two entries) and the message the check must give. */
static const struct {
	struct cc_playlist list[2];
	const char *why;
} bad_lists[] = {
	{ { CASUAL, { .name = "Ranked", .team_size = 1, .ranked = true, .profile = true } },
	  "playlist name 'Ranked' is not [a-z][a-z0-9_]{0,31}" },
	{ { CASUAL, { .name = NULL, .team_size = 1 } }, "playlist name '(null)' is not" },
	{ { CASUAL, { .name = "casual", .team_size = 1, .ranked = true, .profile = true } },
	  "playlist 'casual' is defined twice" },
	{ { { .name = "casual", .team_size = 0 }, RANKED }, "playlist 'casual': team_size 0 is outside 1..8" },
	{ { { .name = "casual", .team_size = 9 }, RANKED }, "playlist 'casual': team_size 9 is outside 1..8" },
	{ { { .name = "casual", .team_size = 3, .tolerance_start = 1, .tolerance_cap = 1 }, RANKED },
	  "playlist 'casual': tolerances must be finite and >= 0, and 0 unless ranked" },
	{ { CASUAL, { .name = "ranked", .team_size = 1, .ranked = true, .tolerance_start = -1, .profile = true } },
	  "playlist 'ranked': tolerances must be finite" },
	{ { CASUAL, { .name = "ranked", .team_size = 1, .ranked = true, .tolerance_cap = INFINITY, .profile = true } },
	  "playlist 'ranked': tolerances must be finite" },
	{ { CASUAL, { .name = "ranked", .team_size = 1, .ranked = true, .tolerance_growth_per_s = NAN, .profile = true } },
	  "playlist 'ranked': tolerances must be finite" },
	{ { CASUAL,
	    { .name = "ranked", .team_size = 1, .ranked = true, .tolerance_start = 50, .tolerance_cap = 40, .profile = true } },
	  "playlist 'ranked': tolerance_cap 40 is below tolerance_start 50" },
	{ { CASUAL, { .name = "ranked", .team_size = 1, .ranked = true, .arenas = 7, .profile = true } },
	  "playlist 'ranked': arena rule 7 is not one of the enum" },
	{ { { .name = "casual", .team_size = 3, .profile = true }, RANKED },
	  "playlist 'casual': the profile playlist must be ranked" },
	{ { CASUAL, { .name = "ranked", .team_size = 1, .ranked = true } }, "0 playlists are marked profile" },
	{ { RANKED, { .name = "duo", .team_size = 2, .ranked = true, .profile = true } },
	  "2 playlists are marked profile; exactly one must be" },
};

START_TEST(test_list_check_names_the_problem)
{
	char why[160] = "";
	ck_assert_int_eq(cc_playlist_list_check(bad_lists[_i].list, 2, why, sizeof why), CC_EINVAL);
	ck_assert_msg(strstr(why, bad_lists[_i].why), "case %d: why is \"%s\", expected \"%s\"", _i, why,
		      bad_lists[_i].why);
}
END_TEST

START_TEST(test_list_check_accepts_good_lists)
{
	static const struct cc_playlist good[] = {
		CASUAL, RANKED, { .name = "duo", .team_size = 2, .ranked = true, .arenas = CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE },
		{ .name = "big", .team_size = 8, .arenas = CC_PLAYLIST_ARENAS_ALL },
	};
	char why[160] = "";
	ck_assert_msg(cc_playlist_list_check(good, CC_ARRAY_LEN(good), why, sizeof why) == 0, "%s", why);
	ck_assert_int_eq(cc_playlist_list_check(good, 0, why, sizeof why), CC_EINVAL);
	ck_assert_str_eq(why, "no playlists");
	ck_assert_int_eq(cc_playlist_list_check(NULL, 2, why, sizeof why), CC_EINVAL);
}
END_TEST

START_TEST(test_arena_rule)
{
	enum cc_playlist_arenas a = CC_PLAYLIST_ARENAS_ALL;
	ck_assert_str_eq(cc_playlist_arenas_name(CC_PLAYLIST_ARENAS_ALL), "all");
	ck_assert_str_eq(cc_playlist_arenas_name(CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE), "ranked_eligible");
	ck_assert_ptr_null(cc_playlist_arenas_name((enum cc_playlist_arenas)42));
	ck_assert_int_eq(cc_playlist_arenas_parse("ranked_eligible", &a), 0);
	ck_assert_int_eq(a, CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE);
	ck_assert_int_eq(cc_playlist_arenas_parse("all", &a), 0);
	ck_assert_int_eq(a, CC_PLAYLIST_ARENAS_ALL);
	static const char *const bad[] = { "", "ALL", "ranked", "all ", "ranked_eligible\n" };
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++) {
		a = CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE;
		ck_assert_int_eq(cc_playlist_arenas_parse(bad[i], &a), CC_EINVAL);
		ck_assert_int_eq(a, CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE); /* untouched */
	}
	ck_assert_int_eq(cc_playlist_arenas_parse(NULL, &a), CC_EINVAL);

	/* ranked: only ranked-eligible arenas; casual: all (SPEC 6). */
	size_t n = 0;
	const struct cc_arena *arenas = cc_arenas(&n);
	const struct cc_playlist *casual = cc_playlist_find("casual"), *ranked = cc_playlist_find("ranked");
	size_t ranked_ok = 0;
	for (size_t i = 0; i < n; i++) {
		ck_assert(cc_playlist_arena_allowed(casual, &arenas[i]));
		ck_assert_int_eq(cc_playlist_arena_allowed(ranked, &arenas[i]), arenas[i].ranked_eligible);
		ranked_ok += cc_playlist_arena_allowed(ranked, &arenas[i]);
	}
	ck_assert_int_gt(ranked_ok, 0);
	ck_assert_int_lt(ranked_ok, n);
	ck_assert(!cc_playlist_arena_allowed(NULL, &arenas[0]));
	ck_assert(!cc_playlist_arena_allowed(casual, NULL));
}
END_TEST

START_TEST(test_names_for_messages)
{
	char buf[64];
	size_t need = cc_playlist_names(buf, sizeof buf, ", ");
	ck_assert_str_eq(buf, "casual, ranked");
	ck_assert_uint_eq(need, strlen("casual, ranked"));
	ck_assert_uint_eq(cc_playlist_names(buf, sizeof buf, "|"), strlen("casual|ranked"));
	ck_assert_str_eq(buf, "casual|ranked");
	/* Cut short, still terminated, and the full length reported. */
	char small[8];
	ck_assert_uint_eq(cc_playlist_names(small, sizeof small, ", "), strlen("casual, ranked"));
	ck_assert_str_eq(small, "casual,");
	ck_assert_uint_eq(cc_playlist_names(NULL, 0, ", "), strlen("casual, ranked"));
}
END_TEST

/* Reads $CC_TOP/contracts/v1/openapi.json; NULL when unreadable. */
static cJSON *load_openapi(char *path, size_t path_len)
{
	const char *top = getenv("CC_TOP");
	snprintf(path, path_len, "%s/contracts/v1/openapi.json", top && *top ? top : ".");
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *text = malloc(CONTRACT_MAX + 1);
	size_t n = text ? fread(text, 1, CONTRACT_MAX + 1, f) : 0;
	fclose(f);
	cJSON *doc = NULL;
	if (text && n <= CONTRACT_MAX) {
		text[n] = '\0';
		doc = cJSON_Parse(text);
	}
	free(text);
	return doc;
}

START_TEST(test_contract_enum_equals_compiled_list)
{
	char path[4096];
	cJSON *doc = load_openapi(path, sizeof path);
	ck_assert_msg(doc, "cannot read or parse %s (is CC_TOP set to the checkout?)", path);
	const cJSON *schemas = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "components"),
								"schemas");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(schemas, "Playlist"), "enum");
	ck_assert_msg(cJSON_IsArray(e), "%s: components.schemas.Playlist.enum is missing", path);
	size_t n = 0;
	const struct cc_playlist *list = cc_playlists(&n);
	ck_assert_msg((size_t)cJSON_GetArraySize(e) == n, "%s lists %d playlists, game/playlist.c %zu", path,
		      cJSON_GetArraySize(e), n);
	for (size_t i = 0; i < n; i++) {
		bool found = false;
		const cJSON *v;
		cJSON_ArrayForEach(v, e) found |= cJSON_IsString(v) && strcmp(v->valuestring, list[i].name) == 0;
		ck_assert_msg(found, "%s: the Playlist enum lacks '%s' (game/playlist.c)", path, list[i].name);
	}
	cJSON_Delete(doc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("playlist");
	TCase *tc = tcase_create("definition");
	tcase_add_test(tc, test_compiled_list_is_valid);
	tcase_add_test(tc, test_spec_playlists);
	tcase_add_test(tc, test_find_is_exact);
	tcase_add_test(tc, test_name_syntax);
	tcase_add_loop_test(tc, test_list_check_names_the_problem, 0, (int)CC_ARRAY_LEN(bad_lists));
	tcase_add_test(tc, test_list_check_accepts_good_lists);
	tcase_add_test(tc, test_arena_rule);
	tcase_add_test(tc, test_names_for_messages);
	tcase_add_test(tc, test_contract_enum_equals_compiled_list);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
