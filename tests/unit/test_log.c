/*
 * The log module: every call is exactly one parseable JSON line, secrets are
 * redacted by field name, hostile strings cannot forge or flood lines.
 * Output is captured in a temporary file through cc_log_set_fd().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sys/log.h"
#include "support.h"
#include "sys/utf8.h"

#include "sys/banned.h"

static FILE *capture; /* temporary file the log writes into */

static void setup(void)
{
	capture = tmpfile();
	ck_assert_ptr_nonnull(capture);
	cc_log_init("test-svc", CC_LOG_DEBUG);
	cc_log_set_fd(fileno(capture));
}

static void teardown(void)
{
	cc_log_set_fd(-1);
	fclose(capture);
}

/* Everything logged so far, NUL-terminated; *len is its size. Caller frees. */
static char *captured(size_t *len)
{
	long size;
	ck_assert_int_eq(fseek(capture, 0, SEEK_END), 0);
	size = ftell(capture);
	ck_assert_int_ge(size, 0);
	char *buf = malloc((size_t)size + 1);
	ck_assert_ptr_nonnull(buf);
	rewind(capture);
	ck_assert_uint_eq(fread(buf, 1, (size_t)size, capture), (size_t)size);
	buf[size] = '\0';
	*len = (size_t)size;
	return buf;
}

/* Number of '\n' in the len bytes at s. */
static size_t count_lines(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n;
}

/*
 * Parses one line (without its '\n') strictly: the whole line must be one
 * JSON object. Returns the tree (caller deletes) or fails the test.
 */
static cJSON *parse_line(const char *line, size_t len)
{
	char *copy = strndup(line, len);
	ck_assert_ptr_nonnull(copy);
	cJSON *obj = cJSON_ParseWithOpts(copy, NULL, 1);
	ck_assert_msg(cJSON_IsObject(obj), "line is not one JSON object: %s", copy);
	free(copy);
	return obj;
}

/* The single line captured so far, parsed; fails unless there is exactly one. */
static cJSON *only_line(char **raw_out)
{
	size_t len;
	char *raw = captured(&len);
	ck_assert_msg(count_lines(raw, len) == 1, "expected one line, got: %s", raw);
	ck_assert_int_eq(raw[len - 1], '\n');
	cJSON *obj = parse_line(raw, len - 1);
	if (raw_out)
		*raw_out = raw;
	else
		free(raw);
	return obj;
}

static const char *str_field(const cJSON *obj, const char *name)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, name));
	ck_assert_msg(s != NULL, "no string field %s", name);
	return s;
}

START_TEST(test_forged_line_stays_in_its_value)
{
	static const char forged[] = "\n{\"level\":\"error\",\"event\":\"forged\"}";
	cc_log_info("player_renamed", CC_LOG_STR("player_name", forged), CC_LOG_INT("revision", 7));

	cJSON *obj = only_line(NULL);
	ck_assert_str_eq(str_field(obj, "player_name"), forged);
	ck_assert_str_eq(str_field(obj, "level"), "info");
	ck_assert_str_eq(str_field(obj, "event"), "player_renamed");
	ck_assert_str_eq(str_field(obj, "service"), "test-svc");
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(obj, "revision")->valuedouble, 7);

	/* Order: ts, level, service, event, then the caller's fields. */
	static const char *const order[] = { "ts", "level", "service", "event", "player_name",
					     "revision" };
	const cJSON *m = obj->child;
	for (size_t i = 0; i < CC_ARRAY_LEN(order); i++, m = m->next) {
		ck_assert_ptr_nonnull(m);
		ck_assert_str_eq(m->string, order[i]);
	}
	ck_assert_ptr_null(m);

	/* 2026-11-30T01:02:03.456Z */
	const char *ts = str_field(obj, "ts");
	ck_assert_uint_eq(strlen(ts), 24);
	for (size_t i = 0; i < 24; i++) {
		char want = "dddd-dd-ddTdd:dd:dd.dddZ"[i];
		if (want == 'd')
			ck_assert_msg(ts[i] >= '0' && ts[i] <= '9', "ts %s: byte %zu", ts, i);
		else
			ck_assert_msg(ts[i] == want, "ts %s: byte %zu", ts, i);
	}
	cJSON_Delete(obj);
}
END_TEST

/*
 * Field names that must be redacted, with or without a string value: a
 * segment that is a secret word, or ends with one (sessiontoken), even past
 * 32 bytes; a URL may carry one. "monkey" is the suffix rule's accepted
 * false positive (log.h).
 */
