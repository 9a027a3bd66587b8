/*
 * services/api/steam.c against build/fakes/fake_steam over real loopback
 * HTTP: every scenario the fake plays maps to the outcome SPEC 3 asks for
 * (the player's fault 400/401/403, ours 503); malformed tickets and a
 * missing configuration never send a request (the fake's /stats counter
 * proves it); a slow Steam costs at most the timeout; a wrong key is never
 * the player's fault; and the publisher key (a canary) and the tickets
 * never reach the log.
 *
 * The fake is started once per test case (unchecked fixture, in the parent)
 * on an ephemeral port read from its first stdout line, and is stopped and
 * reaped in teardown. Reply shapes a live server would not send go through
 * steam_classify_reply() directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "sys/clock.h"
#include "sys/crypto.h"
#include "http_fetch.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "../../services/api/steam.h"
#include "support.h"
#include "sys/banned.h"

extern char **environ;

static pid_t fake_pid = -1;
static int fake_port;
static char key_path[512];
static char canary_key[80]; /* the fake's publisher key; must never be logged */

/* Reads the fake's first line ("listening <port>") within 10 s; aborts saying what it saw. */
static int read_port(int fd)
{
	char line[128] = "";
	size_t n = 0;
	int64_t deadline = cc_clock_ms() + 10000;

	while (n < sizeof(line) - 1 && !memchr(line, '\n', n)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - cc_clock_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t got = read(fd, line + n, sizeof(line) - 1 - n);
		if (got <= 0)
			break;
		n += (size_t)got;
		line[n] = '\0';
	}
	int port = 0;
	if (sscanf(line, "listening %d", &port) != 1 || port <= 0)
		ck_abort_msg("fake_steam did not announce its port within 10 s; got \"%s\"", line);
	return port;
}

