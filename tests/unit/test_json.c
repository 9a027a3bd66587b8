/*
 * The json module: cc_json_parse refuses oversize, deep, malformed and
 * NUL-carrying text before or instead of cJSON; the typed readers name the
 * offending field and the expected type and range.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/json.h"
#include "support.h"

#include "sys/banned.h"

/* A pointer value no parse ever returns: proves *out is untouched on failure. */
static cJSON sentinel_node;
#define SENTINEL (&sentinel_node)

static const struct parse_case {
	const char *text;
	size_t len; /* 0: strlen(text) */
	size_t max_bytes;
	int max_depth;
	int rc;
	const char *message; /* exact expected err.message on failure */
} parse_cases[] = {
	{ "{\"a\":1}", 0, 100, 16, 0, NULL },
	{ "1", 0, 100, 0, 0, NULL }, /* scalars need no depth */
	{ " [1, -0.5e+3, 0, \"x\"] \r\n", 0, 100, 1, 0, NULL },
	/* not terminated: only len bytes count */
	{ "{\"a\":1}GARBAGE", 7, 100, 16, 0, NULL },
	{ "1234567890", 10, 10, 16, 0, NULL }, /* exactly at the cap */
	{ "12345678901", 11, 10, 16, CC_ETOOBIG, "JSON text is 11 bytes, more than the limit of 10" },
	{ "", 0, 100, 16, CC_EINVAL, "JSON text is empty" },
	{ " \n\t", 0, 100, 16, CC_EINVAL, "JSON text is empty" },
	{ "{\"a\":1} x", 0, 100, 16, CC_EINVAL,
	  "invalid JSON at byte 8: unexpected data after the value" },
	{ "{\"a\":1}{}", 0, 100, 16, CC_EINVAL,
	  "invalid JSON at byte 7: unexpected data after the value" },
	{ "{\"a\":}", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 5" },
	{ "{\"a\":1,}", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 8 (end of text)" },
	{ "[1,2", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 4 (end of text)" },
	{ "{'a':1}", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 2" },
	{ "NaN", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 0" },
	{ "[01]", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 1: malformed number" },
	{ "[1.]", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 1: malformed number" },
	{ "{\"a\":-}", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 5: malformed number" },
	{ "\"\\ud800\"", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 1" },
	/* depth: each [ or { outside a string is one level */
	{ "[[[[1]]]]", 0, 100, 4, 0, NULL },
	{ "[[[[1]]]]", 0, 100, 3, CC_EINVAL, "JSON nested deeper than 3 levels at byte 3" },
	{ "{\"a\":{\"b\":[1]}}", 0, 100, 2, CC_EINVAL,
	  "JSON nested deeper than 2 levels at byte 10" },
	{ "[1]", 0, 100, 0, CC_EINVAL, "JSON nested deeper than 0 levels at byte 0" },
	{ "[\"[[[[{{{{\"]", 0, 100, 1, 0, NULL },	/* brackets inside a string */
	{ "[\"\\\"[[[[\"]", 0, 100, 1, 0, NULL },	/* an escaped quote does not end it */
	{ "[\"\\\\\",[[1]]]", 0, 100, 2, CC_EINVAL, /* an escaped backslash does not hide the end */
	  "JSON nested deeper than 2 levels at byte 7" },
	{ "[]]]]]]][[[1]]]", 0, 100, 2, CC_EINVAL, /* extra closers cannot bank depth */
	  "JSON nested deeper than 2 levels at byte 10" },
	/* NUL, raw or escaped, and raw control characters */
	{ "{\"a\":\"x\0y\"}", 11, 100, 16, CC_EINVAL, "JSON text contains a NUL byte at byte 7" },
	{ "\"a\\u0000b\"", 0, 100, 16, CC_EINVAL, "JSON text contains a \\u0000 escape at byte 2" },
	{ "\"\\\\u0000\"", 0, 100, 16, 0, NULL }, /* escaped backslash, then plain text */
	{ "\"a\nb\"", 0, 100, 16, CC_EINVAL, "invalid JSON at byte 2: control character in a string" },
	{ "\"a\\nb\"", 0, 100, 16, 0, NULL },
};

START_TEST(test_parse_table)
{
	const struct parse_case *c = &parse_cases[_i];
	size_t len = c->len ? c->len : strlen(c->text);
	struct cc_json_error err = { "untouched", "untouched" };
	cJSON *out = SENTINEL;
	int rc = cc_json_parse(c->text, len, c->max_bytes, c->max_depth, &out, &err);
	ck_assert_msg(rc == c->rc, "case %d (%s): rc %d (%s), want %d", _i, c->text, rc,
		      err.message, c->rc);
	if (rc == 0) {
		ck_assert_ptr_ne(out, SENTINEL);
		ck_assert_ptr_nonnull(out);
		cJSON_Delete(out);
		return;
	}
	ck_assert_ptr_eq(out, SENTINEL);
	ck_assert_str_eq(err.field, "");
	ck_assert_str_eq(err.message, c->message);
}
END_TEST

START_TEST(test_parse_keeps_values)
{
	static const char text[] = "{\"s\":\"\\\\u0000\",\"n\":-0.5e+3,\"e\":\"\\u00e9\"}";
	cJSON *root = NULL;
	struct cc_json_error err;
	ck_assert_int_eq(cc_json_parse(text, strlen(text), 100, 1, &root, &err), 0);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(root, "s")->valuestring, "\\u0000");
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(root, "n")->valuedouble, -500);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(root, "e")->valuestring, "\xc3\xa9");
	char *printed = cc_json_print(root);
	ck_assert_str_eq(printed, "{\"s\":\"\\\\u0000\",\"n\":-500,\"e\":\"\xc3\xa9\"}");
	free(printed);
	ck_assert_ptr_null(cc_json_print(NULL));
	cJSON_Delete(root);
}
END_TEST

START_TEST(test_parse_object_requires_object)
{
	cJSON *out = SENTINEL;
	struct cc_json_error err;
	ck_assert_int_eq(cc_json_parse_object("[1]", 3, 100, 16, &out, &err), CC_EINVAL);
	ck_assert_ptr_eq(out, SENTINEL);
	ck_assert_str_eq(err.message, "JSON text must be an object");
	ck_assert_int_eq(cc_json_parse_object("{\"a\":1}x", 8, 100, 16, &out, &err), CC_EINVAL);
	ck_assert_ptr_eq(out, SENTINEL);
	ck_assert_int_eq(cc_json_parse_object(" {} ", 4, 100, 16, &out, &err), 0);
	ck_assert(cJSON_IsObject(out));
	cJSON_Delete(out);
	ck_assert_int_eq(cc_json_parse(NULL, 1, 100, 16, &out, &err), CC_EINVAL);
}
END_TEST

/* The document every reader case reads from. */
static const char doc_text[] =
	"{\"name\":\"Ada\",\"empty\":\"\",\"utf\":\"\xc3\xa9t\xc3\xa9\",\"bad_utf\":\"a\xff\","
	"\"surrogate\":\"\xed\xa0\x80\","
	"\"revision\":42,\"neg\":-5,\"frac\":1.5,\"exp\":1e2,\"one\":1.0,"
	"\"big\":9007199254740992,\"safe\":9007199254740991,\"huge\":1e999,\"vast\":-1e300,"
	"\"flag\":true,\"nil\":null,\"obj\":{\"x\":1},\"list\":[1,2,3],\"text_num\":\"7\","
	"\"ratio\":0.25}";

enum reader { R_STR, R_INT, R_BOOL, R_DBL, R_OBJ, R_ARR };

static const struct reader_case {
	enum reader reader;
	const char *field;
	bool required;
	double lo, hi; /* range: bytes (string), value (int, double), max items (array: hi) */
	int rc;
	const char *message; /* exact; NULL when none is expected */
} reader_cases[] = {
	/* strings */
	{ R_STR, "name", true, 1, 32, 0, NULL },
	{ R_STR, "empty", true, 0, 32, 0, NULL },
	{ R_STR, "utf", true, 5, 5, 0, NULL },
	{ R_STR, "empty", true, 1, 32, CC_EINVAL, "field 'empty' must be a string of 1 to 32 bytes" },
	{ R_STR, "name", true, 1, 2, CC_EINVAL, "field 'name' must be a string of 1 to 2 bytes" },
	{ R_STR, "revision", true, 0, 9, CC_EINVAL,
	  "field 'revision' must be a string of 0 to 9 bytes" },
	{ R_STR, "nil", false, 0, 9, CC_EINVAL, "field 'nil' must be a string of 0 to 9 bytes" },
	{ R_STR, "bad_utf", true, 0, 9, CC_EINVAL, "field 'bad_utf' must be valid UTF-8" },
	{ R_STR, "surrogate", true, 0, 9, CC_EINVAL, "field 'surrogate' must be valid UTF-8" },
	{ R_STR, "absent", true, 0, 9, CC_EINVAL, "field 'absent' is required" },
	{ R_STR, "absent", false, 0, 9, CC_ENOTFOUND, NULL },
	{ R_STR, "Name", false, 0, 9, CC_ENOTFOUND, NULL }, /* case-sensitive */
	/* integers */
	{ R_INT, "revision", true, 0, 2147483647, 0, NULL },
	{ R_INT, "exp", true, 0, 100, 0, NULL },
	{ R_INT, "one", true, 1, 1, 0, NULL },
	{ R_INT, "safe", true, 0, (double)INT64_MAX, 0, NULL },
	{ R_INT, "revision", true, 0, 41, CC_EINVAL,
	  "field 'revision' must be an integer between 0 and 41" },
	{ R_INT, "neg", true, 0, 2147483647, CC_EINVAL,
	  "field 'neg' must be an integer between 0 and 2147483647" },
	{ R_INT, "frac", true, 0, 2147483647, CC_EINVAL,
	  "field 'frac' must be an integer between 0 and 2147483647" },
	{ R_INT, "big", true, 0, (double)INT64_MAX, CC_EINVAL,
	  "field 'big' must be an integer between 0 and 9007199254740991" },
	{ R_INT, "vast", true, (double)INT64_MIN, 0, CC_EINVAL,
	  "field 'vast' must be an integer between -9007199254740991 and 0" },
	{ R_INT, "huge", true, 0, 10, CC_EINVAL, "field 'huge' must be an integer between 0 and 10" },
	{ R_INT, "text_num", true, 0, 10, CC_EINVAL,
	  "field 'text_num' must be an integer between 0 and 10" },
	{ R_INT, "flag", true, 0, 10, CC_EINVAL, "field 'flag' must be an integer between 0 and 10" },
	{ R_INT, "nil", false, 0, 10, CC_EINVAL, "field 'nil' must be an integer between 0 and 10" },
	{ R_INT, "revision_x", true, 0, 10, CC_EINVAL, "field 'revision_x' is required" },
	{ R_INT, "revision_x", false, 0, 10, CC_ENOTFOUND, NULL },
	/* booleans */
	{ R_BOOL, "flag", true, 0, 0, 0, NULL },
	{ R_BOOL, "revision", true, 0, 0, CC_EINVAL, "field 'revision' must be true or false" },
	{ R_BOOL, "nil", true, 0, 0, CC_EINVAL, "field 'nil' must be true or false" },
	{ R_BOOL, "ready", true, 0, 0, CC_EINVAL, "field 'ready' is required" },
	{ R_BOOL, "ready", false, 0, 0, CC_ENOTFOUND, NULL },
	/* doubles */
	{ R_DBL, "ratio", true, 0, 1, 0, NULL },
	{ R_DBL, "revision", true, 0, 100, 0, NULL },
	{ R_DBL, "frac", true, 0, 1, CC_EINVAL, "field 'frac' must be a number between 0 and 1" },
	{ R_DBL, "neg", true, -1, 1, CC_EINVAL, "field 'neg' must be a number between -1 and 1" },
	{ R_DBL, "huge", true, -INFINITY, INFINITY, CC_EINVAL,
	  "field 'huge' must be a number between -inf and inf" },
	{ R_DBL, "name", true, 0, 1, CC_EINVAL, "field 'name' must be a number between 0 and 1" },
	{ R_DBL, "rtt", true, 0, 1, CC_EINVAL, "field 'rtt' is required" },
	{ R_DBL, "rtt", false, 0, 1, CC_ENOTFOUND, NULL },
	/* objects and arrays */
	{ R_OBJ, "obj", true, 0, 0, 0, NULL },
	{ R_OBJ, "list", true, 0, 0, CC_EINVAL, "field 'list' must be an object" },
	{ R_OBJ, "nil", false, 0, 0, CC_EINVAL, "field 'nil' must be an object" },
	{ R_OBJ, "predicted_rtt", true, 0, 0, CC_EINVAL, "field 'predicted_rtt' is required" },
	{ R_OBJ, "predicted_rtt", false, 0, 0, CC_ENOTFOUND, NULL },
	{ R_ARR, "list", true, 0, 3, 0, NULL },
	{ R_ARR, "list", true, 0, 2, CC_EINVAL, "field 'list' must be an array of at most 2 items" },
	{ R_ARR, "obj", true, 0, 9, CC_EINVAL, "field 'obj' must be an array of at most 9 items" },
	{ R_ARR, "players", true, 0, 9, CC_EINVAL, "field 'players' is required" },
	{ R_ARR, "players", false, 0, 9, CC_ENOTFOUND, NULL },
};

/* Runs one reader case; out-of-band results are checked by the caller. */
static int run_reader(const struct reader_case *c, const cJSON *obj, bool *wrote,
		      struct cc_json_error *err)
{
	const char *s = NULL;
	int64_t i = INT64_MIN;
	bool b = false;
	double d = -1234.5;
	const cJSON *item = NULL;
	int rc;
	switch (c->reader) {
	case R_STR:
		rc = cc_json_get_string(obj, c->field, c->required, (size_t)c->lo, (size_t)c->hi, &s, err);
		*wrote = s != NULL;
		break;
	case R_INT:
		rc = cc_json_get_int(obj, c->field, c->required, (int64_t)c->lo,
				     c->hi >= (double)INT64_MAX ? INT64_MAX : (int64_t)c->hi, &i, err);
		*wrote = i != INT64_MIN;
		break;
	case R_BOOL:
		b = !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, c->field));
		rc = cc_json_get_bool(obj, c->field, c->required, &b, err);
		*wrote = b == cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, c->field)) &&
			 cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(obj, c->field));
		break;
	case R_DBL:
		rc = cc_json_get_double(obj, c->field, c->required, c->lo, c->hi, &d, err);
		*wrote = d != -1234.5;
		break;
	case R_OBJ:
		rc = cc_json_get_object(obj, c->field, c->required, &item, err);
		*wrote = item != NULL;
		break;
	default:
		rc = cc_json_get_array(obj, c->field, c->required, (size_t)c->hi, &item, err);
		*wrote = item != NULL;
		break;
	}
	return rc;
}

START_TEST(test_reader_table)
{
	const struct reader_case *c = &reader_cases[_i];
	cJSON *doc = NULL;
	struct cc_json_error err = { "untouched", "untouched" };
	bool wrote = false;
	ck_assert_int_eq(cc_json_parse_object(doc_text, strlen(doc_text), 4096, 4, &doc, &err), 0);
	int rc = run_reader(c, doc, &wrote, &err);
	ck_assert_msg(rc == c->rc, "case %d (%s): rc %d (%s), want %d", _i, c->field, rc,
		      err.message, c->rc);
	/* out is written exactly when the read succeeds */
	ck_assert_msg(wrote == (rc == 0), "case %d (%s): out %s", _i, c->field,
		      wrote ? "written on failure" : "not written");
	if (rc == CC_EINVAL) {
		ck_assert_str_eq(err.field, c->field);
		ck_assert_str_eq(err.message, c->message);
	} else {
		ck_assert_str_eq(err.field, "untouched"); /* success and absence leave err alone */
	}
	cJSON_Delete(doc);
}
END_TEST

START_TEST(test_reader_values)
{
	cJSON *doc = NULL;
	struct cc_json_error err;
	const char *s;
	int64_t i;
	bool b;
	double d;
	const cJSON *item;
	ck_assert_int_eq(cc_json_parse_object(doc_text, strlen(doc_text), 4096, 4, &doc, &err), 0);
	ck_assert_int_eq(cc_json_get_string(doc, "utf", true, 0, 9, &s, &err), 0);
	ck_assert_str_eq(s, "\xc3\xa9t\xc3\xa9");
	/* "été" is 5 bytes, 3 characters: get_text counts characters, as maxLength does. */
	ck_assert_int_eq(cc_json_get_string(doc, "utf", true, 0, 3, &s, &err), CC_EINVAL);
	ck_assert_int_eq(cc_json_get_text(doc, "utf", true, 3, 3, &s, &err), 0);
	ck_assert_int_eq(cc_json_get_text(doc, "utf", true, 0, 2, &s, &err), CC_EINVAL);
	ck_assert_str_eq(err.message, "field 'utf' must be a string of 0 to 2 characters");
	ck_assert_int_eq(cc_json_get_text(doc, "neg", true, 0, 2, &s, &err), CC_EINVAL);
	ck_assert_int_eq(cc_json_get_int(doc, "neg", true, -5, -5, &i, &err), 0);
	ck_assert_int_eq(i, -5);
	ck_assert_int_eq(cc_json_get_int(doc, "safe", true, INT64_MIN, INT64_MAX, &i, &err), 0);
	ck_assert_int_eq(i, 9007199254740991LL);
	ck_assert_int_eq(cc_json_get_int(doc, "big", true, INT64_MIN, INT64_MAX, &i, &err),
			 CC_EINVAL);
	ck_assert_str_eq(err.message,
			 "field 'big' must be an integer between -9007199254740991 and 9007199254740991");
	ck_assert_int_eq(cc_json_get_bool(doc, "flag", true, &b, &err), 0);
	ck_assert(b);
	ck_assert_int_eq(cc_json_get_double(doc, "ratio", true, 0, 1, &d, &err), 0);
	ck_assert_double_eq(d, 0.25);
	ck_assert_int_eq(cc_json_get_array(doc, "list", true, 3, &item, &err), 0);
	ck_assert_int_eq(cJSON_GetArraySize(item), 3);
	ck_assert_int_eq(cc_json_get_object(doc, "obj", true, &item, &err), 0);
	ck_assert_int_eq(cc_json_get_int(item, "x", true, 1, 1, &i, &err), 0);

	/* A reader over something that is not an object, or without a field name. */
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "list");
	ck_assert_int_eq(cc_json_get_int(list, "x", true, 0, 1, &i, &err), CC_EINVAL);
	ck_assert_str_eq(err.field, "x");
	ck_assert_int_eq(cc_json_get_int(NULL, "x", false, 0, 1, &i, &err), CC_EINVAL);
	ck_assert_int_eq(cc_json_get_bool(doc, NULL, false, &b, &err), CC_EINVAL);
	ck_assert_int_eq(cc_json_get_bool(doc, "flag", true, &b, NULL), 0); /* err may be NULL */
	ck_assert_int_eq(cc_json_get_bool(doc, "nil", true, &b, NULL), CC_EINVAL);
	cJSON_Delete(doc);
}
END_TEST

