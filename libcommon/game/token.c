/*
 * token.c - refusal names, the canonical byte writer/reader and the signed
 * text form shared by join tokens, workload tokens and roster digests.
 */
#include "game/token.h"

#include <string.h>

#include "sys/charset.h"

#include "sys/banned.h"

static const char *const refusal_names[] = {
#define CC__TOKEN_NAME(name, text) text,
	CC_TOKEN_REFUSALS(CC__TOKEN_NAME)
#undef CC__TOKEN_NAME
};

const char *cc_token_refusal_name(enum cc_token_refusal why)
{
	if ((size_t)why >= CC_ARRAY_LEN(refusal_names))
		return "unknown";
	return refusal_names[why];
}

bool cc_server_id_valid(const char *s)
{
	return cc_charset_valid(s, CC_SERVER_ID_MAX, CC_CHARSET_ALNUM, "._-");
}

bool cc_key_id_valid(const char *s)
{
	/* The empty id is legal: a raw key file is one key under "". */
	return s && (s[0] == '\0' || cc_charset_valid(s, CC_KEYSET_ID_MAX, CC_CHARSET_ALNUM, "._-"));
}

/* ---- writer ---------------------------------------------------------------- */

void cc_token_writer_init(struct cc_token_writer *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap;
	w->len = 0;
	w->ok = buf != NULL;
}

void cc_token_put_bytes(struct cc_token_writer *w, const void *p, size_t n)
{
	if (!w->ok)
		return;
	if (n > w->cap - w->len || (n && !p)) {
		w->ok = false;
		return;
	}
	if (n)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void cc_token_put_u8(struct cc_token_writer *w, uint8_t v)
{
	cc_token_put_bytes(w, &v, 1);
}

void cc_token_put_u32(struct cc_token_writer *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};

	cc_token_put_bytes(w, b, sizeof(b));
}

void cc_token_put_i64(struct cc_token_writer *w, int64_t v)
{
	uint64_t u = (uint64_t)v; /* two's complement by definition of the conversion */
	uint8_t b[8];

	for (int i = 7; i >= 0; i--, u >>= 8)
		b[i] = (uint8_t)u;
	cc_token_put_bytes(w, b, sizeof(b));
}