static const char *const secret_names[] = {
	"steam_ticket", "Authorization", "join_token", "nonce",	 "api_key",    "password",
	"joinToken",	"api_keys",	 "X-Api-Key",  "session.cookie", "APIKey", "client_secret",
	"passwd",	"credentials",	 "workload-token", "sessiontoken", "accesstoken",
	"authtoken",	"privatekey",	 "dbpassword", "SESSIONTOKENS", "player_sessiontoken_hash",
	"redis-password-url", "operator-token", "steam-publisher-key", "monkey",
	"averyveryveryveryverylongprefixsessiontoken", "token_idx", "ticket_ids_raw",
};
/*
 * Names that look close but are identifiers, measures or paths (by their
 * last segment), or not secret at all.
 */
static const char *const plain_names[] = {
	"ticket_id",	 "key_id",	   "token_count",	 "nonce_ids",	 "ticketId",
	"player_name",	 "keyboard",	   "",			 "tokenizer",	 "ticket-ttl-seconds",
	"token_ms",	 "session_ttl",	   "key_size",		 "cookie_bytes", "secret_len",
	"key_length",	 "operator-token-file", "tlsKeyFile",	 "database-url", "sensitive_set",
	"sensitive_unset", "averyveryveryveryverylongprefixsessiontoken_id",
};

/* One line with every secret and plain name: the secret ones redacted, the others not. */
static void secret_line_check(void)
{
	struct cc_log_field fields[CC_ARRAY_LEN(secret_names) + CC_ARRAY_LEN(plain_names) + 1];
	size_t n = 0;
	for (size_t i = 0; i < CC_ARRAY_LEN(secret_names); i++)
		fields[n++] = CC_LOG_STR(secret_names[i], "CANARY-SECRET-VALUE");
	for (size_t i = 0; i < CC_ARRAY_LEN(plain_names); i++)
		fields[n++] = CC_LOG_STR(plain_names[i], "visible");
	fields[n++] = CC_LOG_INT("pin_secret", 987654321); /* non-strings are redacted too */
	cc_log_emit(CC_LOG_WARN, "auth_attempt", fields, n);

	char *raw;
	cJSON *obj = only_line(&raw);
	ck_assert_msg(strstr(raw, "CANARY") == NULL, "secret leaked: %s", raw);
	ck_assert_msg(strstr(raw, "987654321") == NULL, "secret leaked: %s", raw);
	for (size_t i = 0; i < CC_ARRAY_LEN(secret_names); i++) {
		ck_assert_msg(cc_log_is_secret_name(secret_names[i]), "%s", secret_names[i]);
		ck_assert_str_eq(str_field(obj, secret_names[i]), "[redacted]");
	}
	for (size_t i = 0; i < CC_ARRAY_LEN(plain_names); i++) {
		ck_assert_msg(!cc_log_is_secret_name(plain_names[i]), "%s", plain_names[i]);
		ck_assert_str_eq(str_field(obj, plain_names[i]), "visible");
	}
	ck_assert_str_eq(str_field(obj, "pin_secret"), "[redacted]");
	ck_assert(!cc_log_is_secret_name(NULL));
	free(raw);
	cJSON_Delete(obj);
}

/*
 * Three times over, each on a fresh capture: the verdicts the log remembers
 * per thread (log.c's secret_cache) must give the second and third lines
 * the same redactions as the first.
 */
START_TEST(test_secret_fields_are_redacted)
{
	for (int round = 0; round < 3; round++) {
		if (round > 0) {
			teardown();
			setup();
		}
		secret_line_check();
	}
}
END_TEST

/*
 * A field name in a buffer that is reused for another name: the verdict
 * follows the bytes, never the address (a plain name, then a secret one,
 * then the plain one again, all from one buffer).
 */
START_TEST(test_secret_verdict_follows_the_name_not_its_buffer)
{
	static const char *const names[] = { "ticket_id", "join_token", "ticket_id", "join_token" };
	char name[32];
	for (size_t i = 0; i < CC_ARRAY_LEN(names); i++) {
		if (i > 0) {
			teardown();
			setup();
		}
		snprintf(name, sizeof name, "%s", names[i]);
		cc_log_info("reused_name", CC_LOG_STR(name, "CANARY-VALUE"));
		char *raw;
		cJSON *obj = only_line(&raw);
		bool secret = i % 2 == 1;
		ck_assert_msg(secret == (strstr(raw, "CANARY") == NULL), "%s: %s", names[i], raw);
		ck_assert_str_eq(str_field(obj, names[i]), secret ? "[redacted]" : "CANARY-VALUE");
		free(raw);
		cJSON_Delete(obj);
	}
}
END_TEST