static void fake_start(void)
{
	const char *top = getenv("CC_TOP"), *tmp = getenv("CC_TEST_TMP");
	char bin[512], key_flag[600], hex[33], port_flag[] = "--port=0", app_flag[] = "--app-id=480";
	uint8_t raw[16];
	int pipefd[2], fd;
	posix_spawn_file_actions_t fa;

	ck_assert_int_eq(cc_crypto_init(), 0);
	cc_random_bytes(raw, sizeof(raw));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	snprintf(canary_key, sizeof(canary_key), "CANARY-steam-key-%s", hex);
	snprintf(key_path, sizeof(key_path), "%s/fake_steam_key.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(key_path);
	ck_assert_msg(fd >= 0, "mkstemp %s: %s", key_path, strerror(errno));
	ck_assert(write(fd, canary_key, strlen(canary_key)) == (ssize_t)strlen(canary_key));
	close(fd);

	snprintf(bin, sizeof(bin), "%s/build/fakes/fake_steam", top && *top ? top : ".");
	snprintf(key_flag, sizeof(key_flag), "--key-file=%s", key_path);
	char *const argv[] = { bin, port_flag, app_flag, key_flag, NULL };
	ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	int rc = posix_spawn(&fake_pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	ck_assert_msg(rc == 0, "spawn %s: %s", bin, strerror(rc));
	fake_port = read_port(pipefd[0]);
	close(pipefd[0]);
}

/* SIGTERM, then wait up to 10 s for the exit (it may finish a slow reply), then SIGKILL. */
static void fake_stop(void)
{
	int status;
	int64_t deadline = cc_clock_ms() + 10000;

	if (fake_pid > 0) {
		kill(fake_pid, SIGTERM);
		while (waitpid(fake_pid, &status, WNOHANG) == 0) {
			if (cc_clock_ms() > deadline) {
				kill(fake_pid, SIGKILL);
				waitpid(fake_pid, &status, 0);
				break;
			}
			poll(NULL, 0, 20); /* polling the exit condition, with the deadline above */
		}
	}
	fake_pid = -1;
	unlink(key_path);
}

/* The fake's request counter (GET /stats). */
static long fake_requests(void)
{
	struct cc_test_reply reply = { 0 };
	long n = -1;

	ck_assert_int_eq(cc_test_fetch(fake_port, &(struct cc_test_request){ .path = "/stats" }, &reply), 0);
	cJSON *j = cJSON_Parse(reply.body);
	cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "requests");
	if (cJSON_IsNumber(r))
		n = (long)r->valuedouble;
	cJSON_Delete(j);
	cc_test_reply_release(&reply);
	ck_assert_msg(n >= 0, "fake /stats gave no count");
	return n;
}

static char base_url[128];

static struct steam_config config(void)
{
	snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%d", fake_port);
	return (struct steam_config){ .base_url = base_url, .app_id = 480, .publisher_key = canary_key,
				      .timeout_ms = 2000, .reject_vac_banned = true,
				      .reject_publisher_banned = true };
}

static enum steam_outcome auth(const struct steam_config *cfg, const char *ticket, struct steam_identity *id)
{
	enum steam_outcome o;
	ck_assert_int_eq(steam_authenticate(cfg, ticket, id, &o), 0);
	return o;
}

/* ---- every scenario of the fake --------------------------------------------------- */

static const struct {
	const char *ticket;
	enum steam_outcome want;
} scenarios[] = {
	{ "0a0102030405", STEAM_OK },
	{ "0A0B", STEAM_OK },			/* upper-case hex is hex */
	{ "fa0102", STEAM_FAMILY_SHARED },
	{ "bb0102", STEAM_VAC_BANNED },
	{ "cc0102", STEAM_PUBLISHER_BANNED },
	{ "e00102", STEAM_INVALID_TICKET },	/* 3 Invalid parameter */
	{ "e10102", STEAM_INVALID_TICKET },	/* 101 Invalid ticket */
	{ "e20102", STEAM_INVALID_TICKET },	/* 102 Ticket for other app */
	{ "e30102", STEAM_INVALID_TICKET },	/* 103 expired (assumed) */
	{ "ee0102", STEAM_UNAVAILABLE },	/* unknown errorcode: ours, not the player's */
	{ "290102", STEAM_UNAVAILABLE },	/* 429 */
	{ "500102", STEAM_UNAVAILABLE },	/* 500 */
	{ "510102", STEAM_UNAVAILABLE },	/* 503 */
	{ "9a0102", STEAM_UNAVAILABLE },	/* not JSON */
	{ "9b0102", STEAM_UNAVAILABLE },	/* {"response":{}} */
	{ "9c0102", STEAM_UNAVAILABLE },	/* vacbanned "no" */
	{ "9f0102", STEAM_UNAVAILABLE },	/* 128 KiB reply, over the cap */
};

START_TEST(test_scenario)
{
	struct steam_config cfg = config();
	struct steam_identity id = { .steamid = "untouched" };
	long before = fake_requests();
	enum steam_outcome got = auth(&cfg, scenarios[_i].ticket, &id);

	ck_assert_msg(got == scenarios[_i].want, "ticket %s: got %s, want %s", scenarios[_i].ticket,
		      steam_outcome_name(got), steam_outcome_name(scenarios[_i].want));
	ck_assert_int_eq(fake_requests() - before, 1);
	if (got == STEAM_OK || got == STEAM_FAMILY_SHARED || got == STEAM_VAC_BANNED ||
	    got == STEAM_PUBLISHER_BANNED) {
		ck_assert_msg(strspn(id.steamid, "0123456789") == strlen(id.steamid) && strlen(id.steamid) == 17,
			      "steamid '%s'", id.steamid);
		ck_assert_int_eq(strcmp(id.steamid, id.ownersteamid) != 0, got == STEAM_FAMILY_SHARED);
		ck_assert_int_eq(id.vacbanned, got == STEAM_VAC_BANNED);
		ck_assert_int_eq(id.publisherbanned, got == STEAM_PUBLISHER_BANNED);
	} else {
		ck_assert_str_eq(id.steamid, "untouched"); /* written only when Steam vouched */
	}
}
END_TEST

START_TEST(test_ban_flags_off_lets_banned_in)
{
	struct steam_config cfg = config();
	struct steam_identity id;

	cfg.reject_vac_banned = false;
	cfg.reject_publisher_banned = false;
	ck_assert_int_eq(auth(&cfg, "bb0102", &id), STEAM_OK);
	ck_assert(id.vacbanned);
	ck_assert_int_eq(auth(&cfg, "cc0102", &id), STEAM_OK);
	ck_assert(id.publisherbanned);
	ck_assert_int_eq(auth(&cfg, "fa0102", &id), STEAM_FAMILY_SHARED); /* never configurable */
}
END_TEST

START_TEST(test_identity_is_stable_per_ticket)
{
	struct steam_config cfg = config();
	struct steam_identity a, b, c;

	ck_assert_int_eq(auth(&cfg, "0a11", &a), STEAM_OK);
	ck_assert_int_eq(auth(&cfg, "0a11", &b), STEAM_OK);
	ck_assert_int_eq(auth(&cfg, "0a12", &c), STEAM_OK);
	ck_assert_str_eq(a.steamid, b.steamid);
	ck_assert_str_ne(a.steamid, c.steamid);
}
END_TEST

START_TEST(test_slow_steam_costs_only_the_timeout)
{
	struct steam_config cfg = config();
	struct steam_identity id;

	cfg.timeout_ms = 500;
	int64_t start = cc_clock_ms();
	ck_assert_int_eq(auth(&cfg, "5d0102", &id), STEAM_UNAVAILABLE);
	int64_t took = cc_clock_ms() - start;
	ck_assert_msg(took < 2500, "a 500 ms timeout took %lld ms", (long long)took);
}
END_TEST

START_TEST(test_malformed_ticket_sends_nothing)
{
	static const char *const bad[] = { "", "a", "abc", "zz", "0a0g", "0a 1", "0a\n", "0x0a",
					   "\xc3\xa9\xc3\xa9", "0a%00", "-0a1" };
	struct steam_config cfg = config();
	struct steam_identity id;
	char *huge = malloc(STEAM_TICKET_MAX_LEN + 3);
	long before = fake_requests();

	ck_assert_ptr_nonnull(huge);
	ck_assert_int_eq(auth(&cfg, NULL, &id), STEAM_MALFORMED_TICKET);
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++)
		ck_assert_msg(auth(&cfg, bad[i], &id) == STEAM_MALFORMED_TICKET, "ticket #%zu passed", i);
	memset(huge, 'a', STEAM_TICKET_MAX_LEN + 2);
	huge[STEAM_TICKET_MAX_LEN + 2] = '\0';
	ck_assert_int_eq(auth(&cfg, huge, &id), STEAM_MALFORMED_TICKET);
	ck_assert_int_eq(fake_requests(), before);

	/* The bounds themselves are fine and do reach Steam. */
	huge[0] = '0';
	huge[STEAM_TICKET_MAX_LEN] = '\0';
	ck_assert_int_eq(auth(&cfg, huge, &id), STEAM_OK);
	ck_assert_int_eq(auth(&cfg, "0a", &id), STEAM_OK);
	ck_assert_int_eq(fake_requests(), before + 2);
	free(huge);
}
END_TEST

