/*
 * log.h - structured logs: one JSON object per line on stderr.
 *
 * Every line carries ts (UTC, RFC 3339 with milliseconds), level, service and
 * event, then the caller's fields in order. The module owns no caller memory:
 * field values are copied into a line buffer and written with one write(2).
 *
 * Two rules make the log safe to ship:
 *  - Secrets never appear. A field whose name has a segment (split on '_',
 *    '-', '.' and camelCase humps; compared case-insensitively) that is or
 *    ends with token, secret, key, ticket, nonce, password, passwd,
 *    authorization, cookie or credential (also passphrase, pwd, bearer,
 *    apikey, signature, hmac), or their plural, is written as "[redacted]"
 *    whatever its type. So steam_ticket, Authorization, joinToken, api_keys,
 *    sessiontoken, privatekey and dbpassword are redacted (and, by the
 *    suffix rule, an innocent "monkey": over-redaction is the safe side).
 *    Exempt are names whose last segment says the value is an identifier,
 *    a measure or a path rather than the secret: id, ids, count, seconds,
 *    ms, ttl, size, bytes, len, length, file (ticket_id, token_count,
 *    ticket-ttl-seconds, operator-token-file). "url" is not exempt: a URL
 *    can carry a credential. There is no free-text message parameter, so
 *    nothing secret can hide in prose.
 *  - Strings are escaped as JSON (control bytes as \u00XX, invalid UTF-8 as
 *    U+FFFD) and capped (CC_LOG_VALUE_MAX bytes, then "..."), so a player's
 *    name cannot forge a second line or flood the log. Event and field names
 *    get the same escaping (capped at 128 bytes).
 *
 * A line never exceeds CC_LOG_LINE_MAX: fields that do not fit are dropped
 * from the first one that overflows, and the line ends with
 * "log_truncated":true instead. ts, level, service and event are reserved
 * names; do not pass them as fields. Not async-signal-safe.
 *
 * Usage:
 *   cc_log_info("ticket_created", CC_LOG_STR("ticket_id", id),
 *               CC_LOG_INT("revision", rev));
 *   cc_log_warn("redis_down");
 */
#ifndef CC_LOG_H
#define CC_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "sys/cc.h"

#define CC_LOG_VALUE_MAX 1024 /* bytes of one string value before "..." */
#define CC_LOG_LINE_MAX 16384 /* bytes of one whole line, newline included */

enum cc_log_level { CC_LOG_DEBUG, CC_LOG_INFO, CC_LOG_WARN, CC_LOG_ERROR };

enum cc_log_type { CC_LOG_T_END, CC_LOG_T_STR, CC_LOG_T_INT, CC_LOG_T_DBL, CC_LOG_T_BOOL };

struct cc_log_field {
	const char *key;       /* field name; decides redaction */
	enum cc_log_type type; /* which member of the union is set */
	union {
		const char *s; /* NULL is written as JSON null */
		long long i;
		double d;
		bool b;
	} v;
};

#define CC_LOG_STR(k, x) ((struct cc_log_field){ .key = (k), .type = CC_LOG_T_STR, .v.s = (x) })
#define CC_LOG_INT(k, x) ((struct cc_log_field){ .key = (k), .type = CC_LOG_T_INT, .v.i = (long long)(x) })
#define CC_LOG_DBL(k, x) ((struct cc_log_field){ .key = (k), .type = CC_LOG_T_DBL, .v.d = (double)(x) })
#define CC_LOG_BOOL(k, x) ((struct cc_log_field){ .key = (k), .type = CC_LOG_T_BOOL, .v.b = (bool)(x) })

/*
 * Sets the service name written on every line (copied, cut at 63 bytes;
 * NULL means "cc", the default before any call) and the minimum level
 * (default CC_LOG_INFO). Call once from main before threads start; safe to
 * call again.
 */
void cc_log_init(const char *service, enum cc_log_level min_level);

/* Redirects output to fd (tests); -1 restores stderr. The fd stays the caller's. */
void cc_log_set_fd(int fd);

/*
 * Parses "debug", "info", "warn", "error" (exactly, lower case); false on
 * anything else, NULL included. *out is written only on success.
 */
bool cc_log_level_parse(const char *text, enum cc_log_level *out);

/* True when a field with this name is redacted (see the rules above); NULL: false. */
bool cc_log_is_secret_name(const char *name);

/*
 * Writes one line if level >= the minimum level. fields points at n fields
 * (NULL with n 0 is fine). A NULL event or string value is written as null,
 * a non-finite double as null. Thread-safe: lines from different threads
 * never interleave. Never fails visibly (a line that cannot be written is
 * dropped) and leaves errno as it was.
 */
void cc_log_emit(enum cc_log_level level, const char *event, const struct cc_log_field *fields, size_t n);

#define CC__LOG(level, event, ...)                                                        \
	cc_log_emit((level), (event), (const struct cc_log_field[]){ { 0 }, __VA_ARGS__ } + 1, \
		    sizeof((const struct cc_log_field[]){ { 0 }, __VA_ARGS__ }) /             \
				    sizeof(struct cc_log_field) -                             \
			    1)
#define cc_log_debug(event, ...) CC__LOG(CC_LOG_DEBUG, event, __VA_ARGS__)
#define cc_log_info(event, ...) CC__LOG(CC_LOG_INFO, event, __VA_ARGS__)
#define cc_log_warn(event, ...) CC__LOG(CC_LOG_WARN, event, __VA_ARGS__)
#define cc_log_error(event, ...) CC__LOG(CC_LOG_ERROR, event, __VA_ARGS__)

#endif
