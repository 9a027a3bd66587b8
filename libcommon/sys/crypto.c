/*
 * crypto.c - see crypto.h. Thin, checked wrappers over libsodium plus the
 * key-set file parser. libsodium's base64 decoder is used because it is
 * constant-time and already strict about alphabet, padding and trailing
 * bits; this file adds the exact-length checks around it so a short buffer
 * is CC_ETOOBIG, never a libsodium misuse abort.
 */
#include "sys/charset.h"
#include "sys/crypto.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "sys/file.h"
#include "sys/banned.h"

/* ---- initialisation ------------------------------------------------------ */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_result; /* written once under init_once */

static void init_sodium(void)
{
	/* 0: initialised now, 1: already (by another library); -1: failure. */
	init_result = sodium_init() < 0 ? CC_EUNAVAILABLE : 0;
}

int cc_crypto_init(void)
{
	if (pthread_once(&init_once, init_sodium) != 0)
		return CC_EUNAVAILABLE;
	return init_result;
}

/* For the infallible random functions: no entropy is a broken host. */
static void need_sodium(void)
{
	if (cc_crypto_init() != 0)
		CC_BUG("libsodium failed to initialise (no entropy source?)");
}

/* ---- randomness ------------------------------------------------------------ */

void cc_random_bytes(void *buf, size_t len)
{
	need_sodium();
	if (len > 0)
		randombytes_buf(buf, len);
}

void cc_random_uuid(char out[CC_UUID_BUF])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t b[16];
	size_t o = 0;

	cc_random_bytes(b, sizeof(b));
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* variant 10xx (RFC 4122) */
	for (size_t i = 0; i < sizeof(b); i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 0x0f];
	}
	out[o] = '\0';
}

int cc_random_token(char *out, size_t outlen, size_t nbytes)
{
	uint8_t raw[CC_RANDOM_TOKEN_MAX];
	int rc;

	if (nbytes == 0 || nbytes > CC_RANDOM_TOKEN_MAX)
		return CC_EINVAL;
	/* The encoder refuses a short out (CC_ETOOBIG) before writing. */
	cc_random_bytes(raw, nbytes);
	rc = cc_base64url_encode(raw, nbytes, out, outlen, NULL);
	sodium_memzero(raw, sizeof(raw));
	return rc;
}

bool cc_uuid_valid(const char *s)
{
	if (!s)
		return false;
	/* Checking position by position stops at the NUL of a short string. */
	for (size_t i = 0; i < CC_UUID_STRLEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !cc_charset_has(s[i], CC_CHARSET_DIGIT, "abcdef"))
			return false;
	}
	return s[CC_UUID_STRLEN] == '\0';
}

/* ---- base64 ---------------------------------------------------------------- */

static int encode_variant(const void *in, size_t inlen, char *out, size_t outcap,
			  size_t *outlen, int variant)
{
	size_t need;

	if (inlen > CC_BASE64_MAX_INPUT)
		return CC_ETOOBIG;
	need = sodium_base64_encoded_len(inlen, variant); /* counts the NUL */
	/* libsodium aborts on a short buffer: check first. */
	if (!out || outcap < need)
		return CC_ETOOBIG;
	sodium_bin2base64(out, outcap, in, inlen, variant);
	if (outlen)
		*outlen = need - 1;
	return 0;
}

/*
 * Decodes one libsodium variant. The exact output length follows from the
 * input length (and padding), so a short buffer is told apart from bad input
 * before decoding, and a decoder that consumed less than everything counts as
 * a failure.
 */
