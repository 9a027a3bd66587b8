/*
 * roster: validation of every field, a digest independent of entry order,
 * manifest build -> parse round trip, a truncated or edited manifest refused
 * for its digest even when every entry is valid, caps and strict members on
 * parsing, and the admission rule for verified join claims. Golden digests
 * from an independent implementation: test_token_golden.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/join_token.h"
#include "game/roster.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "support.h"

#include "sys/banned.h"

#define MATCH "6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b"
#define ALLOC "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
#define EXP INT64_C(1790000300)

/* A 3v3 roster, entries deliberately not in slot order. */
static struct cc_roster sample(void)
{
	struct cc_roster r = {.match_id = MATCH, .allocation_id = ALLOC, .server_id = "local-7100",
			      .key_id = "k2", .count = 6};

	for (size_t i = 0; i < r.count; i++) {
		struct cc_roster_entry *e = &r.entries[i];

		e->slot = (int)((i * 5) % 6);
		e->team = e->slot < 3 ? 0 : 1;
		snprintf(e->player_id, sizeof(e->player_id), "00000000-0000-4000-8000-00000000000%c", (char)('0' + i));
		e->generation = 1 + (int64_t)i;
		e->expires_at = EXP;
	}
	return r;
}

/* ---- validation ------------------------------------------------------------------ */

static void v_match(struct cc_roster *r) { r->match_id[0] = 'X'; }
static void v_alloc(struct cc_roster *r) { r->allocation_id[0] = '\0'; }
static void v_server(struct cc_roster *r) { r->server_id[0] = '\0'; }
static void v_key(struct cc_roster *r) { r->key_id[0] = '!'; }
static void v_empty(struct cc_roster *r) { r->count = 0; }
static void v_count(struct cc_roster *r) { r->count = CC_ROSTER_MAX_ENTRIES + 1; }
static void v_slot_low(struct cc_roster *r) { r->entries[1].slot = -1; }
static void v_slot_high(struct cc_roster *r) { r->entries[1].slot = CC_JOIN_SLOT_MAX + 1; }
static void v_slot_twice(struct cc_roster *r) { r->entries[1].slot = r->entries[0].slot; }
static void v_team(struct cc_roster *r) { r->entries[2].team = 2; }
static void v_player(struct cc_roster *r) { r->entries[3].player_id[3] = 'z'; }
static void v_player_twice(struct cc_roster *r) { memcpy(r->entries[4].player_id, r->entries[0].player_id, CC_UUID_BUF); }
static void v_gen(struct cc_roster *r) { r->entries[5].generation = 0; }
static void v_exp(struct cc_roster *r) { r->entries[5].expires_at = CC_ROSTER_EXPIRY_MAX + 1; }

static const struct {
	void (*spoil)(struct cc_roster *);
	const char *message; /* what the error says */
} invalid[] = {
	{v_match, "match_id must be a lowercase UUID"},
	{v_alloc, "allocation_id must be a lowercase UUID"},
	{v_server, "server_id must be 1 to 128 bytes of [A-Za-z0-9._-]"},
	{v_key, "key_id must be 0 to 64 bytes of [A-Za-z0-9._-]"},
	{v_empty, "players must hold 1 to 16 entries"},
	{v_count, "players must hold 1 to 16 entries"},
	{v_slot_low, "players[1].slot must be 0 to 15"},
	{v_slot_high, "players[1].slot must be 0 to 15"},
	{v_slot_twice, "players[1].slot 0 is taken twice"},
	{v_team, "players[2].team must be 0 or 1"},
	{v_player, "players[3].player_id must be a lowercase UUID"},
	{v_player_twice, "players[4].player_id repeats players[0]"},
	{v_gen, "players[5].generation must be 1 to 2147483647"},
	{v_exp, "players[5].expires_at must be 1 to 9007199254740991"},
};

START_TEST(test_validate_refusals)
{
	struct cc_roster r = sample();
	char err[160] = "", digest[CC_SHA256_HEX_LEN + 1] = "untouched", *json = NULL;

	ck_assert_int_eq(cc_roster_validate(&r, err, sizeof(err)), 0);
	invalid[_i].spoil(&r);
	ck_assert_int_eq(cc_roster_validate(&r, err, sizeof(err)), CC_EINVAL);
	ck_assert_str_eq(err, invalid[_i].message);
	ck_assert_int_eq(cc_roster_digest(&r, digest), CC_EINVAL);
	ck_assert_str_eq(digest, "untouched");
	ck_assert_int_eq(cc_roster_manifest_build(&r, &json), CC_EINVAL);
	ck_assert_ptr_null(json);
}
END_TEST

