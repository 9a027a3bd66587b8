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

#include "cc.h"

#define CC_JSON_DEFAULT_MAX_DEPTH 16

struct cc_json_error {
	char field[64];    /* offending field ("" when the whole document) */
	char message[192]; /* human sentence naming the problem */
};

/*
 * Parses len bytes of text (need not be NUL-terminated). Refuses: more than
 * max_bytes (CC_ETOOBIG), nesting deeper than max_depth, invalid JSON,
 * trailing garbage, and embedded NUL bytes (CC_EINVAL). On success *out is
 * the tree (caller frees); on failure *out is untouched and err says why.
 */
int cc_json_parse(const char *text, size_t len, size_t max_bytes, int max_depth, cJSON **out,
		  struct cc_json_error *err) CC_MUST_CHECK;

/* Parses and requires the top level to be an object. */
int cc_json_parse_object(const char *text, size_t len, size_t max_bytes, int max_depth,
			 cJSON **out, struct cc_json_error *err) CC_MUST_CHECK;

/*
 * Typed readers over one field of an object. When the field is absent:
 * required -> CC_EINVAL ("field 'x' is required"), optional -> CC_ENOTFOUND
 * and *out untouched. Present with the wrong type or out of range ->
 * CC_EINVAL naming the field, the expected type and the range.
 */
int cc_json_get_string(const cJSON *obj, const char *field, bool required, size_t min_len,
		       size_t max_len, const char **out, struct cc_json_error *err) CC_MUST_CHECK;
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
 * allowed (CC_EINVAL naming the first unknown field).
 */
int cc_json_only_fields(const cJSON *obj, const char *const *allowed,
			struct cc_json_error *err) CC_MUST_CHECK;

/* Prints compactly; malloc'd string the caller frees, or NULL on OOM. */
char *cc_json_print(const cJSON *item);

/* Fills err (either pointer may be NULL for a no-op). */
void cc_json_error_set(struct cc_json_error *err, const char *field, const char *fmt, ...)
	CC_PRINTF(3, 4);

#endif
