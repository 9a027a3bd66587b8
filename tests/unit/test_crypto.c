/*
 * crypto: published test vectors (RFC 4231 HMAC-SHA256, RFC 4648 base64,
 * FIPS 180 SHA-256), strict decoding, uuids and tokens, and every key-set
 * refusal with its exact message, including that no message ever carries
 * key material.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/crypto.h"
#include "support.h"

#include "sys/banned.h"

/* Decodes a hex string (test vectors) into out; returns the byte count. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = strlen(hex) / 2;

	ck_assert_uint_le(n, cap);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	return n;
}

static void tohex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* ---- init, random, uuid ------------------------------------------------------ */

static void *init_thread(void *arg)
{
	*(int *)arg = cc_crypto_init();
	return NULL;
}

START_TEST(test_init_is_idempotent_across_threads)
{
	pthread_t t[8];
	int rc[8];

	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, init_thread, &rc[i]), 0);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
		ck_assert_int_eq(rc[i], 0);
	}
	ck_assert_int_eq(cc_crypto_init(), 0);
}
END_TEST

START_TEST(test_random_bytes_differ)
{
	uint8_t a[32] = {0}, b[32] = {0}, zero[32] = {0};

	cc_random_bytes(a, sizeof(a));
	cc_random_bytes(b, sizeof(b));
	cc_random_bytes(NULL, 0); /* harmless */
	ck_assert_mem_ne(a, b, sizeof(a));
	ck_assert_mem_ne(a, zero, sizeof(a));
}
END_TEST

START_TEST(test_random_uuid_is_v4_and_distinct)
{
	enum { N = 256 };
	static char ids[N][CC_UUID_BUF];

	for (int i = 0; i < N; i++) {
		cc_random_uuid(ids[i]);
		ck_assert_msg(cc_uuid_valid(ids[i]), "invalid uuid %s", ids[i]);
		ck_assert_int_eq(ids[i][14], '4');
		ck_assert_ptr_nonnull(strchr("89ab", ids[i][19]));
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(ids[i], ids[j]);
	}
}
END_TEST

static const struct {
	const char *s;
	bool ok;
} uuid_cases[] = {
	{"123e4567-e89b-42d3-a456-426614174000", true},
	{"00000000-0000-0000-0000-000000000000", true},
	{"ffffffff-ffff-1fff-8fff-ffffffffffff", true}, /* any version */
	{"123E4567-e89b-42d3-a456-426614174000", false}, /* uppercase */
	{"123e4567e89b-42d3-a456-426614174000-", false},  /* dash moved */
	{"123e4567-e89b-42d3-a456-42661417400", false},   /* 35 chars */
	{"123e4567-e89b-42d3-a456-4266141740000", false}, /* 37 chars */
	{"123e4567-e89b-42d3-a456-426614174000\n", false},
	{"{123e4567-e89b-42d3-a456-426614174000}", false},
	{"123e4567-e89b-42d3-a456-42661417400g", false},
	{"123e4567-e89b-42d3-a456_426614174000", false},
	{"123e4567-e89b-42d3-a4564-26614174000", false},
	{"123e4567+e89b-42d3-a456-426614174000", false},
	{"../../etc/passwd", false},
	{"", false},
};

START_TEST(test_uuid_valid_table)
{
	ck_assert_msg(cc_uuid_valid(uuid_cases[_i].s) == uuid_cases[_i].ok, "case '%s'",
		      uuid_cases[_i].s);
}
END_TEST

START_TEST(test_uuid_valid_null)
{
	ck_assert(!cc_uuid_valid(NULL));
}
END_TEST

START_TEST(test_random_token)
{
	char a[CC_BASE64URL_LEN(32) + 1], b[sizeof(a)];
	char big[CC_BASE64URL_LEN(CC_RANDOM_TOKEN_MAX) + 1];
	uint8_t raw[64];
	size_t n = 0;

	ck_assert_int_eq(cc_random_token(a, sizeof(a), 32), 0);
	ck_assert_int_eq(cc_random_token(b, sizeof(b), 32), 0);
	ck_assert_uint_eq(strlen(a), 43);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(cc_base64url_decode(a, strlen(a), raw, sizeof(raw), &n), 0);
	ck_assert_uint_eq(n, 32);
	ck_assert_int_eq(cc_random_token(big, sizeof(big), CC_RANDOM_TOKEN_MAX), 0);
	ck_assert_uint_eq(strlen(big), CC_BASE64URL_LEN(CC_RANDOM_TOKEN_MAX));

	/* Refusals leave out alone. */
	memset(b, 'x', sizeof(b));
	ck_assert_int_eq(cc_random_token(b, sizeof(b) - 1, 32), CC_ETOOBIG);
	ck_assert_int_eq(cc_random_token(b, sizeof(b), 0), CC_EINVAL);
	ck_assert_int_eq(cc_random_token(big, sizeof(big), CC_RANDOM_TOKEN_MAX + 1), CC_EINVAL);
	for (size_t i = 0; i < sizeof(b); i++)
		ck_assert_int_eq(b[i], 'x');
}
END_TEST

/* ---- base64 ----------------------------------------------------------------- */