/* ---- digest ---------------------------------------------------------------------- */

START_TEST(test_digest_ignores_entry_order_and_covers_every_field)
{
	struct cc_roster r = sample(), shuffled = sample(), changed;
	char d1[CC_SHA256_HEX_LEN + 1], d2[CC_SHA256_HEX_LEN + 1];
	struct cc_roster_entry t;

	ck_assert_int_eq(cc_roster_digest(&r, d1), 0);
	t = shuffled.entries[0];
	shuffled.entries[0] = shuffled.entries[5];
	shuffled.entries[5] = t;
	ck_assert_int_eq(cc_roster_digest(&shuffled, d2), 0);
	ck_assert_str_eq(d1, d2);

	/* Each change, one at a time, changes the digest. */
	for (int k = 0; k < 10; k++) {
		changed = r;
		switch (k) {
		case 0: changed.match_id[35] = 'c'; break;
		case 1: changed.allocation_id[35] = 'e'; break;
		case 2: changed.server_id[9] = '1'; break;
		case 3: changed.key_id[1] = '3'; break;
		case 4: changed.count = 5; break; /* truncated */
		case 5: changed.entries[0].slot = 9; break;
		case 6: changed.entries[0].team ^= 1; break;
		case 7: changed.entries[0].player_id[35] = '9'; break;
		case 8: changed.entries[0].generation++; break;
		case 9: changed.entries[0].expires_at++; break;
		}
		ck_assert_int_eq(cc_roster_digest(&changed, d2), 0);
		ck_assert_msg(strcmp(d1, d2) != 0, "change %d kept the digest", k);
	}
}
END_TEST

/* ---- manifest round trip --------------------------------------------------------- */

START_TEST(test_manifest_round_trip)
{
	struct cc_roster r = sample(), back;
	char *json = NULL, digest[CC_SHA256_HEX_LEN + 1], want[CC_SHA256_HEX_LEN + 1];
	enum cc_token_refusal why = CC_TOKEN_MALFORMED;
	struct cc_json_error err;

	ck_assert_int_eq(cc_roster_manifest_build(&r, &json), 0);
	ck_assert_int_eq(cc_roster_digest(&r, want), 0);
	ck_assert_ptr_nonnull(strstr(json, want));
	ck_assert_int_eq(cc_roster_manifest_parse(json, strlen(json), &back, digest, &why, &err), 0);
	ck_assert_int_eq(why, CC_TOKEN_OK);
	ck_assert_str_eq(digest, want);
	ck_assert_uint_eq(back.count, r.count);
	/* Built in slot order: entry k has slot k. */
	for (size_t k = 0; k < back.count; k++) {
		const struct cc_roster_entry *e = cc_roster_find_player(&r, back.entries[k].player_id);

		ck_assert_int_eq(back.entries[k].slot, (int)k);
		ck_assert_ptr_nonnull(e);
		ck_assert_mem_eq(e, &back.entries[k], sizeof(*e));
	}
	ck_assert_str_eq(back.server_id, r.server_id);
	ck_assert_str_eq(back.key_id, r.key_id);
	free(json);
}
END_TEST

/* ---- manifest refusals ------------------------------------------------------------ */

/* A valid manifest with one textual edit applied (first occurrence of from -> to). */
static char *edited(const char *from, const char *to)
{
	struct cc_roster r = sample();
	char *json = NULL, *out, *at;
	size_t n;

	ck_assert_int_eq(cc_roster_manifest_build(&r, &json), 0);
	at = strstr(json, from);
	ck_assert_msg(at != NULL, "'%s' not in %s", from, json);
	n = strlen(json) - strlen(from) + strlen(to) + 1;
	out = malloc(n);
	ck_assert_ptr_nonnull(out);
	snprintf(out, n, "%.*s%s%s", (int)(at - json), json, to, at + strlen(from));
	free(json);
	return out;
}

