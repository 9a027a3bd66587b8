/*
 * fake_server_routes - cc-api's server routes (SPEC 8, INTERFACES.md) for
 * the cc-supervisor and cc-gameserver tests, before and beside the real
 * ones. Loopback HTTP, never in a deployment. It checks what the real
 * routes check first (the bearer workload token, the {id} in the path)
 * and records every call, so a test can assert what the supervisor and
 * the game server sent, in order.
 *
 *   fake_server_routes --server-id=local-7100 --roster-file=PATH \
 *       --workload-token-file=PATH [--port=0] [--fail-process-ready]
 *
 * Prints "listening <port>" as its first stdout line once it serves.
 *
 *   POST /v1/servers/{id}/register   {state, protocol_version, image_digest} -> 200 {"state":...}
 *                                    (503 for process_ready with --fail-process-ready)
 *   GET  /v1/servers/{id}/roster     -> 200, the bytes of --roster-file (read on every call)
 *   POST /v1/servers/{id}/connect    {player_id, connection_id} -> 200 {"generation":1}
 *                                    (the first --connect-not-yet answered 409 invalid_state)
 *   POST /v1/servers/{id}/disconnect {player_id, generation, reason} -> 200 {}
 *   POST /v1/servers/{id}/shutdown   {reason} -> 200 {}
 *   POST /v1/servers/{id}/result     {score, players} -> 200 {}
 *   no or wrong bearer -> 401; another {id} -> 403; a body that is not a JSON object -> 400
 *   GET  /calls -> {"calls":[{"method","route","body"}...]} (the first 1000, in order)
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/file.h"
#include "sys/http_server.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define MAX_CALLS 1000

struct fake_config {
	int64_t port;
	char *server_id;
	char *roster_file;
	char *workload_token; /* secret */
	bool fail_process_ready;
	int64_t connect_not_yet;
};

struct fake {
	const struct fake_config *cfg;
	pthread_mutex_t lock;
	cJSON *calls; /* array, guarded by lock */
	int64_t not_yet_left; /* connects still to refuse with 409 invalid_state; guarded by lock */
};

#define OPT(f) offsetof(struct fake_config, f)
static const struct cc_config_option options[] = {
	{ .name = "port", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 65535,
	  .help = "port (0 = ephemeral; printed as \"listening <port>\")", .offset = OPT(port) },
	{ .name = "server-id", .type = CC_CFG_STRING, .required = true, .help = "the {id} accepted", .offset = OPT(server_id) },
	{ .name = "roster-file", .type = CC_CFG_STRING, .required = true, .help = "manifest served by GET roster",
	  .offset = OPT(roster_file) },
	{ .name = "workload-token", .type = CC_CFG_STRING, .secret = true, .required = true,
	  .help = "the bearer token accepted", .offset = OPT(workload_token) },
	{ .name = "connect-not-yet", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 1000,
	  .help = "answer the first N connects 409 invalid_state (the match not yet ASSIGNMENT_READY)",
	  .offset = OPT(connect_not_yet) },
	{ .name = "fail-process-ready", .type = CC_CFG_BOOL, .default_value = "false",
	  .help = "answer 503 to register process_ready", .offset = OPT(fail_process_ready) },
};

static const struct cc_config_spec spec = {
	.program = "fake_server_routes",
	.summary = "Fake cc-api server routes (register, roster, connect, disconnect, shutdown, result) for tests.",
	.options = options,
	.n_options = CC_ARRAY_LEN(options),
};

/* Checks the bearer and the {id}; answers and returns false when either is wrong. */
static bool authorised(struct fake *f, const struct cc_http_request *req, struct cc_http_response *resp)
{
	const char *auth = cc_http_header(req, "Authorization");
	const char *tok = f->cfg->workload_token;
	if (!auth || strncmp(auth, "Bearer ", 7) != 0 || !cc_secret_equal(auth + 7, strlen(auth + 7), tok, strlen(tok))) {
		cc_http_error(resp, 401, "unauthorized", "workload token missing or wrong", false);
		return false;
	}
	const char *id = cc_http_param(req, "id");
	if (!id || strcmp(id, f->cfg->server_id) != 0) {
		cc_http_error(resp, 403, "forbidden", "the token's allocation is for another server", false);
		return false;
	}
	return true;
}