void cc_token_put_str(struct cc_token_writer *w, const char *s)
{
	size_t n = s ? strnlen(s, 256) : 256;

	if (n > 255) {
		w->ok = false;
		return;
	}
	cc_token_put_u8(w, (uint8_t)n);
	cc_token_put_bytes(w, s, n);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

void cc_token_put_uuid(struct cc_token_writer *w, const char *uuid)
{
	uint8_t b[16];
	size_t k = 0;

	if (!cc_uuid_valid(uuid)) {
		w->ok = false;
		return;
	}
	for (size_t i = 0; i < CC_UUID_STRLEN; i++) {
		if (uuid[i] == '-')
			continue;
		b[k / 2] = (uint8_t)((k % 2) ? (b[k / 2] | hexval(uuid[i])) : (hexval(uuid[i]) << 4));
		k++;
	}
	cc_token_put_bytes(w, b, sizeof(b));
}

/* ---- reader ---------------------------------------------------------------- */

void cc_token_reader_init(struct cc_token_reader *r, const uint8_t *buf, size_t len)
{
	r->buf = buf;
	r->len = buf ? len : 0;
	r->pos = 0;
	r->ok = buf != NULL;
}

/* Returns a pointer to the next n bytes and advances, or NULL (ok = false). */
static const uint8_t *take(struct cc_token_reader *r, size_t n)
{
	const uint8_t *p;

	if (!r->ok || n > r->len - r->pos) {
		r->ok = false;
		return NULL;
	}
	p = r->buf + r->pos;
	r->pos += n;
	return p;
}

void cc_token_get_u8(struct cc_token_reader *r, uint8_t *out)
{
	const uint8_t *p = take(r, 1);

	if (p)
		*out = p[0];
}

void cc_token_get_u32(struct cc_token_reader *r, uint32_t *out)
{
	const uint8_t *p = take(r, 4);

	if (p)
		*out = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void cc_token_get_i64(struct cc_token_reader *r, int64_t *out)
{
	const uint8_t *p = take(r, 8);
	uint64_t u = 0;

	if (!p)
		return;
	for (int i = 0; i < 8; i++)
		u = u << 8 | p[i];
	/* Back from two's complement without implementation-defined conversion. */
	*out = u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

void cc_token_get_str(struct cc_token_reader *r, char *out, size_t cap)
{
	uint8_t n = 0;
	const uint8_t *p;

	cc_token_get_u8(r, &n);
	if (!r->ok)
		return;
	if ((size_t)n >= cap) {
		r->ok = false;
		return;
	}
	p = take(r, n);
	if (!p)
		return;
	if (memchr(p, '\0', n)) {
		r->ok = false;
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

void cc_token_get_uuid(struct cc_token_reader *r, char out[CC_UUID_BUF])
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = take(r, 16);
	size_t k = 0;

	if (!p)
		return;
	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = '-';
		out[k++] = hex[p[i] >> 4];
		out[k++] = hex[p[i] & 0xf];
	}
	out[k] = '\0';
}

bool cc_token_reader_done(const struct cc_token_reader *r)
{
	return r->ok && r->pos == r->len;
}

/* ---- text form ------------------------------------------------------------- */

int cc_token_seal(const struct cc_keyset *ks, const char *key_id, const uint8_t *claims,
		  size_t len, char *out, size_t cap)
{
	uint8_t tag[CC_SHA256_LEN];
	char text[CC_TOKEN_TEXT_MAX + 1];
	size_t n1 = 0, n2 = 0;
	int rc;

	if (!ks || !key_id || !claims || !out)
		return CC_EINVAL;
	if (len > CC_TOKEN_CLAIMS_MAX)
		return CC_ETOOBIG;
	rc = cc_keyset_sign(ks, key_id, claims, len, tag);
	if (rc)
		return rc;
	/* Both fit by construction of CC_TOKEN_TEXT_MAX. */
	rc = cc_base64url_encode(claims, len, text, sizeof(text), &n1);
	if (rc == 0) {
		text[n1] = '.';
		rc = cc_base64url_encode(tag, sizeof(tag), text + n1 + 1, sizeof(text) - n1 - 1, &n2);
	}
	if (rc)
		CC_BUG("token text buffer sized below CC_TOKEN_TEXT_MAX");
	if (n1 + 1 + n2 + 1 > cap)
		return CC_ETOOBIG;
	memcpy(out, text, n1 + 1 + n2 + 1);
	return 0;
}

int cc_token_open(const char *text, uint8_t claims[CC_TOKEN_CLAIMS_MAX], size_t *len,
		  uint8_t tag[CC_SHA256_LEN])
{
	const char *dot;
	size_t n, tn = 0;
	uint8_t t[CC_SHA256_LEN + 2];

	if (!text || !claims || !len || !tag)
		return CC_EINVAL;
	n = strnlen(text, CC_TOKEN_TEXT_MAX + 1);
	if (n > CC_TOKEN_TEXT_MAX)
		return CC_EINVAL;
	dot = memchr(text, '.', n);
	/* Exactly one dot with text on both sides; the decoders refuse any other '.'. */
	if (!dot || dot == text || dot == text + n - 1)
		return CC_EINVAL;
	if (cc_base64url_decode(dot + 1, (size_t)(text + n - dot - 1), t, sizeof(t), &tn) != 0 ||
	    tn != CC_SHA256_LEN)
		return CC_EINVAL;
	if (cc_base64url_decode(text, (size_t)(dot - text), claims, CC_TOKEN_CLAIMS_MAX, len) != 0)
		return CC_EINVAL;
	memcpy(tag, t, CC_SHA256_LEN);
	return 0;
}
