/*
 * join_token: every refusal of issue 10's list (any field changed, key id
 * swapped to another key the server holds, retired key, expired, presented
 * for another slot, server or match), acceptance of both keys during a
 * rotation, malformed text of every shape, and the sign-side refusals.
 * Golden vectors from an independent implementation: test_token_golden.c.
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
#define K3 "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8="
#define NOW INT64_C(1790000000)

static struct cc_keyset *keys(const char *json)
{
	struct cc_keyset *ks = NULL;
	char err[256];

	ck_assert_msg(cc_keyset_parse("test", json, strlen(json), &ks, err, sizeof(err)) == 0, "%s",
		      err);
	return ks;
}

static struct cc_join_claims base_claims(const char *key_id)
{
	struct cc_join_claims c = {
		.match_id = "6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b",
		.server_id = "local-7100",
		.slot = 3,
		.generation = 1,
		.player_id = "0b8e7d6c-5b4a-4938-a726-15f4e3d2c1b0",
		.expires_at = NOW + 300,
	};

	snprintf(c.key_id, sizeof(c.key_id), "%s", key_id);
	return c;
}

static void sign_ok(const struct cc_keyset *ks, const struct cc_join_claims *c, char *out)
{
	ck_assert_int_eq(cc_join_token_sign(ks, c, out, CC_JOIN_TOKEN_BUF), 0);
}

/* Verifies and returns the refusal (CC_TOKEN_OK when accepted), checking the result code agrees. */
static enum cc_token_refusal verdict(const struct cc_keyset *ks, const char *token, int64_t now)
{
	struct cc_join_claims out;
	enum cc_token_refusal why = (enum cc_token_refusal)-1;
	int rc = cc_join_token_verify(ks, token, now, &out, &why);

	ck_assert_int_eq(rc, why == CC_TOKEN_OK ? 0 : CC_EUNAUTHORIZED);
	return why;
}

/* ---- round trip ------------------------------------------------------------- */

START_TEST(test_sign_verify_round_trip)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_join_claims c = base_claims("k1"), out;
	char tok[CC_JOIN_TOKEN_BUF];
	enum cc_token_refusal why = CC_TOKEN_MALFORMED;

	sign_ok(ks, &c, tok);
	for (const char *p = tok; *p; p++)
		ck_assert_msg(*p > 0x20 && *p < 0x7f, "token is printable ASCII");
	ck_assert_uint_le(strlen(tok), CC_JOIN_TOKEN_MAX);
	ck_assert_int_eq(cc_join_token_verify(ks, tok, NOW, &out, &why), 0);
	ck_assert_int_eq(why, CC_TOKEN_OK);
	ck_assert_mem_eq(&out, &c, sizeof(c));
	cc_keyset_free(ks);
}
END_TEST

/* The largest claims fit CC_JOIN_TOKEN_BUF (64-byte key id, 128-byte server id). */
START_TEST(test_largest_token_fits)
{
	char id[CC_KEY_ID_BUF], json[256];
	struct cc_keyset *ks;
	struct cc_join_claims c, out;
	char tok[CC_JOIN_TOKEN_BUF];
	enum cc_token_refusal why;

	memset(id, 'k', CC_KEYSET_ID_MAX);
	id[CC_KEYSET_ID_MAX] = '\0';
	snprintf(json, sizeof(json), "{\"%s\":\"%s\"}", id, K1);
	ks = keys(json);
	c = base_claims(id);
	memset(c.server_id, 's', CC_SERVER_ID_MAX);
	c.server_id[CC_SERVER_ID_MAX] = '\0';
	c.slot = CC_JOIN_SLOT_MAX;
	c.generation = INT32_MAX;
	c.expires_at = INT64_MAX;
	sign_ok(ks, &c, tok);
	ck_assert_uint_eq(strlen(tok), 370); /* 244 claim bytes: 326 + 1 + 43 characters */
	ck_assert_int_eq(cc_join_token_verify(ks, tok, NOW, &out, &why), 0);
	ck_assert_mem_eq(&out, &c, sizeof(c));
	cc_keyset_free(ks);
}
END_TEST

