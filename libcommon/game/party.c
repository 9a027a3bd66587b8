#include "game/party.h"

#include <string.h>

#include "sys/banned.h"

enum cc_party_verdict cc_party_may(enum cc_party_action action, const struct cc_party_actor *a)
{
	if (!a->member)
		return CC_PARTY_NOT_MEMBER;
	switch (action) {
	case CC_PARTY_LEAVE:
		return CC_PARTY_OK;
	case CC_PARTY_INVITE:
	case CC_PARTY_QUEUE:
	case CC_PARTY_DISBAND:
		return a->leader ? CC_PARTY_OK : CC_PARTY_NOT_LEADER;
	case CC_PARTY_KICK:
	case CC_PARTY_PROMOTE:
		if (!a->leader)
			return CC_PARTY_NOT_LEADER;
		if (a->target_self)
			return CC_PARTY_TARGET_SELF;
		return a->target_member ? CC_PARTY_OK : CC_PARTY_TARGET_NOT_MEMBER;
	}
	CC_BUG("cc_party_may: unknown action");
}

int cc_party_cap(const struct cc_playlist *pl)
{
	if (!pl)
		return 0;
	return pl->max_party_size > 1 ? pl->max_party_size : 1;
}

bool cc_party_size_fits(const struct cc_playlist *pl, size_t n)
{
	return n >= 1 && n <= (size_t)cc_party_cap(pl);
}

bool cc_party_join_code_valid(const char *code)
{
	if (!code || strlen(code) != CC_PARTY_JOIN_CODE_LEN)
		return false;
	for (size_t i = 0; i < CC_PARTY_JOIN_CODE_LEN; i++)
		if (!strchr(CC_PARTY_JOIN_CODE_ALPHABET, code[i]) || code[i] == '\0')
			return false;
	return true;
}

void cc_party_join_code_from_bytes(const unsigned char *bytes, char out[CC_PARTY_JOIN_CODE_LEN + 1])
{
	/* 32 letters: the low 5 bits of each byte pick one without bias. */
	for (size_t i = 0; i < CC_PARTY_JOIN_CODE_LEN; i++)
		out[i] = CC_PARTY_JOIN_CODE_ALPHABET[bytes[i] & 31];
	out[CC_PARTY_JOIN_CODE_LEN] = '\0';
}

const char *cc_party_verdict_name(enum cc_party_verdict v)
{
	switch (v) {
	case CC_PARTY_OK:
		return "ok";
	case CC_PARTY_NOT_MEMBER:
		return "not_member";
	case CC_PARTY_NOT_LEADER:
		return "not_leader";
	case CC_PARTY_TARGET_SELF:
		return "target_self";
	case CC_PARTY_TARGET_NOT_MEMBER:
		return "target_not_member";
	}
	return "unknown";
}
