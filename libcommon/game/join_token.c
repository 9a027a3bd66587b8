/*
 * join_token.c - canonical join claims, signing and verification.
 *
 * Layout (contracts/join-token.md, big-endian):
 *   "CCJT" | u8 version=1 | u8 len, key id | 16 match id | u8 len, server id |
 *   u8 slot | u32 generation | 16 player id | i64 expires_at
 */
#include "game/join_token.h"

#include <string.h>

#include "sys/banned.h"

static const uint8_t join_tag[4] = {'C', 'C', 'J', 'T'};

static void set_why(enum cc_token_refusal *why, enum cc_token_refusal v)
{
	if (why)
		*why = v;
}

bool cc_join_claims_valid(const struct cc_join_claims *c)
{
	return c && cc_key_id_valid(c->key_id) && cc_uuid_valid(c->match_id) &&
	       cc_server_id_valid(c->server_id) && c->slot >= 0 && c->slot <= CC_JOIN_SLOT_MAX &&
	       c->generation >= 1 && c->generation <= INT32_MAX && cc_uuid_valid(c->player_id) &&
	       c->expires_at > 0;
}

int cc_join_claims_encode(const struct cc_join_claims *c, uint8_t *out, size_t cap, size_t *len)
{
	struct cc_token_writer w;

	if (!cc_join_claims_valid(c) || !out || !len)
		return CC_EINVAL;
	cc_token_writer_init(&w, out, cap);
	cc_token_put_bytes(&w, join_tag, sizeof(join_tag));
	cc_token_put_u8(&w, CC_JOIN_TOKEN_VERSION);
	cc_token_put_str(&w, c->key_id);
	cc_token_put_uuid(&w, c->match_id);
	cc_token_put_str(&w, c->server_id);
	cc_token_put_u8(&w, (uint8_t)c->slot);
	cc_token_put_u32(&w, (uint32_t)c->generation);
	cc_token_put_uuid(&w, c->player_id);
	cc_token_put_i64(&w, c->expires_at);
	/* The claims were valid, so only a short buffer can stop the writer. */
	if (!w.ok)
		return CC_ETOOBIG;
	*len = w.len;
	return 0;
}

int cc_join_token_sign(const struct cc_keyset *ks, const struct cc_join_claims *c, char *out,
		       size_t cap)
{
	uint8_t bytes[CC_TOKEN_CLAIMS_MAX];
	size_t len = 0;
	int rc;

	if (!ks || !out)
		return CC_EINVAL;
	rc = cc_join_claims_encode(c, bytes, sizeof(bytes), &len);
	if (rc)
		return rc;
	return cc_token_seal(ks, c->key_id, bytes, len, out, cap);
}

/*
 * Decodes canonical claim bytes. Returns CC_TOKEN_OK with *c filled, or the
 * refusal (malformed / bad_version). Out-of-range values are malformed:
 * nobody we trust signs them, and refusing early keeps them from ever
 * reaching a caller.
 */
static enum cc_token_refusal decode_claims(const uint8_t *bytes, size_t len,
					   struct cc_join_claims *c)
{
	struct cc_token_reader r;
	uint8_t tag[4] = {0}, version = 0, slot = 0;
	uint32_t generation = 0;

	memset(c, 0, sizeof(*c));
	cc_token_reader_init(&r, bytes, len);
	for (size_t i = 0; i < sizeof(tag); i++)
		cc_token_get_u8(&r, &tag[i]);
	if (!r.ok || memcmp(tag, join_tag, sizeof(tag)) != 0)
		return CC_TOKEN_MALFORMED;
	cc_token_get_u8(&r, &version);
	if (!r.ok)
		return CC_TOKEN_MALFORMED;
	if (version != CC_JOIN_TOKEN_VERSION)
		return CC_TOKEN_BAD_VERSION;
	cc_token_get_str(&r, c->key_id, sizeof(c->key_id));
	cc_token_get_uuid(&r, c->match_id);
	cc_token_get_str(&r, c->server_id, sizeof(c->server_id));
	cc_token_get_u8(&r, &slot);
	cc_token_get_u32(&r, &generation);
	cc_token_get_uuid(&r, c->player_id);
	cc_token_get_i64(&r, &c->expires_at);
	if (!cc_token_reader_done(&r))
		return CC_TOKEN_MALFORMED;
	c->slot = slot;
	c->generation = generation;
	return cc_join_claims_valid(c) ? CC_TOKEN_OK : CC_TOKEN_MALFORMED;
}

int cc_join_token_verify(const struct cc_keyset *ks, const char *token, int64_t now_unix,
			 struct cc_join_claims *out, enum cc_token_refusal *why)
{
	uint8_t bytes[CC_TOKEN_CLAIMS_MAX], tag[CC_SHA256_LEN];
	size_t len = 0;
	struct cc_join_claims c;
	enum cc_token_refusal r;

	if (!ks || !out || cc_token_open(token, bytes, &len, tag) != 0) {
		set_why(why, CC_TOKEN_MALFORMED);
		return CC_EUNAUTHORIZED;
	}
	r = decode_claims(bytes, len, &c);
	if (r == CC_TOKEN_OK && !cc_keyset_find(ks, c.key_id, &(size_t){0}))
		r = CC_TOKEN_UNKNOWN_KEY;
	/* The key id is inside the signed bytes, so swapping it breaks the tag. */
	if (r == CC_TOKEN_OK && !cc_keyset_verify(ks, c.key_id, bytes, len, tag))
		r = CC_TOKEN_BAD_SIGNATURE;
	if (r == CC_TOKEN_OK && now_unix >= c.expires_at)
		r = CC_TOKEN_EXPIRED;
	set_why(why, r);
	if (r != CC_TOKEN_OK)
		return CC_EUNAUTHORIZED;
	*out = c;
	return 0;
}

int cc_join_claims_check(const struct cc_join_claims *c, const char *match_id,
			 const char *server_id, int slot, enum cc_token_refusal *why)
{
	enum cc_token_refusal r = CC_TOKEN_OK;

	if (!c || !match_id || !server_id) {
		set_why(why, CC_TOKEN_MALFORMED);
		return CC_EINVAL;
	}
	if (strcmp(c->match_id, match_id) != 0)
		r = CC_TOKEN_WRONG_MATCH;
	else if (strcmp(c->server_id, server_id) != 0)
		r = CC_TOKEN_WRONG_SERVER;
	else if (c->slot != slot)
		r = CC_TOKEN_WRONG_SLOT;
	set_why(why, r);
	return r == CC_TOKEN_OK ? 0 : CC_EFORBIDDEN;
}
