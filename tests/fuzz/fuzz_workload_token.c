/*
 * fuzz_workload_token: cc_workload_token_verify() on arbitrary text (what
 * cc-api reads from "Authorization: Bearer"), and the claims decoder on
 * arbitrary bytes sealed with a key the target holds: whatever verifies
 * re-encodes to exactly the signed bytes and re-signs to the same token.
 */
#include <stdint.h>
#include <string.h>

#include "game/workload_token.h"
#include "sys/crypto.h"
#include "fuzz_support.h"

static struct cc_keyset *keys;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char set[] = "{\"w1\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\","
				  "\"\":\"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\"}";

	(void)argc;
	(void)argv;
	FUZZ_ASSERT(cc_keyset_parse("fuzz", set, strlen(set), &keys, NULL, 0) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const ids[] = {"w1", ""};
	char *text = fuzz_cstr(data, size);
	struct cc_workload_claims c;
	enum cc_token_refusal why = (enum cc_token_refusal)-1;
	char token[CC_WORKLOAD_TOKEN_BUF], resigned[CC_WORKLOAD_TOKEN_BUF];
	uint8_t again[CC_TOKEN_CLAIMS_MAX];
	size_t len;
	int rc;

	rc = cc_workload_token_verify(keys, text, 0, &c, &why);
	FUZZ_ASSERT((rc == 0) == (why == CC_TOKEN_OK));
	if (rc == 0)
		FUZZ_ASSERT(cc_workload_claims_valid(&c));

	for (size_t k = 0; size <= CC_TOKEN_CLAIMS_MAX && k < 2; k++) {
		FUZZ_ASSERT(cc_token_seal(keys, ids[k], data, size, token, sizeof(token)) == 0);
		if (cc_workload_token_verify(keys, token, 0, &c, &why) != 0)
			continue;
		FUZZ_ASSERT(cc_workload_claims_valid(&c));
		FUZZ_ASSERT(strcmp(c.key_id, ids[k]) == 0);
		len = 0;
		FUZZ_ASSERT(cc_workload_claims_encode(&c, again, sizeof(again), &len) == 0);
		FUZZ_ASSERT(len == size && memcmp(again, data, size) == 0);
		FUZZ_ASSERT(cc_workload_token_sign(keys, &c, resigned, sizeof(resigned)) == 0);
		FUZZ_ASSERT(strcmp(resigned, token) == 0);
	}
	free(text);
	return 0;
}
