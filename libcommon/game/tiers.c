/*
 * tiers.c - tier bands: the compiled default, lookup, validation and the
 * parser of stored rows. See tiers.h.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "game/tiers.h"

#include "sys/charset.h"
#include "sys/banned.h"

/* Seeded into tier_bands by migrations/0004_tier_bands.up.sql: keep both equal
 * (tests/integration/test_tiers.c compares them). */
static const struct cc_tier_band default_bands[] = {
	{ "BRONZE", 0 },      { "SILVER", 1200 },  { "GOLD", 1500 },
	{ "PLATINUM", 1800 }, { "DIAMOND", 2100 }, { "CHAMPION", 2400 },
};

/* A quoted, escaped name: '"' + up to CC_TIER_NAME_MAX bytes as \xNN + '"...' + NUL. */
#define QUOTED_MAX (4 * CC_TIER_NAME_MAX + 8)

const struct cc_tier_band *cc_tier_default_bands(size_t *n)
{
	*n = CC_ARRAY_LEN(default_bands);
	return default_bands;
}

const char *cc_tier_for(const struct cc_tier_band *bands, size_t n, double rating, long ranked_games)
{
	if (ranked_games < CC_TIER_PROVISIONAL_GAMES)
		return "PROVISIONAL";
	const char *name = bands[0].name;
	for (size_t i = 0; i < n && rating >= bands[i].min_rating; i++)
		name = bands[i].name;
	return name;
}

/* The problems found so far, joined with "; " into the caller's buffer. */
struct problems {
	char *buf;   /* caller's err, may be NULL */
	size_t len;  /* its size */
	size_t used; /* bytes written, < len */
	int count;   /* problems found, written or not */
};

static void problem(struct problems *p, const char *fmt, ...) CC_PRINTF(2, 3);

static void problem(struct problems *p, const char *fmt, ...)
{
	if (p->buf && p->len > 0 && p->used + 1 < p->len) {
		if (p->count > 0)
			p->used += (size_t)snprintf(p->buf + p->used, p->len - p->used, "; ");
		if (p->used + 1 < p->len) {
			va_list ap;
			va_start(ap, fmt);
			int w = vsnprintf(p->buf + p->used, p->len - p->used, fmt, ap);
			va_end(ap);
			p->used += w > 0 ? (size_t)w : 0;
		}
		if (p->used >= p->len)
			p->used = p->len - 1; /* truncated: the buffer is full */
	}
	p->count++;
}

/* Writes name (at most max bytes, stopping at NUL) quoted into out, with
 * '"', '\\', control and non-ASCII bytes as \xNN, and "..." when cut. */
static const char *quote(const char *name, size_t max, char out[QUOTED_MAX])
{
	size_t o = 0, i = 0;
	out[o++] = '"';
	for (; i < max && i < CC_TIER_NAME_MAX && name[i]; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, QUOTED_MAX - o, "\\x%02x", c);
	}
	out[o++] = '"';
	if (i < max && name[i])
		o += (size_t)snprintf(out + o, QUOTED_MAX - o, "...");
	out[o] = '\0';
	return out;
}

static bool name_chars_valid(const char *name)
{
	return cc_charset_all(name, strlen(name), CC_CHARSET_UPPER | CC_CHARSET_DIGIT, "_");
}