START_TEST(test_invalid_utf8_and_controls_are_escaped)
{
	/* lone 0xFF, cut 2-byte lead, valid e-acute, overlong '/', surrogate D800 */
	static const char hostile[] = "a\xff"
				      "b\xc3(\xc3\xa9\xc0\xaf\xed\xa0\x80";
	static const char want[] = "a\xef\xbf\xbd"
				   "b\xef\xbf\xbd(\xc3\xa9"
				   "\xef\xbf\xbd\xef\xbf\xbd"
				   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";
	static const char controls[] = "\x01\x1b[31mred\x7f\t\"q\"\\";
	cc_log_info("ev\nil\"", CC_LOG_STR("name", hostile), CC_LOG_STR("motd", controls),
		    CC_LOG_STR("bad\x1bname", "v"));

	char *raw;
	cJSON *obj = only_line(&raw);
	ck_assert_msg(cc_utf8_valid(raw, strlen(raw)), "output is not UTF-8: %s", raw);
	for (const char *p = raw; *p; p++)
		ck_assert_msg((unsigned char)*p >= 0x20 || *p == '\n', "raw control byte in %s", raw);
	ck_assert_str_eq(str_field(obj, "name"), want);
	ck_assert_str_eq(str_field(obj, "motd"), controls); /* escaped, so it reads back intact */
	ck_assert_str_eq(str_field(obj, "event"), "ev\nil\"");
	ck_assert_str_eq(str_field(obj, "bad\x1bname"), "v");
	ck_assert_ptr_nonnull(strstr(raw, "\\u001b[31m"));
	ck_assert_ptr_nonnull(strstr(raw, "\\u007f"));
	free(raw);
	cJSON_Delete(obj);
}
END_TEST

START_TEST(test_long_value_is_capped)
{
	char *huge = malloc(100000);
	char straddle[CC_LOG_VALUE_MAX + 8];
	char exact[CC_LOG_VALUE_MAX + 1];
	ck_assert_ptr_nonnull(huge);
	memset(huge, 'x', 99999);
	huge[99999] = '\0';
	/* A 2-byte character at offsets 1023..1024 crosses the cap: cut before it. */
	memset(straddle, 'a', CC_LOG_VALUE_MAX - 1);
	memcpy(straddle + CC_LOG_VALUE_MAX - 1, "\xc3\xa9zz", 5);
	memset(exact, 'e', CC_LOG_VALUE_MAX);
	exact[CC_LOG_VALUE_MAX] = '\0';
	cc_log_info("caps", CC_LOG_STR("huge", huge), CC_LOG_STR("straddle", straddle),
		    CC_LOG_STR("exact", exact));

	cJSON *obj = only_line(NULL);
	const char *h = str_field(obj, "huge");
	ck_assert_uint_eq(strlen(h), CC_LOG_VALUE_MAX + 3);
	ck_assert_str_eq(h + CC_LOG_VALUE_MAX, "...");
	ck_assert_int_eq(strspn(h, "x"), CC_LOG_VALUE_MAX);
	const char *s = str_field(obj, "straddle");
	ck_assert_uint_eq(strlen(s), CC_LOG_VALUE_MAX - 1 + 3);
	ck_assert_str_eq(s + CC_LOG_VALUE_MAX - 1, "...");
	ck_assert_str_eq(str_field(obj, "exact"), exact); /* at the cap: untouched */
	free(huge);
	cJSON_Delete(obj);
}
END_TEST

START_TEST(test_line_is_capped_and_still_parses)
{
	/* Each value escapes to 6 bytes per input byte: ~6 KB a field. */
	char value[CC_LOG_VALUE_MAX + 1];
	char names[10][16];
	struct cc_log_field fields[10];
	memset(value, '\x01', CC_LOG_VALUE_MAX);
	value[CC_LOG_VALUE_MAX] = '\0';
	for (int i = 0; i < 10; i++) {
		snprintf(names[i], sizeof names[i], "f%d", i);
		fields[i] = CC_LOG_STR(names[i], value);
	}
	cc_log_emit(CC_LOG_ERROR, "flood", fields, 10);

	size_t len;
	char *raw = captured(&len);
	ck_assert_uint_le(len, CC_LOG_LINE_MAX);
	ck_assert_uint_eq(count_lines(raw, len), 1);
	cJSON *obj = parse_line(raw, len - 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "log_truncated")));
	ck_assert_str_eq(str_field(obj, "f0"), value);
	ck_assert_str_eq(str_field(obj, "f1"), value);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(obj, "f9"));
	free(raw);
	cJSON_Delete(obj);
}
END_TEST

