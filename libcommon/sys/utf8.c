#include "sys/utf8.h"

#include "sys/banned.h"

/* True when b is a continuation byte 10xxxxxx. */
static bool is_cont(unsigned char b)
{
	return (b & 0xC0) == 0x80;
}

size_t cc_utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp)
{
	if (avail == 0)
		return 0;
	unsigned char b0 = s[0];
	if (b0 < 0x80) {
		*cp = b0;
		return 1;
	}
	/*
	 * The second byte's legal range depends on the lead byte: that is
	 * where overlongs (E0, F0), surrogates (ED) and values past U+10FFFF
	 * (F4) are excluded (RFC 3629 section 4).
	 */
	size_t n;
	unsigned char lo = 0x80, hi = 0xBF;
	uint32_t c;
	if (b0 >= 0xC2 && b0 <= 0xDF) {
		n = 2;
		c = b0 & 0x1F;
	} else if (b0 >= 0xE0 && b0 <= 0xEF) {
		n = 3;
		c = b0 & 0x0F;
		if (b0 == 0xE0)
			lo = 0xA0;
		else if (b0 == 0xED)
			hi = 0x9F;
	} else if (b0 >= 0xF0 && b0 <= 0xF4) {
		n = 4;
		c = b0 & 0x07;
		if (b0 == 0xF0)
			lo = 0x90;
		else if (b0 == 0xF4)
			hi = 0x8F;
	} else {
		return 0; /* continuation byte, C0/C1 overlong lead, F5..FF */
	}
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (!is_cont(s[i]))
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	*cp = c;
	return n;
}

bool cc_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	uint32_t cp;
	while (i < len) {
		size_t n = cc_utf8_decode(p + i, len - i, &cp);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}
