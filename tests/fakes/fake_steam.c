/*
 * fake_steam - a stand-in for Steam's ISteamUserAuth/AuthenticateUserTicket
 * for tests and the demo. Loopback HTTP, never in a deployment.
 *
 *   fake_steam --port=0 --app-id=480 --key-file=PATH [--listen=127.0.0.1]
 *
 * Prints "listening <port>" as its first stdout line once it serves, then
 * runs until SIGINT/SIGTERM. The key file holds the one publisher key it
 * accepts (treat it as a secret: the fake never prints it).
 *
 * GET /ISteamUserAuth/AuthenticateUserTicket/v1/ (with or without the final
 * slash), query key, appid, ticket:
 *   missing key/appid/ticket -> HTTP 400, HTML page (Steam: "Bad Request")
 *   key not the accepted one -> HTTP 403, Steam's "Access is denied" HTML page
 *   appid not --app-id       -> HTTP 403, same page (the key has no access to that app)
 *   ticket not even-length hex -> errorcode 3 "Invalid parameter"
 * then by the ticket's first two hex digits (case-insensitive):
 *   fa  OK, family-shared: ownersteamid = steamid + 1
 *   bb  OK, vacbanned true
 *   cc  OK, publisherbanned true
 *   e0  errorcode 3   "Invalid parameter"
 *   e1  errorcode 101 "Invalid ticket"
 *   e2  errorcode 102 "Ticket for other app"
 *   e3  errorcode 103 "Ticket expired"   (the code is assumed: see steam.h)
 *   ee  errorcode 999 "Unknown failure"  (a code nobody documents)
 *   29  HTTP 429, 50  HTTP 500, 51  HTTP 503 (HTML bodies)
 *   5d  sleeps 3 s, then answers OK (slower than any test's timeout)
 *   9a  HTTP 200, a body that is not JSON
 *   9b  {"response":{}}
 *   9c  vacbanned is "no" (a string)
 *   9f  HTTP 200, 128 KiB of JSON (over the client's reply cap)
 *   anything else (e.g. 0a): OK, not banned, not shared
 * An OK steamid is 76561197960265728 + (FNV-1a of the lower-cased ticket
 * mod 2^31): stable per ticket, distinct across tickets.
 *
 * GET /stats -> {"requests":N}: AuthenticateUserTicket requests received,
 * so a test can prove that a call never reached "Steam".
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys/charset.h"
#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/hash.h"
#include "sys/http_server.h"
#include "sys/log.h"
#include "sys/banned.h"

struct fake_config {
	char *listen;
	int64_t port;
	int64_t app_id;
	char *key; /* secret: from --key-file */
};

struct fake {
	const struct fake_config *cfg;
	atomic_llong requests;
};

#define OPT(f) offsetof(struct fake_config, f)
static const struct cc_config_option options[] = {
	{ .name = "listen", .type = CC_CFG_STRING, .default_value = "127.0.0.1",
	  .help = "address to bind", .offset = OPT(listen) },
	{ .name = "port", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 65535,
	  .help = "port (0 = ephemeral; printed as \"listening <port>\")", .offset = OPT(port) },
	{ .name = "app-id", .type = CC_CFG_INT, .default_value = "480", .min = 1, .max = 4294967295.0,
	  .help = "the App ID requests must name", .offset = OPT(app_id) },
	{ .name = "key", .type = CC_CFG_STRING, .secret = true, .required = true,
	  .help = "the publisher key accepted (use --key-file)", .offset = OPT(key) },
};
static const struct cc_config_spec spec = {
	.program = "fake_steam",
	.summary = "Fake Steam Web API (AuthenticateUserTicket) for tests and the demo.",
	.options = options,
	.n_options = CC_ARRAY_LEN(options),
};

static const char forbidden_page[] =
	"<html><head><title>Forbidden</title></head><body><h1>Forbidden</h1>Access is denied. "
	"Retrying will not help. Please verify your <pre>key=</pre> parameter.</body></html>";

static void html(struct cc_http_response *resp, int status, const char *text)
{
	(void)cc_http_respond_text(resp, status, "text/html; charset=UTF-8", text, strlen(text));
}

static void steam_error(struct cc_http_response *resp, int code, const char *desc)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *err = cJSON_AddObjectToObject(cJSON_AddObjectToObject(root, "response"), "error");
	cJSON_AddNumberToObject(err, "errorcode", code);
	cJSON_AddStringToObject(err, "errordesc", desc);
	cc_http_respond_json(resp, 200, root); /* NULL pieces: cJSON's adders tolerate them */
}

static uint64_t derive_steamid(const char *ticket)
{
	uint64_t h = CC_HASH_FNV64_BASIS;
	for (const char *p = ticket; *p; p++) {
		char c = *p >= 'A' && *p <= 'F' ? (char)(*p - 'A' + 'a') : *p;
		h = cc_hash_fnv1a64_add(h, &c, 1);
	}
	return 76561197960265728ULL + h % (1ULL << 31);
}

/* Answers a vouched-for identity; shape decides how it departs from Steam's. */
static void steam_ok(struct cc_http_response *resp, const char *ticket, const char *prefix)
{
	char sid[24], owner[24];
	uint64_t id = derive_steamid(ticket);
	cJSON *root = cJSON_CreateObject();
	cJSON *params = cJSON_AddObjectToObject(cJSON_AddObjectToObject(root, "response"), "params");

	snprintf(sid, sizeof(sid), "%llu", (unsigned long long)id);
	snprintf(owner, sizeof(owner), "%llu",
		 (unsigned long long)(strcmp(prefix, "fa") == 0 ? id + 1 : id));
	cJSON_AddStringToObject(params, "result", "OK");
	cJSON_AddStringToObject(params, "steamid", sid);
	cJSON_AddStringToObject(params, "ownersteamid", owner);
	if (strcmp(prefix, "9c") == 0)
		cJSON_AddStringToObject(params, "vacbanned", "no");
	else
		cJSON_AddBoolToObject(params, "vacbanned", strcmp(prefix, "bb") == 0);
	cJSON_AddBoolToObject(params, "publisherbanned", strcmp(prefix, "cc") == 0);
	cc_http_respond_json(resp, 200, root);
}

