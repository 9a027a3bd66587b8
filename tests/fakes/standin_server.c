/*
 * standin_server - what cc-allocator's local provider runs per game server
 * until cc-supervisor exists (INTERFACES.md, "Local provider"). Test and
 * demo tooling, never in a deployment.
 *
 *   standin_server [--idle] [--shutdown-after-ms=N]
 *
 * Environment (set by cc-allocator): COSMIC_CLASH_SERVER_ID,
 * COSMIC_CLASH_GAME_PORT, COSMIC_CLASH_ALLOCATION_FILE, COSMIC_CLASH_API_URL.
 *
 * It binds its UDP game port on 127.0.0.1 (so two servers on one port is
 * an error, as for a real game server: exit 3), then, for ever:
 *   1. waits for the allocation file (the allocator's wake-up FIFO beside
 *      it, else inotify on its directory; 1 s safety polls), reads and
 *      checks it (version 1, its own server id and port);
 *   2. unless --idle: registers process_ready with the workload token
 *      (POST /v1/servers/{id}/register), fetches the roster
 *      (GET /v1/servers/{id}/roster) until it is published and verifies it
 *      with game/roster (digest, server id, match id), then registers
 *      assignment_ready. Each call is retried with a short backoff while
 *      the answer is retryable (connection refused, 5xx, 404/409 before
 *      publication) for up to 60 s;
 *   3. with --shutdown-after-ms: after that long, remove the file, then POST
 *      /shutdown (which frees the server: a file removed after it could be
 *      the next allocation's); otherwise holds the allocation until the file goes away
 *      (the allocator removes it once the allocation is over).
 * Every step is one line on stdout ("standin <event> key=value ..."), which
 * cc-allocator appends to <state dir>/<server id>.log. SIGTERM/SIGINT end
 * it with status 0. The workload token is never printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/file.h"
#include "sys/http_client.h"
#include "sys/json.h"
#include "game/roster.h"
#include "sys/banned.h"

static volatile sig_atomic_t stopping;
static bool wake_is_fifo; /* waiting on the allocator's FIFO, not inotify */

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

struct allocation {
	char allocation_id[CC_UUID_BUF];
	char match_id[CC_UUID_BUF];
	char server_id[CC_SERVER_ID_BUF];
	char token[1024];
	int64_t port;
	int64_t protocol_version;
};

static const char *server_id, *file_path, *api_url;
static int game_port;

static void say(const char *fmt, ...) CC_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
	va_list ap;
	printf("standin server=%s ", server_id);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* Reads and checks the allocation file; 0, CC_ENOTFOUND (absent), or CC_EINVAL (said why). */
static int read_allocation(struct allocation *out)
{
	char *text = NULL;
	size_t len = 0;
	struct cc_file_error fe;
	cJSON *root = NULL;
	struct cc_json_error je = { { 0 }, { 0 } };
	const char *s;
	int64_t version = 0;
	int rc = cc_file_read(file_path, 64 * 1024, CC_FILE_REGULAR_ONLY | CC_FILE_SECRET, &text, &len, &fe);
	if (rc != 0)
		return fe.failure == CC_FILE_OPEN && fe.errnum == ENOENT ? CC_ENOTFOUND : CC_EINVAL;
	rc = cc_json_parse_object(text, len, 64 * 1024, 4, &root, &je);
	memset(out, 0, sizeof *out);
	if (rc == 0)
		rc = cc_json_get_int(root, "version", true, 1, 1, &version, &je);
#define STR(field, dst)                                                                           \
	if (rc == 0 && (rc = cc_json_get_string(root, field, true, 1, sizeof(dst) - 1, &s, &je)) == 0) \
		snprintf(dst, sizeof(dst), "%s", s);
	STR("allocation_id", out->allocation_id)
	STR("match_id", out->match_id)
	STR("server_id", out->server_id)
	STR("workload_token", out->token)
#undef STR
	if (rc == 0)
		rc = cc_json_get_int(root, "port", true, 1, 65535, &out->port, &je);
	if (rc == 0)
		rc = cc_json_get_int(root, "protocol_version", true, 0, INT32_MAX, &out->protocol_version, &je);
	if (rc == 0 && (strcmp(out->server_id, server_id) != 0 || out->port != game_port)) {
		snprintf(je.message, sizeof je.message, "the file names another server or port");
		rc = CC_EINVAL;
	}
	if (rc != 0)
		say("allocation_file_invalid reason=\"%s\"", je.message);
	cJSON_Delete(root);
	sodium_memzero(text, len);
	free(text);
	return rc == 0 ? 0 : CC_EINVAL;
}

