#include "sys/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/utf8.h"

#include "sys/banned.h"

/* Integers beyond this magnitude are not exactly representable in a double. */
#define SAFE_INT_MAX 9007199254740991LL /* 2^53 - 1 */

/*
 * Copies src into dst (cap bytes, NUL included) keeping only printable
 * ASCII: a field name may come from the client (an unknown member), and the
 * error is echoed in responses and logs as is.
 */
static void copy_printable(char *dst, size_t cap, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i < cap - 1; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
	}
	dst[i] = '\0';
}

void cc_json_error_set(struct cc_json_error *err, const char *field, const char *fmt, ...)
{
	va_list ap;
	if (!err || !fmt)
		return;
	copy_printable(err->field, sizeof err->field, field);
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
}

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_number_char(char c)
{
	return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/*
 * True when the n bytes at s are exactly one RFC 8259 number:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?  cJSON hands such text to
 * strtod, which would also take "01", "1." or "-.5"-like forms.
 */
static bool valid_number(const char *s, size_t n)
{
	size_t i = 0;
	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0') {
		i++;
	} else if (i < n && s[i] >= '1' && s[i] <= '9') {
		while (i < n && is_digit(s[i]))
			i++;
	} else {
		return false;
	}
	if (i < n && s[i] == '.') {
		if (++i >= n || !is_digit(s[i]))
			return false;
		while (i < n && is_digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !is_digit(s[i]))
			return false;
		while (i < n && is_digit(s[i]))
			i++;
	}
	return i == n;
}

/*
 * Refuses what cJSON would accept or mishandle, before it allocates
 * anything: NUL bytes (raw, or \u0000 which cJSON would silently cut a
 * string at), raw control characters and malformed numbers (invalid JSON
 * that cJSON lets through) and nesting deeper than max_depth. Brackets inside strings do
 * not count; escapes are skipped so "\"[" stays inside its string.
 */
static int prescan(const char *text, size_t len, int max_depth, struct cc_json_error *err)
{
	int depth = 0;
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\0') {
			cc_json_error_set(err, "", "JSON text contains a NUL byte at byte %zu", i);
			return CC_EINVAL;
		}
		if (in_string) {
			if (c == '"') {
				in_string = false;
			} else if (c < 0x20) {
				cc_json_error_set(err, "",
						  "invalid JSON at byte %zu: control character in a string", i);
				return CC_EINVAL;
			} else if (c == '\\' && i + 1 < len) {
				if (text[i + 1] == 'u' && len - i >= 6 && memcmp(text + i + 2, "0000", 4) == 0) {
					cc_json_error_set(err, "",
							  "JSON text contains a \\u0000 escape at byte %zu", i);
					return CC_EINVAL;
				}
				i++; /* the escaped character cannot end the string */
			}
		} else if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			if (++depth > max_depth) {
				cc_json_error_set(err, "", "JSON nested deeper than %d levels at byte %zu",
						  max_depth, i);
				return CC_EINVAL;
			}
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
		} else if (c == '-' || is_digit((char)c)) {
			/* Not strspn: text need not be NUL-terminated. */
			size_t run = 1;
			while (i + run < len && is_number_char(text[i + run]))
				run++;
			if (!valid_number(text + i, run)) {
				cc_json_error_set(err, "", "invalid JSON at byte %zu: malformed number", i);
				return CC_EINVAL;
			}
			i += run - 1;
		}
	}
	return 0;
}

int cc_json_parse(const char *text, size_t len, size_t max_bytes, int max_depth, cJSON **out,
		  struct cc_json_error *err)
{
	const char *end = NULL;
	char *copy = NULL;
	cJSON *tree = NULL;
	int rc;

	if (len > max_bytes) {
		cc_json_error_set(err, "", "JSON text is %zu bytes, more than the limit of %zu", len,
				  max_bytes);
		return CC_ETOOBIG;
	}
	if (!text && len > 0) {
		cc_json_error_set(err, "", "JSON text is missing");
		return CC_EINVAL;
	}
	size_t first = 0;
	while (first < len && is_json_space(text[first]))
		first++;
	if (first == len) {
		cc_json_error_set(err, "", "JSON text is empty");
		return CC_EINVAL;
	}
	rc = prescan(text, len, max_depth, err);
	if (rc)
		return rc;

