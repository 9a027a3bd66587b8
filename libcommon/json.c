/* STUB: replaced by the json module implementation. */
#include "json.h"
#include <stdarg.h>
#include <stdio.h>
int cc_json_parse(const char *t, size_t l, size_t mb, int md, cJSON **o, struct cc_json_error *e) { (void)t; (void)l; (void)mb; (void)md; (void)o; (void)e; return CC_ENOTIMPL; }
int cc_json_parse_object(const char *t, size_t l, size_t mb, int md, cJSON **o, struct cc_json_error *e) { return cc_json_parse(t, l, mb, md, o, e); }
int cc_json_get_string(const cJSON *o, const char *f, bool r, size_t a, size_t b, const char **out, struct cc_json_error *e) { (void)o; (void)f; (void)r; (void)a; (void)b; (void)out; (void)e; return CC_ENOTIMPL; }
int cc_json_get_int(const cJSON *o, const char *f, bool r, int64_t a, int64_t b, int64_t *out, struct cc_json_error *e) { (void)o; (void)f; (void)r; (void)a; (void)b; (void)out; (void)e; return CC_ENOTIMPL; }
int cc_json_get_bool(const cJSON *o, const char *f, bool r, bool *out, struct cc_json_error *e) { (void)o; (void)f; (void)r; (void)out; (void)e; return CC_ENOTIMPL; }
int cc_json_get_double(const cJSON *o, const char *f, bool r, double a, double b, double *out, struct cc_json_error *e) { (void)o; (void)f; (void)r; (void)a; (void)b; (void)out; (void)e; return CC_ENOTIMPL; }
int cc_json_get_object(const cJSON *o, const char *f, bool r, const cJSON **out, struct cc_json_error *e) { (void)o; (void)f; (void)r; (void)out; (void)e; return CC_ENOTIMPL; }
int cc_json_get_array(const cJSON *o, const char *f, bool r, size_t m, const cJSON **out, struct cc_json_error *e) { (void)o; (void)f; (void)r; (void)m; (void)out; (void)e; return CC_ENOTIMPL; }
int cc_json_only_fields(const cJSON *o, const char *const *a, struct cc_json_error *e) { (void)o; (void)a; (void)e; return CC_ENOTIMPL; }
char *cc_json_print(const cJSON *item) { return cJSON_PrintUnformatted(item); }
void cc_json_error_set(struct cc_json_error *err, const char *field, const char *fmt, ...)
{ if (!err) return; snprintf(err->field, sizeof err->field, "%s", field ? field : ""); va_list ap; va_start(ap, fmt); vsnprintf(err->message, sizeof err->message, fmt, ap); va_end(ap); }
