/*
 * fuzz_steam_reply: steam_classify_reply(), the parser of Steam's
 * AuthenticateUserTicket answers (services/api/steam.c). Input: one flags
 * byte (reject_vac_banned, reject_publisher_banned, and which HTTP status),
 * then the body. Every reply gets an outcome; an identity is vouched for
 * only with one of the four outcomes the header names, and its ids are
 * canonical decimal.
 */
#include <stdint.h>
#include <string.h>

#include "../../services/api/steam.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool canonical_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > 20 || s[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long statuses[] = {200, 200, 200, 200, 400, 401, 403, 429, 500, 503, 0, 302};
	struct steam_config cfg = {.base_url = "http://127.0.0.1:1", .app_id = 480,
				   .publisher_key = "fuzz-publisher-key"};
	struct steam_identity id;
	enum steam_outcome outcome = (enum steam_outcome)-1;
	struct steam_detail detail = {0};
	char *body;
	int rc;

	if (size < 1)
		return 0;
	cfg.reject_vac_banned = data[0] & 1;
	cfg.reject_publisher_banned = data[0] & 2;
	memset(&id, 0x5a, sizeof(id));
	body = fuzz_cstr(data + 1, size - 1);
	rc = steam_classify_reply(&cfg, statuses[(data[0] >> 2) % 12], body, size - 1, &id, &outcome,
				  &detail);
	FUZZ_ASSERT(rc == 0);
	FUZZ_ASSERT(strcmp(steam_outcome_name(outcome), "unknown") != 0);
	FUZZ_ASSERT(detail.reason != NULL);
	if (outcome == STEAM_OK || outcome == STEAM_FAMILY_SHARED || outcome == STEAM_VAC_BANNED ||
	    outcome == STEAM_PUBLISHER_BANNED) {
		bool shared = strcmp(id.steamid, id.ownersteamid) != 0;

		FUZZ_ASSERT(canonical_id(id.steamid) && canonical_id(id.ownersteamid));
		/* Family sharing is judged first, then the bans the flags reject. */
		FUZZ_ASSERT((outcome == STEAM_FAMILY_SHARED) == shared);
		if (outcome == STEAM_OK)
			FUZZ_ASSERT(!(cfg.reject_vac_banned && id.vacbanned) &&
				    !(cfg.reject_publisher_banned && id.publisherbanned));
		if (outcome == STEAM_VAC_BANNED)
			FUZZ_ASSERT(cfg.reject_vac_banned && id.vacbanned);
		if (outcome == STEAM_PUBLISHER_BANNED)
			FUZZ_ASSERT(cfg.reject_publisher_banned && id.publisherbanned);
	}
	free(body);
	return 0;
}