static int decode_variant(const char *in, size_t inlen, uint8_t *out, size_t outcap,
			  size_t *outlen, int variant)
{
	bool padded = (variant & 2) == 0; /* the *_NO_PADDING variants set bit 1 */
	size_t need, got = 0;

	if (padded) {
		size_t pad = 0;
		if (inlen % 4 != 0)
			return CC_EINVAL;
		while (pad < 2 && pad < inlen && in[inlen - 1 - pad] == '=')
			pad++;
		need = inlen / 4 * 3 - pad;
	} else {
		if (inlen % 4 == 1)
			return CC_EINVAL;
		need = inlen / 4 * 3 + (inlen % 4 ? inlen % 4 - 1 : 0);
	}
	if (need > outcap)
		return CC_ETOOBIG;
	if (inlen == 0) {
		*outlen = 0;
		return 0;
	}
	if (sodium_base642bin(out, outcap, in, inlen, NULL, &got, NULL, variant) != 0 ||
	    got != need) {
		sodium_memzero(out, outcap);
		return CC_EINVAL;
	}
	*outlen = got;
	return 0;
}

int cc_base64url_encode(const void *in, size_t inlen, char *out, size_t outcap, size_t *outlen)
{
	return encode_variant(in, inlen, out, outcap, outlen,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

int cc_base64url_decode(const char *in, size_t inlen, uint8_t *out, size_t outcap,
			size_t *outlen)
{
	return decode_variant(in, inlen, out, outcap, outlen,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

int cc_base64_encode(const void *in, size_t inlen, char *out, size_t outcap, size_t *outlen)
{
	return encode_variant(in, inlen, out, outcap, outlen, sodium_base64_VARIANT_ORIGINAL);
}

int cc_base64_decode(const char *in, size_t inlen, uint8_t *out, size_t outcap, size_t *outlen)
{
	return decode_variant(in, inlen, out, outcap, outlen, sodium_base64_VARIANT_ORIGINAL);
}

/* ---- hashes and MACs --------------------------------------------------------
 * libsodium's SHA-256 and HMAC are portable C with no CPU dispatch, so they
 * work before sodium_init(); nothing here can fail.
 */

void cc_sha256(const void *data, size_t len, uint8_t out[CC_SHA256_LEN])
{
	crypto_hash_sha256(out, data, len);
}

void cc_sha256_hex(const void *data, size_t len, char out[CC_SHA256_HEX_LEN + 1])
{
	uint8_t digest[CC_SHA256_LEN];

	cc_sha256(data, len, digest);
	sodium_bin2hex(out, CC_SHA256_HEX_LEN + 1, digest, sizeof(digest));
}

void cc_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
		    uint8_t out[CC_SHA256_LEN])
{
	crypto_auth_hmacsha256_state st;

	/* The init/update/final API takes any key length (long keys hashed). */
	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, msg, msglen);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st)); /* holds the padded key */
}