static const struct {
	const char *name, *from, *to;
	enum cc_token_refusal want;
	const char *field;
} refusals[] = {
	{"text after the object", "]}", "]}{\"slot\":5}", CC_TOKEN_MALFORMED, ""},
	{"edited team", "\"slot\":1,\"team\":0", "\"slot\":1,\"team\":1", CC_TOKEN_DIGEST_MISMATCH, "digest"},
	{"edited generation", "\"generation\":1,", "\"generation\":7,", CC_TOKEN_DIGEST_MISMATCH, "digest"},
	{"edited server", "local-7100", "local-7101", CC_TOKEN_DIGEST_MISMATCH, "digest"},
	{"version 2", "\"version\":1", "\"version\":2", CC_TOKEN_BAD_VERSION, "version"},
	{"version string", "\"version\":1", "\"version\":\"1\"", CC_TOKEN_MALFORMED, "version"},
	{"unknown member", "\"version\":1", "\"version\":1,\"extra\":true", CC_TOKEN_MALFORMED, "extra"},
	{"repeated member", "\"version\":1", "\"version\":1,\"version\":1", CC_TOKEN_MALFORMED, "version"},
	{"entry member", "\"team\":0", "\"team\":0,\"token\":\"x\"", CC_TOKEN_MALFORMED, "token"},
	{"slot out of range", "\"slot\":0,", "\"slot\":16,", CC_TOKEN_MALFORMED, "slot"},
	{"fractional slot", "\"slot\":0,", "\"slot\":0.5,", CC_TOKEN_MALFORMED, "slot"},
	{"duplicate slot", "\"slot\":1,", "\"slot\":0,", CC_TOKEN_MALFORMED, ""},
	{"player not uuid", "00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-00000000000Z", CC_TOKEN_MALFORMED, ""},
	{"digest short", "\"digest\":\"", "\"digest\":\"0", CC_TOKEN_MALFORMED, "digest"},
	{"entry not object", "[{", "[7,{", CC_TOKEN_MALFORMED, "players[0]"},
	{"too deep", "\"team\":0", "\"team\":[0]", CC_TOKEN_MALFORMED, ""},
	{"trailing text", "]}", "]}x", CC_TOKEN_MALFORMED, ""},
};

START_TEST(test_manifest_refusals)
{
	char *text = edited(refusals[_i].from, refusals[_i].to);
	struct cc_roster out;
	enum cc_token_refusal why = CC_TOKEN_OK;
	struct cc_json_error err = {"unset", "unset"};
	char digest[CC_SHA256_HEX_LEN + 1] = "untouched";
	int rc = cc_roster_manifest_parse(text, strlen(text), &out, digest, &why, &err);

	ck_assert_msg(rc == CC_EINVAL && why == refusals[_i].want, "%s: rc %d, %s (%s: %s)",
		      refusals[_i].name, rc, cc_token_refusal_name(why), err.field, err.message);
	ck_assert_msg(strcmp(err.field, refusals[_i].field) == 0, "%s: field '%s' (%s)",
		      refusals[_i].name, err.field, err.message);
	ck_assert_str_eq(digest, "untouched");
	free(text);
}
END_TEST

/*
 * The roster of 6 cut to 5 entries, each still valid, carrying the digest
 * of the 6: only the digest can tell, and it does.
 */
START_TEST(test_truncated_roster_refused)
{
	struct cc_roster full = sample(), cut = sample(), out;
	char d_full[CC_SHA256_HEX_LEN + 1], d_cut[CC_SHA256_HEX_LEN + 1], *json = NULL, *at;
	enum cc_token_refusal why = CC_TOKEN_OK;
	struct cc_json_error err;

	cut.count = 5;
	ck_assert_int_eq(cc_roster_digest(&full, d_full), 0);
	ck_assert_int_eq(cc_roster_digest(&cut, d_cut), 0);
	ck_assert_int_eq(cc_roster_manifest_build(&cut, &json), 0);
	ck_assert_int_eq(cc_roster_manifest_parse(json, strlen(json), &out, NULL, &why, &err), 0);
	at = strstr(json, d_cut);
	ck_assert_ptr_nonnull(at);
	memcpy(at, d_full, CC_SHA256_HEX_LEN);
	ck_assert_int_eq(cc_roster_manifest_parse(json, strlen(json), &out, NULL, &why, &err), CC_EINVAL);
	ck_assert_int_eq(why, CC_TOKEN_DIGEST_MISMATCH);
	ck_assert_str_eq(err.message, "digest does not match the roster (changed or truncated)");
	free(json);
}
END_TEST