/* RFC 4648 §10, plus bytes that need the alphabet-specific characters. */
static const struct {
	const char *bin;
	size_t len;
	const char *std;
	const char *url;
} b64_vectors[] = {
	{"", 0, "", ""},
	{"f", 1, "Zg==", "Zg"},
	{"fo", 2, "Zm8=", "Zm8"},
	{"foo", 3, "Zm9v", "Zm9v"},
	{"foob", 4, "Zm9vYg==", "Zm9vYg"},
	{"fooba", 5, "Zm9vYmE=", "Zm9vYmE"},
	{"foobar", 6, "Zm9vYmFy", "Zm9vYmFy"},
	{"\xfb\xff", 2, "+/8=", "-_8"},
	{"\xff\xfe\xfd\x00", 4, "//79AA==", "__79AA"},
};

START_TEST(test_base64_vectors)
{
	const char *bin = b64_vectors[_i].bin, *std = b64_vectors[_i].std,
		   *url = b64_vectors[_i].url;
	size_t len = b64_vectors[_i].len, n = 99;
	char enc[32];
	uint8_t dec[32];

	ck_assert_int_eq(cc_base64_encode(bin, len, enc, sizeof(enc), &n), 0);
	ck_assert_str_eq(enc, std);
	ck_assert_uint_eq(n, strlen(std));
	ck_assert_uint_eq(CC_BASE64_LEN(len), strlen(std));
	ck_assert_int_eq(cc_base64url_encode(bin, len, enc, sizeof(enc), &n), 0);
	ck_assert_str_eq(enc, url);
	ck_assert_uint_eq(n, strlen(url));
	ck_assert_uint_eq(CC_BASE64URL_LEN(len), strlen(url));

	n = 99;
	ck_assert_int_eq(cc_base64_decode(std, strlen(std), dec, sizeof(dec), &n), 0);
	ck_assert_uint_eq(n, len);
	ck_assert_mem_eq(dec, bin, len);
	n = 99;
	ck_assert_int_eq(cc_base64url_decode(url, strlen(url), dec, sizeof(dec), &n), 0);
	ck_assert_uint_eq(n, len);
	ck_assert_mem_eq(dec, bin, len);

	/* Exact capacities succeed; one byte less is CC_ETOOBIG. */
	ck_assert_int_eq(cc_base64_encode(bin, len, enc, strlen(std) + 1, NULL), 0);
	ck_assert_int_eq(cc_base64_encode(bin, len, enc, strlen(std), NULL), CC_ETOOBIG);
	ck_assert_int_eq(cc_base64url_encode(bin, len, enc, strlen(url), NULL), CC_ETOOBIG);
	ck_assert_int_eq(cc_base64_decode(std, strlen(std), dec, len, &n), 0);
	if (len > 0) {
		ck_assert_int_eq(cc_base64_decode(std, strlen(std), dec, len - 1, &n), CC_ETOOBIG);
		ck_assert_int_eq(cc_base64url_decode(url, strlen(url), dec, len - 1, &n),
				 CC_ETOOBIG);
	}
}
END_TEST

START_TEST(test_base64_round_trip_all_lengths)
{
	uint8_t bin[100], dec[100];
	char enc[CC_BASE64_LEN(100) + 1];
	size_t n;

	cc_random_bytes(bin, sizeof(bin));
	for (size_t len = 0; len <= sizeof(bin); len++) {
		ck_assert_int_eq(cc_base64url_encode(bin, len, enc, sizeof(enc), &n), 0);
		ck_assert_int_eq(cc_base64url_decode(enc, n, dec, sizeof(dec), &n), 0);
		ck_assert_uint_eq(n, len);
		ck_assert_mem_eq(dec, bin, len);
		ck_assert_int_eq(cc_base64_encode(bin, len, enc, sizeof(enc), &n), 0);
		ck_assert_int_eq(cc_base64_decode(enc, n, dec, sizeof(dec), &n), 0);
		ck_assert_uint_eq(n, len);
		ck_assert_mem_eq(dec, bin, len);
		ck_assert_uint_le(n, CC_BASE64_DECODED_MAX(strlen(enc)));
	}
}
END_TEST

/* Malformed input; len 0 means strlen. std: for cc_base64_decode, else url. */
static const struct {
	bool std;
	const char *in;
	size_t len;
	const char *why;
} b64_bad[] = {
	{false, "Z", 0, "impossible length"},
	{false, "Zm9vY", 0, "impossible length"},
	{false, "Zg==", 0, "padding in unpadded alphabet"},
	{false, "Zg=", 0, "padding"},
	{false, "Zh", 0, "non-canonical trailing bits"},
	{false, "Zm9", 0, "non-canonical trailing bits"},
	{false, "+/8", 0, "standard alphabet"},
	{false, "Zm9v Yg", 0, "space"},
	{false, "Zm9vYg\n", 0, "newline"},
	{false, "Zm\0v", 4, "NUL"},
	{false, "Zm9v\xc3\xa9", 0, "non-ASCII"},
	{true, "Zg", 0, "missing padding"},
	{true, "Zg=", 0, "short padding"},
	{true, "Zg===", 0, "long padding"},
	{true, "Zm9v=", 0, "padding after a full group"},
	{true, "Zm9v====", 0, "padding group"},
	{true, "Z===", 0, "three pads"},
	{true, "====", 0, "only padding"},
	{true, "Zm=v", 0, "padding in the middle"},
	{true, "Zh==", 0, "non-canonical trailing bits"},
	{true, "Zm9=", 0, "non-canonical trailing bits"},
	{true, "-_8=", 0, "url alphabet"},
	{true, "Zm9v\r\n", 0, "CRLF"},
	{true, "Zm\0v", 4, "NUL"},
};

