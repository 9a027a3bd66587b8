/*
 * join_token.h - join authorisations (SPEC 8): what a player shows the game
 * server to take its slot.
 *
 * The allocator signs one token per participant with the active key of the
 * join key set (--join-key-id); the game server verifies it with whichever
 * key of its set the token names, so a rotation that publishes the new key
 * beside the old accepts both, and a key removed from the set (retired) is
 * refused. The signed bytes cover version, key id, match id, server id,
 * slot, generation, player id and expiry in the fixed layout of
 * contracts/join-token.md, so no field can be changed or the token
 * re-pointed at another key, match, server or slot without breaking the
 * tag. Text form: base64url(claims) "." base64url(HMAC-SHA256), printable
 * ASCII, at most CC_JOIN_TOKEN_MAX characters.
 *
 * Verification is two steps because the second needs facts only the
 * caller has: cc_join_token_verify() (well-formed, known key, signature,
 * not expired at the caller's clock) then cc_join_claims_check() (issued for
 * this match, this server, this slot). Every refusal names its reason
 * (game/token.h) so the server can log why.
 *
 * Ownership: nothing allocates; claims are plain fixed-size structs. Pure:
 * no I/O, no clock (now is an argument), thread-safe.
 */
#ifndef CC_GAME_JOIN_TOKEN_H
#define CC_GAME_JOIN_TOKEN_H

#include <stdint.h>

#include "sys/cc.h"
#include "sys/crypto.h"
#include "game/token.h"

#define CC_JOIN_TOKEN_VERSION 1
#define CC_JOIN_SLOT_MAX 15 /* slots are 0..15 (assignments.slot) */
/* Characters of the longest join token, without the NUL. */
#define CC_JOIN_TOKEN_MAX CC_TOKEN_TEXT_MAX
/* Bytes of a buffer that holds any join token and its NUL. */
#define CC_JOIN_TOKEN_BUF (CC_JOIN_TOKEN_MAX + 1)

/* Everything a join token says. All of it is signed. */
struct cc_join_claims {
	char key_id[CC_KEY_ID_BUF];       /* the key that signs it: 0..64 bytes [A-Za-z0-9._-] */
	char match_id[CC_UUID_BUF];       /* canonical lowercase UUID */
	char server_id[CC_SERVER_ID_BUF]; /* game_servers.id: 1..128 bytes [A-Za-z0-9._-] */
	int slot;                         /* 0..CC_JOIN_SLOT_MAX */
	int64_t generation;               /* 1..INT32_MAX; bumped when re-issued */
	char player_id[CC_UUID_BUF];      /* canonical lowercase UUID */
	int64_t expires_at;               /* unix seconds; refused when now >= expires_at; > 0 */
};

/*
 * True when every field is within the ranges above. A token is signed only
 * for valid claims and a decoded one is refused unless they are valid.
 */
bool cc_join_claims_valid(const struct cc_join_claims *c);

/*
 * Writes the canonical signed bytes of c into out (cap bytes) and their
 * count into *len. Returns 0, CC_EINVAL for invalid claims, CC_ETOOBIG when
 * cap is too small (CC_TOKEN_CLAIMS_MAX always suffices). For the golden
 * vectors; signing and verifying call it themselves.
 */
int cc_join_claims_encode(const struct cc_join_claims *c, uint8_t *out, size_t cap,
			  size_t *len) CC_MUST_CHECK;

/*
 * Signs c with the key c->key_id of ks and writes the token text, NUL
 * terminated, into out (cap bytes; CC_JOIN_TOKEN_BUF always suffices).
 * Returns 0; CC_EINVAL for invalid claims or NULL arguments; CC_ENOTFOUND
 * when ks has no key c->key_id; CC_ETOOBIG when cap is too small. out is
 * untouched on failure.
 */
int cc_join_token_sign(const struct cc_keyset *ks, const struct cc_join_claims *c, char *out,
		       size_t cap) CC_MUST_CHECK;

/*
 * Verifies token text against ks at now_unix (the caller's clock, unix
 * seconds). Returns 0 and fills *out; or CC_EUNAUTHORIZED with *why (may be
 * NULL) set to CC_TOKEN_MALFORMED (not our text, bad encoding, trailing or
 * missing bytes, fields out of range), CC_TOKEN_BAD_VERSION,
 * CC_TOKEN_UNKNOWN_KEY (the key id it names is not in ks: retired or never
 * ours), CC_TOKEN_BAD_SIGNATURE (checked in constant time) or
 * CC_TOKEN_EXPIRED, in that order. *out is written only on success; on
 * success *why is CC_TOKEN_OK. Claims are never returned unverified.
 */
int cc_join_token_verify(const struct cc_keyset *ks, const char *token, int64_t now_unix,
			 struct cc_join_claims *out, enum cc_token_refusal *why) CC_MUST_CHECK;

/*
 * Checks that verified claims were issued for this match, this server and
 * this slot (the slot the roster gives the claimed player). Returns 0, or
 * CC_EFORBIDDEN with *why (may be NULL) = CC_TOKEN_WRONG_MATCH,
 * CC_TOKEN_WRONG_SERVER or CC_TOKEN_WRONG_SLOT (checked in that order).
 * NULL c or ids are CC_EINVAL with *why = CC_TOKEN_MALFORMED.
 */
int cc_join_claims_check(const struct cc_join_claims *c, const char *match_id,
			 const char *server_id, int slot, enum cc_token_refusal *why) CC_MUST_CHECK;

#endif
