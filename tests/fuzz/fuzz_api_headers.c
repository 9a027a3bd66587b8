/*
 * fuzz_api_headers: the request headers cc-api decodes itself: the
 * Authorization bearer (api_bearer_parse, used for player sessions, the
 * operator secret and workload tokens) and the Idempotency-Key
 * (api_idempotency_key_valid). The input is one header value; both
 * decoders see it. What they accept must obey their documented syntax.
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "../../services/api/api.h"
#include "sys/charset.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value = fuzz_cstr(data, size);
	char token[API_BEARER_TOKEN_MAX + 1];
	char small[8];

	memset(token, 0x5a, sizeof(token));
	if (api_bearer_parse(value, token, sizeof(token))) {
		size_t n = strlen(token);

		FUZZ_ASSERT(strncasecmp(value, "Bearer ", 7) == 0);
		FUZZ_ASSERT(strcmp(value + 7, token) == 0);
		FUZZ_ASSERT(n >= 1 && n <= API_BEARER_TOKEN_MAX);
		FUZZ_ASSERT(api_bearer_token_syntax_ok(token, n));
	}
	/* A buffer too small for the token is refused, never overrun. */
	if (api_bearer_parse(value, small, sizeof(small)))
		FUZZ_ASSERT(strlen(small) < sizeof(small));
	if (api_idempotency_key_valid(value)) {
		size_t n = strlen(value);

		FUZZ_ASSERT(n >= 1 && n <= 128);
		FUZZ_ASSERT(cc_charset_all(value, n, CC_CHARSET_ALNUM, "_-"));
	}
	free(value);
	return 0;
}