/* ---- any field changed ------------------------------------------------------ */

/*
 * Each row changes one claim. The forged token carries the changed claims
 * with the tag of the original: what an attacker without the key can do.
 */
static void change_key(struct cc_join_claims *c) { snprintf(c->key_id, sizeof(c->key_id), "k2"); }
static void change_match(struct cc_join_claims *c) { c->match_id[0] = '7'; }
static void change_server(struct cc_join_claims *c) { snprintf(c->server_id, sizeof(c->server_id), "local-7101"); }
static void change_slot(struct cc_join_claims *c) { c->slot = 4; }
static void change_generation(struct cc_join_claims *c) { c->generation = 2; }
static void change_player(struct cc_join_claims *c) { c->player_id[35] = '1'; }
static void change_expiry(struct cc_join_claims *c) { c->expires_at += 3600; }

static const struct {
	const char *name;
	void (*change)(struct cc_join_claims *);
} field_changes[] = {
	{"key_id", change_key},         {"match_id", change_match},
	{"server_id", change_server},   {"slot", change_slot},
	{"generation", change_generation}, {"player_id", change_player},
	{"expires_at", change_expiry},
};

START_TEST(test_any_field_changed_is_refused)
{
	/* The server holds both k1 and k2: swapping the key id must still fail. */
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\",\"k2\":\"" K2 "\"}");
	struct cc_join_claims c = base_claims("k1"), changed = c;
	char good[CC_JOIN_TOKEN_BUF], other[CC_JOIN_TOKEN_BUF], forged[2 * CC_JOIN_TOKEN_BUF];
	const char *tag, *body_end;

	field_changes[_i].change(&changed);
	ck_assert_msg(memcmp(&changed, &c, sizeof(c)) != 0, "row %s changes nothing",
		      field_changes[_i].name);
	sign_ok(ks, &c, good);
	sign_ok(ks, &changed, other); /* honest token for the changed claims, other tag */
	tag = strchr(good, '.');
	body_end = strchr(other, '.');
	snprintf(forged, sizeof(forged), "%.*s%s", (int)(body_end - other), other, tag);
	ck_assert_int_eq(verdict(ks, good, NOW), CC_TOKEN_OK);
	ck_assert_msg(verdict(ks, forged, NOW) == CC_TOKEN_BAD_SIGNATURE,
		      "changing %s: %s", field_changes[_i].name,
		      cc_token_refusal_name(verdict(ks, forged, NOW)));
	cc_keyset_free(ks);
}
END_TEST

/* Every single-bit change of the claims or tag text is refused. */
START_TEST(test_every_bit_flip_is_refused)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\",\"k2\":\"" K2 "\"}");
	struct cc_join_claims c = base_claims("k1");
	char tok[CC_JOIN_TOKEN_BUF];
	size_t n;

	sign_ok(ks, &c, tok);
	n = strlen(tok);
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 7; bit++) {
			char saved = tok[i];

			tok[i] = (char)(tok[i] ^ (1 << bit));
			ck_assert_msg(verdict(ks, tok, NOW) != CC_TOKEN_OK,
				      "flipping bit %d of char %zu was accepted", bit, i);
			tok[i] = saved;
		}
	}
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_OK);
	cc_keyset_free(ks);
}
END_TEST

/*
 * A token that names k2 but whose tag was made with k1 (e.g. a signer that
 * picked one key and wrote another id) is refused by a server holding both.
 */
