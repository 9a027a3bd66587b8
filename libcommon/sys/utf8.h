/*
 * utf8.h - strict UTF-8 decoding (RFC 3629) for validators and escapers.
 *
 * "Well-formed" means the shortest encoding of a scalar value: no overlong
 * forms, no UTF-16 surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
 * The module owns no memory and keeps no state; every call is thread-safe.
 */
#ifndef CC_UTF8_H
#define CC_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the sequence at s, reading at most avail bytes. Returns its length
 * (1 to 4) and stores the code point in *cp, or returns 0 (and leaves *cp
 * alone) when the bytes there are not a well-formed sequence, including a
 * sequence cut short by avail. avail 0 returns 0. NUL decodes as U+0000.
 */
size_t cc_utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp);

/* True when the len bytes at s are well-formed UTF-8 (len 0: true). */
bool cc_utf8_valid(const char *s, size_t len);

#endif