START_TEST(test_base64_refuses_malformed)
{
	const char *in = b64_bad[_i].in;
	size_t len = b64_bad[_i].len ? b64_bad[_i].len : strlen(in), n = 12345;
	uint8_t out[16];
	int rc;

	memset(out, 0xaa, sizeof(out));
	rc = b64_bad[_i].std ? cc_base64_decode(in, len, out, sizeof(out), &n)
			     : cc_base64url_decode(in, len, out, sizeof(out), &n);
	ck_assert_msg(rc == CC_EINVAL, "%s (%s) gave %d", b64_bad[_i].why, in, rc);
	ck_assert_uint_eq(n, 12345);
	/* Never a partial decode left behind: untouched or wiped. */
	for (size_t i = 0; i < sizeof(out); i++)
		ck_assert_msg(out[i] == 0xaa || out[i] == 0, "byte %zu left as %02x", i, out[i]);
}
END_TEST

/* ---- hashes and MACs ------------------------------------------------------- */

START_TEST(test_sha256_vectors)
{
	char hex[CC_SHA256_HEX_LEN + 1];
	static const char *const quick = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	cc_sha256_hex("", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	cc_sha256_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	cc_sha256_hex(quick, strlen(quick), hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

/* RFC 4231 section 4 (case 5 is a truncated tag and does not apply). */
static const struct {
	const char *key_hex;
	const char *data_hex;
	const char *data;
	const char *mac;
} rfc4231[] = {
	{"0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", NULL, "Hi There",
	 "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
	{"4a656665", NULL, "what do ya want for nothing?",
	 "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
	{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	 "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	 "dddddddddddddddddddd",
	 NULL, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
	{"0102030405060708090a0b0c0d0e0f10111213141516171819",
	 "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
	 "cdcdcdcdcdcdcdcdcdcd",
	 NULL, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
	{NULL, NULL, "Test Using Larger Than Block-Size Key - Hash Key First",
	 "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
	{NULL, NULL,
	 "This is a test using a larger than block-size key and a larger than block-size "
	 "data. The key needs to be hashed before being used by the HMAC algorithm.",
	 "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
};

START_TEST(test_hmac_rfc4231)
{
	uint8_t key[131], data[200], mac[CC_SHA256_LEN], want[CC_SHA256_LEN];
	size_t klen, dlen;
	char hex[CC_SHA256_HEX_LEN + 1];

	if (rfc4231[_i].key_hex) {
		klen = unhex(rfc4231[_i].key_hex, key, sizeof(key));
	} else { /* cases 6 and 7: 131 bytes of 0xaa */
		klen = 131;
		memset(key, 0xaa, klen);
	}
	if (rfc4231[_i].data_hex) {
		dlen = unhex(rfc4231[_i].data_hex, data, sizeof(data));
	} else {
		dlen = strlen(rfc4231[_i].data);
		memcpy(data, rfc4231[_i].data, dlen);
	}
	cc_hmac_sha256(key, klen, data, dlen, mac);
	tohex(mac, sizeof(mac), hex);
	ck_assert_str_eq(hex, rfc4231[_i].mac);

	unhex(rfc4231[_i].mac, want, sizeof(want));
	ck_assert(cc_hmac_sha256_verify(key, klen, data, dlen, want));
	/* Every single-bit flip of the tag is refused. */
	for (size_t bit = 0; bit < 8 * CC_SHA256_LEN; bit++) {
		want[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		ck_assert_msg(!cc_hmac_sha256_verify(key, klen, data, dlen, want), "bit %zu",
			      bit);
		want[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* And so is a one-bit change of the message or the key. */
	data[0] ^= 1;
	ck_assert(!cc_hmac_sha256_verify(key, klen, data, dlen, want));
	data[0] ^= 1;
	key[klen - 1] ^= 0x80;
	ck_assert(!cc_hmac_sha256_verify(key, klen, data, dlen, want));
}
END_TEST

START_TEST(test_secret_equal)
{
	ck_assert(cc_secret_equal("s3cret", 6, "s3cret", 6));
	ck_assert(cc_secret_equal("", 0, "", 0));
	ck_assert(!cc_secret_equal("s3cret", 6, "s3creT", 6));
	ck_assert(!cc_secret_equal("s3cret", 6, "s3cret", 5));
	ck_assert(!cc_secret_equal("s3cret", 6, "s3cret\0", 7));
	ck_assert(!cc_secret_equal("", 0, "x", 1));
}
END_TEST

/* ---- key sets: parsing ------------------------------------------------------ */

/* 32 bytes 00..1f, standard base64. */
#define KA "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
/* 42 bytes e0..ff fb ff fe fb ff fe fb ff fe 00, base64url (has '-' and '_'). */
#define KB "4OHi4-Tl5ufo6err7O3u7_Dx8vP09fb3-Pn6-_z9_v_7__77__77__4A"
/* 16 bytes "0123456789abcdef". */
#define K16 "MDEyMzQ1Njc4OWFiY2RlZg=="
#define ID65 "k1234567890123456789012345678901234567890123456789012345678901234"
#define ID50 "k1234567890123456789012345678901234567890123456789"

static const struct {
	const char *name;
	const char *text;
	size_t len; /* 0: strlen(text) */
	int rc;
	const char *msg; /* after "src: "; a trailing '*' makes it a prefix */
} keyset_bad[] = {
	{"empty", "", 0, CC_EINVAL, "key file is empty"},
	{"blank", " \n\t\r\n", 0, CC_EINVAL, "key file is blank (only whitespace)"},
	{"no keys", "{}", 0, CC_EINVAL, "key set has no keys"},
	{"no keys, spaced", "  {\n}\n", 0, CC_EINVAL, "key set has no keys"},
	{"number value", "{\"k1\": 5}", 0, CC_EINVAL,
	 "key 'k1' is not a string (a base64 key was expected)"},
	{"null value", "{\"k1\": null}", 0, CC_EINVAL,
	 "key 'k1' is not a string (a base64 key was expected)"},
	{"nested object", "{\"k1\": {\"a\": \"" KA "\"}}", 0, CC_EINVAL,
	 "key 'k1' is not a string (a base64 key was expected)"},
	{"array value", "{\"k1\": [\"" KA "\"]}", 0, CC_EINVAL,
	 "key 'k1' is not a string (a base64 key was expected)"},
	{"second value bad", "{\"k1\": \"" KA "\", \"k2\": true}", 0, CC_EINVAL,
	 "key 'k2' is not a string (a base64 key was expected)"},
	{"invalid base64", "{\"k1\": \"not base64!\"}", 0, CC_EINVAL,
	 "key 'k1' is not valid base64"},
	{"mixed alphabets", "{\"k1\": \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd+h_\"}", 0,
	 CC_EINVAL, "key 'k1' is not valid base64"},
	{"base64 with newline escape", "{\"k1\": \"AAECAwQFBgcICQoLDA0ODxAR\\nEhMUFRYXGBkaGxwdHh8=\"}",
	 0, CC_EINVAL, "key 'k1' is not valid base64"},
	{"short key", "{\"k1\": \"" K16 "\"}", 0, CC_EINVAL,
	 "key 'k1' is 16 bytes; at least 32 are required"},
	{"short key, empty id", "{\"\": \"" K16 "\"}", 0, CC_EINVAL,
	 "key '' is 16 bytes; at least 32 are required"},
	{"empty value", "{\"k1\": \"\"}", 0, CC_EINVAL,
	 "key 'k1' is 0 bytes; at least 32 are required"},
	{"31 bytes", "{\"k1\": \"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==\"}", 0, CC_EINVAL,
	 "key 'k1' is 31 bytes; at least 32 are required"},
	{"id too long", "{\"" ID65 "\": \"" KA "\"}", 0, CC_EINVAL,
	 "key id #1 is 65 bytes; at most 64 are allowed"},
	{"id with space", "{\"ok\": \"" KA "\", \"bad id\": \"" KA "\"}", 0, CC_EINVAL,
	 "key id #2 has a character outside [A-Za-z0-9._-] at offset 3"},
	{"id with slash", "{\"k/1\": \"" KA "\"}", 0, CC_EINVAL,
	 "key id #1 has a character outside [A-Za-z0-9._-] at offset 1"},
	{"id with newline", "{\"k\\n1\": \"" KA "\"}", 0, CC_EINVAL,
	 "key id #1 has a character outside [A-Za-z0-9._-] at offset 1"},
	{"duplicate id", "{\"k1\": \"" KA "\", \"k2\": \"" KA "\", \"k1\": \"" KB "\"}", 0,
	 CC_EINVAL, "duplicate key id 'k1'"},
	{"duplicate empty id", "{\"\": \"" KA "\", \"\": \"" KB "\"}", 0, CC_EINVAL,
	 "duplicate key id ''"},
	{"duplicate long id", "{\"" ID50 "\": \"" KA "\", \"k2\": \"" KA "\", \"" ID50 "\": \"" KB
	 "\"}", 0, CC_EINVAL, "key #1 and key #3 have the same id"},
	{"trailing garbage", "{\"k1\": \"" KA "\"} x", 0, CC_EINVAL,
	 "key file has text after the JSON object (at byte 55)"},
	{"two objects", "{\"k1\": \"" KA "\"}\n{}", 0, CC_EINVAL,
	 "key file has text after the JSON object (at byte 55)"},
	{"unterminated", "{\"k1\": \"" KA "\"", 0, CC_EINVAL,
	 "key file starts with '{' but is not valid JSON*"},
	{"unquoted key", "{k1: \"" KA "\"}", 0, CC_EINVAL,
	 "key file starts with '{' but is not valid JSON (error near byte *"},
	{"escaped NUL", "{\"k1\": \"" KA "\\u0000trailing\"}", 0, CC_EINVAL,
	 "key file contains the escape \\u0000"},
	{"raw NUL in JSON", "{\"k1\": \"" KA "\"}\0", 55, CC_EINVAL,
	 "key file starts with '{' but contains a NUL byte, so it is neither a JSON key set "
	 "nor usable as a raw key"},
	{"array is raw", "[\"abc\"]", 0, CC_EINVAL,
	 "raw key is 7 bytes; at least 32 are required"},
	{"raw short", "short-key\n", 0, CC_EINVAL,
	 "raw key is 9 bytes; at least 32 are required"},
	{"raw 31 CRLF", "0123456789012345678901234567890\r\n", 0, CC_EINVAL,
	 "raw key is 31 bytes; at least 32 are required"},
	{"raw 31, every trailing CR and LF goes", "0123456789012345678901234567890\n\r\n\n", 0, CC_EINVAL,
	 "raw key is 31 bytes; at least 32 are required"},
	{"swapped id and value", "{\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\": \"k1\"}", 0,
	 CC_EINVAL, "key #1 is not valid base64"},
};

static void check_message(const char *err, const char *want)
{
	size_t wl = strlen(want);

	ck_assert_msg(strncmp(err, "src: ", 5) == 0, "message '%s' does not name the source",
		      err);
	if (wl > 0 && want[wl - 1] == '*')
		ck_assert_msg(strncmp(err + 5, want, wl - 1) == 0, "got '%s', want prefix '%s'",
			      err, want);
	else
		ck_assert_str_eq(err + 5, want);
}

START_TEST(test_keyset_refusals)
{
	const char *text = keyset_bad[_i].text;
	size_t len = keyset_bad[_i].len ? keyset_bad[_i].len : strlen(text);
	struct cc_keyset *sentinel = (struct cc_keyset *)&len, *ks = sentinel;
	char err[256] = "";
	int rc = cc_keyset_parse("src", text, len, &ks, err, sizeof(err));

	ck_assert_msg(rc == keyset_bad[_i].rc, "%s: rc %d (%s)", keyset_bad[_i].name, rc, err);
	ck_assert_ptr_eq(ks, sentinel);
	check_message(err, keyset_bad[_i].msg);
}
END_TEST

START_TEST(test_keyset_size_and_count_caps)
{
	struct cc_keyset *ks = NULL;
	char err[256];
	char *big = malloc(CC_KEYSET_MAX_FILE + 1);
	char *json = malloc(CC_KEYSET_MAX_FILE);
	size_t off = 0;

	ck_assert_ptr_nonnull(big);
	ck_assert_ptr_nonnull(json);
	/* Exactly at the cap is a (raw) key; one byte more is refused. */
	memset(big, 'k', CC_KEYSET_MAX_FILE + 1);
	ck_assert_int_eq(cc_keyset_parse("src", big, CC_KEYSET_MAX_FILE, &ks, err, sizeof(err)), 0);
	ck_assert_uint_eq(cc_keyset_count(ks), 1);
	cc_keyset_free(ks);
	ks = NULL;
	ck_assert_int_eq(cc_keyset_parse("src", big, CC_KEYSET_MAX_FILE + 1, &ks, err, sizeof(err)),
			 CC_ETOOBIG);
	check_message(err, "key file is 65537 bytes; at most 65536 are allowed");
	ck_assert_ptr_null(ks);

	/* 64 keys load; 65 do not. */
	for (int n = 64; n <= 65; n++) {
		off = 0;
		off += (size_t)snprintf(json + off, CC_KEYSET_MAX_FILE - off, "{");
		for (int i = 0; i < n; i++)
			off += (size_t)snprintf(json + off, CC_KEYSET_MAX_FILE - off,
						"%s\"k%02d\": \"%s\"", i ? "," : "", i, KA);
		off += (size_t)snprintf(json + off, CC_KEYSET_MAX_FILE - off, "}");
		ks = NULL;
		int rc = cc_keyset_parse("src", json, off, &ks, err, sizeof(err));
		if (n == 64) {
			ck_assert_msg(rc == 0, "%s", err);
			ck_assert_uint_eq(cc_keyset_count(ks), 64);
			ck_assert_str_eq(cc_keyset_id_at(ks, 63), "k63");
			cc_keyset_free(ks);
		} else {
			ck_assert_int_eq(rc, CC_EINVAL);
			check_message(err, "key set has 65 keys; at most 64 are allowed");
		}
	}
	free(big);
	free(json);
}
END_TEST

START_TEST(test_keyset_deep_nesting_refused)
{
	enum { DEPTH = 2000 };
	char *text = malloc(8 + DEPTH * 6 + DEPTH + 8);
	size_t off = 0;
	struct cc_keyset *ks = NULL;
	char err[256];

	ck_assert_ptr_nonnull(text);
	memcpy(text + off, "{\"k1\":", 6);
	off += 6;
	for (int i = 0; i < DEPTH; i++) {
		memcpy(text + off, "{\"a\":", 5);
		off += 5;
	}
	text[off++] = '1';
	for (int i = 0; i <= DEPTH; i++)
		text[off++] = '}';
	ck_assert_int_eq(cc_keyset_parse("src", text, off, &ks, err, sizeof(err)), CC_EINVAL);
	check_message(err, "key file starts with '{' but is not valid JSON*");
	ck_assert_ptr_null(ks);
	free(text);
}
END_TEST

/*
 * The canary: key material that is wrong in some way must not reach the
 * message, in any spelling, whatever the mistake.
 */
#define CANARY "Zq9XwCANARY"
static const char *const canary_texts[] = {
	/* short key whose bytes are the canary (base64 of "Zq9XwCANARY-0123456") */
	"{\"k1\": \"WnE5WHdDQU5BUlktMDEyMzQ1Ng==\"}",
	/* canary as an invalid base64 value */
	"{\"k1\": \"" CANARY "!" CANARY "-0123456789-0123456789\"}",
	/* canary as a base64-looking but mis-padded value */
	"{\"k1\": \"" CANARY CANARY CANARY "A=\"}",
	/* value and id swapped: the id is a key and is never echoed */
	"{\"" CANARY CANARY CANARY CANARY "\": \"k1\"}",
	"{\"" CANARY CANARY CANARY CANARY "\": 7}",
	"{\"" CANARY CANARY CANARY CANARY "\": \"" KA "\", \"k2\": \"" KA "\", \"" CANARY CANARY
	CANARY CANARY "\": \"" KA "\"}",
	/* an id that is a key with base64 punctuation, or too long */
	"{\"" CANARY "+/" CANARY "\": \"" KA "\"}",
	"{\"" CANARY CANARY CANARY CANARY CANARY CANARY CANARY "\": \"" KA "\"}",
	/* JSON broken right inside the key */
	"{\"k1\": \"" CANARY CANARY,
	"{\"k1\": \"" CANARY "\"} " CANARY,
	/* a raw key that is too short */
	CANARY "\n",
	CANARY "-0123456789\r\n",
};

START_TEST(test_keyset_messages_never_carry_keys)
{
	const char *text = canary_texts[_i];
	struct cc_keyset *ks = NULL;
	char err[512] = "";

	ck_assert_int_eq(cc_keyset_parse("src", text, strlen(text), &ks, err, sizeof(err)),
			 CC_EINVAL);
	ck_assert_ptr_null(ks);
	ck_assert_msg(strncmp(err, "src: ", 5) == 0 && strlen(err) > 10, "message '%s'", err);
	/* "Zq9Xw" also catches a prefix of the canary; "WnE5" its base64. */
	ck_assert_msg(!strstr(err, "Zq9Xw") && !strstr(err, "CANARY") && !strstr(err, "WnE5"),
		      "key material in '%s'", err);
}
END_TEST

START_TEST(test_keyset_json_lookup_and_order)
{
	static const char text[] = " \n{\"zz-new\": \"" KB "\", \"a.old_1\": \"" KA "\", \"\": \"" KA
				   "\"}\n";
	struct cc_keyset *ks = NULL;
	char err[256];
	uint8_t ka[32], kb[42];
	const uint8_t *k;
	size_t len = 0;

	for (int i = 0; i < 32; i++)
		ka[i] = (uint8_t)i;
	for (int i = 0; i < 32; i++)
		kb[i] = (uint8_t)(0xe0 + i);
	memcpy(kb + 32, "\xfb\xff\xfe\xfb\xff\xfe\xfb\xff\xfe\x00", 10);

	ck_assert_msg(cc_keyset_parse("src", text, strlen(text), &ks, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(cc_keyset_count(ks), 3);
	ck_assert_str_eq(cc_keyset_id_at(ks, 0), "");
	ck_assert_str_eq(cc_keyset_id_at(ks, 1), "a.old_1");
	ck_assert_str_eq(cc_keyset_id_at(ks, 2), "zz-new");
	ck_assert_ptr_null(cc_keyset_id_at(ks, 3));

	k = cc_keyset_find(ks, "a.old_1", &len);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(len, 32);
	ck_assert_mem_eq(k, ka, 32);
	k = cc_keyset_find(ks, "zz-new", &len);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(len, 42);
	ck_assert_mem_eq(k, kb, 42);
	ck_assert_ptr_nonnull(cc_keyset_find(ks, "", &len));

	len = 77;
	ck_assert_ptr_null(cc_keyset_find(ks, "zz", &len));
	ck_assert_ptr_null(cc_keyset_find(ks, NULL, &len));
	ck_assert_ptr_null(cc_keyset_find(NULL, "zz-new", &len));
	ck_assert_uint_eq(len, 77);
	cc_keyset_free(ks);
	cc_keyset_free(NULL);
	ck_assert_uint_eq(cc_keyset_count(NULL), 0);
}
END_TEST

START_TEST(test_keyset_accepts_every_base64_spelling)
{
	uint8_t key[34];
	char std[64], url[64], spelling[4][80], text[128], err[256];
	size_t n;

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(0xf8 + i * 7); /* produces '+' '/' resp. '-' '_' */
	ck_assert_int_eq(cc_base64_encode(key, sizeof(key), std, sizeof(std), &n), 0);
	ck_assert_int_eq(cc_base64url_encode(key, sizeof(key), url, sizeof(url), &n), 0);
	ck_assert(strpbrk(std, "+/") && strpbrk(url, "-_"));
	snprintf(spelling[0], sizeof(spelling[0]), "%s", std);
	snprintf(spelling[1], sizeof(spelling[1]), "%.*s", (int)strcspn(std, "="), std);
	snprintf(spelling[2], sizeof(spelling[2]), "%s==", url);
	snprintf(spelling[3], sizeof(spelling[3]), "%s", url);
	for (int i = 0; i < 4; i++) {
		struct cc_keyset *ks = NULL;
		const uint8_t *k;
		size_t len = 0;

		snprintf(text, sizeof(text), "{\"k\": \"%s\"}", spelling[i]);
		ck_assert_msg(cc_keyset_parse("src", text, strlen(text), &ks, err, sizeof(err)) == 0,
			      "%s: %s", spelling[i], err);
		k = cc_keyset_find(ks, "k", &len);
		ck_assert_uint_eq(len, sizeof(key));
		ck_assert_mem_eq(k, key, sizeof(key));
		cc_keyset_free(ks);
	}
}
END_TEST

/* Raw files: every trailing '\r' and '\n' goes, everything else is key. */
static const struct {
	const char *text;
	size_t len;
	const char *key;
	size_t keylen;
} raw_cases[] = {
	{"0123456789abcdef0123456789abcdef", 32, "0123456789abcdef0123456789abcdef", 32},
	{"0123456789abcdef0123456789abcdef\n", 33, "0123456789abcdef0123456789abcdef", 32},
	{"0123456789abcdef0123456789abcdef\r\n", 34, "0123456789abcdef0123456789abcdef", 32},
	{"0123456789abcdef0123456789abcdef\n\n", 34, "0123456789abcdef0123456789abcdef", 32},
	{"0123456789abcdef0123456789abcdef\r", 33, "0123456789abcdef0123456789abcdef", 32},
	{"0123456789abcdef0123456789abcdef\r\n\r\n", 36, "0123456789abcdef0123456789abcdef", 32},
	{"0123456789abcdef\n0123456789abcdef \t\n", 36, "0123456789abcdef\n0123456789abcdef \t", 35},
	{"  x123456789abcdef0123456789abcdef", 34, "  x123456789abcdef0123456789abcdef", 34},
	/* Only '{' selects JSON: anything else, a JSON array too, is raw. */
	{"[\"0123456789abcdef0123456789ab\"]", 32, "[\"0123456789abcdef0123456789ab\"]", 32},
	{"\x01\x00\xff{0123456789abcdef0123456789ab", 32,
	 "\x01\x00\xff{0123456789abcdef0123456789ab", 32},
};

START_TEST(test_keyset_raw)
{
	struct cc_keyset *ks = NULL;
	char err[256];
	const uint8_t *k;
	size_t len = 0;

	ck_assert_msg(cc_keyset_parse("src", raw_cases[_i].text, raw_cases[_i].len, &ks, err,
				      sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(cc_keyset_count(ks), 1);
	ck_assert_str_eq(cc_keyset_id_at(ks, 0), "");
	k = cc_keyset_find(ks, "", &len);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(len, raw_cases[_i].keylen);
	ck_assert_mem_eq(k, raw_cases[_i].key, len);
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_keyset_sign_verify_rotation)
{
	static const char text[] = "{\"old\": \"" KA "\", \"new\": \"" KB "\"}";
	static const char msg[] = "v1|new|match|server|slot";
	struct cc_keyset *ks = NULL;
	char err[256];
	uint8_t mac[CC_SHA256_LEN], direct[CC_SHA256_LEN], before[CC_SHA256_LEN];
	const uint8_t *k;
	size_t len;

	ck_assert_int_eq(cc_keyset_parse("src", text, strlen(text), &ks, err, sizeof(err)), 0);
	ck_assert_int_eq(cc_keyset_sign(ks, "new", msg, strlen(msg), mac), 0);
	k = cc_keyset_find(ks, "new", &len);
	cc_hmac_sha256(k, len, msg, strlen(msg), direct);
	ck_assert_mem_eq(mac, direct, sizeof(mac));
	ck_assert(cc_keyset_verify(ks, "new", msg, strlen(msg), mac));
	ck_assert(!cc_keyset_verify(ks, "old", msg, strlen(msg), mac));
	ck_assert(!cc_keyset_verify(ks, "gone", msg, strlen(msg), mac));
	ck_assert(!cc_keyset_verify(ks, NULL, msg, strlen(msg), mac));
	mac[31] ^= 1;
	ck_assert(!cc_keyset_verify(ks, "new", msg, strlen(msg), mac));

	memset(before, 0x5a, sizeof(before));
	memcpy(mac, before, sizeof(mac));
	ck_assert_int_eq(cc_keyset_sign(ks, "gone", msg, strlen(msg), mac), CC_ENOTFOUND);
	ck_assert_mem_eq(mac, before, sizeof(mac));
	cc_keyset_free(ks);
}
END_TEST

START_TEST(test_keyset_err_buffer_optional)
{
	struct cc_keyset *ks = NULL;
	char tiny[8] = "xxxxxxx";

	ck_assert_int_eq(cc_keyset_parse("src", "{}", 2, &ks, NULL, 0), CC_EINVAL);
	ck_assert_int_eq(cc_keyset_parse("src", "{}", 2, &ks, tiny, sizeof(tiny)), CC_EINVAL);
	ck_assert_str_eq(tiny, "src: ke"); /* truncated, still terminated */
	ck_assert_ptr_null(ks);
}
END_TEST

/* ---- key sets: files ------------------------------------------------------------ */

static char tmpdir[256];

static void make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/cc-crypto-XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Writes len bytes to tmpdir/name with mode; returns the path in buf. */
static const char *write_file(const char *name, const void *data, size_t len, mode_t mode,
			      char *buf, size_t buflen)
{
	int fd;

	snprintf(buf, buflen, "%s/%s", tmpdir, name);
	fd = open(buf, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ck_assert_msg(fd >= 0, "open %s: %s", buf, strerror(errno));
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(close(fd), 0);
	return buf;
}

START_TEST(test_keyset_files)
{
	static const char json[] = "{\"k1\": \"" KA "\"}\n";
	static const char raw[] = "0123456789abcdef0123456789abcdef\n";
	char path[512], want[700], err[700];
	struct cc_keyset *ks = NULL;
	size_t len = 0;
	char *big;

	/* World-readable JSON and raw files load. */
	write_file("json", json, strlen(json), 0644, path, sizeof(path));
	ck_assert_msg(cc_keyset_load_file(path, &ks, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_nonnull(cc_keyset_find(ks, "k1", &len));
	ck_assert_uint_eq(len, 32);
	cc_keyset_free(ks);
	ks = NULL;
	write_file("raw", raw, strlen(raw), 0600, path, sizeof(path));
	ck_assert_msg(cc_keyset_load_file(path, &ks, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_nonnull(cc_keyset_find(ks, "", &len));
	ck_assert_uint_eq(len, 32);
	cc_keyset_free(ks);
	ks = NULL;

	/* Content errors name the path. */
	write_file("short", "short\n", 6, 0600, path, sizeof(path));
	ck_assert_int_eq(cc_keyset_load_file(path, &ks, err, sizeof(err)), CC_EINVAL);
	snprintf(want, sizeof(want), "%s: raw key is 5 bytes; at least 32 are required", path);
	ck_assert_str_eq(err, want);
	write_file("empty", "", 0, 0600, path, sizeof(path));
	ck_assert_int_eq(cc_keyset_load_file(path, &ks, err, sizeof(err)), CC_EINVAL);
	snprintf(want, sizeof(want), "%s: key file is empty", path);
	ck_assert_str_eq(err, want);

	/* Missing file, directory, oversized file. */
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	ck_assert_int_eq(cc_keyset_load_file(path, &ks, err, sizeof(err)), CC_EIO);
	snprintf(want, sizeof(want), "%s: cannot open key file: No such file or directory", path);
	ck_assert_str_eq(err, want);
	ck_assert_int_eq(cc_keyset_load_file(tmpdir, &ks, err, sizeof(err)), CC_EIO);
	snprintf(want, sizeof(want), "%s: key file is not a regular file", tmpdir);
	ck_assert_str_eq(err, want);
	big = malloc(CC_KEYSET_MAX_FILE + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, 'k', CC_KEYSET_MAX_FILE + 1);
	write_file("big", big, CC_KEYSET_MAX_FILE + 1, 0600, path, sizeof(path));
	ck_assert_int_eq(cc_keyset_load_file(path, &ks, err, sizeof(err)), CC_ETOOBIG);
	snprintf(want, sizeof(want), "%s: key file is 65537 bytes; at most 65536 are allowed",
		 path);
	ck_assert_str_eq(err, want);
	write_file("max", big, CC_KEYSET_MAX_FILE, 0600, path, sizeof(path));
	ck_assert_msg(cc_keyset_load_file(path, &ks, err, sizeof(err)) == 0, "%s", err);
	cc_keyset_free(ks);
	ks = NULL;
	free(big);

	/* Unreadable (meaningless as root, who reads anything). */
	if (geteuid() != 0) {
		write_file("secret", raw, strlen(raw), 0000, path, sizeof(path));
		ck_assert_int_eq(cc_keyset_load_file(path, &ks, err, sizeof(err)), CC_EIO);
		snprintf(want, sizeof(want), "%s: cannot open key file: Permission denied", path);
		ck_assert_str_eq(err, want);
	}
	ck_assert_ptr_null(ks);
}
END_TEST

START_TEST(test_keyset_file_canary)
{
	static const char text[] = "{\"k1\": \"" CANARY "\"}";
	char path[512], err[700];
	struct cc_keyset *ks = NULL;

	write_file("canary", text, strlen(text), 0600, path, sizeof(path));
	ck_assert_int_eq(cc_keyset_load_file(path, &ks, err, sizeof(err)), CC_EINVAL);
	/* "Zq9XwCANARY" is canonical unpadded base64 of 8 bytes. */
	ck_assert_ptr_nonnull(strstr(err, "key 'k1' is 8 bytes; at least 32 are required"));
	ck_assert_ptr_null(strstr(err, "Zq9Xw"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("crypto");
	TCase *tc = tcase_create("primitives");
	TCase *tk = tcase_create("keyset");
	TCase *tf = tcase_create("keyset_files");

	tcase_add_test(tc, test_init_is_idempotent_across_threads);
	tcase_add_test(tc, test_random_bytes_differ);
	tcase_add_test(tc, test_random_uuid_is_v4_and_distinct);
	tcase_add_loop_test(tc, test_uuid_valid_table, 0, (int)CC_ARRAY_LEN(uuid_cases));
	tcase_add_test(tc, test_uuid_valid_null);
	tcase_add_test(tc, test_random_token);
	tcase_add_loop_test(tc, test_base64_vectors, 0, (int)CC_ARRAY_LEN(b64_vectors));
	tcase_add_test(tc, test_base64_round_trip_all_lengths);
	tcase_add_loop_test(tc, test_base64_refuses_malformed, 0, (int)CC_ARRAY_LEN(b64_bad));
	tcase_add_test(tc, test_sha256_vectors);
	tcase_add_loop_test(tc, test_hmac_rfc4231, 0, (int)CC_ARRAY_LEN(rfc4231));
	tcase_add_test(tc, test_secret_equal);
	suite_add_tcase(s, tc);

	tcase_add_loop_test(tk, test_keyset_refusals, 0, (int)CC_ARRAY_LEN(keyset_bad));
	tcase_add_test(tk, test_keyset_size_and_count_caps);
	tcase_add_test(tk, test_keyset_deep_nesting_refused);
	tcase_add_loop_test(tk, test_keyset_messages_never_carry_keys, 0,
			    (int)CC_ARRAY_LEN(canary_texts));
	tcase_add_test(tk, test_keyset_json_lookup_and_order);
	tcase_add_test(tk, test_keyset_accepts_every_base64_spelling);
	tcase_add_loop_test(tk, test_keyset_raw, 0, (int)CC_ARRAY_LEN(raw_cases));
	tcase_add_test(tk, test_keyset_sign_verify_rotation);
	tcase_add_test(tk, test_keyset_err_buffer_optional);
	suite_add_tcase(s, tk);

	tcase_add_unchecked_fixture(tf, make_tmpdir, remove_tmpdir);
	tcase_add_test(tf, test_keyset_files);
	tcase_add_test(tf, test_keyset_file_canary);
	suite_add_tcase(s, tf);
	return cc_test_run_suite(s);
}
