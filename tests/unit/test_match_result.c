/*
 * game/match_result.h: the result body's shape (what 400 refuses), its
 * rules against the match's participants (what 422 refuses), and the
 * canonical hash that tells an identical replay from a conflict, table
 * driven, without a database. tests/integration/server_routes.sh proves
 * the route end to end.
 */
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "game/match_result.h"
#include "sys/json.h"
#include "sys/banned.h"

#define P0 "00000000-0000-4000-8000-000000000001"
#define P1 "00000000-0000-4000-8000-000000000002"
#define P2 "00000000-0000-4000-8000-000000000003"
#define P3 "00000000-0000-4000-8000-000000000004"
#define PX "00000000-0000-4000-8000-0000000000ff"

/* One player object; stats goals/assists/saves/shots. */
#define PL(id, team, goals) "{\"player_id\":\"" id "\",\"team\":" #team ",\"goals\":" #goals ",\"assists\":0,\"saves\":1,\"shots\":2}"
#define GOOD "{\"score\":[2,1],\"duration_seconds\":300,\"players\":[" PL(P0, 0, 2) "," PL(P1, 0, 0) "," PL(P2, 1, 1) "," PL(P3, 1, 0) "]}"

static const char ids[4][CC_UUID_BUF] = { P0, P1, P2, P3 };
static const uint8_t teams[4] = { 0, 0, 1, 1 };

/* Parses text; returns the parse's result, *r filled on success. */
static int parse(const char *text, struct cc_match_result *r, struct cc_json_error *err)
{
	cJSON *body = cJSON_Parse(text);
	ck_assert_msg(body != NULL, "test bug: not JSON: %s", text);
	int rc = cc_match_result_parse(body, r, err);
	cJSON_Delete(body);
	return rc;
}