START_TEST(test_key_id_swapped_to_held_key)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\",\"k2\":\"" K2 "\"}");
	struct cc_join_claims c = base_claims("k2");
	uint8_t bytes[CC_TOKEN_CLAIMS_MAX];
	size_t len = 0;
	char tok[CC_JOIN_TOKEN_BUF];

	ck_assert_int_eq(cc_join_claims_encode(&c, bytes, sizeof(bytes), &len), 0);
	ck_assert_int_eq(cc_token_seal(ks, "k1", bytes, len, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_BAD_SIGNATURE);
	ck_assert_int_eq(cc_token_seal(ks, "k2", bytes, len, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_OK);
	cc_keyset_free(ks);
}
END_TEST

/* ---- keys: retirement and rotation --------------------------------------------- */

START_TEST(test_retired_key_is_refused)
{
	struct cc_keyset *before = keys("{\"old\":\"" K1 "\",\"new\":\"" K2 "\"}");
	struct cc_keyset *after = keys("{\"new\":\"" K2 "\"}");
	struct cc_join_claims c = base_claims("old");
	char tok[CC_JOIN_TOKEN_BUF];

	sign_ok(before, &c, tok);
	ck_assert_int_eq(verdict(before, tok, NOW), CC_TOKEN_OK);
	ck_assert_int_eq(verdict(after, tok, NOW), CC_TOKEN_UNKNOWN_KEY);
	cc_keyset_free(before);
	cc_keyset_free(after);
}
END_TEST

/* A retired key's id reused for a new key does not revive old tokens. */
START_TEST(test_reused_key_id_with_new_key_is_refused)
{
	struct cc_keyset *before = keys("{\"k1\":\"" K1 "\"}");
	struct cc_keyset *after = keys("{\"k1\":\"" K3 "\"}");
	struct cc_join_claims c = base_claims("k1");
	char tok[CC_JOIN_TOKEN_BUF];

	sign_ok(before, &c, tok);
	ck_assert_int_eq(verdict(after, tok, NOW), CC_TOKEN_BAD_SIGNATURE);
	cc_keyset_free(before);
	cc_keyset_free(after);
}
END_TEST

START_TEST(test_rotation_accepts_both_keys)
{
	/* Signers: the old allocator (k1 active) and the new one (k2 active). */
	struct cc_keyset *old_signer = keys("{\"k1\":\"" K1 "\"}");
	struct cc_keyset *new_signer = keys("{\"k1\":\"" K1 "\",\"k2\":\"" K2 "\"}");
	struct cc_keyset *server = keys("{\"k1\":\"" K1 "\",\"k2\":\"" K2 "\"}");
	struct cc_join_claims a = base_claims("k1"), b = base_claims("k2");
	char ta[CC_JOIN_TOKEN_BUF], tb[CC_JOIN_TOKEN_BUF];

	sign_ok(old_signer, &a, ta);
	sign_ok(new_signer, &b, tb);
	ck_assert_str_ne(ta, tb);
	ck_assert_int_eq(verdict(server, ta, NOW), CC_TOKEN_OK);
	ck_assert_int_eq(verdict(server, tb, NOW), CC_TOKEN_OK);
	/* A server not yet given the new key refuses k2 tokens by name. */
	ck_assert_int_eq(verdict(old_signer, tb, NOW), CC_TOKEN_UNKNOWN_KEY);
	cc_keyset_free(old_signer);
	cc_keyset_free(new_signer);
	cc_keyset_free(server);
}
END_TEST

/* A raw key file is one key under "": tokens name the empty id. */
START_TEST(test_raw_key_file_empty_id)
{
	static const char raw[] = "0123456789abcdef0123456789abcdef";
	struct cc_keyset *ks = NULL;
	struct cc_join_claims c = base_claims("");
	char tok[CC_JOIN_TOKEN_BUF], err[128];

	ck_assert_int_eq(cc_keyset_parse("raw", raw, strlen(raw), &ks, err, sizeof(err)), 0);
	sign_ok(ks, &c, tok);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_OK);
	cc_keyset_free(ks);
}
END_TEST

/* ---- expiry ------------------------------------------------------------------- */

START_TEST(test_expiry_boundary)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_join_claims c = base_claims("k1");
	char tok[CC_JOIN_TOKEN_BUF];

	sign_ok(ks, &c, tok);
	ck_assert_int_eq(verdict(ks, tok, c.expires_at - 1), CC_TOKEN_OK);
	ck_assert_int_eq(verdict(ks, tok, c.expires_at), CC_TOKEN_EXPIRED);
	ck_assert_int_eq(verdict(ks, tok, INT64_MAX), CC_TOKEN_EXPIRED);
	ck_assert_int_eq(verdict(ks, tok, INT64_MIN), CC_TOKEN_OK);
	cc_keyset_free(ks);
}
END_TEST

