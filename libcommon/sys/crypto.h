/*
 * crypto.h - randomness, encodings, hashes, MACs and HMAC key sets over
 * libsodium.
 *
 * What it is for: session tokens and probe nonces (cc_random_token), ids
 * (cc_random_uuid, cc_uuid_valid), token hashes for storage and checksums
 * (cc_sha256_hex), and the HMAC-SHA256 signatures of join authorisations and
 * workload tokens, whose keys come from a key set file (struct cc_keyset)
 * that can hold an old and a new key side by side during a rotation.
 *
 * Ownership: every function writes into caller-provided buffers except
 * cc_keyset_load_file()/cc_keyset_parse(), which hand the caller a key set
 * to release with cc_keyset_free(). Key bytes live in one sodium_malloc'd
 * region that is read-only after loading and wiped when freed. No error
 * message this module writes ever contains key material.
 *
 * Initialisation: cc_crypto_init() runs sodium_init() once (pthread_once,
 * so any thread may call it any number of times). Every other function
 * calls it too, so forgetting it is harmless; call it at start-up anyway
 * to learn of a failure as an error. The infallible functions (random
 * bytes, uuids) abort via CC_BUG if libsodium cannot initialise, which is
 * what libsodium's own random generator does without an entropy source.
 */
#ifndef CC_CRYPTO_H
#define CC_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_SHA256_LEN 32          /* bytes of a SHA-256 digest or HMAC-SHA256 tag */
#define CC_SHA256_HEX_LEN 64      /* hex characters of a digest, without the NUL */
#define CC_UUID_STRLEN 36         /* "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" */
_Static_assert(CC_UUID_BUF == CC_UUID_STRLEN + 1, "CC_UUID_BUF (sys/cc.h) holds a UUID and its NUL");
#define CC_RANDOM_TOKEN_MAX 64    /* most random bytes one cc_random_token() encodes */
#define CC_BASE64_MAX_INPUT (1u << 30) /* encoders refuse more input bytes (CC_ETOOBIG) */

/* Characters (no NUL) of the unpadded base64url encoding of n bytes. */
#define CC_BASE64URL_LEN(n) (((n) / 3) * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))
/* Characters (no NUL) of the padded standard base64 encoding of n bytes. */
#define CC_BASE64_LEN(n) ((((n) + 2) / 3) * 4)
/* Upper bound on the bytes any base64 text of n characters decodes to. */
#define CC_BASE64_DECODED_MAX(n) (((n) / 4) * 3 + 2)

/* Key sets. */
#define CC_KEYSET_MAX_FILE (64 * 1024) /* bytes; a bigger key file is refused */
#define CC_KEYSET_MAX_KEYS 64          /* keys per set */
#define CC_KEYSET_MIN_KEY 32           /* bytes every key must have at least */
#define CC_KEYSET_ID_MAX 64            /* bytes of a key id, charset [A-Za-z0-9._-] */

/*
 * Runs sodium_init() once per process. Returns 0, or CC_EUNAVAILABLE when
 * libsodium cannot initialise (no entropy source). Thread-safe, idempotent.
 */
int cc_crypto_init(void) CC_MUST_CHECK;

/* ---- randomness ------------------------------------------------------- */

/* Fills buf with len cryptographically secure random bytes. */
void cc_random_bytes(void *buf, size_t len);

/*
 * Writes a random RFC 4122 version 4 UUID, lowercase, NUL-terminated
 * ("1b4e28ba-2fa1-41d2-883f-0016d3cca427") into out.
 */
void cc_random_uuid(char out[CC_UUID_BUF]);

/*
 * Writes the unpadded base64url encoding of nbytes fresh random bytes, NUL
 * terminated, into out (outlen bytes): 32 bytes give 43 characters. For
 * session tokens and nonces. Returns 0; CC_EINVAL when nbytes is 0 or above
 * CC_RANDOM_TOKEN_MAX; CC_ETOOBIG when outlen < CC_BASE64URL_LEN(nbytes) + 1.
 * out is untouched on failure; the raw bytes are wiped before returning.
 */
int cc_random_token(char *out, size_t outlen, size_t nbytes) CC_MUST_CHECK;

/*
 * True when s is exactly 36 characters in the canonical lowercase 8-4-4-4-12
 * hex form. Any version is accepted; uppercase is not, so an id taken from a
 * path has one spelling (the one PostgreSQL prints and we issue). NULL is
 * false.
 */
bool cc_uuid_valid(const char *s);

/* ---- base64 (RFC 4648) ---------------------------------------------------
 * Encoders write a NUL-terminated string and need outcap >= encoded length
 * + 1, else CC_ETOOBIG with out untouched; input above CC_BASE64_MAX_INPUT
 * is CC_ETOOBIG. *outlen (may be NULL) receives the characters written,
 * without the NUL.
 *
 * Decoders read exactly inlen characters (no NUL needed; an embedded NUL is
 * an invalid character) and refuse, with CC_EINVAL: characters outside the
 * alphabet (including whitespace), an impossible length, misplaced or
 * missing padding, and non-canonical trailing bits ("Zh==" where "Zg=="
 * is meant), so each byte string has exactly one accepted spelling. When
 * the decoded bytes would not fit in outcap they answer CC_ETOOBIG. On
 * success *outlen (required) receives the byte count; on failure *outlen is
 * untouched and out[0..outcap) is zeroed, never left with a partial decode.
 */

/* RFC 4648 §5 base64url without padding. */
int cc_base64url_encode(const void *in, size_t inlen, char *out, size_t outcap,
			size_t *outlen) CC_MUST_CHECK;
int cc_base64url_decode(const char *in, size_t inlen, uint8_t *out, size_t outcap,
			size_t *outlen) CC_MUST_CHECK;