bool cc_hmac_sha256_verify(const void *key, size_t keylen, const void *msg, size_t msglen,
			   const uint8_t mac[CC_SHA256_LEN])
{
	uint8_t want[CC_SHA256_LEN];
	bool ok;

	cc_hmac_sha256(key, keylen, msg, msglen, want);
	ok = crypto_verify_32(want, mac) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

bool cc_secret_equal(const void *a, size_t alen, const void *b, size_t blen)
{
	uint8_t ha[CC_SHA256_LEN], hb[CC_SHA256_LEN];
	bool eq;

	/* Hashing first hides where (and whether) the lengths differ. */
	cc_sha256(a, alen, ha);
	cc_sha256(b, blen, hb);
	eq = crypto_verify_32(ha, hb) == 0;
	sodium_memzero(ha, sizeof(ha));
	sodium_memzero(hb, sizeof(hb));
	return eq;
}

/* ---- key sets ---------------------------------------------------------------- */

struct cc_key {
	char id[CC_KEYSET_ID_MAX + 1]; /* validated id; "" for a raw key */
	const uint8_t *bytes;          /* inside the set's region */
	size_t len;                    /* >= CC_KEYSET_MIN_KEY */
	size_t pos;                    /* 1-based position in the file, for messages */
};

struct cc_keyset {
	struct cc_key *keys; /* count entries, sorted by id */
	size_t count;        /* 1..CC_KEYSET_MAX_KEYS */
	uint8_t *region;     /* sodium_malloc'd key bytes; read-only once loaded */
};

/*
 * An id this long could itself be a base64 key (ids and values swapped in
 * the file), so messages name such a key by position instead of by id.
 */
#define ID_ECHO_MAX (CC_BASE64URL_LEN(CC_KEYSET_MIN_KEY) - 1)
#define LABEL_MAX (CC_KEYSET_ID_MAX + 16) /* "key '<id>'" or "key #<n>" */

/* Where messages go while one source is parsed. */
struct parse_ctx {
	const char *source; /* path or variable name, prefixed to every message */
	char *err;          /* may be NULL */
	size_t errlen;
};

static void CC_PRINTF(2, 3) parse_error(struct parse_ctx *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!p->err || p->errlen == 0)
		return;
	n = snprintf(p->err, p->errlen, "%s: ", p->source ? p->source : "key set");
	if (n < 0 || (size_t)n >= p->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Returns the offset of the first character outside the id charset, or len. */
static size_t id_bad_offset(const char *id, size_t len)
{
	return cc_charset_span(id, len, CC_CHARSET_ALNUM, "._-");
}

/* True when an id may appear in a message (see ID_ECHO_MAX). */
static bool id_echoable(const char *id)
{
	size_t idlen = strlen(id);

	return idlen <= ID_ECHO_MAX && id_bad_offset(id, idlen) == idlen;
}

/* "key 'k1'" for an echoable id, "key #3" (file position) otherwise. */
static void key_label(const struct cc_key *k, char *buf, size_t len)
{
	if (id_echoable(k->id))
		snprintf(buf, len, "key '%s'", k->id);
	else
		snprintf(buf, len, "key #%zu", k->pos);
}

static int cmp_key_id(const void *a, const void *b)
{
	return strcmp(((const struct cc_key *)a)->id, ((const struct cc_key *)b)->id);
}

void cc_keyset_free(struct cc_keyset *ks)
{
	if (!ks)
		return;
	sodium_free(ks->region); /* wipes; NULL-safe */
	free(ks->keys);
	free(ks);
}

/* Allocates a set of n keys with a secure region of region_len bytes. */
static struct cc_keyset *keyset_new(size_t n, size_t region_len)
{
	struct cc_keyset *ks = calloc(1, sizeof(*ks));

	if (!ks)
		return NULL;
	ks->keys = calloc(n, sizeof(*ks->keys));
	ks->region = sodium_malloc(region_len);
	if (!ks->keys || !ks->region) {
		cc_keyset_free(ks);
		return NULL;
	}
	ks->count = n;
	return ks;
}

/* Accepts any of the four RFC 4648 spellings; at most one can decode. */
static int decode_key(const char *b64, uint8_t *out, size_t outcap, size_t *outlen)
{
	static const int variants[] = {
		sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
		sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_URLSAFE_NO_PADDING};
	size_t len = strlen(b64);

	for (size_t i = 0; i < CC_ARRAY_LEN(variants); i++)
		if (decode_variant(b64, len, out, outcap, outlen, variants[i]) == 0)
			return 0;
	return CC_EINVAL;
}

/*
 * Whole text minus every trailing '\r' and '\n' is the key, id "". Every
 * one of them, not one line end: a key handed over as configuration text
 * (cc-gameserver's --join-keys, read by sys/config, which already trims one
 * newline) must come out as the same bytes as the file cc-allocator signs
 * with, read here whole.
 */
static int parse_raw(struct parse_ctx *p, const char *text, size_t len, struct cc_keyset **out)
{
	struct cc_keyset *ks;

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	if (len < CC_KEYSET_MIN_KEY) {
		parse_error(p, "raw key is %zu bytes; at least %d are required", len,
			    CC_KEYSET_MIN_KEY);
		return CC_EINVAL;
	}
	ks = keyset_new(1, len);
	if (!ks) {
		parse_error(p, "out of memory");
		return CC_ENOMEM;
	}
	memcpy(ks->region, text, len);
	ks->keys[0].bytes = ks->region;
	ks->keys[0].len = len;
	ks->keys[0].pos = 1;
	sodium_mprotect_readonly(ks->region);
	*out = ks;
	return 0;
}

/* Pass 1: ids and value types, in file order; fills ids and positions. */
static int check_members(struct parse_ctx *p, const cJSON *root, struct cc_keyset *ks,
			 size_t *region_len)
{
	const cJSON *m;
	size_t i = 0, total = 0;
	char label[LABEL_MAX];

	cJSON_ArrayForEach(m, root) {
		struct cc_key *k = &ks->keys[i++];
		size_t idlen = m->string ? strlen(m->string) : 0, bad;

		k->pos = i;
		/* Never echo a bad id: it may be a key pasted in the wrong place. */
		if (idlen > CC_KEYSET_ID_MAX) {
			parse_error(p, "key id #%zu is %zu bytes; at most %d are allowed", i,
				    idlen, CC_KEYSET_ID_MAX);
			return CC_EINVAL;
		}
		bad = m->string ? id_bad_offset(m->string, idlen) : 0;
		if (bad != idlen) {
			parse_error(p,
				    "key id #%zu has a character outside [A-Za-z0-9._-] at offset %zu",
				    i, bad);
			return CC_EINVAL;
		}
		memcpy(k->id, m->string, idlen + 1);
		if (!cJSON_IsString(m) || !m->valuestring) {
			key_label(k, label, sizeof(label));
			parse_error(p, "%s is not a string (a base64 key was expected)", label);
			return CC_EINVAL;
		}
		total += CC_BASE64_DECODED_MAX(strlen(m->valuestring));
	}
	*region_len = total;
	return 0;
}

/* Pass 2: decodes every value into the region, in file order. */
static int decode_members(struct parse_ctx *p, const cJSON *root, struct cc_keyset *ks,
			  size_t region_len)
{
	const cJSON *m;
	size_t i = 0, off = 0;
	char label[LABEL_MAX];

	cJSON_ArrayForEach(m, root) {
		struct cc_key *k = &ks->keys[i++];

		key_label(k, label, sizeof(label));
		if (decode_key(m->valuestring, ks->region + off, region_len - off, &k->len) != 0) {
			parse_error(p, "%s is not valid base64", label);
			return CC_EINVAL;
		}
		if (k->len < CC_KEYSET_MIN_KEY) {
			parse_error(p, "%s is %zu bytes; at least %d are required", label, k->len,
				    CC_KEYSET_MIN_KEY);
			return CC_EINVAL;
		}
		k->bytes = ks->region + off;
		off += k->len;
	}
	return 0;
}

/* Sorts by id and refuses a repeated id (cJSON keeps both members). */
static int sort_and_check_duplicates(struct parse_ctx *p, struct cc_keyset *ks)
{
	qsort(ks->keys, ks->count, sizeof(*ks->keys), cmp_key_id);
	for (size_t i = 1; i < ks->count; i++) {
		const struct cc_key *a = &ks->keys[i - 1], *b = &ks->keys[i];
		if (strcmp(a->id, b->id) != 0)
			continue;
		if (id_echoable(a->id)) {
			parse_error(p, "duplicate key id '%s'", a->id);
		} else {
			/* qsort is not stable: name positions in file order. */
			parse_error(p, "key #%zu and key #%zu have the same id",
				    a->pos < b->pos ? a->pos : b->pos,
				    a->pos < b->pos ? b->pos : a->pos);
		}
		return CC_EINVAL;
	}
	return 0;
}

/* Overwrites every string in the tree: values (and mistaken ids) are keys. */
static void wipe_json_strings(cJSON *root)
{
	cJSON *m;

	cJSON_ArrayForEach(m, root) {
		if (m->string)
			sodium_memzero(m->string, strlen(m->string));
		if (cJSON_IsString(m) && m->valuestring)
			sodium_memzero(m->valuestring, strlen(m->valuestring));
	}
}

static int parse_json(struct parse_ctx *p, const char *text, size_t len, struct cc_keyset **out)
{
	struct cc_keyset *ks = NULL;
	cJSON *root = NULL;
	const char *end = NULL;
	char *copy = NULL;
	size_t n, region_len = 0;
	int rc = CC_EINVAL;

	if (memchr(text, '\0', len)) {
		parse_error(p, "key file starts with '{' but contains a NUL byte, so it is "
			       "neither a JSON key set nor usable as a raw key");
		goto out;
	}
	/* cJSON would cut the string there and keep a prefix of the key. */
	if (memmem(text, len, "\\u0000", 6)) {
		parse_error(p, "key file contains the escape \\u0000");
		goto out;
	}
	copy = malloc(len + 1);
	if (!copy) {
		rc = CC_ENOMEM;
		parse_error(p, "out of memory");
		goto out;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	root = cJSON_ParseWithOpts(copy, &end, 0);
	if (!root) {
		/* The offset only: quoting the text could quote a key. */
		parse_error(p, "key file starts with '{' but is not valid JSON (error near byte %zu)",
			    end ? (size_t)(end - copy) : (size_t)0);
		goto out;
	}
	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	if (end != copy + len) {
		parse_error(p, "key file has text after the JSON object (at byte %zu)",
			    (size_t)(end - copy));
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		parse_error(p, "key file is not a JSON object");
		goto out;
	}
	n = (size_t)cJSON_GetArraySize(root);
	if (n == 0) {
		parse_error(p, "key set has no keys");
		goto out;
	}
	if (n > CC_KEYSET_MAX_KEYS) {
		parse_error(p, "key set has %zu keys; at most %d are allowed", n,
			    CC_KEYSET_MAX_KEYS);
		goto out;
	}
	/* Ids and types first, so the region can be sized before decoding. */
	ks = calloc(1, sizeof(*ks));
	if (!ks || !(ks->keys = calloc(n, sizeof(*ks->keys)))) {
		rc = CC_ENOMEM;
		parse_error(p, "out of memory");
		goto out;
	}
	ks->count = n;
	rc = check_members(p, root, ks, &region_len);
	if (rc != 0)
		goto out;
	ks->region = sodium_malloc(region_len);
	if (!ks->region) {
		rc = CC_ENOMEM;
		parse_error(p, "out of memory");
		goto out;
	}
	rc = decode_members(p, root, ks, region_len);
	if (rc == 0)
		rc = sort_and_check_duplicates(p, ks);
	if (rc != 0)
		goto out;
	sodium_mprotect_readonly(ks->region);
	*out = ks;
	ks = NULL;
out:
	cc_keyset_free(ks);
	if (root) {
		wipe_json_strings(root);
		cJSON_Delete(root);
	}
	if (copy) {
		sodium_memzero(copy, len);
		free(copy);
	}
	return rc;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int cc_keyset_parse(const char *source, const char *text, size_t len, struct cc_keyset **out,
		    char *err, size_t errlen)
{
	struct parse_ctx p = {.source = source, .err = err, .errlen = errlen};
	size_t i = 0;

	/* sodium_malloc needs the page size sodium_init() records. */
	if (cc_crypto_init() != 0) {
		parse_error(&p, "libsodium failed to initialise");
		return CC_EUNAVAILABLE;
	}
	if (!out || (!text && len > 0)) {
		parse_error(&p, "invalid arguments");
		return CC_EINVAL;
	}
	if (len > CC_KEYSET_MAX_FILE) {
		parse_error(&p, "key file is %zu bytes; at most %d are allowed", len,
			    CC_KEYSET_MAX_FILE);
		return CC_ETOOBIG;
	}
	if (len == 0) {
		parse_error(&p, "key file is empty");
		return CC_EINVAL;
	}
	while (i < len && is_blank(text[i]))
		i++;
	if (i == len) {
		parse_error(&p, "key file is blank (only whitespace)");
		return CC_EINVAL;
	}
	if (text[i] == '{')
		return parse_json(&p, text, len, out);
	return parse_raw(&p, text, len, out);
}

int cc_keyset_load_file(const char *path, struct cc_keyset **out, char *err, size_t errlen)
{
	struct parse_ctx p = {.source = path, .err = err, .errlen = errlen};
	struct cc_file_error fe;
	char ebuf[128];
	char *buf = NULL;
	size_t got = 0;
	int rc;

	/* Regular files only: a FIFO or device could block or never end. */
	rc = cc_file_read(path, CC_KEYSET_MAX_FILE, CC_FILE_REGULAR_ONLY | CC_FILE_SECRET, &buf, &got, &fe);
	switch (fe.failure) {
	case CC_FILE_OK:
		break;
	case CC_FILE_OPEN:
		parse_error(&p, "cannot open key file: %s", strerror_r(fe.errnum, ebuf, sizeof(ebuf)));
		return rc;
	case CC_FILE_STAT:
		parse_error(&p, "cannot stat key file: %s", strerror_r(fe.errnum, ebuf, sizeof(ebuf)));
		return rc;
	case CC_FILE_NOT_REGULAR:
		parse_error(&p, "key file is not a regular file");
		return rc;
	case CC_FILE_TOO_BIG:
		if (fe.size >= 0)
			parse_error(&p, "key file is %lld bytes; at most %d are allowed", fe.size, CC_KEYSET_MAX_FILE);
		else /* it grew while read */
			parse_error(&p, "key file is more than %d bytes", CC_KEYSET_MAX_FILE);
		return rc;
	case CC_FILE_READ:
		parse_error(&p, "cannot read key file: %s", strerror_r(fe.errnum, ebuf, sizeof(ebuf)));
		return rc;
	case CC_FILE_NO_MEMORY:
		parse_error(&p, "out of memory");
		return rc;
	}
	rc = cc_keyset_parse(path, buf, got, out, err, errlen);
	sodium_memzero(buf, got);
	free(buf);
	return rc;
}

size_t cc_keyset_count(const struct cc_keyset *ks)
{
	return ks ? ks->count : 0;
}

const char *cc_keyset_id_at(const struct cc_keyset *ks, size_t i)
{
	return ks && i < ks->count ? ks->keys[i].id : NULL;
}

const uint8_t *cc_keyset_find(const struct cc_keyset *ks, const char *id, size_t *len)
{
	if (!ks || !id)
		return NULL;
	/* At most CC_KEYSET_MAX_KEYS entries; ids are not secret. */
	for (size_t i = 0; i < ks->count; i++) {
		if (strcmp(ks->keys[i].id, id) == 0) {
			if (len)
				*len = ks->keys[i].len;
			return ks->keys[i].bytes;
		}
	}
	return NULL;
}

int cc_keyset_sign(const struct cc_keyset *ks, const char *id, const void *msg, size_t msglen,
		   uint8_t out[CC_SHA256_LEN])
{
	size_t klen;
	const uint8_t *key = cc_keyset_find(ks, id, &klen);

	if (!key)
		return CC_ENOTFOUND;
	cc_hmac_sha256(key, klen, msg, msglen, out);
	return 0;
}

bool cc_keyset_verify(const struct cc_keyset *ks, const char *id, const void *msg,
		      size_t msglen, const uint8_t mac[CC_SHA256_LEN])
{
	size_t klen;
	const uint8_t *key = cc_keyset_find(ks, id, &klen);

	return key && cc_hmac_sha256_verify(key, klen, msg, msglen, mac);
}