/* ---- presented for another match, server or slot ------------------------------ */

static const struct {
	const char *match_id, *server_id;
	int slot;
	enum cc_token_refusal want;
} targets[] = {
	{"6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b", "local-7100", 3, CC_TOKEN_OK},
	{"6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5c", "local-7100", 3, CC_TOKEN_WRONG_MATCH},
	{"6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b", "local-7101", 3, CC_TOKEN_WRONG_SERVER},
	{"6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b", "local-710", 3, CC_TOKEN_WRONG_SERVER},
	{"6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b", "local-7100", 4, CC_TOKEN_WRONG_SLOT},
	{"6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b", "local-7100", -1, CC_TOKEN_WRONG_SLOT},
	/* Several wrong: the match is named first. */
	{"00000000-0000-4000-8000-000000000000", "gs-other", 0, CC_TOKEN_WRONG_MATCH},
};

START_TEST(test_presented_for_another_target)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_join_claims c = base_claims("k1"), v;
	char tok[CC_JOIN_TOKEN_BUF];
	enum cc_token_refusal why = (enum cc_token_refusal)-1;
	int rc;

	sign_ok(ks, &c, tok);
	ck_assert_int_eq(cc_join_token_verify(ks, tok, NOW, &v, NULL), 0);
	rc = cc_join_claims_check(&v, targets[_i].match_id, targets[_i].server_id,
				  targets[_i].slot, &why);
	ck_assert_msg(why == targets[_i].want, "row %d: got %s, want %s", _i,
		      cc_token_refusal_name(why), cc_token_refusal_name(targets[_i].want));
	ck_assert_int_eq(rc, targets[_i].want == CC_TOKEN_OK ? 0 : CC_EFORBIDDEN);
	ck_assert_int_eq(cc_join_claims_check(NULL, "m", "s", 0, &why), CC_EINVAL);
	ck_assert_int_eq(why, CC_TOKEN_MALFORMED);
	cc_keyset_free(ks);
}
END_TEST

/* ---- malformed ------------------------------------------------------------------ */