START_TEST(test_shape)
{
	static const struct {
		const char *what, *text, *field; /* field: "" = accepted */
	} cases[] = {
		{ "a good result", GOOD, "" },
		{ "unknown field", "{\"score\":[2,1],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "],\"mvp\":1}", "mvp" },
		{ "no score", "{\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "score" },
		{ "three scores", "{\"score\":[1,2,3],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "score" },
		{ "one score", "{\"score\":[1],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "score" },
		{ "negative score", "{\"score\":[-1,2],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "score" },
		{ "fractional score", "{\"score\":[1.5,2],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "score" },
		{ "score too big", "{\"score\":[1001,2],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "score" },
		{ "score a string", "{\"score\":[\"1\",2],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "score" },
		{ "duration negative", "{\"score\":[1,2],\"duration_seconds\":-3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "]}", "duration_seconds" },
		{ "one player", "{\"score\":[1,2],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "]}", "players" },
		{ "players not an array", "{\"score\":[1,2],\"duration_seconds\":3,\"players\":{}}", "players" },
		{ "player not an object", "{\"score\":[1,2],\"duration_seconds\":3,\"players\":[1," PL(P2, 1, 0) "]}", "players" },
		{ "upper-case id", "{\"score\":[1,2],\"duration_seconds\":3,\"players\":[" PL("00000000-0000-4000-8000-00000000000A", 0, 0) "," PL(P2, 1, 0) "]}", "player_id" },
		{ "team 2", "{\"score\":[1,2],\"duration_seconds\":3,\"players\":[" PL(P0, 2, 0) "," PL(P2, 1, 0) "]}", "team" },
		{ "negative goals", "{\"score\":[1,2],\"duration_seconds\":3,\"players\":[" PL(P0, 0, -1) "," PL(P2, 1, 0) "]}", "goals" },
		{ "a bot mark", "{\"score\":[0,0],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) ",{\"player_id\":\"" P2 "\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0,\"bot\":true}]}", "" },
		{ "a bot mark not a boolean", "{\"score\":[0,0],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) ",{\"player_id\":\"" P2 "\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":0,\"shots\":0,\"bot\":1}]}", "bot" },
		{ "a stat missing", "{\"score\":[1,2],\"duration_seconds\":3,\"players\":[{\"player_id\":\"" P0 "\",\"team\":0,\"goals\":0,\"assists\":0,\"saves\":0}," PL(P2, 1, 0) "]}", "shots" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cc_match_result r;
		struct cc_json_error err = { 0 };
		int rc = parse(cases[i].text, &r, &err);
		if (!cases[i].field[0]) {
			ck_assert_msg(rc == 0, "%s: refused: %s", cases[i].what, err.message);
			continue;
		}
		ck_assert_msg(rc == CC_EINVAL, "%s: rc %d", cases[i].what, rc);
		ck_assert_msg(strcmp(err.field, cases[i].field) == 0, "%s: field '%s' (%s), want '%s'", cases[i].what,
			      err.field, err.message, cases[i].field);
		ck_assert_msg(err.message[0], "%s: no message", cases[i].what);
	}
}
END_TEST

START_TEST(test_rules)
{
	static const struct {
		const char *what, *text, *why; /* why: a word of the refusal, "" = accepted */
	} cases[] = {
		{ "every participant once", GOOD, "" },
		{ "a draw, an own goal", "{\"score\":[1,1],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 1) "," PL(P1, 0, 0) "," PL(P2, 1, 0) "," PL(P3, 1, 0) "]}", "" },
		{ "a player twice", "{\"score\":[2,1],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P0, 0, 0) "," PL(P2, 1, 0) "," PL(P3, 1, 0) "]}", "twice" },
		{ "a stranger", "{\"score\":[2,1],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(PX, 0, 0) "," PL(P2, 1, 0) "," PL(P3, 1, 0) "]}", "not in this match" },
		{ "a participant missing", "{\"score\":[2,1],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 0) "," PL(P2, 1, 0) "," PL(P3, 1, 0) "]}", "3 players" },
		{ "wrong team", "{\"score\":[2,1],\"duration_seconds\":3,\"players\":[" PL(P0, 1, 0) "," PL(P1, 0, 0) "," PL(P2, 1, 0) "," PL(P3, 1, 0) "]}", "plays for team 0" },
		{ "goals above the score", "{\"score\":[2,1],\"duration_seconds\":3,\"players\":[" PL(P0, 0, 2) "," PL(P1, 0, 1) "," PL(P2, 1, 0) "," PL(P3, 1, 0) "]}", "scored 3 goals" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cc_match_result r;
		struct cc_json_error err = { 0 };
		char why[160] = "";
		ck_assert_msg(parse(cases[i].text, &r, &err) == 0, "%s: shape refused: %s", cases[i].what, err.message);
		int rc = cc_match_result_check(&r, ids, teams, 4, why, sizeof why);
		if (!cases[i].why[0])
			ck_assert_msg(rc == 0, "%s: refused: %s", cases[i].what, why);
		else
			ck_assert_msg(rc == CC_EINVAL && strstr(why, cases[i].why), "%s: rc %d, why '%s', want '%s'",
				      cases[i].what, rc, why, cases[i].why);
	}
}
END_TEST

/* The hash sees every number and nothing else: player order and key order do not matter. */
START_TEST(test_hash_and_outcome)
{
	struct cc_match_result a, b, c;
	struct cc_json_error err = { 0 };
	char ha[CC_MATCH_RESULT_HASH_BUF], hb[CC_MATCH_RESULT_HASH_BUF], hc[CC_MATCH_RESULT_HASH_BUF];
	ck_assert_int_eq(parse(GOOD, &a, &err), 0);
	ck_assert_int_eq(parse("{\"players\":[" PL(P3, 1, 0) "," PL(P2, 1, 1) "," PL(P1, 0, 0) "," PL(P0, 0, 2) "],"
			       "\"duration_seconds\":300,\"score\":[2,1]}", &b, &err), 0);
	cc_match_result_hash(&a, ha);
	cc_match_result_hash(&b, hb);
	ck_assert_str_eq(ha, hb);
	ck_assert_uint_eq(strlen(ha), 64);
	static const char *const different[] = {
		"{\"score\":[2,1],\"duration_seconds\":301,\"players\":[" PL(P0, 0, 2) "," PL(P1, 0, 0) "," PL(P2, 1, 1) "," PL(P3, 1, 0) "]}",
		"{\"score\":[2,2],\"duration_seconds\":300,\"players\":[" PL(P0, 0, 2) "," PL(P1, 0, 0) "," PL(P2, 1, 1) "," PL(P3, 1, 0) "]}",
		"{\"score\":[2,1],\"duration_seconds\":300,\"players\":[" PL(P0, 0, 1) "," PL(P1, 0, 1) "," PL(P2, 1, 1) "," PL(P3, 1, 0) "]}",
		/* The same numbers with slot P3 played by a bot: another result (and another stored body). */
		"{\"score\":[2,1],\"duration_seconds\":300,\"players\":[" PL(P0, 0, 2) "," PL(P1, 0, 0) "," PL(P2, 1, 1) ","
		"{\"player_id\":\"" P3 "\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":1,\"shots\":2,\"bot\":true}]}",
	};
	for (size_t i = 0; i < sizeof different / sizeof different[0]; i++) {
		ck_assert_int_eq(parse(different[i], &c, &err), 0);
		cc_match_result_hash(&c, hc);
		ck_assert_msg(strcmp(ha, hc) != 0, "different result %zu hashes the same", i);
	}
	/* An explicit "bot": false is the same result as no mark at all. */
	ck_assert_int_eq(parse("{\"score\":[2,1],\"duration_seconds\":300,\"players\":[" PL(P0, 0, 2) "," PL(P1, 0, 0) "," PL(P2, 1, 1) ","
			       "{\"player_id\":\"" P3 "\",\"team\":1,\"goals\":0,\"assists\":0,\"saves\":1,\"shots\":2,\"bot\":false}]}",
			       &c, &err), 0);
	cc_match_result_hash(&c, hc);
	ck_assert_str_eq(ha, hc);
	ck_assert(cc_match_result_score_team0(&a) == 1.0);
	ck_assert_int_eq(cc_match_result_winner(&a), 0);
	a.score[0] = 1;
	ck_assert(cc_match_result_score_team0(&a) == 0.5);
	ck_assert_int_eq(cc_match_result_winner(&a), -1);
	a.score[1] = 4;
	ck_assert(cc_match_result_score_team0(&a) == 0.0);
	ck_assert_int_eq(cc_match_result_winner(&a), 1);

	/* The stored body is canonical: players by id, and parses back to the same result. */
	cJSON *j = cc_match_result_to_json(&b);
	ck_assert_ptr_nonnull(j);
	struct cc_match_result back;
	ck_assert_int_eq(cc_match_result_parse(j, &back, &err), 0);
	cJSON_Delete(j);
	ck_assert_str_eq(back.players[0].player_id, P0);
	cc_match_result_hash(&back, hc);
	ck_assert_str_eq(hc, hb);
}
END_TEST

/*
 * A body listing one id twice (the check refuses it, but its hash is taken
 * first, to recognise a replay) hashes the same whatever order the twins
 * come in: found by tests/fuzz/fuzz_match_result, when ties kept input order.
 */
START_TEST(test_hash_twins_in_any_order)
{
	struct cc_match_result a, b;
	struct cc_json_error err = { 0 };
	char ha[CC_MATCH_RESULT_HASH_BUF], hb[CC_MATCH_RESULT_HASH_BUF];
	ck_assert_int_eq(parse("{\"score\":[5,0],\"duration_seconds\":1,\"players\":[" PL(P0, 0, 5) "," PL(P0, 1, 0) "]}",
			       &a, &err), 0);
	ck_assert_int_eq(parse("{\"score\":[5,0],\"duration_seconds\":1,\"players\":[" PL(P0, 1, 0) "," PL(P0, 0, 5) "]}",
			       &b, &err), 0);
	cc_match_result_hash(&a, ha);
	cc_match_result_hash(&b, hb);
	ck_assert_str_eq(ha, hb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("match_result");
	TCase *tc = tcase_create("match_result");
	tcase_add_test(tc, test_shape);
	tcase_add_test(tc, test_rules);
	tcase_add_test(tc, test_hash_and_outcome);
	tcase_add_test(tc, test_hash_twins_in_any_order);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