START_TEST(test_manifest_caps)
{
	size_t n = CC_ROSTER_MANIFEST_MAX + 1, used;
	char *big = malloc(n + 1), *json = NULL;
	struct cc_roster out, r = sample();
	enum cc_token_refusal why = CC_TOKEN_OK;
	struct cc_json_error err;
	char *many;
	const char *players;

	ck_assert_ptr_nonnull(big);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	big[n] = '\0';
	ck_assert_int_eq(cc_roster_manifest_parse(big, n, &out, NULL, &why, &err), CC_ETOOBIG);
	ck_assert_int_eq(why, CC_TOKEN_MALFORMED);
	free(big);

	/* 17 players: refused by count before anything else about them. */
	ck_assert_int_eq(cc_roster_manifest_build(&r, &json), 0);
	players = strstr(json, "\"players\":[") + strlen("\"players\":[");
	many = malloc(strlen(json) + 17 * 4 + 1);
	ck_assert_ptr_nonnull(many);
	used = (size_t)(players - json);
	memcpy(many, json, used);
	for (int i = 0; i < 17; i++)
		used += (size_t)snprintf(many + used, 5, "%s{}", i ? "," : "");
	memcpy(many + used, "]}", 3);
	ck_assert_int_eq(cc_roster_manifest_parse(many, strlen(many), &out, NULL, &why, &err), CC_EINVAL);
	ck_assert_str_eq(err.field, "players");
	free(many);
	free(json);

	ck_assert_int_eq(cc_roster_manifest_parse(NULL, 0, &out, NULL, &why, &err), CC_EINVAL);
	ck_assert_int_eq(cc_roster_manifest_parse("{}", 2, NULL, NULL, NULL, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_roster_manifest_parse("[]", 2, &out, NULL, NULL, NULL), CC_EINVAL);
}
END_TEST

/* ---- admission --------------------------------------------------------------------- */

static const struct {
	const char *name;
	const char *match_id, *server_id, *player_id;
	int slot;
	int64_t generation;
	enum cc_token_refusal want;
} admissions[] = {
	{"roster player", MATCH, "local-7100", "00000000-0000-4000-8000-000000000001", 5, 2, CC_TOKEN_OK},
	{"other match", "6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5c", "local-7100", "00000000-0000-4000-8000-000000000001", 5, 2, CC_TOKEN_WRONG_MATCH},
	{"other server", MATCH, "local-7101", "00000000-0000-4000-8000-000000000001", 5, 2, CC_TOKEN_WRONG_SERVER},
	{"stranger", MATCH, "local-7100", "00000000-0000-4000-8000-000000000009", 5, 2, CC_TOKEN_NOT_IN_ROSTER},
	{"other slot", MATCH, "local-7100", "00000000-0000-4000-8000-000000000001", 4, 2, CC_TOKEN_WRONG_SLOT},
	{"old generation", MATCH, "local-7100", "00000000-0000-4000-8000-000000000001", 5, 1, CC_TOKEN_WRONG_GENERATION},
	{"newer generation", MATCH, "local-7100", "00000000-0000-4000-8000-000000000001", 5, 3, CC_TOKEN_WRONG_GENERATION},
};

START_TEST(test_admit)
{
	struct cc_roster r = sample();
	struct cc_join_claims c = {.key_id = "k2", .expires_at = EXP};
	enum cc_token_refusal why = (enum cc_token_refusal)-1;
	int rc;

	snprintf(c.match_id, sizeof(c.match_id), "%s", admissions[_i].match_id);
	snprintf(c.server_id, sizeof(c.server_id), "%s", admissions[_i].server_id);
	snprintf(c.player_id, sizeof(c.player_id), "%s", admissions[_i].player_id);
	c.slot = admissions[_i].slot;
	c.generation = admissions[_i].generation;
	rc = cc_roster_admit(&r, &c, &why);
	ck_assert_msg(why == admissions[_i].want, "%s: %s", admissions[_i].name,
		      cc_token_refusal_name(why));
	ck_assert_int_eq(rc, why == CC_TOKEN_OK ? 0 : CC_EFORBIDDEN);
	ck_assert_int_eq(cc_roster_admit(NULL, &c, &why), CC_EINVAL);
	ck_assert_ptr_null(cc_roster_find_player(&r, NULL));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("roster");
	TCase *tc = tcase_create("roster");

	tcase_add_loop_test(tc, test_validate_refusals, 0, (int)CC_ARRAY_LEN(invalid));
	tcase_add_test(tc, test_digest_ignores_entry_order_and_covers_every_field);
	tcase_add_test(tc, test_manifest_round_trip);
	tcase_add_loop_test(tc, test_manifest_refusals, 0, (int)CC_ARRAY_LEN(refusals));
	tcase_add_test(tc, test_truncated_roster_refused);
	tcase_add_test(tc, test_manifest_caps);
	tcase_add_loop_test(tc, test_admit, 0, (int)CC_ARRAY_LEN(admissions));
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