START_TEST(test_not_configured_sends_nothing)
{
	struct steam_config base = config(), cfg;
	struct steam_identity id;
	long before = fake_requests();

	cfg = base, cfg.app_id = 0;
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_NOT_CONFIGURED);
	cfg = base, cfg.app_id = 4294967296LL;
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_NOT_CONFIGURED);
	cfg = base, cfg.publisher_key = NULL;
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_NOT_CONFIGURED);
	cfg = base, cfg.publisher_key = "";
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_NOT_CONFIGURED);
	cfg = base, cfg.base_url = NULL;
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_NOT_CONFIGURED);
	cfg = base, cfg.app_id = 0;
	ck_assert_int_eq(auth(&cfg, "not hex", &id), STEAM_NOT_CONFIGURED); /* config comes first */
	ck_assert_int_eq(fake_requests(), before);
}
END_TEST

START_TEST(test_our_mistakes_are_never_invalid_ticket)
{
	struct steam_config base = config(), cfg;
	struct steam_identity id;
	long before = fake_requests();

	cfg = base, cfg.publisher_key = "not-the-key"; /* revoked or wrong: Steam's 403 page */
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_UNAVAILABLE);
	ck_assert_int_eq(auth(&cfg, "e101", &id), STEAM_UNAVAILABLE);
	cfg = base, cfg.app_id = 481; /* an app the key may not use */
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_UNAVAILABLE);
	ck_assert_int_eq(fake_requests(), before + 3);
}
END_TEST

