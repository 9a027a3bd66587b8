/* STUB: replaced by the log module implementation. */
#include "log.h"
void cc_log_init(const char *service, enum cc_log_level min_level) { (void)service; (void)min_level; }
void cc_log_set_fd(int fd) { (void)fd; }
bool cc_log_level_parse(const char *text, enum cc_log_level *out) { (void)text; (void)out; return false; }
bool cc_log_is_secret_name(const char *name) { (void)name; return true; }
void cc_log_emit(enum cc_log_level level, const char *event, const struct cc_log_field *fields, size_t n)
{ (void)level; (void)event; (void)fields; (void)n; }
