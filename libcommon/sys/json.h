/*
 * json.h - bounded JSON parsing and typed field readers over cJSON.
 *
 * Input from the network is parsed only through cc_json_parse(), which
 * refuses text over a byte cap or nested deeper than a depth cap before
 * cJSON sees it. The typed readers report the offending field by name in a
 * struct cc_json_error, so a 400/422 answer can say exactly what was wrong.
 *
 * Ownership: cc_json_parse() hands the caller a cJSON tree to free with
 * cJSON_Delete(). Readers return pointers into the tree (valid while the tree
 * lives) unless they say they copy.
 */
#ifndef CC_JSON_H
#define CC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sys/cc.h"

#define CC_JSON_DEFAULT_MAX_DEPTH 16

struct cc_json_error {
	char field[64];    /* offending field ("" when the whole document) */
	char message[192]; /* human sentence naming the problem */
};

/*
 * Parses len bytes of text (need not be NUL-terminated; copied, so the
 * caller's buffer is not kept). Refuses more than max_bytes (CC_ETOOBIG,
 * checked before anything else is read). Refuses with CC_EINVAL: nesting
 * deeper than max_depth (each '[' or '{' is one level, so {"a":[1]} has
 * depth 2 and max_depth 0 allows only scalars), invalid JSON (including raw
 * control characters inside strings), empty text, data after the value
 * other than whitespace, and NUL bytes, raw or as a \u0000 escape (cJSON
 * would silently cut the string there). err->message names the byte offset
 * ("invalid JSON at byte 17"); err->field is "". Any top-level value is
 * accepted. CC_ENOMEM if the working copy cannot be allocated. On success
 * *out is the tree (caller frees with cJSON_Delete); on failure *out is
 * untouched.
 */
int cc_json_parse(const char *text, size_t len, size_t max_bytes, int max_depth, cJSON **out,
		  struct cc_json_error *err) CC_MUST_CHECK;

/* As cc_json_parse, and requires the top level to be an object (CC_EINVAL). */
int cc_json_parse_object(const char *text, size_t len, size_t max_bytes, int max_depth,
			 cJSON **out, struct cc_json_error *err) CC_MUST_CHECK;

/*
 * Typed readers over one field of an object (member names are compared
 * case-sensitively; the first of duplicates wins, see cc_json_only_fields).
 * When the field is absent: required -> CC_EINVAL ("field 'x' is
 * required"), optional -> CC_ENOTFOUND with *out and err untouched. Present
 * with the wrong type or out of range -> CC_EINVAL with err->field = the
 * field and a message naming the expected type and range, e.g. "field
 * 'revision' must be an integer between 0 and 2147483647". JSON null is a
 * value of the wrong type, not an absent field. obj not an object ->
 * CC_EINVAL. *out is written only on success.
 *
 * get_string: length in bytes within [min_len, max_len] and valid UTF-8;
 *   control characters are the caller's policy. *out points into the tree.
 * get_int: an integral number within [min, max] and within +-(2^53 - 1),
 *   the integers a double holds exactly (1.0 and 1e2 are integers; 1.5 is
 *   not). The message states the range actually enforced.
 * get_double: a finite number within [min, max].
 * get_array: at most max_items elements (counted only up to the cap).
 */
int cc_json_get_string(const cJSON *obj, const char *field, bool required, size_t min_len,
		       size_t max_len, const char **out, struct cc_json_error *err) CC_MUST_CHECK;
/*
 * As cc_json_get_string, but min_chars..max_chars count characters (Unicode
 * code points), as JSON Schema's minLength/maxLength do: 200 "é" (400
 * bytes) fit a maxLength of 256. The bytes are at most 4 * max_chars.
 */
int cc_json_get_text(const cJSON *obj, const char *field, bool required, size_t min_chars,
		     size_t max_chars, const char **out, struct cc_json_error *err) CC_MUST_CHECK;
int cc_json_get_int(const cJSON *obj, const char *field, bool required, int64_t min, int64_t max,
		    int64_t *out, struct cc_json_error *err) CC_MUST_CHECK;
int cc_json_get_bool(const cJSON *obj, const char *field, bool required, bool *out,
		     struct cc_json_error *err) CC_MUST_CHECK;
int cc_json_get_double(const cJSON *obj, const char *field, bool required, double min, double max,
		       double *out, struct cc_json_error *err) CC_MUST_CHECK;
int cc_json_get_object(const cJSON *obj, const char *field, bool required, const cJSON **out,
		       struct cc_json_error *err) CC_MUST_CHECK;
int cc_json_get_array(const cJSON *obj, const char *field, bool required, size_t max_items,
		      const cJSON **out, struct cc_json_error *err) CC_MUST_CHECK;

/*
 * Refuses any member of obj whose name is not in the NULL-terminated list
 * allowed, and any name that appears twice (CC_EINVAL naming the first
 * unknown or repeated field; a client's name is reduced to printable ASCII
 * in err). obj not an object -> CC_EINVAL. Cost is bounded by the size of
 * allowed times the number of members.
 */
int cc_json_only_fields(const cJSON *obj, const char *const *allowed,
			struct cc_json_error *err) CC_MUST_CHECK;

/* Prints compactly; malloc'd string the caller frees, or NULL on OOM or NULL item. */
char *cc_json_print(const cJSON *item);

/*
 * Fills err (NULL err or fmt: no-op; NULL field: ""). The field is cut to
 * 63 bytes and reduced to printable ASCII ('?' for any other byte).
 */
void cc_json_error_set(struct cc_json_error *err, const char *field, const char *fmt, ...)
	CC_PRINTF(3, 4);

#endif
