/*
 * workload_token.h - the game server's credential towards cc-api (SPEC 8).
 *
 * cc-allocator signs one per allocation with a secret only the control
 * plane holds (--workload-secret-file: a key set, so a raw secret file is
 * one key under the id "" and a rotation can publish a new key beside the
 * old); the token reaches the pod in the allocation annotation or the
 * local allocation file, and the game server sends it as
 * "Authorization: Bearer <token>". cc-api verifies it and gets back only
 * the allocation id: match id and server id are then read from the durable
 * allocations row, never taken from the caller, and an allocation id with
 * no row is refused there.
 *
 * Signed bytes (contracts/join-token.md, big-endian):
 *   "CCWT" | u8 version=1 | u8 len, key id | 16 allocation id | i64 expires_at
 * Text form as join tokens: base64url(claims) "." base64url(HMAC-SHA256).
 *
 * Ownership: nothing allocates. Pure: no I/O, no clock (now is an
 * argument: pass a clock the caller trusts, e.g. PostgreSQL's now(), since
 * SPEC 2 forbids comparing two machines' wall clocks), thread-safe.
 */
#ifndef CC_GAME_WORKLOAD_TOKEN_H
#define CC_GAME_WORKLOAD_TOKEN_H

#include <stdint.h>

#include "sys/cc.h"
#include "sys/crypto.h"
#include "game/token.h"

#define CC_WORKLOAD_TOKEN_VERSION 1
/* Characters of the longest workload token, without the NUL. */
#define CC_WORKLOAD_TOKEN_MAX CC_TOKEN_TEXT_MAX
/* Bytes of a buffer that holds any workload token and its NUL. */
#define CC_WORKLOAD_TOKEN_BUF (CC_WORKLOAD_TOKEN_MAX + 1)

struct cc_workload_claims {
	char key_id[CC_KEY_ID_BUF];      /* the secret that signs it ("" for a raw secret file) */
	char allocation_id[CC_UUID_BUF]; /* allocations.id, canonical lowercase UUID */
	int64_t expires_at;              /* unix seconds (allocations.workload_expires_at); > 0 */
};

/* True when key id, allocation id and expiry are within the ranges above. */
bool cc_workload_claims_valid(const struct cc_workload_claims *c);

/*
 * Canonical signed bytes of c into out (cap bytes), count in *len. Returns
 * 0, CC_EINVAL (invalid claims), CC_ETOOBIG (cap too small).
 */
int cc_workload_claims_encode(const struct cc_workload_claims *c, uint8_t *out, size_t cap,
			      size_t *len) CC_MUST_CHECK;

/*
 * Signs c with key c->key_id of ks; writes the text, NUL-terminated, into
 * out (cap bytes; CC_WORKLOAD_TOKEN_BUF suffices). Returns 0, CC_EINVAL,
 * CC_ENOTFOUND (no such key) or CC_ETOOBIG; out untouched on failure.
 */
int cc_workload_token_sign(const struct cc_keyset *ks, const struct cc_workload_claims *c,
			   char *out, size_t cap) CC_MUST_CHECK;

/*
 * Verifies token text at now_unix. Returns 0 with *out filled (the caller
 * then reads the allocation row), or CC_EUNAUTHORIZED with *why (may be
 * NULL) = CC_TOKEN_MALFORMED, CC_TOKEN_BAD_VERSION, CC_TOKEN_UNKNOWN_KEY,
 * CC_TOKEN_BAD_SIGNATURE (constant-time compare) or CC_TOKEN_EXPIRED. A
 * join token presented here is malformed (another tag). *out is written
 * only on success.
 */
int cc_workload_token_verify(const struct cc_keyset *ks, const char *token, int64_t now_unix,
			     struct cc_workload_claims *out,
			     enum cc_token_refusal *why) CC_MUST_CHECK;

#endif