static bool hex_ticket(const char *t)
{
	size_t n = strlen(t);
	return n >= 2 && n % 2 == 0 && cc_charset_all(t, n, CC_CHARSET_DIGIT, "abcdefABCDEF");
}

/* 128 KiB of valid JSON: {"response":{},"pad":"xxxx..."} */
static void huge_reply(struct cc_http_response *resp)
{
	size_t n = 128 * 1024;
	char *pad = malloc(n + 1);
	cJSON *root = cJSON_CreateObject();

	if (pad) {
		memset(pad, 'x', n);
		pad[n] = '\0';
		cJSON_AddObjectToObject(root, "response");
		cJSON_AddStringToObject(root, "pad", pad);
	}
	free(pad);
	cc_http_respond_json(resp, 200, root);
}

static int handle_auth(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	const char *key = cc_http_query(req, "key");
	const char *appid = cc_http_query(req, "appid");
	const char *ticket = cc_http_query(req, "ticket");
	char prefix[3] = "";

	atomic_fetch_add(&f->requests, 1);
	if (!key || !appid || !ticket) {
		html(resp, 400, "<html><head><title>Bad Request</title></head><body><h1>Bad Request</h1>"
				"Required parameter is missing</body></html>");
		return 0;
	}
	if (!cc_secret_equal(key, strlen(key), f->cfg->key, strlen(f->cfg->key)) ||
	    strtoll(appid, NULL, 10) != f->cfg->app_id) {
		html(resp, 403, forbidden_page);
		return 0;
	}
	if (!hex_ticket(ticket)) {
		steam_error(resp, 3, "Invalid parameter");
		return 0;
	}
	for (int i = 0; i < 2; i++)
		prefix[i] = ticket[i] >= 'A' && ticket[i] <= 'F' ? (char)(ticket[i] - 'A' + 'a') : ticket[i];

	if (strcmp(prefix, "e0") == 0)
		steam_error(resp, 3, "Invalid parameter");
	else if (strcmp(prefix, "e1") == 0)
		steam_error(resp, 101, "Invalid ticket");
	else if (strcmp(prefix, "e2") == 0)
		steam_error(resp, 102, "Ticket for other app");
	else if (strcmp(prefix, "e3") == 0)
		steam_error(resp, 103, "Ticket expired");
	else if (strcmp(prefix, "ee") == 0)
		steam_error(resp, 999, "Unknown failure");
	else if (strcmp(prefix, "29") == 0)
		html(resp, 429, "<html><body>Too Many Requests</body></html>");
	else if (strcmp(prefix, "50") == 0)
		html(resp, 500, "<html><body>Internal Server Error</body></html>");
	else if (strcmp(prefix, "51") == 0)
		html(resp, 503, "<html><body>Service Unavailable</body></html>");
	else if (strcmp(prefix, "9a") == 0)
		(void)cc_http_respond_text(resp, 200, "application/json", "<html>oops", 10);
	else if (strcmp(prefix, "9b") == 0)
		(void)cc_http_respond_text(resp, 200, "application/json", "{\"response\":{}}", 15);
	else if (strcmp(prefix, "9f") == 0)
		huge_reply(resp);
	else {
		if (strcmp(prefix, "5d") == 0) {
			/* The fake's only sleep: it plays a slow Steam, it synchronises nothing. */
			struct timespec ts = { .tv_sec = 3 };
			while (nanosleep(&ts, &ts) != 0)
				;
		}
		steam_ok(resp, ticket, prefix);
	}
	return 0;
}

static int handle_stats(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	cJSON *root = cJSON_CreateObject();

	(void)req;
	cJSON_AddNumberToObject(root, "requests", (double)atomic_load(&f->requests));
	cc_http_respond_json(resp, 200, root);
	return 0;
}

static const struct cc_http_route routes[] = {
	{ "GET", "/ISteamUserAuth/AuthenticateUserTicket/v1/", handle_auth },
	{ "GET", "/ISteamUserAuth/AuthenticateUserTicket/v1", handle_auth },
	{ "GET", "/stats", handle_stats },
};

int main(int argc, char **argv)
{
	struct fake_config cfg = { 0 };
	struct fake f = { .cfg = &cfg };
	struct cc_http_server *server = NULL;
	char *const *positional;
	sigset_t stop;
	int sig, status = 1;

	cc_config_load_or_exit(&spec, argc, argv, &cfg, &positional);
	cc_log_init("fake_steam", CC_LOG_WARN);
	/* Block before the server's threads exist so only sigwait sees the signals. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	server = cc_http_server_start(&(struct cc_http_server_options){
		.name = "fake_steam", .bind = cfg.listen, .port = (int)cfg.port,
		.routes = routes, .n_routes = CC_ARRAY_LEN(routes), .ctx = &f });
	if (!server) {
		fprintf(stderr, "fake_steam: cannot serve on %s:%lld\n", cfg.listen, (long long)cfg.port);
		goto out;
	}
	printf("listening %d\n", cc_http_server_port(server));
	fflush(stdout);
	sigwait(&stop, &sig);
	status = 0;
out:
	cc_http_server_stop(server);
	cc_config_release(&spec, &cfg);
	return status;
}
