/* Character-set validation (charset.h). */
#include "sys/charset.h"

#include <string.h>

#include "sys/banned.h"

bool cc_charset_has(char c, unsigned classes, const char *extra)
{
	/* Spelled out, not <ctype.h>: the locale must never widen a set. */
	if ((classes & CC_CHARSET_LOWER) && c >= 'a' && c <= 'z')
		return true;
	if ((classes & CC_CHARSET_UPPER) && c >= 'A' && c <= 'Z')
		return true;
	if ((classes & CC_CHARSET_DIGIT) && c >= '0' && c <= '9')
		return true;
	/* strchr finds the terminator for c == '\0': NUL is never in a set. */
	return c != '\0' && extra && strchr(extra, c) != NULL;
}

size_t cc_charset_span(const char *s, size_t len, unsigned classes, const char *extra)
{
	size_t i = 0;
	while (i < len && cc_charset_has(s[i], classes, extra))
		i++;
	return i;
}

bool cc_charset_all(const char *s, size_t len, unsigned classes, const char *extra)
{
	return cc_charset_span(s, len, classes, extra) == len;
}

bool cc_charset_valid(const char *s, size_t max_len, unsigned classes, const char *extra)
{
	size_t n = s ? strnlen(s, max_len + 1) : 0;
	return n >= 1 && n <= max_len && cc_charset_all(s, n, classes, extra);
}