static const struct {
	const char *name, *text;
	enum cc_token_refusal want;
} malformed[] = {
	{"empty", "", CC_TOKEN_MALFORMED},
	{"dot", ".", CC_TOKEN_MALFORMED},
	{"no dot", "Q0NKVAE", CC_TOKEN_MALFORMED},
	{"empty claims", ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_MALFORMED},
	{"empty tag", "Q0NKVAE.", CC_TOKEN_MALFORMED},
	{"short tag", "Q0NKVAE.AAAA", CC_TOKEN_MALFORMED},
	{"two dots", "Q0NKVAE.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.x", CC_TOKEN_MALFORMED},
	{"space", "Q0NK VAE.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_MALFORMED},
	{"padding", "Q0NKVAE=.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_MALFORMED},
	{"std alphabet", "Q0NK+AE.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_MALFORMED},
	/* "CCJT" + version 1 and nothing else. */
	{"truncated claims", "Q0NKVAE.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_MALFORMED},
	/* "CCJT" + version 2. */
	{"version 2", "Q0NKVAI.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_BAD_VERSION},
	/* "XXJT" + version 1. */
	{"other tag", "WFhKVAE.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CC_TOKEN_MALFORMED},
};

START_TEST(test_malformed_table)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");

	ck_assert_msg(verdict(ks, malformed[_i].text, NOW) == malformed[_i].want, "%s: got %s",
		      malformed[_i].name, cc_token_refusal_name(verdict(ks, malformed[_i].text, NOW)));
	cc_keyset_free(ks);
}
END_TEST

/*
 * Re-signed bytes that are well signed but wrong inside: trailing bytes,
 * a short field, an out-of-range value. The signature is honest, so only
 * the parser can refuse them.
 */
START_TEST(test_signed_but_malformed_bytes)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_join_claims c = base_claims("k1");
	uint8_t bytes[CC_TOKEN_CLAIMS_MAX];
	size_t len = 0;
	char tok[CC_JOIN_TOKEN_BUF];
	/* Offsets: tag 4, version 1, key id 1+2, match 16, server id 1+10, slot. */
	const size_t slot_at = 4 + 1 + 3 + 16 + 11;

	ck_assert_int_eq(cc_join_claims_encode(&c, bytes, sizeof(bytes), &len), 0);
	ck_assert_uint_eq(bytes[slot_at], 3);
	bytes[len] = 0; /* one trailing byte */
	ck_assert_int_eq(cc_token_seal(ks, "k1", bytes, len + 1, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_MALFORMED);
	ck_assert_int_eq(cc_token_seal(ks, "k1", bytes, len - 1, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_MALFORMED);
	bytes[slot_at] = 16; /* slot out of range */
	ck_assert_int_eq(cc_token_seal(ks, "k1", bytes, len, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_MALFORMED);
	bytes[slot_at] = 3;
	bytes[slot_at - 10] = '/'; /* server id byte outside its charset */
	ck_assert_int_eq(cc_token_seal(ks, "k1", bytes, len, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_MALFORMED);
	bytes[slot_at - 10] = '\0'; /* a NUL inside a length-prefixed string */
	ck_assert_int_eq(cc_token_seal(ks, "k1", bytes, len, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_MALFORMED);
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_too_long_and_null)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_join_claims c = base_claims("k1"), out;
	char tok[CC_JOIN_TOKEN_BUF], big[CC_JOIN_TOKEN_MAX + 64];
	enum cc_token_refusal why;

	/* A valid token with text glued on is refused without reading it all. */
	sign_ok(ks, &c, tok);
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, tok, strlen(tok));
	ck_assert_int_eq(verdict(ks, big, NOW), CC_TOKEN_MALFORMED);
	ck_assert_int_eq(verdict(ks, NULL, NOW), CC_TOKEN_MALFORMED);
	ck_assert_int_eq(cc_join_token_verify(NULL, tok, NOW, &out, &why), CC_EUNAUTHORIZED);
	ck_assert_int_eq(cc_join_token_verify(ks, tok, NOW, NULL, &why), CC_EUNAUTHORIZED);
	cc_keyset_free(ks);
}
END_TEST

/* A workload token is not a join token, even under the same key. */
START_TEST(test_workload_token_is_not_a_join_token)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_workload_claims w = {.key_id = "k1",
				       .allocation_id = "6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b",
				       .expires_at = NOW + 60};
	char tok[CC_WORKLOAD_TOKEN_BUF];

	ck_assert_int_eq(cc_workload_token_sign(ks, &w, tok, sizeof(tok)), 0);
	ck_assert_int_eq(verdict(ks, tok, NOW), CC_TOKEN_MALFORMED);
	cc_keyset_free(ks);
}
END_TEST

/* ---- sign-side refusals --------------------------------------------------------- */

static void bad_key_id(struct cc_join_claims *c) { snprintf(c->key_id, sizeof(c->key_id), "k 1"); }
static void bad_match(struct cc_join_claims *c) { c->match_id[0] = 'G'; }
static void upper_match(struct cc_join_claims *c) { c->match_id[0] = 'F'; }
static void empty_server(struct cc_join_claims *c) { c->server_id[0] = '\0'; }
static void bad_server(struct cc_join_claims *c) { c->server_id[5] = '/'; }
static void slot_low(struct cc_join_claims *c) { c->slot = -1; }
static void slot_high(struct cc_join_claims *c) { c->slot = CC_JOIN_SLOT_MAX + 1; }
static void gen_zero(struct cc_join_claims *c) { c->generation = 0; }
static void gen_high(struct cc_join_claims *c) { c->generation = (int64_t)INT32_MAX + 1; }
static void bad_player(struct cc_join_claims *c) { c->player_id[8] = 'x'; }
static void expiry_zero(struct cc_join_claims *c) { c->expires_at = 0; }

static void (*const invalid_claims[])(struct cc_join_claims *) = {
	bad_key_id, bad_match, upper_match, empty_server, bad_server, slot_low,
	slot_high,  gen_zero,  gen_high,    bad_player,   expiry_zero,
};

START_TEST(test_sign_refuses_invalid_claims)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_join_claims c = base_claims("k1");
	char tok[CC_JOIN_TOKEN_BUF] = "untouched";

	invalid_claims[_i](&c);
	ck_assert(!cc_join_claims_valid(&c));
	ck_assert_int_eq(cc_join_token_sign(ks, &c, tok, sizeof(tok)), CC_EINVAL);
	ck_assert_str_eq(tok, "untouched");
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_sign_unknown_key_and_small_buffer)
{
	struct cc_keyset *ks = keys("{\"k1\":\"" K1 "\"}");
	struct cc_join_claims c = base_claims("k9");
	char tok[CC_JOIN_TOKEN_BUF] = "untouched", full[CC_JOIN_TOKEN_BUF];

	ck_assert_int_eq(cc_join_token_sign(ks, &c, tok, sizeof(tok)), CC_ENOTFOUND);
	ck_assert_str_eq(tok, "untouched");
	c = base_claims("k1");
	sign_ok(ks, &c, full);
	ck_assert_int_eq(cc_join_token_sign(ks, &c, tok, strlen(full)), CC_ETOOBIG);
	ck_assert_str_eq(tok, "untouched");
	ck_assert_int_eq(cc_join_token_sign(ks, &c, tok, strlen(full) + 1), 0);
	ck_assert_str_eq(tok, full);
	ck_assert_int_eq(cc_join_token_sign(NULL, &c, tok, sizeof(tok)), CC_EINVAL);
	ck_assert_int_eq(cc_join_token_sign(ks, NULL, tok, sizeof(tok)), CC_EINVAL);
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_refusal_names_are_distinct)
{
	const enum cc_token_refusal all[] = {
		CC_TOKEN_OK,           CC_TOKEN_MALFORMED,    CC_TOKEN_BAD_VERSION,
		CC_TOKEN_UNKNOWN_KEY,  CC_TOKEN_BAD_SIGNATURE, CC_TOKEN_EXPIRED,
		CC_TOKEN_WRONG_MATCH,  CC_TOKEN_WRONG_SERVER, CC_TOKEN_WRONG_SLOT,
		CC_TOKEN_NOT_IN_ROSTER, CC_TOKEN_WRONG_GENERATION, CC_TOKEN_DIGEST_MISMATCH,
	};

	for (size_t i = 0; i < CC_ARRAY_LEN(all); i++)
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(cc_token_refusal_name(all[i]), cc_token_refusal_name(all[j]));
	ck_assert_str_eq(cc_token_refusal_name(CC_TOKEN_BAD_SIGNATURE), "bad_signature");
	ck_assert_str_eq(cc_token_refusal_name((enum cc_token_refusal)999), "unknown");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("join_token");
	TCase *tc = tcase_create("join_token");

	tcase_add_test(tc, test_sign_verify_round_trip);
	tcase_add_test(tc, test_largest_token_fits);
	tcase_add_loop_test(tc, test_any_field_changed_is_refused, 0,
			    (int)CC_ARRAY_LEN(field_changes));
	tcase_add_test(tc, test_every_bit_flip_is_refused);
	tcase_add_test(tc, test_key_id_swapped_to_held_key);
	tcase_add_test(tc, test_retired_key_is_refused);
	tcase_add_test(tc, test_reused_key_id_with_new_key_is_refused);
	tcase_add_test(tc, test_rotation_accepts_both_keys);
	tcase_add_test(tc, test_raw_key_file_empty_id);
	tcase_add_test(tc, test_expiry_boundary);
	tcase_add_loop_test(tc, test_presented_for_another_target, 0, (int)CC_ARRAY_LEN(targets));
	tcase_add_loop_test(tc, test_malformed_table, 0, (int)CC_ARRAY_LEN(malformed));
	tcase_add_test(tc, test_signed_but_malformed_bytes);
	tcase_add_test(tc, test_too_long_and_null);
	tcase_add_test(tc, test_workload_token_is_not_a_join_token);
	tcase_add_loop_test(tc, test_sign_refuses_invalid_claims, 0,
			    (int)CC_ARRAY_LEN(invalid_claims));
	tcase_add_test(tc, test_sign_unknown_key_and_small_buffer);
	tcase_add_test(tc, test_refusal_names_are_distinct);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
