/*
 * token.h - what join tokens, workload tokens and roster digests share:
 * the refusal reasons, the canonical byte writer and reader, and the
 * signed text form "base64url(claims) . base64url(HMAC-SHA256 tag)".
 *
 * Canonical bytes (contracts/join-token.md): every integer is big-endian
 * and fixed width, every variable string is one length byte then its bytes,
 * every UUID is its 16 raw bytes. Each format opens with a 4-byte ASCII tag
 * and a version byte, so bytes signed for one purpose can never be read as
 * another (a workload token is not a join token even under the same key).
 *
 * Ownership: nothing here allocates. The writer and reader work on the
 * caller's buffers; a writer that runs out of room or a reader that runs
 * out of bytes remembers it (ok = false) and every later call is a no-op,
 * so a format is written as a straight list of calls and checked once.
 * Pure: no I/O, thread-safe.
 */
#ifndef CC_GAME_TOKEN_H
#define CC_GAME_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/crypto.h"

/*
 * Why a token or manifest was refused: one list generates the enum and the
 * snake_case names a service logs ("join token refused: expired").
 */
#define CC_TOKEN_REFUSALS(X)                                                         \
	X(CC_TOKEN_OK, "ok")                             /* accepted */               \
	X(CC_TOKEN_MALFORMED, "malformed")               /* not our text or bytes */  \
	X(CC_TOKEN_BAD_VERSION, "bad_version")           /* a format we do not know */ \
	X(CC_TOKEN_UNKNOWN_KEY, "unknown_key")           /* key id not in the set: retired or never ours */ \
	X(CC_TOKEN_BAD_SIGNATURE, "bad_signature")       /* the tag does not verify */ \
	X(CC_TOKEN_EXPIRED, "expired")                   /* now >= expires_at */      \
	X(CC_TOKEN_WRONG_MATCH, "wrong_match")           /* issued for another match */ \
	X(CC_TOKEN_WRONG_SERVER, "wrong_server")         /* issued for another server */ \
	X(CC_TOKEN_WRONG_SLOT, "wrong_slot")             /* issued for another slot */ \
	X(CC_TOKEN_NOT_IN_ROSTER, "not_in_roster")       /* player not on the roster */ \
	X(CC_TOKEN_WRONG_GENERATION, "wrong_generation") /* superseded or future issue */ \
	X(CC_TOKEN_DIGEST_MISMATCH, "digest_mismatch")   /* roster changed or truncated */

enum cc_token_refusal {
#define CC__TOKEN_ENUM(name, text) name,
	CC_TOKEN_REFUSALS(CC__TOKEN_ENUM)
#undef CC__TOKEN_ENUM
};

/* The snake_case name of a refusal ("bad_signature"); "unknown" when out of range. Never NULL. */
const char *cc_token_refusal_name(enum cc_token_refusal why);

/* Server ids: game_servers.id, 1..128 bytes of [A-Za-z0-9._-]. */
#define CC_SERVER_ID_MAX 128
/* Bytes of a buffer that holds a server id and its NUL. */
#define CC_SERVER_ID_BUF (CC_SERVER_ID_MAX + 1)
/* Bytes of a buffer that holds a key id and its NUL. */
#define CC_KEY_ID_BUF (CC_KEYSET_ID_MAX + 1)
/* Tokens carry at most this many claim bytes (sized for the join token, the largest). */
#define CC_TOKEN_CLAIMS_MAX 256
/* Characters of the longest token text, without the NUL. */
#define CC_TOKEN_TEXT_MAX (CC_BASE64URL_LEN(CC_TOKEN_CLAIMS_MAX) + 1 + CC_BASE64URL_LEN(CC_SHA256_LEN))

/* True when s is a valid server id (1..128 bytes of [A-Za-z0-9._-]). */
bool cc_server_id_valid(const char *s);
/* True when s is a valid key id (0..64 bytes of [A-Za-z0-9._-]; "" is a raw key file's id). */
bool cc_key_id_valid(const char *s);

/* ---- canonical byte writer ---------------------------------------------- */

struct cc_token_writer {
	uint8_t *buf; /* caller's buffer */
	size_t cap;   /* its size */
	size_t len;   /* bytes written so far */
	bool ok;      /* false once anything did not fit or was invalid */
};

/* Starts writing into buf (cap bytes). */
void cc_token_writer_init(struct cc_token_writer *w, uint8_t *buf, size_t cap);
void cc_token_put_u8(struct cc_token_writer *w, uint8_t v);
void cc_token_put_u32(struct cc_token_writer *w, uint32_t v); /* big-endian */
void cc_token_put_i64(struct cc_token_writer *w, int64_t v);  /* big-endian two's complement */
void cc_token_put_bytes(struct cc_token_writer *w, const void *p, size_t n);
/* One length byte then the bytes of s; a string over 255 bytes sets ok = false. */
void cc_token_put_str(struct cc_token_writer *w, const char *s);
/* The 16 bytes of a canonical lowercase UUID; anything else sets ok = false. */
void cc_token_put_uuid(struct cc_token_writer *w, const char *uuid);

/* ---- canonical byte reader ---------------------------------------------- */

struct cc_token_reader {
	const uint8_t *buf; /* bytes being read */
	size_t len;         /* their count */
	size_t pos;         /* next byte to read */
	bool ok;            /* false once a read ran past the end or was invalid */
};

void cc_token_reader_init(struct cc_token_reader *r, const uint8_t *buf, size_t len);
/* Each getter writes its out-parameter only when it succeeds (else ok = false, *out untouched). */
void cc_token_get_u8(struct cc_token_reader *r, uint8_t *out);
void cc_token_get_u32(struct cc_token_reader *r, uint32_t *out);
void cc_token_get_i64(struct cc_token_reader *r, int64_t *out);
/* Reads a length-prefixed string into out (cap bytes incl. NUL); a NUL byte inside is invalid. */
void cc_token_get_str(struct cc_token_reader *r, char *out, size_t cap);
/* Reads 16 bytes as a lowercase canonical UUID string. */
void cc_token_get_uuid(struct cc_token_reader *r, char out[CC_UUID_BUF]);
/* True when every byte was consumed and every read succeeded. */
bool cc_token_reader_done(const struct cc_token_reader *r);

/* ---- signed text form ----------------------------------------------------- */

/*
 * Writes base64url(claims) "." base64url(HMAC-SHA256 under key_id of ks
 * over claims), unpadded, NUL-terminated, into out (cap bytes). Returns 0;
 * CC_ENOTFOUND when key_id is not in ks; CC_ETOOBIG when len exceeds
 * CC_TOKEN_CLAIMS_MAX or out is too small; CC_EINVAL for NULL arguments.
 * out is untouched on failure.
 */
int cc_token_seal(const struct cc_keyset *ks, const char *key_id, const uint8_t *claims,
		  size_t len, char *out, size_t cap) CC_MUST_CHECK;

/*
 * Splits token text into its claim bytes (claims, CC_TOKEN_CLAIMS_MAX bytes,
 * *len receives their count) and its tag, decoding both strictly. Reads at
 * most CC_TOKEN_TEXT_MAX + 1 bytes of text. Returns 0, or CC_EINVAL for
 * anything that is not exactly one '.' between two canonical base64url
 * parts of the right sizes (NULL text included). Checks no signature.
 */
int cc_token_open(const char *text, uint8_t claims[CC_TOKEN_CLAIMS_MAX], size_t *len,
		  uint8_t tag[CC_SHA256_LEN]) CC_MUST_CHECK;

#endif
