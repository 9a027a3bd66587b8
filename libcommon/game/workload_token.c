/*
 * workload_token.c - canonical workload claims, signing and verification.
 */
#include "game/workload_token.h"

#include <string.h>

#include "sys/banned.h"

static const uint8_t workload_tag[4] = {'C', 'C', 'W', 'T'};

bool cc_workload_claims_valid(const struct cc_workload_claims *c)
{
	return c && cc_key_id_valid(c->key_id) && cc_uuid_valid(c->allocation_id) &&
	       c->expires_at > 0;
}

int cc_workload_claims_encode(const struct cc_workload_claims *c, uint8_t *out, size_t cap,
			      size_t *len)
{
	struct cc_token_writer w;

	if (!cc_workload_claims_valid(c) || !out || !len)
		return CC_EINVAL;
	cc_token_writer_init(&w, out, cap);
	cc_token_put_bytes(&w, workload_tag, sizeof(workload_tag));
	cc_token_put_u8(&w, CC_WORKLOAD_TOKEN_VERSION);
	cc_token_put_str(&w, c->key_id);
	cc_token_put_uuid(&w, c->allocation_id);
	cc_token_put_i64(&w, c->expires_at);
	if (!w.ok)
		return CC_ETOOBIG;
	*len = w.len;
	return 0;
}

int cc_workload_token_sign(const struct cc_keyset *ks, const struct cc_workload_claims *c,
			   char *out, size_t cap)
{
	uint8_t bytes[CC_TOKEN_CLAIMS_MAX];
	size_t len = 0;
	int rc;

	if (!ks || !out)
		return CC_EINVAL;
	rc = cc_workload_claims_encode(c, bytes, sizeof(bytes), &len);
	if (rc)
		return rc;
	return cc_token_seal(ks, c->key_id, bytes, len, out, cap);
}

/* Decodes canonical bytes into *c; returns CC_TOKEN_OK or the refusal. */
static enum cc_token_refusal decode_claims(const uint8_t *bytes, size_t len,
					   struct cc_workload_claims *c)
{
	struct cc_token_reader r;
	uint8_t tag[4] = {0}, version = 0;

	memset(c, 0, sizeof(*c));
	cc_token_reader_init(&r, bytes, len);
	for (size_t i = 0; i < sizeof(tag); i++)
		cc_token_get_u8(&r, &tag[i]);
	if (!r.ok || memcmp(tag, workload_tag, sizeof(tag)) != 0)
		return CC_TOKEN_MALFORMED;
	cc_token_get_u8(&r, &version);
	if (!r.ok)
		return CC_TOKEN_MALFORMED;
	if (version != CC_WORKLOAD_TOKEN_VERSION)
		return CC_TOKEN_BAD_VERSION;
	cc_token_get_str(&r, c->key_id, sizeof(c->key_id));
	cc_token_get_uuid(&r, c->allocation_id);
	cc_token_get_i64(&r, &c->expires_at);
	if (!cc_token_reader_done(&r))
		return CC_TOKEN_MALFORMED;
	return cc_workload_claims_valid(c) ? CC_TOKEN_OK : CC_TOKEN_MALFORMED;
}

int cc_workload_token_verify(const struct cc_keyset *ks, const char *token, int64_t now_unix,
			     struct cc_workload_claims *out, enum cc_token_refusal *why)
{
	uint8_t bytes[CC_TOKEN_CLAIMS_MAX], tag[CC_SHA256_LEN];
	size_t len = 0;
	struct cc_workload_claims c = {0};
	enum cc_token_refusal r;

	if (!ks || !out || cc_token_open(token, bytes, &len, tag) != 0)
		r = CC_TOKEN_MALFORMED;
	else
		r = decode_claims(bytes, len, &c);
	if (r == CC_TOKEN_OK && !cc_keyset_find(ks, c.key_id, &(size_t){0}))
		r = CC_TOKEN_UNKNOWN_KEY;
	if (r == CC_TOKEN_OK && !cc_keyset_verify(ks, c.key_id, bytes, len, tag))
		r = CC_TOKEN_BAD_SIGNATURE;
	if (r == CC_TOKEN_OK && now_unix >= c.expires_at)
		r = CC_TOKEN_EXPIRED;
	if (why)
		*why = r;
	if (r != CC_TOKEN_OK)
		return CC_EUNAUTHORIZED;
	*out = c;
	return 0;
}
