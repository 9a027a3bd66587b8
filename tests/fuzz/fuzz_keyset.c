/*
 * fuzz_keyset: cc_keyset_parse() on arbitrary key-file text (join keys,
 * workload secrets). A parsed set must hold 1..CC_KEYSET_MAX_KEYS keys of at
 * least CC_KEYSET_MIN_KEY bytes under distinct, ascending ids that find
 * their keys, and sign/verify must agree; a refusal must say why.
 */
#include <stdint.h>
#include <string.h>

#include "sys/crypto.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cc_keyset *ks = NULL;
	char err[256] = "";
	size_t n;
	int rc = cc_keyset_parse("fuzz", (const char *)data, size, &ks, err, sizeof(err));

	if (rc != 0) {
		FUZZ_ASSERT(ks == NULL);
		FUZZ_ASSERT(strncmp(err, "fuzz: ", 6) == 0);
		return 0;
	}
	n = cc_keyset_count(ks);
	FUZZ_ASSERT(n >= 1 && n <= CC_KEYSET_MAX_KEYS);
	FUZZ_ASSERT(cc_keyset_id_at(ks, n) == NULL);
	for (size_t i = 0; i < n; i++) {
		const char *id = cc_keyset_id_at(ks, i);
		size_t len = 0;
		uint8_t mac[CC_SHA256_LEN];

		FUZZ_ASSERT(id && strlen(id) <= CC_KEYSET_ID_MAX);
		if (i > 0)
			FUZZ_ASSERT(strcmp(cc_keyset_id_at(ks, i - 1), id) < 0);
		FUZZ_ASSERT(cc_keyset_find(ks, id, &len) != NULL && len >= CC_KEYSET_MIN_KEY);
		FUZZ_ASSERT(cc_keyset_sign(ks, id, data, size, mac) == 0);
		FUZZ_ASSERT(cc_keyset_verify(ks, id, data, size, mac));
	}
	cc_keyset_free(ks);
	return 0;
}