/* Records every problem of band i, including clashes with bands before it. */
static void check_band(struct problems *p, const struct cc_tier_band *bands, size_t i)
{
	const struct cc_tier_band *b = &bands[i];
	char q[QUOTED_MAX], q2[QUOTED_MAX];
	size_t len = strnlen(b->name, sizeof(b->name));
	quote(b->name, sizeof(b->name), q);
	if (len > CC_TIER_NAME_MAX)
		problem(p, "band %zu %s: name longer than %d bytes", i + 1, q, CC_TIER_NAME_MAX);
	else if (len == 0)
		problem(p, "band %zu: empty name", i + 1);
	else if (strcasecmp(b->name, "PROVISIONAL") == 0)
		problem(p, "band %zu %s: PROVISIONAL is a status, not a band", i + 1, q);
	else if (!name_chars_valid(b->name))
		problem(p, "band %zu %s: a name may hold only A-Z, 0-9 and _", i + 1, q);
	if (!isfinite(b->min_rating))
		problem(p, "band %zu %s: threshold %g is not a finite number", i + 1, q, b->min_rating);
	for (size_t j = 0; j < i; j++) {
		if (len > 0 && strncmp(bands[j].name, b->name, sizeof(b->name)) == 0)
			problem(p, "bands %zu and %zu are both named %s", j + 1, i + 1, q);
		if (bands[j].min_rating == b->min_rating)
			problem(p, "bands %s and %s share the threshold %g",
				quote(bands[j].name, sizeof(bands[j].name), q2), q, b->min_rating);
	}
	/* cc_tier_for walks the list upwards; equal thresholds are reported above. */
	if (i > 0 && b->min_rating < bands[i - 1].min_rating)
		problem(p, "band %zu %s: threshold %g is below the previous band's %g (bands must ascend)", i + 1, q,
			b->min_rating, bands[i - 1].min_rating);
}

int cc_tier_bands_validate(const struct cc_tier_band *bands, size_t n, char *err, size_t errlen)
{
	struct problems p = { err, errlen, 0, 0 };
	if (err && errlen > 0)
		err[0] = '\0';
	if (!bands || n == 0)
		problem(&p, "no bands");
	else if (n > CC_TIER_BANDS_MAX)
		problem(&p, "%zu bands, more than %d", n, CC_TIER_BANDS_MAX);
	else
		for (size_t i = 0; i < n; i++)
			check_band(&p, bands, i);
	return p.count > 0 ? CC_EINVAL : 0;
}

/* Copies row `row` (name and min_rating as text, NULL for SQL NULL) into *band, recording what is wrong. */
static void parse_row(struct problems *p, size_t row, const char *name, const char *rating, struct cc_tier_band *band)
{
	char q[QUOTED_MAX];
	if (!name)
		problem(p, "row %zu: name is NULL", row + 1);
	else if (strlen(name) > CC_TIER_NAME_MAX)
		problem(p, "row %zu %s: name longer than %d bytes", row + 1, quote(name, SIZE_MAX, q),
			CC_TIER_NAME_MAX);
	else
		memcpy(band->name, name, strlen(name) + 1);
	if (!rating) {
		problem(p, "row %zu: min_rating is NULL", row + 1);
		return;
	}
	char *end;
	errno = 0;
	band->min_rating = strtod(rating, &end);
	if (end == rating || *end != '\0' || errno == ERANGE)
		problem(p, "row %zu: min_rating %.40s is not a number", row + 1, rating);
}

int cc_tier_bands_parse(size_t rows, const char *const names[], const char *const ratings[],
			struct cc_tier_band **out, size_t *n, char *err, size_t errlen)
{
	struct problems p = { err, errlen, 0, 0 };
	if (err && errlen > 0)
		err[0] = '\0';
	if (rows > CC_TIER_BANDS_MAX) {
		problem(&p, "tier_bands has more than %d rows", CC_TIER_BANDS_MAX);
		return CC_EINVAL;
	}
	/* SPEC 9: an empty table means the compiled default. */
	size_t count = rows > 0 ? rows : CC_ARRAY_LEN(default_bands);
	struct cc_tier_band *bands = calloc(count, sizeof(*bands));
	if (!bands) {
		problem(&p, "out of memory reading tier_bands");
		return CC_ENOMEM;
	}
	if (rows == 0) {
		memcpy(bands, default_bands, sizeof(default_bands));
		goto out_done;
	}
	for (size_t i = 0; i < rows; i++)
		parse_row(&p, i, names[i], ratings[i], &bands[i]);
	/* Rows that could not be read make validating the rest misleading. */
	int rc = p.count > 0 ? CC_EINVAL : cc_tier_bands_validate(bands, rows, err, errlen);
	if (rc != 0) {
		free(bands);
		return rc;
	}
out_done:
	*out = bands;
	*n = count;
	return 0;
}