START_TEST(test_unreachable_or_bad_base_url)
{
	struct steam_config cfg = config();
	struct steam_identity id;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	char url[64];
	int s = socket(AF_INET, SOCK_STREAM, 0);

	/* A port that was just free: bound, never listened on, closed. */
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sa, &len), 0);
	close(s);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	cfg.base_url = url;
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_UNAVAILABLE);
	cfg.base_url = "ftp://127.0.0.1/";
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_UNAVAILABLE);
	cfg.base_url = "not a url";
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_UNAVAILABLE);
}
END_TEST

START_TEST(test_base_url_with_slash_and_query)
{
	struct steam_config cfg = config();
	struct steam_identity id;
	char url[160];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/?proxy_token=QUERY-CANARY#frag", fake_port);
	cfg.base_url = url;
	ck_assert_int_eq(auth(&cfg, "0a01", &id), STEAM_OK);
}
END_TEST

/* Reads all of fd (a temp file) from the start into a malloc'd string. */
static char *slurp(int fd)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf = malloc((size_t)size + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert(pread(fd, buf, (size_t)size, 0) == size);
	buf[size] = '\0';
	return buf;
}

/* Runs one ticket with the log captured; returns the log (caller frees). */
static char *auth_logged(const struct steam_config *cfg, const char *ticket, enum steam_outcome *o)
{
	struct steam_identity id;
	char path[] = "/tmp/test_steam_log.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	cc_log_set_fd(fd);
	*o = auth(cfg, ticket, &id);
	cc_log_set_fd(-1);
	char *log = slurp(fd);
	close(fd);
	return log;
}

/* The 64 KiB cap stops the download itself, not only the parse after it. */
START_TEST(test_reply_cap_stops_the_download)
{
	struct steam_config cfg = config();
	enum steam_outcome o;
	char *log = auth_logged(&cfg, "9f0102", &o);

	ck_assert_int_eq(o, STEAM_UNAVAILABLE);
	ck_assert_msg(strstr(log, "\"reason\":\"reply_too_large\""), "log:\n%s", log);
	free(log);
}
END_TEST

START_TEST(test_key_and_tickets_never_logged)
{
	static const char *const tickets[] = {
		"0a5ec2e75ec2e75ec2e7", "fa5ec2e75ec2e75ec2e7", "bb5ec2e75ec2e75ec2e7",
		"e15ec2e75ec2e75ec2e7", "ee5ec2e75ec2e75ec2e7", "505ec2e75ec2e75ec2e7",
		"9a5ec2e75ec2e75ec2e7", "9c5ec2e75ec2e75ec2e7", "5d5ec2e75ec2e75ec2e7",
	};
	struct steam_config cfg = config();
	struct steam_identity id;
	char path[] = "/tmp/test_steam_log.XXXXXX", url[160];
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	cc_log_init("test_steam", CC_LOG_DEBUG);
	cc_log_set_fd(fd);
	cfg.timeout_ms = 300;
	for (size_t i = 0; i < CC_ARRAY_LEN(tickets); i++)
		(void)auth(&cfg, tickets[i], &id);
	cfg.publisher_key = "wrong-key";
	(void)auth(&cfg, tickets[0], &id);
	cfg.publisher_key = canary_key;
	snprintf(url, sizeof(url), "http://user:PASS-CANARY@127.0.0.1:%d/?q=QUERY-CANARY", fake_port);
	cfg.base_url = url;
	(void)auth(&cfg, tickets[0], &id);
	cc_log_set_fd(-1);

	char *log = slurp(fd);
	char *metrics = cc_metrics_render();
	close(fd);
	/* The log must hold the lines, or the checks below prove nothing. */
	ck_assert_msg(strstr(log, "\"event\":\"steam_authenticate\"") && strstr(log, "\"outcome\":\"ok\"") &&
			      strstr(log, "\"outcome\":\"steam_unavailable\"") &&
			      strstr(log, "\"path\":\"/ISteamUserAuth/AuthenticateUserTicket/v1/\""),
		      "log lacks the steam_authenticate lines:\n%s", log);
	ck_assert_msg(!strstr(log, canary_key), "publisher key in the log:\n%s", log);
	ck_assert_msg(!strstr(log, "5ec2e75ec2e7"), "a ticket in the log:\n%s", log);
	ck_assert_msg(!strstr(log, "CANARY"), "base_url query or password in the log:\n%s", log);
	ck_assert_ptr_nonnull(metrics);
	ck_assert_msg(!strstr(metrics, canary_key) && !strstr(metrics, "5ec2e75ec2e7"), "secret in metrics");
	ck_assert_msg(strstr(metrics, "cosmic_clash_steam_requests_total{outcome=\"family_shared\"}"),
		      "metrics:\n%s", metrics);
	free(metrics);
	free(log);
}
END_TEST