START_TEST(test_level_filter)
{
	cc_log_init("test-svc", CC_LOG_WARN);
	cc_log_debug("d", CC_LOG_INT("n", 1));
	cc_log_info("i", CC_LOG_INT("n", 2));
	cc_log_warn("w", CC_LOG_INT("n", 3));
	cc_log_error("e", CC_LOG_INT("n", 4));
	cc_log_init("test-svc", CC_LOG_ERROR);
	cc_log_warn("w2", CC_LOG_INT("n", 5));

	size_t len;
	char *raw = captured(&len);
	ck_assert_uint_eq(count_lines(raw, len), 2);
	char *nl = strchr(raw, '\n');
	cJSON *first = parse_line(raw, (size_t)(nl - raw));
	cJSON *second = parse_line(nl + 1, len - (size_t)(nl + 1 - raw) - 1);
	ck_assert_str_eq(str_field(first, "level"), "warn");
	ck_assert_str_eq(str_field(first, "event"), "w");
	ck_assert_str_eq(str_field(second, "level"), "error");
	ck_assert_str_eq(str_field(second, "event"), "e");
	free(raw);
	cJSON_Delete(first);
	cJSON_Delete(second);
}
END_TEST

static const struct {
	const char *text;
	bool ok;
	enum cc_log_level level;
} level_cases[] = {
	{ "debug", true, CC_LOG_DEBUG }, { "info", true, CC_LOG_INFO },
	{ "warn", true, CC_LOG_WARN },	 { "error", true, CC_LOG_ERROR },
	{ "INFO", false, 0 },		 { "warning", false, 0 },
	{ "", false, 0 },		 { NULL, false, 0 },
};

START_TEST(test_level_parse)
{
	enum cc_log_level got = (enum cc_log_level)99;
	bool ok = cc_log_level_parse(level_cases[_i].text, &got);
	ck_assert_int_eq(ok, level_cases[_i].ok);
	ck_assert_int_eq(got, ok ? level_cases[_i].level : (enum cc_log_level)99);
}
END_TEST

START_TEST(test_value_types)
{
	cc_log_warn("types", CC_LOG_INT("min", LLONG_MIN), CC_LOG_DBL("tenth", 0.1),
		    CC_LOG_DBL("third", 1.0 / 3), CC_LOG_DBL("nan", NAN), CC_LOG_DBL("inf", -INFINITY),
		    CC_LOG_BOOL("yes", 1), CC_LOG_BOOL("no", 0), CC_LOG_STR("missing", NULL));
	char *raw;
	cJSON *obj = only_line(&raw);
	ck_assert_ptr_nonnull(strstr(raw, "\"min\":-9223372036854775808,"));
	ck_assert_ptr_nonnull(strstr(raw, "\"tenth\":0.1,"));
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(obj, "third")->valuedouble, 1.0 / 3);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, "nan")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, "inf")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "yes")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(obj, "no")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj, "missing")));
	free(raw);
	cJSON_Delete(obj);
}
END_TEST

START_TEST(test_no_fields_null_event_and_errno)
{
	errno = ERANGE;
	cc_log_warn("redis_down");
	ck_assert_int_eq(errno, ERANGE);
	cc_log_emit(CC_LOG_INFO, NULL, NULL, 0);
	size_t len;
	char *raw = captured(&len);
	ck_assert_uint_eq(count_lines(raw, len), 2);
	char *nl = strchr(raw, '\n');
	cJSON *first = parse_line(raw, (size_t)(nl - raw));
	cJSON *second = parse_line(nl + 1, len - (size_t)(nl + 1 - raw) - 1);
	ck_assert_str_eq(str_field(first, "event"), "redis_down");
	ck_assert_int_eq(cJSON_GetArraySize(first), 4);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(second, "event")));
	free(raw);
	cJSON_Delete(first);
	cJSON_Delete(second);
}
END_TEST