/* One call to cc-api; *status gets the HTTP status (0 = no answer). body_out (may be NULL) gets the body. */
static void call(const char *method, const char *path, const struct allocation *al, const char *body, long *status,
		 char **body_out)
{
	char url[4096], auth[1100];
	struct cc_http_client_response resp;
	snprintf(url, sizeof url, "%s%s", api_url, path);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", al->token);
	const char *headers[] = { auth, "Content-Type: application/json", "Accept: application/json", NULL };
	struct cc_http_client_request req = { .method = method, .url = url, .headers = headers, .body = body,
					      .body_len = body ? strlen(body) : 0, .timeout_ms = 5000 };
	*status = 0;
	if (cc_http_client_do(&req, &resp) == 0) {
		*status = resp.status;
		if (body_out) {
			*body_out = resp.body;
			resp.body = NULL;
		}
		cc_http_client_response_release(&resp);
	}
	sodium_memzero(auth, sizeof auth);
}

/* True when status may change by retrying (no answer, 404/409 before publication, 429, 5xx). */
static bool retryable(long status)
{
	return status == 0 || status == 404 || status == 409 || status == 425 || status == 429 || status >= 500;
}

/* Calls until a 2xx or a final refusal or 60 s; returns the last status. */
static long call_until_ok(const char *method, const char *path, const struct allocation *al, const char *body,
			  char **body_out)
{
	long status = 0;
	int64_t end = cc_clock_ms() + 60000, delay = 5;
	for (;;) {
		call(method, path, al, body, &status, body_out);
		if ((status >= 200 && status < 300) || !retryable(status) || stopping || cc_clock_ms() >= end)
			return status;
		if (body_out) {
			free(*body_out);
			*body_out = NULL;
		}
		struct timespec ts = { 0, (long)delay * 1000000L };
		nanosleep(&ts, NULL); /* a retry backoff against a remote service, not a synchronisation */
		if (delay < 200)
			delay *= 2;
	}
}

/* register process_ready, roster, register assignment_ready. */
static void serve(const struct allocation *al)
{
	char path[512], body[256];
	char *roster_text = NULL;
	long st;
	snprintf(path, sizeof path, "/v1/servers/%s/register", server_id);
	snprintf(body, sizeof body, "{\"state\":\"process_ready\",\"protocol_version\":%lld,\"image_digest\":\"sha256:%064d\"}",
		 (long long)al->protocol_version, 0);
	st = call_until_ok("POST", path, al, body, NULL);
	say("register state=process_ready status=%ld", st);
	if (st < 200 || st >= 300)
		return;
	snprintf(path, sizeof path, "/v1/servers/%s/roster", server_id);
	st = call_until_ok("GET", path, al, NULL, &roster_text);
	if (st >= 200 && st < 300 && roster_text) {
		struct cc_roster r;
		char digest[CC_SHA256_HEX_LEN + 1];
		enum cc_token_refusal why = CC_TOKEN_OK;
		int rc = cc_roster_manifest_parse(roster_text, strlen(roster_text), &r, digest, &why, NULL);
		if (rc != 0 || strcmp(r.server_id, server_id) != 0 || strcmp(r.match_id, al->match_id) != 0) {
			say("roster_refused status=%ld reason=%s", st, rc != 0 ? cc_token_refusal_name(why) : "wrong_match_or_server");
			free(roster_text);
			return;
		}
		say("roster status=%ld players=%zu digest=%s", st, r.count, digest);
	} else {
		say("roster status=%ld", st);
		free(roster_text);
		return;
	}
	free(roster_text);
	snprintf(path, sizeof path, "/v1/servers/%s/register", server_id);
	snprintf(body, sizeof body, "{\"state\":\"assignment_ready\",\"protocol_version\":%lld,\"image_digest\":\"sha256:%064d\"}",
		 (long long)al->protocol_version, 0);
	st = call_until_ok("POST", path, al, body, NULL);
	say("register state=assignment_ready status=%ld", st);
}

/*
 * True when the inotify events in buf[0..len) may concern our file: one
 * names it, or the queue overflowed. A warm pool shares one directory, so
 * every child sees every other child's file go by; re-reading our own on
 * each of them made N children do N^2 reads (the bench's pool is 400).
 */
static bool names_our_file(const char *buf, ssize_t len)
{
	const char *base = strrchr(file_path, '/');
	base = base ? base + 1 : file_path;
	for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= len;) {
		const struct inotify_event *ev = (const struct inotify_event *)(const void *)(buf + off);
		if ((ev->mask & IN_Q_OVERFLOW) || (ev->len > 0 && strcmp(ev->name, base) == 0))
			return true;
		off += (ssize_t)sizeof(struct inotify_event) + (ssize_t)ev->len;
	}
	return false;
}