/* ---- reply shapes, classified without HTTP ---------------------------------------- */

#define OKP(sid, owner, vac, pub)                                                               \
	"{\"response\":{\"params\":{\"result\":\"OK\",\"steamid\":" sid ",\"ownersteamid\":" owner \
	",\"vacbanned\":" vac ",\"publisherbanned\":" pub "}}}"
#define SID "\"76561197960265729\""

static const struct {
	long status;
	const char *body; /* NULL: no body */
	enum steam_outcome want;
	const char *reason;
} shapes[] = {
	{ 200, OKP(SID, SID, "false", "false"), STEAM_OK, "ok" },
	{ 200, OKP("\"18446744073709551615\"", "\"18446744073709551615\"", "false", "false"), STEAM_OK, "ok" },
	{ 200, "{\"response\":{\"params\":{\"result\":\"OK\",\"steamid\":" SID ",\"ownersteamid\":" SID
	       ",\"vacbanned\":false,\"publisherbanned\":false,\"newfield\":[1]}}}", STEAM_OK, "ok" },
	{ 200, OKP(SID, "\"76561197960265730\"", "false", "false"), STEAM_FAMILY_SHARED, "family_shared" },
	{ 200, OKP(SID, SID, "true", "true"), STEAM_VAC_BANNED, "vac_banned" },
	{ 200, OKP("\"18446744073709551616\"", SID, "false", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP("\"076561197960265729\"", SID, "false", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP("\"0\"", "\"0\"", "false", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP("\"\"", "\"\"", "false", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP("\"7656119796026572x\"", SID, "false", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP("\"+76561197960265729\"", SID, "false", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP("76561197960265729", SID, "false", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP(SID, SID, "0", "false"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, OKP(SID, SID, "false", "null"), STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":{\"params\":{\"result\":\"OK\",\"steamid\":" SID
	       ",\"vacbanned\":false,\"publisherbanned\":false}}}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":{\"params\":{\"result\":\"Failure\"}}}", STEAM_UNAVAILABLE, "result_not_ok" },
	{ 200, "{\"response\":{\"params\":{\"steamid\":" SID "}}}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":{\"error\":{\"errorcode\":101,\"errordesc\":\"Invalid ticket\"},"
	       "\"params\":{\"result\":\"OK\"}}}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":{\"error\":{\"errorcode\":102}}}", STEAM_INVALID_TICKET, "steam_error" },
	{ 400, "{\"response\":{\"error\":{\"errorcode\":101,\"errordesc\":\"Invalid ticket\"}}}",
	  STEAM_INVALID_TICKET, "steam_error" },
	{ 200, "{\"response\":{\"error\":{\"errorcode\":2,\"errordesc\":\"Failure\"}}}", STEAM_UNAVAILABLE,
	  "steam_error_unknown" },
	{ 200, "{\"response\":{\"error\":{\"errorcode\":100,\"errordesc\":\"x\"}}}", STEAM_UNAVAILABLE,
	  "steam_error_unknown" },
	{ 200, "{\"response\":{\"error\":{\"errorcode\":\"101\"}}}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":{\"error\":{\"errorcode\":101.5}}}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":{\"error\":{\"errorcode\":101,\"errordesc\":7}}}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":{\"error\":\"Invalid ticket\"}}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "{\"response\":\"x\"}", STEAM_UNAVAILABLE, "bad_shape" },
	{ 200, "[{\"response\":{}}]", STEAM_UNAVAILABLE, "not_json" },
	{ 200, "", STEAM_UNAVAILABLE, "not_json" },
	{ 200, NULL, STEAM_UNAVAILABLE, "not_json" },
	{ 200, "{\"response\":[[[[[[[[[[[[]]]]]]]]]]]]}", STEAM_UNAVAILABLE, "not_json" },
	{ 400, OKP(SID, SID, "false", "false"), STEAM_UNAVAILABLE, "http_status" },
	{ 401, OKP(SID, SID, "false", "false"), STEAM_UNAVAILABLE, "http_status" },
	{ 403, "{\"response\":{\"error\":{\"errorcode\":101}}}", STEAM_UNAVAILABLE, "http_status" },
	{ 404, "", STEAM_UNAVAILABLE, "http_status" },
	{ 500, OKP(SID, SID, "false", "false"), STEAM_UNAVAILABLE, "http_status" },
	{ 302, "", STEAM_UNAVAILABLE, "http_status" },
};

START_TEST(test_reply_shape)
{
	struct steam_config cfg = { .reject_vac_banned = true, .reject_publisher_banned = true };
	struct steam_identity id;
	struct steam_detail d;
	enum steam_outcome o;
	const char *body = shapes[_i].body;

	ck_assert_int_eq(steam_classify_reply(&cfg, shapes[_i].status, body, body ? strlen(body) : 0,
					      &id, &o, &d), 0);
	ck_assert_msg(o == shapes[_i].want && strcmp(d.reason, shapes[_i].reason) == 0,
		      "%ld %s: got %s/%s, want %s/%s", shapes[_i].status, body ? body : "(null)",
		      steam_outcome_name(o), d.reason, steam_outcome_name(shapes[_i].want), shapes[_i].reason);
	ck_assert_int_eq(d.http_status, shapes[_i].status);
}
END_TEST

START_TEST(test_outcome_table)
{
	ck_assert_str_eq(steam_outcome_name(STEAM_INVALID_TICKET), "invalid_ticket");
	ck_assert_int_eq(steam_outcome_status(STEAM_MALFORMED_TICKET), 400);
	ck_assert_int_eq(steam_outcome_status(STEAM_INVALID_TICKET), 401);
	ck_assert_int_eq(steam_outcome_status(STEAM_FAMILY_SHARED), 403);
	ck_assert_int_eq(steam_outcome_status(STEAM_UNAVAILABLE), 503);
	ck_assert_int_eq(steam_outcome_status(STEAM_NOT_CONFIGURED), 503);
	ck_assert_str_eq(steam_outcome_name((enum steam_outcome)99), "unknown");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("steam");
	TCase *live = tcase_create("fake_steam");
	TCase *pure = tcase_create("classify");

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_unchecked_fixture(live, fake_start, fake_stop);
	tcase_set_timeout(live, 60);
	tcase_add_loop_test(live, test_scenario, 0, (int)CC_ARRAY_LEN(scenarios));
	tcase_add_test(live, test_ban_flags_off_lets_banned_in);
	tcase_add_test(live, test_identity_is_stable_per_ticket);
	tcase_add_test(live, test_slow_steam_costs_only_the_timeout);
	tcase_add_test(live, test_malformed_ticket_sends_nothing);
	tcase_add_test(live, test_not_configured_sends_nothing);
	tcase_add_test(live, test_our_mistakes_are_never_invalid_ticket);
	tcase_add_test(live, test_unreachable_or_bad_base_url);
	tcase_add_test(live, test_base_url_with_slash_and_query);
	tcase_add_test(live, test_reply_cap_stops_the_download);
	tcase_add_test(live, test_key_and_tickets_never_logged);
	suite_add_tcase(s, live);
	tcase_add_loop_test(pure, test_reply_shape, 0, (int)CC_ARRAY_LEN(shapes));
	tcase_add_test(pure, test_outcome_table);
	suite_add_tcase(s, pure);
	int rc = cc_test_run_suite(s);
	curl_global_cleanup();
	return rc;
}