START_TEST(test_unwritable_fd_is_dropped_quietly)
{
	int fd = open("/dev/null", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	cc_log_set_fd(fd);
	errno = 0;
	cc_log_error("nowhere", CC_LOG_STR("k", "v"));
	ck_assert_int_eq(errno, 0);
	close(fd);
}
END_TEST

#define THREADS 8
#define LINES_PER_THREAD 100
#define PIPE_CAPTURE_MAX (64u << 20)

/*
 * Logs LINES_PER_THREAD lines of ~12 KB: far above PIPE_BUF, so a pipe
 * would interleave them if the module wrote them without its lock. No Check
 * calls off the main thread.
 */
static void *log_worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	char filler[CC_LOG_VALUE_MAX + 1];
	memset(filler, '\x01', sizeof filler - 1); /* escapes to 6 bytes each */
	filler[sizeof filler - 1] = '\0';
	for (int i = 0; i < LINES_PER_THREAD; i++)
		cc_log_info("burst", CC_LOG_INT("thread", id), CC_LOG_STR("a", filler),
			    CC_LOG_INT("seq", i), CC_LOG_STR("b", filler), CC_LOG_INT("check", id * 1000 + i));
	return NULL;
}

struct pipe_reader {
	int fd;	    /* read end, read until EOF */
	char *buf;  /* everything read, NUL-terminated */
	size_t len; /* bytes in buf */
	bool overflow;
};

/* Drains the pipe slowly enough (small reads) that writers often find it full. */
static void *pipe_drain(void *arg)
{
	struct pipe_reader *r = arg;
	for (;;) {
		if (r->len + 1024 + 1 > PIPE_CAPTURE_MAX) {
			r->overflow = true;
			break;
		}
		ssize_t n = read(r->fd, r->buf + r->len, 1024);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		r->len += (size_t)n;
	}
	r->buf[r->len] = '\0';
	return NULL;
}

START_TEST(test_concurrent_lines_never_interleave)
{
	int fds[2];
	pthread_t threads[THREADS], drain;
	struct pipe_reader r = { .buf = malloc(PIPE_CAPTURE_MAX) };
	ck_assert_ptr_nonnull(r.buf);
	ck_assert_int_eq(pipe(fds), 0);
	r.fd = fds[0];
	cc_log_set_fd(fds[1]);
	ck_assert_int_eq(pthread_create(&drain, NULL, pipe_drain, &r), 0);
	for (long t = 0; t < THREADS; t++)
		ck_assert_int_eq(pthread_create(&threads[t], NULL, log_worker, (void *)(intptr_t)t), 0);
	for (int t = 0; t < THREADS; t++)
		ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
	cc_log_set_fd(-1);
	close(fds[1]); /* EOF for the drain thread */
	ck_assert_int_eq(pthread_join(drain, NULL), 0);
	close(fds[0]);
	ck_assert(!r.overflow);

	ck_assert_uint_eq(count_lines(r.buf, r.len), THREADS * LINES_PER_THREAD);
	static bool seen[THREADS][LINES_PER_THREAD];
	memset(seen, 0, sizeof seen);
	for (char *line = r.buf; *line;) {
		char *nl = strchr(line, '\n');
		ck_assert_ptr_nonnull(nl);
		cJSON *obj = parse_line(line, (size_t)(nl - line));
		int t = cJSON_GetObjectItemCaseSensitive(obj, "thread")->valueint;
		int seq = cJSON_GetObjectItemCaseSensitive(obj, "seq")->valueint;
		ck_assert(t >= 0 && t < THREADS && seq >= 0 && seq < LINES_PER_THREAD);
		ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(obj, "check")->valueint, t * 1000 + seq);
		ck_assert_msg(!seen[t][seq], "line %d/%d twice", t, seq);
		seen[t][seq] = true;
		ck_assert_uint_eq(strlen(str_field(obj, "a")), CC_LOG_VALUE_MAX);
		cJSON_Delete(obj);
		line = nl + 1;
	}
	free(r.buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("lines");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_forged_line_stays_in_its_value);
	tcase_add_test(tc, test_secret_fields_are_redacted);
	tcase_add_test(tc, test_secret_verdict_follows_the_name_not_its_buffer);
	tcase_add_test(tc, test_invalid_utf8_and_controls_are_escaped);
	tcase_add_test(tc, test_long_value_is_capped);
	tcase_add_test(tc, test_line_is_capped_and_still_parses);
	tcase_add_test(tc, test_level_filter);
	tcase_add_loop_test(tc, test_level_parse, 0, CC_ARRAY_LEN(level_cases));
	tcase_add_test(tc, test_value_types);
	tcase_add_test(tc, test_no_fields_null_event_and_errno);
	tcase_add_test(tc, test_unwritable_fd_is_dropped_quietly);
	tcase_add_test(tc, test_concurrent_lines_never_interleave);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