/* Waits (the wake-up FIFO or inotify on the file's directory, 1 s safety polls) until the file exists (want) or not. */
static void wait_file(int ino, bool want)
{
	struct allocation probe;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool check = true;
	while (!stopping) {
		if (check) {
			int rc = read_allocation(&probe);
			sodium_memzero(&probe, sizeof probe);
			if (want ? rc != CC_ENOTFOUND : rc == CC_ENOTFOUND)
				return;
		}
		struct pollfd p = { .fd = ino, .events = POLLIN };
		int ready = poll(&p, 1, ino >= 0 ? 1000 : 20);
		check = ready <= 0; /* the safety poll, or no inotify at all */
		if (ready > 0) {
			ssize_t k;
			while ((k = read(ino, buf, sizeof buf)) > 0)
				if (wake_is_fifo || names_our_file(buf, k))
					check = true;
		}
	}
}

int main(int argc, char **argv)
{
	bool idle = false;
	long shutdown_after_ms = -1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--idle") == 0) {
			idle = true;
		} else if (strncmp(argv[i], "--shutdown-after-ms=", 20) == 0) {
			char *end = NULL;
			shutdown_after_ms = strtol(argv[i] + 20, &end, 10);
			if (!end || *end || shutdown_after_ms < 0) {
				fprintf(stderr, "standin_server: --shutdown-after-ms: not a non-negative integer\n");
				return 2;
			}
		} else {
			fprintf(stderr, "standin_server: %s: unknown option (--idle, --shutdown-after-ms=N)\n", argv[i]);
			return 2;
		}
	}
	server_id = getenv("COSMIC_CLASH_SERVER_ID");
	file_path = getenv("COSMIC_CLASH_ALLOCATION_FILE");
	api_url = getenv("COSMIC_CLASH_API_URL");
	const char *port_s = getenv("COSMIC_CLASH_GAME_PORT");
	if (!server_id || !file_path || !api_url || !port_s) {
		fprintf(stderr, "standin_server: COSMIC_CLASH_SERVER_ID, _ALLOCATION_FILE, _API_URL and _GAME_PORT are required\n");
		return 2;
	}
	game_port = (int)strtol(port_s, NULL, 10);
	if (cc_crypto_init() != 0)
		return 1;
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)game_port) };
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (udp < 0 || bind(udp, (struct sockaddr *)&addr, sizeof addr) != 0) {
		say("bind_failed port=%d error=\"%s\"", game_port, strerror(errno));
		return 3;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", file_path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	/* The allocator's wake-up FIFO beside the file (INTERFACES.md), read and
	 * write so it never reports an end of file; inotify only without it
	 * (instances are limited per user: 128 by default, fewer than a pool). */
	char fifo[PATH_MAX + 8];
	snprintf(fifo, sizeof fifo, "%s/wake", slash ? dir : ".");
	int ino = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	wake_is_fifo = ino >= 0;
	if (ino < 0)
		ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (!wake_is_fifo && ino >= 0 &&
	    inotify_add_watch(ino, slash ? dir : ".", IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0) {
		close(ino);
		ino = -1;
	}
	say("ready port=%d idle=%d", game_port, idle);
	while (!stopping) {
		struct allocation al;
		wait_file(ino, true);
		if (stopping)
			break;
		if (read_allocation(&al) != 0) {
			wait_file(ino, false); /* a file we cannot serve: wait for the next */
			continue;
		}
		say("allocated allocation_id=%s match_id=%s", al.allocation_id, al.match_id);
		if (!idle)
			serve(&al);
		if (shutdown_after_ms >= 0 && !stopping) {
			struct timespec ts = { shutdown_after_ms / 1000, (shutdown_after_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL); /* the "match" this stand-in plays */
			char path[512];
			long st;
			/* The file goes first: once /shutdown frees the server, the allocator may write the next one. */
			if (unlink(file_path) != 0 && errno != ENOENT)
				say("unlink_failed error=\"%s\"", strerror(errno));
			snprintf(path, sizeof path, "/v1/servers/%s/shutdown", server_id);
			st = call_until_ok("POST", path, &al, "{\"reason\":\"match_over\"}", NULL);
			say("shutdown status=%ld", st);
		}
		sodium_memzero(&al, sizeof al);
		wait_file(ino, false);
		say("released");
	}
	say("stopping");
	if (ino >= 0)
		close(ino);
	close(udp);
	return 0;
}
