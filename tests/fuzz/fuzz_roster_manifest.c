/*
 * fuzz_roster_manifest: cc_roster_manifest_parse() on arbitrary text (what
 * cc-supervisor and cc-gameserver read from cc-api). Whatever parses must
 * be a valid roster whose rebuilt manifest parses to the same roster and
 * digest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "game/roster.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cc_roster r, back;
	char digest[CC_SHA256_HEX_LEN + 1], digest2[CC_SHA256_HEX_LEN + 1], *json = NULL;
	enum cc_token_refusal why = (enum cc_token_refusal)-1;
	struct cc_json_error err;
	int rc = cc_roster_manifest_parse((const char *)data, size, &r, digest, &why, &err);

	FUZZ_ASSERT((rc == 0) == (why == CC_TOKEN_OK));
	if (rc != 0)
		return 0;
	FUZZ_ASSERT(cc_roster_validate(&r, NULL, 0) == 0);
	FUZZ_ASSERT(cc_roster_manifest_build(&r, &json) == 0);
	FUZZ_ASSERT(cc_roster_manifest_parse(json, strlen(json), &back, digest2, &why, &err) == 0);
	FUZZ_ASSERT(strcmp(digest, digest2) == 0);
	FUZZ_ASSERT(back.count == r.count);
	for (size_t i = 0; i < r.count; i++) {
		const struct cc_roster_entry *e = cc_roster_find_player(&back, r.entries[i].player_id);

		FUZZ_ASSERT(e && memcmp(e, &r.entries[i], sizeof(*e)) == 0);
	}
	free(json);
	return 0;
}
