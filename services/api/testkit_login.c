/*
 * testkit_login.c - cc-testkit-api's fake login: any non-empty ticket of
 * up to 256 printable bytes becomes a stable Steam-like id derived from it.
 * Linked ONLY into cc-testkit-api (the Makefile leaves testkit_*.c out of
 * cc-api), so the production binary has no path around Steam; a test
 * checks that cc-api lacks this symbol and refuses made-up tickets.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "sys/crypto.h"
#include "sys/banned.h"

int api_testkit_login(const struct api_config *cfg, const char *ticket, char steam_id[24],
		      struct cc_http_response *resp)
{
	uint8_t digest[CC_SHA256_LEN];
	uint64_t n = 0;
	size_t len = strlen(ticket);
	(void)cfg;

	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)ticket[i] < 0x20 || (unsigned char)ticket[i] > 0x7e)
			len = 0;
	}
	if (len == 0 || len > 256) {
		cc_http_error(resp, 400, "invalid_request", "the ticket must be 1-256 printable bytes", false);
		return CC_EINVAL;
	}
	cc_sha256(ticket, len, digest);
	for (int i = 0; i < 4; i++)
		n = n << 8 | digest[i];
	/* 76561197960265728 is the base of individual Steam ids. */
	snprintf(steam_id, 24, "%llu", (unsigned long long)(76561197960265728ULL + n));
	return 0;
}