static const char *const queue_fields[] = { "playlist", "protocol_version", "build", NULL };

static const struct {
	const char *text;
	int rc;
	const char *field;
	const char *message;
} only_cases[] = {
	{ "{\"playlist\":\"casual\",\"build\":\"b1\"}", 0, NULL, NULL },
	{ "{}", 0, NULL, NULL },
	{ "{\"playlist\":\"casual\",\"region\":\"eu\"}", CC_EINVAL, "region", "unknown field 'region'" },
	{ "{\"Playlist\":1}", CC_EINVAL, "Playlist", "unknown field 'Playlist'" },
	{ "{\"build\":1,\"playlist\":2,\"build\":3}", CC_EINVAL, "build", "duplicate field 'build'" },
	/* a client's name reaches err only as printable ASCII */
	{ "{\"\\u001b[2Jx\\u00e9\":1}", CC_EINVAL, "?[2Jx??", "unknown field '?[2Jx?" "?'" },
	{ "[]", CC_EINVAL, "", "expected a JSON object" },
};

START_TEST(test_only_fields)
{
	cJSON *doc = NULL;
	struct cc_json_error err = { "untouched", "untouched" };
	const char *text = only_cases[_i].text;
	ck_assert_int_eq(cc_json_parse(text, strlen(text), 4096, 4, &doc, &err), 0);
	int rc = cc_json_only_fields(doc, queue_fields, &err);
	ck_assert_msg(rc == only_cases[_i].rc, "case %d: rc %d (%s)", _i, rc, err.message);
	if (rc) {
		ck_assert_str_eq(err.field, only_cases[_i].field);
		ck_assert_str_eq(err.message, only_cases[_i].message);
	}
	cJSON_Delete(doc);
}
END_TEST

