/*
 * charset.h - the one validator for "only these characters".
 *
 * Names, ids, tokens and keys that come from input or configuration are
 * checked against a small ASCII set: region names [a-z0-9-], an
 * Idempotency-Key [A-Za-z0-9_-], a bearer token [A-Za-z0-9-._~+/=], ... A
 * set is described by classes (CC_CHARSET_LOWER | CC_CHARSET_DIGIT) plus a
 * string of extra characters ("-"), so a call reads like the rule it
 * enforces:
 *
 *     cc_charset_valid(key, 128, CC_CHARSET_ALNUM, "_-")
 *
 * Bytes >= 0x80 and NUL are never in a set. Nothing allocates; everything
 * is thread-safe; extra may be NULL (no extra characters).
 */
#ifndef CC_CHARSET_H
#define CC_CHARSET_H

#include <stdbool.h>
#include <stddef.h>

#define CC_CHARSET_LOWER 0x1u /* a-z */
#define CC_CHARSET_UPPER 0x2u /* A-Z */
#define CC_CHARSET_DIGIT 0x4u /* 0-9 */
#define CC_CHARSET_ALNUM (CC_CHARSET_LOWER | CC_CHARSET_UPPER | CC_CHARSET_DIGIT)

/* True when the byte c is in the set (classes plus the bytes of extra). */
bool cc_charset_has(char c, unsigned classes, const char *extra);

/* The number of leading bytes of s (len bytes; NULL only with len 0) in the set. */
size_t cc_charset_span(const char *s, size_t len, unsigned classes, const char *extra);

/* True when every one of the len bytes of s is in the set (so also for len 0). */
bool cc_charset_all(const char *s, size_t len, unsigned classes, const char *extra);

/*
 * The usual rule for a name: s is a NUL-terminated string of 1 to max_len
 * bytes, all in the set. NULL and "" are invalid; a longer string is
 * invalid without being read past max_len + 1 bytes.
 */
bool cc_charset_valid(const char *s, size_t max_len, unsigned classes, const char *extra);

#endif