static void record(struct fake *f, const struct cc_http_request *req, const char *route)
{
	pthread_mutex_lock(&f->lock);
	if (cJSON_GetArraySize(f->calls) < MAX_CALLS) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "method", req->method);
		cJSON_AddStringToObject(c, "route", route);
		cJSON_AddStringToObject(c, "body", req->body);
		cJSON_AddItemToArray(f->calls, c);
	}
	pthread_mutex_unlock(&f->lock);
}

static int handle_post(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	const char *route = strrchr(req->path, '/') + 1;
	if (!authorised(f, req, resp))
		return 0;
	cJSON *body = NULL;
	struct cc_json_error err;
	if (cc_json_parse_object(req->body, req->body_len, 64 * 1024, 8, &body, &err) != 0) {
		cc_http_error(resp, 400, "malformed", err.message, false);
		return 0;
	}
	record(f, req, route);
	cJSON *out = cJSON_CreateObject();
	if (strcmp(route, "register") == 0) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(body, "state");
		if (f->cfg->fail_process_ready && cJSON_IsString(st) && strcmp(st->valuestring, "process_ready") == 0) {
			cJSON_Delete(out);
			cJSON_Delete(body);
			cc_http_error(resp, 503, "unavailable", "fake: --fail-process-ready", true);
			return 0;
		}
		cJSON_AddStringToObject(out, "state", cJSON_IsString(st) ? st->valuestring : "");
	} else if (strcmp(route, "connect") == 0) {
		pthread_mutex_lock(&f->lock);
		bool not_yet = f->not_yet_left > 0 && f->not_yet_left--;
		pthread_mutex_unlock(&f->lock);
		if (not_yet) {
			cJSON_Delete(out);
			cJSON_Delete(body);
			cc_http_error(resp, 409, "invalid_state", "the match is PROCESS_READY; players connect in ASSIGNMENT_READY or IN_PROGRESS", false);
			return 0;
		}
		cJSON_AddNumberToObject(out, "generation", 1);
	}
	cJSON_Delete(body);
	cc_http_respond_json(resp, 200, out);
	return 0;
}

static int handle_roster(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	if (!authorised(f, req, resp))
		return 0;
	record(f, req, "roster");
	char *text = NULL;
	size_t len = 0;
	struct cc_file_error ferr;
	if (cc_file_read(f->cfg->roster_file, 64 * 1024, 0, &text, &len, &ferr) != 0) {
		cc_http_error(resp, 404, "not_found", "no roster", false);
		return 0;
	}
	int rc = cc_http_respond_text(resp, 200, "application/json", text, len);
	free(text);
	return rc;
}

static int handle_calls(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	(void)req;
	cJSON *root = cJSON_CreateObject();
	pthread_mutex_lock(&f->lock);
	cJSON_AddItemToObject(root, "calls", cJSON_Duplicate(f->calls, true));
	pthread_mutex_unlock(&f->lock);
	cc_http_respond_json(resp, 200, root);
	return 0;
}

int main(int argc, char **argv)
{
	struct fake_config cfg = { 0 };
	struct fake f = { .cfg = &cfg };
	int status = 1;
	sigset_t stop;

	char *const *positional = NULL;
	cc_config_load_or_exit(&spec, argc, argv, &cfg, &positional);
	cc_log_init("fake_server_routes", CC_LOG_INFO);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	pthread_mutex_init(&f.lock, NULL);
	f.calls = cJSON_CreateArray();
	f.not_yet_left = cfg.connect_not_yet;
	static const struct cc_http_route routes[] = {
		{ "POST", "/v1/servers/{id}/register", handle_post },
		{ "POST", "/v1/servers/{id}/connect", handle_post },
		{ "POST", "/v1/servers/{id}/disconnect", handle_post },
		{ "POST", "/v1/servers/{id}/shutdown", handle_post },
		{ "POST", "/v1/servers/{id}/result", handle_post },
		{ "GET", "/v1/servers/{id}/roster", handle_roster },
		{ "GET", "/calls", handle_calls },
	};
	struct cc_http_server_options opts = { .name = "fake_server_routes", .port = (int)cfg.port, .routes = routes,
						.n_routes = CC_ARRAY_LEN(routes), .ctx = &f };
	struct cc_http_server *srv = cc_http_server_start(&opts);
	if (!srv || !f.calls)
		goto out;
	printf("listening %d\n", cc_http_server_port(srv));
	fflush(stdout);
	int sig = 0;
	(void)sigwait(&stop, &sig);
	cc_http_server_stop(srv);
	status = 0;
out:
	cJSON_Delete(f.calls);
	pthread_mutex_destroy(&f.lock);
	cc_config_release(&spec, &cfg);
	return status;
}