	/* cJSON wants a terminator; a copy also lets callers pass MHD's buffers. */
	copy = malloc(len + 1);
	if (!copy) {
		cc_json_error_set(err, "", "out of memory parsing JSON");
		return CC_ENOMEM;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	/*
	 * Trailing data is checked here rather than with cJSON's
	 * require_null_terminated so the message can tell "garbage after a
	 * valid value" from "invalid value", each with its byte offset.
	 */
	tree = cJSON_ParseWithLengthOpts(copy, len + 1, &end, false);
	if (!tree) {
		size_t at = end && end >= copy && end <= copy + len ? (size_t)(end - copy) : 0;
		cc_json_error_set(err, "", "invalid JSON at byte %zu%s", at,
				  at == len ? " (end of text)" : "");
		rc = CC_EINVAL;
		goto out_free_copy;
	}
	size_t at = (size_t)(end - copy);
	while (at < len && is_json_space(copy[at]))
		at++;
	if (at < len) {
		cc_json_error_set(err, "", "invalid JSON at byte %zu: unexpected data after the value",
				  at);
		rc = CC_EINVAL;
		goto out_free_tree;
	}
	*out = tree;
	tree = NULL;
	rc = 0;
out_free_tree:
	cJSON_Delete(tree);
out_free_copy:
	free(copy);
	return rc;
}

int cc_json_parse_object(const char *text, size_t len, size_t max_bytes, int max_depth,
			 cJSON **out, struct cc_json_error *err)
{
	cJSON *tree = NULL;
	int rc = cc_json_parse(text, len, max_bytes, max_depth, &tree, err);
	if (rc)
		return rc;
	if (!cJSON_IsObject(tree)) {
		cJSON_Delete(tree);
		cc_json_error_set(err, "", "JSON text must be an object");
		return CC_EINVAL;
	}
	*out = tree;
	return 0;
}

/*
 * The common first step of every reader: finds field in obj. Returns 0 with
 * *item set, CC_ENOTFOUND (optional and absent, err untouched) or CC_EINVAL
 * (required and absent, or obj is not an object).
 */
static int find_field(const cJSON *obj, const char *field, bool required, const cJSON **item,
		      struct cc_json_error *err)
{
	if (!field) {
		cc_json_error_set(err, "", "no field name given");
		return CC_EINVAL;
	}
	if (!cJSON_IsObject(obj)) {
		cc_json_error_set(err, field, "field '%s' cannot be read: its container is not an object",
				  field);
		return CC_EINVAL;
	}
	*item = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (*item)
		return 0;
	if (!required)
		return CC_ENOTFOUND;
	cc_json_error_set(err, field, "field '%s' is required", field);
	return CC_EINVAL;
}

int cc_json_get_string(const cJSON *obj, const char *field, bool required, size_t min_len,
		       size_t max_len, const char **out, struct cc_json_error *err)
{
	const cJSON *item;
	int rc = find_field(obj, field, required, &item, err);
	if (rc)
		return rc;
	const char *s = cJSON_GetStringValue(item);
	size_t n = s ? strlen(s) : 0;
	if (!s || n < min_len || n > max_len) {
		cc_json_error_set(err, field, "field '%s' must be a string of %zu to %zu bytes", field,
				  min_len, max_len);
		return CC_EINVAL;
	}
	if (!cc_utf8_valid(s, n)) {
		cc_json_error_set(err, field, "field '%s' must be valid UTF-8", field);
		return CC_EINVAL;
	}
	*out = s;
	return 0;
}

int cc_json_get_text(const cJSON *obj, const char *field, bool required, size_t min_chars,
		     size_t max_chars, const char **out, struct cc_json_error *err)
{
	const cJSON *item;
	size_t chars = 0, n;
	int rc = find_field(obj, field, required, &item, err);
	if (rc)
		return rc;
	const char *s = cJSON_GetStringValue(item);
	n = s ? strlen(s) : 0;
	if (s && !cc_utf8_valid(s, n)) {
		cc_json_error_set(err, field, "field '%s' must be valid UTF-8", field);
		return CC_EINVAL;
	}
	/* Valid UTF-8: every byte that is not a continuation byte starts a character. */
	for (size_t i = 0; i < n; i++)
		chars += ((unsigned char)s[i] & 0xc0) != 0x80;
	if (!s || chars < min_chars || chars > max_chars) {
		cc_json_error_set(err, field, "field '%s' must be a string of %zu to %zu characters", field,
				  min_chars, max_chars);
		return CC_EINVAL;
	}
	*out = s;
	return 0;
}

int cc_json_get_int(const cJSON *obj, const char *field, bool required, int64_t min, int64_t max,
		    int64_t *out, struct cc_json_error *err)
{
	const cJSON *item;
	int rc = find_field(obj, field, required, &item, err);
	if (rc)
		return rc;
	/* The range a message can promise: the caller's, within what a double holds exactly. */
	int64_t lo = min < -SAFE_INT_MAX ? -SAFE_INT_MAX : min;
	int64_t hi = max > SAFE_INT_MAX ? SAFE_INT_MAX : max;
	double d = cJSON_IsNumber(item) ? item->valuedouble : NAN;
	/* Compared as doubles (lo and hi are exact there) so the cast happens only in range. */
	if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi) {
		cc_json_error_set(err, field,
				  "field '%s' must be an integer between %lld and %lld", field,
				  (long long)lo, (long long)hi);
		return CC_EINVAL;
	}
	*out = (int64_t)d;
	return 0;
}

