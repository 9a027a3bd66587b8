/*
 * roster.h - the roster manifest (SPEC 8): who may play in a match, in
 * which slot and team, with which join-token generation.
 *
 * cc-allocator publishes it with the assignments; cc-api serves it on
 * GET /v1/servers/{id}/roster; the game server (through cc-supervisor)
 * parses and verifies it, then admits a player whose join token verifies
 * (game/join_token.h) and matches the player's roster entry. The manifest
 * carries a SHA-256 digest over the canonical roster bytes
 * (contracts/join-token.md): match id, allocation id, server id, key id and
 * every entry (slot, team, player id, generation, token expiry) in slot
 * order, so a truncated or edited roster is refused even when each entry
 * on its own is valid.
 *
 * Manifest JSON (version 1; exactly these members, in any order):
 *   {"version":1,"match_id":"<uuid>","allocation_id":"<uuid>",
 *    "server_id":"local-7100","key_id":"k2","digest":"<64 hex>",
 *    "players":[{"slot":0,"team":0,"player_id":"<uuid>","generation":1,
 *                "expires_at":1790000000}, ...]}
 *
 * Ownership: struct cc_roster is fixed-size (no allocation);
 * cc_roster_manifest_build() hands the caller a malloc'd string to free().
 * Pure: no I/O; thread-safe.
 */
#ifndef CC_GAME_ROSTER_H
#define CC_GAME_ROSTER_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "game/join_token.h"
#include "game/token.h"

#define CC_ROSTER_VERSION 1
#define CC_ROSTER_MAX_ENTRIES (CC_JOIN_SLOT_MAX + 1) /* one per slot */
#define CC_ROSTER_MANIFEST_MAX (16 * 1024) /* bytes of manifest text the parser reads */
#define CC_ROSTER_BYTES_MAX 1024           /* canonical bytes of the largest roster */
#define CC_ROSTER_EXPIRY_MAX INT64_C(9007199254740991) /* 2^53 - 1: exact in JSON */

struct cc_roster_entry {
	int slot;                    /* 0..CC_JOIN_SLOT_MAX, unique in the roster */
	int team;                    /* 0 or 1 */
	char player_id[CC_UUID_BUF]; /* canonical lowercase UUID, unique in the roster */
	int64_t generation;          /* 1..INT32_MAX: the generation its join token carries */
	int64_t expires_at;          /* unix seconds its join token expires; 1..CC_ROSTER_EXPIRY_MAX */
};

struct cc_roster {
	char match_id[CC_UUID_BUF];       /* the match */
	char allocation_id[CC_UUID_BUF];  /* its allocation */
	char server_id[CC_SERVER_ID_BUF]; /* the game server it is allocated to */
	char key_id[CC_KEY_ID_BUF];       /* the join key that signed its tokens */
	size_t count;                     /* entries used, 1..CC_ROSTER_MAX_ENTRIES */
	struct cc_roster_entry entries[CC_ROSTER_MAX_ENTRIES]; /* any order */
};

/*
 * Checks every rule above. Returns 0, or CC_EINVAL with a message naming
 * the first problem in err (errlen bytes; may be NULL/0).
 */
int cc_roster_validate(const struct cc_roster *r, char *err, size_t errlen) CC_MUST_CHECK;

/*
 * Writes the canonical roster bytes (entries sorted by slot) into out (cap
 * bytes; CC_ROSTER_BYTES_MAX suffices), their count into *len. Returns 0,
 * CC_EINVAL for an invalid roster, CC_ETOOBIG when cap is too small.
 */
int cc_roster_encode(const struct cc_roster *r, uint8_t *out, size_t cap,
		     size_t *len) CC_MUST_CHECK;

/* SHA-256 of the canonical bytes as 64 lowercase hex + NUL. Returns 0 or CC_EINVAL. */
int cc_roster_digest(const struct cc_roster *r, char out[CC_SHA256_HEX_LEN + 1]) CC_MUST_CHECK;

/*
 * Builds the manifest JSON (compact, players in slot order, with its
 * digest). On success returns 0 and *out is a malloc'd NUL-terminated
 * string the caller frees with free(); CC_EINVAL for an invalid roster,
 * CC_ENOMEM. *out is untouched on failure.
 */
int cc_roster_manifest_build(const struct cc_roster *r, char **out) CC_MUST_CHECK;

/*
 * Parses and verifies len bytes of manifest text (need not be NUL
 * terminated). Refused with CC_ETOOBIG when over CC_ROSTER_MANIFEST_MAX,
 * else CC_EINVAL, with *why (may be NULL) = CC_TOKEN_MALFORMED (not JSON,
 * not an object, nested deeper than the format, a missing, unknown,
 * repeated or mistyped member, more than CC_ROSTER_MAX_ENTRIES players, a
 * roster that fails cc_roster_validate), CC_TOKEN_BAD_VERSION or
 * CC_TOKEN_DIGEST_MISMATCH; err (may be NULL) names the field and problem.
 * On success fills *out and, when digest is not NULL, writes the verified
 * digest (65 bytes) into it. Outputs are written only on success.
 */
int cc_roster_manifest_parse(const char *text, size_t len, struct cc_roster *out,
			     char *digest, enum cc_token_refusal *why,
			     struct cc_json_error *err) CC_MUST_CHECK;

/* The entry of player_id, or NULL when absent (or r/player_id NULL). */
const struct cc_roster_entry *cc_roster_find_player(const struct cc_roster *r,
						    const char *player_id);

/*
 * The game server's admission rule for verified join claims c: issued for
 * this roster's match and server, for a player on the roster, for that
 * player's slot and with that entry's generation. Returns 0, or
 * CC_EFORBIDDEN with *why (may be NULL) = CC_TOKEN_WRONG_MATCH,
 * CC_TOKEN_WRONG_SERVER, CC_TOKEN_NOT_IN_ROSTER, CC_TOKEN_WRONG_SLOT or
 * CC_TOKEN_WRONG_GENERATION. NULL arguments are CC_EINVAL (malformed).
 * Verify the token first (cc_join_token_verify): this checks no signature.
 */
int cc_roster_admit(const struct cc_roster *r, const struct cc_join_claims *c,
		    enum cc_token_refusal *why) CC_MUST_CHECK;

#endif