/* RFC 4648 §4 standard base64 with '=' padding (key files). */
int cc_base64_encode(const void *in, size_t inlen, char *out, size_t outcap,
		     size_t *outlen) CC_MUST_CHECK;
int cc_base64_decode(const char *in, size_t inlen, uint8_t *out, size_t outcap,
		     size_t *outlen) CC_MUST_CHECK;

/* ---- hashes and MACs ---------------------------------------------------- */

/* out = SHA-256(data). */
void cc_sha256(const void *data, size_t len, uint8_t out[CC_SHA256_LEN]);

/* Writes SHA-256(data) as 64 lowercase hex characters plus NUL into out. */
void cc_sha256_hex(const void *data, size_t len, char out[CC_SHA256_HEX_LEN + 1]);

/*
 * out = HMAC-SHA256(key, msg) (RFC 2104/4231). Any key length works here;
 * keys longer than 64 bytes are hashed first as HMAC specifies. The 32-byte
 * minimum is enforced where keys are configured (key sets), not here.
 */
void cc_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
		    uint8_t out[CC_SHA256_LEN]);

/* True when mac == HMAC-SHA256(key, msg); compares in constant time. */
bool cc_hmac_sha256_verify(const void *key, size_t keylen, const void *msg, size_t msglen,
			   const uint8_t mac[CC_SHA256_LEN]);

/*
 * True when the two byte strings are equal, in time that depends on their
 * lengths only (both are hashed, then the digests compared in constant time).
 * For comparing a presented secret (an admin bearer token) with the
 * configured one.
 */
bool cc_secret_equal(const void *a, size_t alen, const void *b, size_t blen);

/* ---- key sets -------------------------------------------------------------
 * A key set maps key ids to HMAC keys, so a token names the key that signed
 * it and a rotation can publish a new key beside the old one. File format:
 *  - first non-blank byte '{': a JSON object {"<id>": "<base64 key>", ...};
 *    each value is standard base64 (padded or not) or base64url (padded or
 *    not). Ids are 0..64 bytes of [A-Za-z0-9._-]; the empty id is allowed so
 *    a raw key can be carried into a JSON set during a rotation.
 *  - otherwise: the whole file, minus every trailing '\r' and '\n' byte, is
 *    one raw key under the empty id "", its bytes as they are (not hex or
 *    base64 decoded). (A binary key that happens to start with '{', after
 *    blanks, is read as JSON and refused loudly; regenerate it.) All trailing
 *    line ends go, so a file and the same text passed through sys/config
 *    (which trims one newline off a secret file) give the same key.
 * Refused, with a message "<source>: <problem>": unreadable or non-regular
 * file, more than CC_KEYSET_MAX_FILE bytes, an empty or blank file, invalid
 * JSON or text after it, a NUL byte or "\u0000" escape in JSON, no keys, more
 * than CC_KEYSET_MAX_KEYS, bad or duplicate ids, a value that is not a
 * string, invalid base64, a key under CC_KEYSET_MIN_KEY bytes. Messages name
 * a key by id only when the id is too short to be a base64 key itself (an id
 * and value swapped by mistake); otherwise by its position ("key #3").
 * World-readable files are accepted (secrets are often mounted 0644).
 *
 * The key id a token was signed with must be inside the signed bytes, or the
 * token can be re-pointed at another key; cc_keyset_sign() does not add it.
 */
struct cc_keyset;

/*
 * Loads a key set from path. On success returns 0 and *out owns a new key
 * set (free with cc_keyset_free()). On failure *out is untouched, err
 * (errlen bytes, may be NULL/0) holds a message naming path, and the result
 * is CC_EIO (unreadable), CC_ETOOBIG (over the size cap), CC_EINVAL
 * (content), CC_ENOMEM or CC_EUNAVAILABLE (libsodium did not initialise).
 */
int cc_keyset_load_file(const char *path, struct cc_keyset **out, char *err,
			size_t errlen) CC_MUST_CHECK;

/*
 * Parses len bytes of key-file text (need not be NUL-terminated) as
 * cc_keyset_load_file() would; source names the origin in messages (a path,
 * "COSMIC_CLASH_JOIN_KEYS"). Same results except CC_EIO.
 */
int cc_keyset_parse(const char *source, const char *text, size_t len, struct cc_keyset **out,
		    char *err, size_t errlen) CC_MUST_CHECK;

/* Releases a key set and wipes its keys; NULL is a harmless no-op. */
void cc_keyset_free(struct cc_keyset *ks);

/* Number of keys (>= 1 for any loaded set). */
size_t cc_keyset_count(const struct cc_keyset *ks);

/* The i-th key id in ascending byte order, or NULL when i >= count. */
const char *cc_keyset_id_at(const struct cc_keyset *ks, size_t i);

/*
 * Returns the bytes of the key with this id (valid until cc_keyset_free(),
 * read-only) and stores its length in *len; NULL (len untouched) when the id
 * is unknown or NULL.
 */
const uint8_t *cc_keyset_find(const struct cc_keyset *ks, const char *id, size_t *len);

/* out = HMAC-SHA256(key id, msg). Returns 0, or CC_ENOTFOUND for an unknown id. */
int cc_keyset_sign(const struct cc_keyset *ks, const char *id, const void *msg, size_t msglen,
		   uint8_t out[CC_SHA256_LEN]) CC_MUST_CHECK;

/* True when mac is the HMAC of msg under key id; false for an unknown id. */
bool cc_keyset_verify(const struct cc_keyset *ks, const char *id, const void *msg,
		      size_t msglen, const uint8_t mac[CC_SHA256_LEN]);

#endif
