/*
 * workload_token: round trip returns the allocation id; any change, an
 * unknown (retired) key, expiry and malformed text are refused by name; a
 * join token is not a workload token. Golden vectors: test_token_golden.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "game/join_token.h"
#include "game/workload_token.h"
#include "sys/crypto.h"
#include "support.h"

#include "sys/banned.h"

#define K1 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define K2 "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
#define NOW INT64_C(1790000000)
#define ALLOC "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"

static struct cc_keyset *keys(const char *json)
{
	struct cc_keyset *ks = NULL;
	char err[256];

	ck_assert_msg(cc_keyset_parse("test", json, strlen(json), &ks, err, sizeof(err)) == 0, "%s",
		      err);
	return ks;
}

static enum cc_token_refusal verdict(const struct cc_keyset *ks, const char *token, int64_t now)
{
	struct cc_workload_claims out;
	enum cc_token_refusal why = (enum cc_token_refusal)-1;
	int rc = cc_workload_token_verify(ks, token, now, &out, &why);

	ck_assert_int_eq(rc, why == CC_TOKEN_OK ? 0 : CC_EUNAUTHORIZED);
	return why;
}

START_TEST(test_round_trip_returns_allocation)
{
	struct cc_keyset *ks = keys("{\"w1\":\"" K1 "\"}");
	struct cc_workload_claims c = {.key_id = "w1", .allocation_id = ALLOC, .expires_at = NOW + 3600};
	struct cc_workload_claims out;
	char tok[CC_WORKLOAD_TOKEN_BUF];
	enum cc_token_refusal why = CC_TOKEN_MALFORMED;

	ck_assert_int_eq(cc_workload_token_sign(ks, &c, tok, sizeof(tok)), 0);
	ck_assert_int_eq(cc_workload_token_verify(ks, tok, NOW, &out, &why), 0);
	ck_assert_int_eq(why, CC_TOKEN_OK);
	ck_assert_str_eq(out.allocation_id, ALLOC);
	ck_assert_str_eq(out.key_id, "w1");
	ck_assert_int_eq(out.expires_at, NOW + 3600);
	ck_assert_int_eq(verdict(ks, tok, NOW + 3600), CC_TOKEN_EXPIRED);
	ck_assert_int_eq(verdict(ks, tok, NOW + 3599), CC_TOKEN_OK);
	cc_keyset_free(ks);
}
END_TEST

/* Allocation A's token re-pointed at allocation B (or a later expiry) breaks the tag. */
START_TEST(test_changed_claims_refused)
{
	struct cc_keyset *ks = keys("{\"w1\":\"" K1 "\",\"w2\":\"" K2 "\"}");
	struct cc_workload_claims a = {.key_id = "w1", .allocation_id = ALLOC, .expires_at = NOW + 60};
	struct cc_workload_claims changed[3];
	char good[CC_WORKLOAD_TOKEN_BUF], other[CC_WORKLOAD_TOKEN_BUF], forged[2 * CC_WORKLOAD_TOKEN_BUF];

	for (int i = 0; i < 3; i++)
		changed[i] = a;
	changed[0].allocation_id[0] = 'b';
	changed[1].expires_at += 86400;
	snprintf(changed[2].key_id, sizeof(changed[2].key_id), "w2");
	ck_assert_int_eq(cc_workload_token_sign(ks, &a, good, sizeof(good)), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(cc_workload_token_sign(ks, &changed[i], other, sizeof(other)), 0);
		snprintf(forged, sizeof(forged), "%.*s%s", (int)(strchr(other, '.') - other), other,
			 strchr(good, '.'));
		ck_assert_msg(verdict(ks, forged, NOW) == CC_TOKEN_BAD_SIGNATURE, "change %d", i);
	}
	/* Every single-bit change of the text. */
	for (size_t i = 0; good[i]; i++) {
		for (int bit = 0; bit < 7; bit++) {
			good[i] = (char)(good[i] ^ (1 << bit));
			ck_assert_msg(verdict(ks, good, NOW) != CC_TOKEN_OK, "bit %d of %zu", bit, i);
			good[i] = (char)(good[i] ^ (1 << bit));
		}
	}
	ck_assert_int_eq(verdict(ks, good, NOW), CC_TOKEN_OK);
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_retired_secret_and_rotation)
{
	struct cc_keyset *old = keys("{\"w1\":\"" K1 "\"}");
	struct cc_keyset *both = keys("{\"w1\":\"" K1 "\",\"w2\":\"" K2 "\"}");
	struct cc_keyset *new_only = keys("{\"w2\":\"" K2 "\"}");
	struct cc_workload_claims a = {.key_id = "w1", .allocation_id = ALLOC, .expires_at = NOW + 60};
	struct cc_workload_claims b = a;
	char ta[CC_WORKLOAD_TOKEN_BUF], tb[CC_WORKLOAD_TOKEN_BUF];

	snprintf(b.key_id, sizeof(b.key_id), "w2");
	ck_assert_int_eq(cc_workload_token_sign(old, &a, ta, sizeof(ta)), 0);
	ck_assert_int_eq(cc_workload_token_sign(both, &b, tb, sizeof(tb)), 0);
	ck_assert_int_eq(verdict(both, ta, NOW), CC_TOKEN_OK);
	ck_assert_int_eq(verdict(both, tb, NOW), CC_TOKEN_OK);
	ck_assert_int_eq(verdict(new_only, ta, NOW), CC_TOKEN_UNKNOWN_KEY);
	ck_assert_int_eq(cc_workload_token_sign(new_only, &a, ta, sizeof(ta)), CC_ENOTFOUND);
	cc_keyset_free(old);
	cc_keyset_free(both);
	cc_keyset_free(new_only);
}
END_TEST

