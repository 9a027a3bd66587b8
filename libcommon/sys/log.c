#include "sys/log.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "sys/utf8.h"

#include "sys/banned.h"

#define LOG_SERVICE_MAX 64 /* bytes of the service name, NUL included */
#define LOG_NAME_MAX 128   /* bytes of an event or field name before "..." */
#define LOG_SEGMENT_MAX 32 /* bytes of a segment's end kept: longer than any secret word */

/* Closes a line whose fields did not all fit, so it still parses. */
static const char truncated_tail[] = ",\"log_truncated\":true}\n";

static const char *const level_names[] = { "debug", "info", "warn", "error" };

/*
 * Singular forms; "<word>s" matches too, and so does a segment that ends
 * with one ("sessiontoken", "dbpassword"). The words after "credential" go
 * beyond the contract's list: over-redaction is the safe direction.
 */
static const char *const secret_words[] = {
	"token",      "secret",	    "key", "ticket", "nonce",	"password", "passwd",
	"authorization", "cookie", "credential", "passphrase", "pwd",	    "bearer",
	"apikey",     "signature", "hmac",
};
/*
 * A last segment that makes the field an identifier, a measure or a path,
 * never the secret itself: ticket_id, token_count, ticket-ttl-seconds,
 * key_bytes, operator-token-file. "url" is not here: a URL can carry one.
 */
static const char *const exempt_last_words[] = {
	"id", "ids", "count", "seconds", "ms", "ttl", "size", "bytes", "len", "length", "file",
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_service[LOG_SERVICE_MAX] = "cc"; /* guarded by log_lock */
static int log_fd = -1;				  /* guarded by log_lock; -1: stderr */
static atomic_int log_min_level = CC_LOG_INFO;	  /* read without the lock */

/*
 * One line under construction. It lives in thread-local storage rather than
 * on the stack so a thread with a small stack can log too.
 */
struct log_line {
	char buf[CC_LOG_LINE_MAX];
	size_t len;   /* bytes used */
	size_t limit; /* bytes usable; the rest is kept for truncated_tail */
	bool full;    /* an append did not fit; nothing is appended after it */
};
static _Thread_local struct log_line tls_line;

/* Appends n bytes, or marks the line full (appending nothing) if they do not fit. */
static void put(struct log_line *l, const char *p, size_t n)
{
	if (l->full || n > l->limit - l->len) {
		l->full = true;
		return;
	}
	memcpy(l->buf + l->len, p, n);
	l->len += n;
}

static void put_str(struct log_line *l, const char *s)
{
	put(l, s, strlen(s));
}

/*
 * Appends one decoded code point of a string value. raw/raw_len are its
 * original bytes, copied as they are when no escape is needed. C0, DEL and
 * C1 controls are escaped so a value cannot move a terminal's cursor either.
 */
static void put_code_point(struct log_line *l, uint32_t cp, const unsigned char *raw,
			   size_t raw_len)
{
	char esc[8];
	if (cp == '"') {
		put(l, "\\\"", 2);
	} else if (cp == '\\') {
		put(l, "\\\\", 2);
	} else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
		snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
		put(l, esc, 6);
	} else {
		put(l, (const char *)raw, raw_len);
	}
}

/*
 * Appends s as a JSON string literal (NULL: null). At most max_in bytes of s
 * are used, cut on a character boundary and followed by "..."; invalid UTF-8
 * bytes become U+FFFD one by one. Only max_in + 4 bytes of s are ever read
 * past the cut, so a huge value costs no more than a short one.
 */
static void put_json_string(struct log_line *l, const char *s, size_t max_in)
{
	if (!s) {
		put_str(l, "null");
		return;
	}
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strnlen(s, max_in + 4);
	size_t i = 0;
	put(l, "\"", 1);
	while (i < n && !l->full) {
		/* A run of printable ASCII that needs no escape, copied at once. */
		size_t run = i;
		while (run < n && run < max_in && p[run] >= 0x20 && p[run] < 0x7F && p[run] != '"' && p[run] != '\\')
			run++;
		if (run > i) {
			put(l, (const char *)p + i, run - i);
			i = run;
			continue;
		}
		uint32_t cp;
		size_t step = cc_utf8_decode(p + i, n - i, &cp);
		if (i + (step ? step : 1) > max_in)
			break;
		if (step == 0) {
			put(l, "\xEF\xBF\xBD", 3); /* U+FFFD */
			i++;
			continue;
		}
		put_code_point(l, cp, p + i, step);
		i += step;
	}
	if (i < n)
		put(l, "...", 3);
	put(l, "\"", 1);
}