START_TEST(test_only_fields_many_duplicates_fail_fast)
{
	/* 20000 copies of one allowed name: refused at the second, in linear time. */
	size_t n = 20000, cap = n * 12 + 2, len = 0;
	char *text = malloc(cap);
	ck_assert_ptr_nonnull(text);
	text[len++] = '{';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s\"build\":1", i ? "," : "");
	text[len++] = '}';
	cJSON *doc = NULL;
	struct cc_json_error err;
	ck_assert_int_eq(cc_json_parse(text, len, cap, 4, &doc, &err), 0);
	ck_assert_int_eq(cc_json_only_fields(doc, queue_fields, &err), CC_EINVAL);
	ck_assert_str_eq(err.message, "duplicate field 'build'");
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_error_set)
{
	struct cc_json_error err;
	char long_name[200];
	memset(long_name, 'n', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	cc_json_error_set(NULL, "x", "ignored %d", 1);
	cc_json_error_set(&err, NULL, "whole %s", "document");
	ck_assert_str_eq(err.field, "");
	ck_assert_str_eq(err.message, "whole document");
	cc_json_error_set(&err, long_name, "m");
	ck_assert_uint_eq(strlen(err.field), sizeof err.field - 1);
	cc_json_error_set(&err, "a\nb\xc3\xa9", "m");
	ck_assert_str_eq(err.field, "a?b??");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_parse_table, 0, CC_ARRAY_LEN(parse_cases));
	tcase_add_test(tc, test_parse_keeps_values);
	tcase_add_test(tc, test_parse_object_requires_object);
	suite_add_tcase(s, tc);
	tc = tcase_create("readers");
	tcase_add_loop_test(tc, test_reader_table, 0, CC_ARRAY_LEN(reader_cases));
	tcase_add_test(tc, test_reader_values);
	tcase_add_loop_test(tc, test_only_fields, 0, CC_ARRAY_LEN(only_cases));
	tcase_add_test(tc, test_only_fields_many_duplicates_fail_fast);
	tcase_add_test(tc, test_error_set);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
