/*
 * fuzz_join_token: cc_join_token_verify() on arbitrary text, and the claims
 * decoder on arbitrary bytes sealed with a key the target holds (so the
 * fuzzer gets past the signature): whatever verifies must be canonical,
 * i.e. re-encode to exactly the bytes that were signed, and must fit the
 * claims' ranges. Also cc_join_claims_check and cc_roster_admit on what
 * verified.
 */
#include <stdint.h>
#include <string.h>

#include "game/join_token.h"
#include "sys/crypto.h"
#include "fuzz_support.h"

static struct cc_keyset *keys;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char set[] = "{\"k1\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\","
				  "\"\":\"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\"}";

	(void)argc;
	(void)argv;
	FUZZ_ASSERT(cc_keyset_parse("fuzz", set, strlen(set), &keys, NULL, 0) == 0);
	return 0;
}

static void check_verified(const struct cc_join_claims *c)
{
	uint8_t again[CC_TOKEN_CLAIMS_MAX];
	size_t len = 0;
	enum cc_token_refusal why;

	FUZZ_ASSERT(cc_join_claims_valid(c));
	FUZZ_ASSERT(cc_join_claims_encode(c, again, sizeof(again), &len) == 0);
	FUZZ_ASSERT(cc_join_claims_check(c, c->match_id, c->server_id, c->slot, &why) == 0);
	FUZZ_ASSERT(why == CC_TOKEN_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct cc_join_claims c;
	enum cc_token_refusal why = (enum cc_token_refusal)-1;
	char token[CC_JOIN_TOKEN_BUF];
	int rc;

	/* 1. As token text. */
	rc = cc_join_token_verify(keys, text, 0, &c, &why);
	FUZZ_ASSERT((rc == 0) == (why == CC_TOKEN_OK));
	FUZZ_ASSERT(strcmp(cc_token_refusal_name(why), "unknown") != 0);
	if (rc == 0)
		check_verified(&c);

	/* 2. As claim bytes, sealed under each key id the bytes might name. */
	if (size <= CC_TOKEN_CLAIMS_MAX) {
		static const char *const ids[] = {"k1", ""};

		for (size_t k = 0; k < 2; k++) {
			uint8_t again[CC_TOKEN_CLAIMS_MAX];
			size_t len = 0;

			FUZZ_ASSERT(cc_token_seal(keys, ids[k], data, size, token, sizeof(token)) == 0);
			FUZZ_ASSERT(strlen(token) <= CC_JOIN_TOKEN_MAX);
			if (cc_join_token_verify(keys, token, 0, &c, &why) != 0)
				continue;
			check_verified(&c);
			/* Canonical: one byte string per claims value. */
			FUZZ_ASSERT(strcmp(c.key_id, ids[k]) == 0);
			FUZZ_ASSERT(cc_join_claims_encode(&c, again, sizeof(again), &len) == 0);
			FUZZ_ASSERT(len == size && memcmp(again, data, size) == 0);
			/* And signing them again gives the same token. */
			{
				char resigned[CC_JOIN_TOKEN_BUF];

				FUZZ_ASSERT(cc_join_token_sign(keys, &c, resigned, sizeof(resigned)) == 0);
				FUZZ_ASSERT(strcmp(resigned, token) == 0);
			}
		}
	}
	free(text);
	return 0;
}