/* Shortest of %.15g / %.17g that reads back as d; non-finite is null. */
static void put_double(struct log_line *l, double d)
{
	char tmp[40];
	if (!isfinite(d)) {
		put_str(l, "null");
		return;
	}
	snprintf(tmp, sizeof tmp, "%.15g", d);
	if (strtod(tmp, NULL) != d)
		snprintf(tmp, sizeof tmp, "%.17g", d);
	put_str(l, tmp);
}

/* Appends "2026-11-30T01:02:03.456Z" with the quotes. */
static void put_timestamp(struct log_line *l)
{
	struct timespec now;
	struct tm tm;
	char tmp[48];
	if (clock_gettime(CLOCK_REALTIME, &now) != 0 || !gmtime_r(&now.tv_sec, &tm)) {
		put_str(l, "null");
		return;
	}
	size_t n = strftime(tmp, sizeof tmp, "\"%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(tmp + n, sizeof tmp - n, ".%03ldZ\"", (long)(now.tv_nsec / 1000000));
	put_str(l, tmp);
}

/*
 * cc_log_is_secret_name, remembered per thread for short names: the same
 * few field names come back on every line (an access line has ten), and
 * splitting each into segments against every word cost more than the rest
 * of the line. An entry is found by the name's bytes, never its address,
 * so a reused buffer holding another name cannot be given a stale answer.
 */
#define SECRET_CACHE_SLOTS 32
#define SECRET_CACHE_NAME 32 /* names shorter than this are remembered */
static _Thread_local struct {
	char name[SECRET_CACHE_NAME]; /* "" : empty slot */
	bool secret;
} secret_cache[SECRET_CACHE_SLOTS];

static bool is_secret_name_cached(const char *name)
{
	uint32_t h = 2166136261u;
	size_t n = 0;
	if (!name)
		return false;
	while (name[n] && n < SECRET_CACHE_NAME) {
		h = (h ^ (unsigned char)name[n]) * 16777619u;
		n++;
	}
	if (n == 0 || n >= SECRET_CACHE_NAME)
		return cc_log_is_secret_name(name);
	size_t slot = h % SECRET_CACHE_SLOTS;
	if (memcmp(secret_cache[slot].name, name, n + 1) == 0)
		return secret_cache[slot].secret;
	bool secret = cc_log_is_secret_name(name);
	memcpy(secret_cache[slot].name, name, n + 1);
	secret_cache[slot].secret = secret;
	return secret;
}

/* Appends ,"key":value for one caller field, redacting secret names. */
static void put_field(struct log_line *l, const struct cc_log_field *f)
{
	char tmp[32];
	put(l, ",", 1);
	put_json_string(l, f->key ? f->key : "", LOG_NAME_MAX);
	put(l, ":", 1);
	if (is_secret_name_cached(f->key)) {
		put_str(l, "\"[redacted]\"");
		return;
	}
	switch (f->type) {
	case CC_LOG_T_STR:
		put_json_string(l, f->v.s, CC_LOG_VALUE_MAX);
		break;
	case CC_LOG_T_INT:
		snprintf(tmp, sizeof tmp, "%lld", f->v.i);
		put_str(l, tmp);
		break;
	case CC_LOG_T_DBL:
		put_double(l, f->v.d);
		break;
	case CC_LOG_T_BOOL:
		put_str(l, f->v.b ? "true" : "false");
		break;
	default: /* CC_LOG_T_END or garbage: keep the line valid */
		put_str(l, "null");
		break;
	}
}

/* Writes all n bytes, retrying on EINTR and short writes; gives up on any other error. */
static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static enum cc_log_level clamp_level(enum cc_log_level level)
{
	return (unsigned)level > CC_LOG_ERROR ? CC_LOG_ERROR : level;
}

void cc_log_init(const char *service, enum cc_log_level min_level)
{
	pthread_mutex_lock(&log_lock);
	snprintf(log_service, sizeof log_service, "%s", service ? service : "cc");
	atomic_store(&log_min_level, (int)clamp_level(min_level));
	pthread_mutex_unlock(&log_lock);
}

void cc_log_set_fd(int fd)
{
	pthread_mutex_lock(&log_lock);
	log_fd = fd;
	pthread_mutex_unlock(&log_lock);
}

bool cc_log_level_parse(const char *text, enum cc_log_level *out)
{
	if (!text)
		return false;
	for (size_t i = 0; i < CC_ARRAY_LEN(level_names); i++) {
		if (strcmp(text, level_names[i]) == 0) {
			*out = (enum cc_log_level)i;
			return true;
		}
	}
	return false;
}

/* True when seg (lower case) is exactly one of the words. */
static bool segment_in(const char *seg, size_t seg_len, const char *const *words, size_t nwords)
{
	for (size_t i = 0; i < nwords; i++)
		if (seg_len == strlen(words[i]) && memcmp(seg, words[i], seg_len) == 0)
			return true;
	return false;
}