int cc_json_get_bool(const cJSON *obj, const char *field, bool required, bool *out,
		     struct cc_json_error *err)
{
	const cJSON *item;
	int rc = find_field(obj, field, required, &item, err);
	if (rc)
		return rc;
	if (!cJSON_IsBool(item)) {
		cc_json_error_set(err, field, "field '%s' must be true or false", field);
		return CC_EINVAL;
	}
	*out = cJSON_IsTrue(item);
	return 0;
}

int cc_json_get_double(const cJSON *obj, const char *field, bool required, double min, double max,
		       double *out, struct cc_json_error *err)
{
	const cJSON *item;
	int rc = find_field(obj, field, required, &item, err);
	if (rc)
		return rc;
	double d = cJSON_IsNumber(item) ? item->valuedouble : NAN;
	/* !(a <= b) rather than a > b so NaN (and 1e999 read as inf) is refused. */
	if (!isfinite(d) || !(d >= min && d <= max)) {
		cc_json_error_set(err, field, "field '%s' must be a number between %g and %g", field,
				  min, max);
		return CC_EINVAL;
	}
	*out = d;
	return 0;
}

int cc_json_get_object(const cJSON *obj, const char *field, bool required, const cJSON **out,
		       struct cc_json_error *err)
{
	const cJSON *item;
	int rc = find_field(obj, field, required, &item, err);
	if (rc)
		return rc;
	if (!cJSON_IsObject(item)) {
		cc_json_error_set(err, field, "field '%s' must be an object", field);
		return CC_EINVAL;
	}
	*out = item;
	return 0;
}

int cc_json_get_array(const cJSON *obj, const char *field, bool required, size_t max_items,
		      const cJSON **out, struct cc_json_error *err)
{
	const cJSON *item;
	int rc = find_field(obj, field, required, &item, err);
	if (rc)
		return rc;
	size_t count = 0;
	if (cJSON_IsArray(item)) {
		/* Count only as far as the cap: the length itself is client-chosen. */
		for (const cJSON *e = item->child; e && count <= max_items; e = e->next)
			count++;
	}
	if (!cJSON_IsArray(item) || count > max_items) {
		cc_json_error_set(err, field, "field '%s' must be an array of at most %zu items",
				  field, max_items);
		return CC_EINVAL;
	}
	*out = item;
	return 0;
}

/* Index of name in the NULL-terminated list, or -1. */
static long allowed_index(const char *const *allowed, const char *name)
{
	for (long i = 0; allowed && allowed[i]; i++)
		if (strcmp(allowed[i], name) == 0)
			return i;
	return -1;
}

/*
 * Duplicates are refused as well: cJSON keeps both and the readers see only
 * the first, while a proxy or a log might see the last. Every member before
 * a duplicate is distinct and allowed, so looking back is bounded by the
 * length of the allowed list, not by the client.
 */
int cc_json_only_fields(const cJSON *obj, const char *const *allowed, struct cc_json_error *err)
{
	if (!cJSON_IsObject(obj)) {
		cc_json_error_set(err, "", "expected a JSON object");
		return CC_EINVAL;
	}
	for (const cJSON *m = obj->child; m; m = m->next) {
		const char *name = m->string ? m->string : "";
		if (allowed_index(allowed, name) < 0) {
			char shown[sizeof err->field];
			/* Quote a sanitised copy, never the raw client bytes. */
			copy_printable(shown, sizeof shown, name);
			cc_json_error_set(err, shown, "unknown field '%s'", shown);
			return CC_EINVAL;
		}
		for (const cJSON *p = obj->child; p != m; p = p->next) {
			if (p->string && strcmp(p->string, name) == 0) {
				cc_json_error_set(err, name, "duplicate field '%s'", name);
				return CC_EINVAL;
			}
		}
	}
	return 0;
}

char *cc_json_print(const cJSON *item)
{
	return item ? cJSON_PrintUnformatted(item) : NULL;
}