/* A raw secret file (one key under "") signs and verifies. */
START_TEST(test_raw_secret_file)
{
	static const char raw[] = "a-raw-workload-secret-of-32-bytes!!\n";
	struct cc_keyset *ks = NULL;
	struct cc_workload_claims c = {.key_id = "", .allocation_id = ALLOC, .expires_at = NOW + 1};
	char tok[CC_WORKLOAD_TOKEN_BUF], err[128];

	ck_assert_int_eq(cc_keyset_parse("raw", raw, strlen(raw), &ks, err, sizeof(err)), 0);
	ck_assert_int_eq(cc_workload_token_sign(ks, &c, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_OK);
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_join_token_is_not_a_workload_token)
{
	struct cc_keyset *ks = keys("{\"w1\":\"" K1 "\"}");
	struct cc_join_claims j = {.key_id = "w1", .match_id = ALLOC, .server_id = "s",
				   .slot = 0, .generation = 1, .player_id = ALLOC,
				   .expires_at = NOW + 60};
	char tok[CC_JOIN_TOKEN_BUF];

	ck_assert_int_eq(cc_join_token_sign(ks, &j, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_MALFORMED);
	cc_keyset_free(ks);
}
END_TEST

static const struct {
	const char *text;
	enum cc_token_refusal want;
} malformed[] = {
	{"", CC_TOKEN_MALFORMED},
	{"Bearer x", CC_TOKEN_MALFORMED},
	{"Q0NXVAE.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_MALFORMED},  /* CCWT 1, no fields */
	{"Q0NXVAI.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_BAD_VERSION}, /* CCWT 2 */
	{"Q0NXVAE.AAAA", CC_TOKEN_MALFORMED},
};

START_TEST(test_malformed)
{
	struct cc_keyset *ks = keys("{\"w1\":\"" K1 "\"}");

	ck_assert_int_eq(verdict(ks, malformed[_i].text, NOW), malformed[_i].want);
	ck_assert_int_eq(verdict(ks, NULL, NOW), CC_TOKEN_MALFORMED);
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_sign_refusals)
{
	struct cc_keyset *ks = keys("{\"w1\":\"" K1 "\"}");
	struct cc_workload_claims c = {.key_id = "w1", .allocation_id = ALLOC, .expires_at = 0};
	char tok[CC_WORKLOAD_TOKEN_BUF] = "untouched";

	ck_assert_int_eq(cc_workload_token_sign(ks, &c, tok, sizeof(tok)), CC_EINVAL);
	c.expires_at = NOW;
	c.allocation_id[0] = 'A';
	ck_assert_int_eq(cc_workload_token_sign(ks, &c, tok, sizeof(tok)), CC_EINVAL);
	c.allocation_id[0] = 'a';
	ck_assert_int_eq(cc_workload_token_sign(ks, &c, tok, 10), CC_ETOOBIG);
	ck_assert_str_eq(tok, "untouched");
	ck_assert_int_eq(cc_workload_token_sign(NULL, &c, tok, sizeof(tok)), CC_EINVAL);
	cc_keyset_free(ks);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workload_token");
	TCase *tc = tcase_create("workload_token");

	tcase_add_test(tc, test_round_trip_returns_allocation);
	tcase_add_test(tc, test_changed_claims_refused);
	tcase_add_test(tc, test_retired_secret_and_rotation);
	tcase_add_test(tc, test_raw_secret_file);
	tcase_add_test(tc, test_join_token_is_not_a_workload_token);
	tcase_add_loop_test(tc, test_malformed, 0, (int)CC_ARRAY_LEN(malformed));
	tcase_add_test(tc, test_sign_refusals);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