/* True when seg[0..len) ends with one of secret_words. */
static bool segment_secret_exact_end(const char *seg, size_t len)
{
	for (size_t i = 0; i < CC_ARRAY_LEN(secret_words); i++) {
		size_t wl = strlen(secret_words[i]);
		if (len >= wl && memcmp(seg + len - wl, secret_words[i], wl) == 0)
			return true;
	}
	return false;
}

/*
 * True when seg (lower case) ends with a secret word or its plural:
 * "token", "tokens", "sessiontoken", "privatekeys". A few innocent words
 * match too ("monkey"): telling them from "hotkey" or "sshkey" would need
 * a dictionary, and a redacted harmless value costs little.
 */
static bool segment_secret(const char *seg, size_t seg_len)
{
	if (seg_len > 0 && seg[seg_len - 1] == 's')
		if (segment_secret_exact_end(seg, seg_len - 1))
			return true;
	return segment_secret_exact_end(seg, seg_len);
}

static bool is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool is_lower_or_digit(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/*
 * True when a segment starts at name[i] because of case: "steamTicket"
 * splits before T, "APIKey" before K (an upper-case run ends one letter
 * before the next lower-case letter).
 */
static bool case_boundary(const char *name, size_t i)
{
	if (i == 0 || !is_upper(name[i]))
		return false;
	char prev = name[i - 1], next = name[i + 1];
	return is_lower_or_digit(prev) || (is_upper(prev) && next >= 'a' && next <= 'z');
}

bool cc_log_is_secret_name(const char *name)
{
	char seg[LOG_SEGMENT_MAX];
	size_t seg_len = 0;
	bool seg_long = false, secret = false, last_exempt = false;
	if (!name)
		return false;
	for (size_t i = 0;; i++) {
		char c = name[i];
		bool sep = c == '\0' || c == '_' || c == '-' || c == '.';
		if (sep || case_boundary(name, i)) {
			/*
			 * Close the segment, of which seg holds the last seg_len
			 * bytes (seg_long: it was longer, so it is no exempt word);
			 * empty ones ("a__b") are skipped.
			 */
			if (seg_len > 0) {
				secret |= segment_secret(seg, seg_len);
				last_exempt = !seg_long && segment_in(seg, seg_len, exempt_last_words,
								      CC_ARRAY_LEN(exempt_last_words));
			}
			seg_len = 0;
			seg_long = false;
		}
		if (c == '\0')
			break;
		if (sep)
			continue;
		if (seg_len == sizeof seg) {
			/* Keep the end: a secret word is matched as a suffix. */
			memmove(seg, seg + 1, sizeof seg - 1);
			seg_len--;
			seg_long = true;
		}
		seg[seg_len++] = is_upper(c) ? (char)(c - 'A' + 'a') : c;
	}
	return secret && !last_exempt;
}

void cc_log_emit(enum cc_log_level level, const char *event, const struct cc_log_field *fields,
		 size_t n)
{
	struct log_line *l = &tls_line;
	bool truncated = false;
	level = clamp_level(level);
	if ((int)level < atomic_load(&log_min_level))
		return;
	int saved_errno = errno; /* a log call must not disturb the caller's errno */

	l->len = 0;
	l->full = false;
	l->limit = sizeof l->buf - (sizeof truncated_tail - 1);
	/* The lock covers the service name, the fd and one whole write. */
	pthread_mutex_lock(&log_lock);
	put_str(l, "{\"ts\":");
	put_timestamp(l);
	put_str(l, ",\"level\":\"");
	put_str(l, level_names[level]);
	put_str(l, "\",\"service\":");
	put_json_string(l, log_service, LOG_SERVICE_MAX);
	put_str(l, ",\"event\":");
	put_json_string(l, event, LOG_NAME_MAX);
	/* The header is bounded far below the limit (names are capped), so it always fits. */
	for (size_t i = 0; i < n && fields && !truncated; i++) {
		size_t mark = l->len;
		put_field(l, &fields[i]);
		if (l->full) {
			l->len = mark; /* drop the field that did not fit, and all after it */
			truncated = true;
		}
	}
	if (truncated)
		memcpy(l->buf + l->len, truncated_tail, sizeof truncated_tail - 1);
	else
		memcpy(l->buf + l->len, "}\n", 2);
	l->len += truncated ? sizeof truncated_tail - 1 : 2;
	write_all(log_fd >= 0 ? log_fd : STDERR_FILENO, l->buf, l->len);
	pthread_mutex_unlock(&log_lock);
	errno = saved_errno;
}
