/*
 * fake_agones_sdk - a stand-in for the Agones SDK sidecar's HTTP gateway
 * (what a game-server pod reaches on 127.0.0.1:$AGONES_SDK_HTTP_PORT), for
 * cc-supervisor's Agones mode tests. Loopback HTTP, never in a deployment.
 * The shapes are those of ../shared/agones/sdk.swagger.json (vendored byte
 * for byte in tests/fakes/agones/) and ../shared/agones/README.md: proto
 * field names, empty fields sent too, 64-bit integers as strings;
 * tests/integration/supervisor_agones.sh checks every answer this fake gave
 * and every request it got against the swagger file.
 *
 *   fake_agones_sdk --game-port=N [--port=0] [--listen=127.0.0.1] [--name=gs-1]
 *       [--namespace=default] [--address=127.0.0.1] [--node=node-1]
 *       [--labels=k=v,k=v] [--incomplete-polls=N] [--never-assign]
 *       [--k8s-url=URL] [--shutdown-delay-ms=MS]
 *
 * Prints "listening <port>" as its first stdout line once it serves, then
 * runs until SIGINT/SIGTERM.
 *
 * The SDK routes (sdk.swagger.json):
 *   GET  /gameserver  the sdkGameServer. status.state starts "Scheduled";
 *                     the first --incomplete-polls answers (all of them with
 *                     --never-assign) have status.address "" and
 *                     status.ports [] as a sidecar shows a pod not placed yet.
 *   POST /ready       state Ready. With --k8s-url, the GameServer joins the
 *                     fake Kubernetes API's fleet (tests/fakes/fake_k8s.c:
 *                     POST {k8s}/fake/gameservers with its name, address,
 *                     port, node, labels and this fake's /fake/allocate as
 *                     the URL to call when it is allocated): the Agones
 *                     controller's part, so that a GameServerAllocation
 *                     finds it.
 *   POST /health      one ping (counted in the log)
 *   POST /allocate    state Allocated (self-allocation)
 *   POST /shutdown    state Shutdown; with --k8s-url the fake API's
 *                     GameServer is marked Shutdown (Agones deletes it).
 *                     --shutdown-delay-ms delays the answer (the fake's only
 *                     sleep: a slow sidecar; it synchronises nothing), so a
 *                     test can see that no health ping follows it.
 *   PUT  /metadata/label, /metadata/annotation  body sdkKeyValue: applied
 * POST bodies must be JSON objects (sdkEmpty, sdkKeyValue); otherwise 400
 * with a googlerpcStatus {code 3, message, details []}.
 *
 * Control routes for the test (never called by the supervisor):
 *   POST /fake/allocate {"labels":{...},"annotations":{...}}  what the
 *        Agones controller does on a GameServerAllocation: metadata merged,
 *        state Allocated (fake_k8s calls it)
 *   GET  /fake/log -> {"now_ms", "state", "requests":[{"t_ms","method",
 *        "path","body"}], "answers":[{"path","status","body"}]} for the SDK
 *        routes, in arrival order (t_ms: this fake's monotonic clock).
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys/clock.h"
#include "sys/config.h"
#include "sys/http_client.h"
#include "sys/http_server.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define MAX_LOG 20000

struct fake_config {
	char *listen;
	int64_t port;
	char *name;
	char *namespace_;
	char *address;
	char *node;
	int64_t game_port;
	char *labels;
	int64_t incomplete_polls;
	bool never_assign;
	char *k8s_url;
	int64_t shutdown_delay_ms;
};

#define OPT(f) offsetof(struct fake_config, f)
static const struct cc_config_option options[] = {
	{ .name = "listen", .type = CC_CFG_STRING, .default_value = "127.0.0.1", .help = "bind address", .offset = OPT(listen) },
	{ .name = "port", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 65535,
	  .help = "port (0 = ephemeral; printed as \"listening <port>\")", .offset = OPT(port) },
	{ .name = "name", .type = CC_CFG_STRING, .default_value = "gs-1", .help = "the GameServer's name", .offset = OPT(name) },
	{ .name = "namespace", .type = CC_CFG_STRING, .default_value = "default", .help = "its namespace",
	  .offset = OPT(namespace_) },
	{ .name = "address", .type = CC_CFG_STRING, .default_value = "127.0.0.1", .help = "status.address once assigned",
	  .offset = OPT(address) },
	{ .name = "node", .type = CC_CFG_STRING, .default_value = "node-1", .help = "the node (told to the fake k8s)",
	  .offset = OPT(node) },
	{ .name = "game-port", .type = CC_CFG_INT, .required = true, .min = 1, .max = 65535,
	  .help = "status.ports[] {name default, port} once assigned", .offset = OPT(game_port) },
	{ .name = "labels", .type = CC_CFG_STRING, .default_value = "",
	  .help = "object_meta.labels, k=v,k=v (the fleet's, region's and build's for the fake k8s selectors)",
	  .offset = OPT(labels) },
	{ .name = "incomplete-polls", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 1000000,
	  .help = "the first N GET /gameserver answers have no address and ports", .offset = OPT(incomplete_polls) },
	{ .name = "never-assign", .type = CC_CFG_BOOL, .default_value = "false",
	  .help = "no GET /gameserver answer ever has an address and ports", .offset = OPT(never_assign) },
	{ .name = "k8s-url", .type = CC_CFG_STRING,
	  .help = "the fake Kubernetes API (fake_k8s) this GameServer joins on /ready", .offset = OPT(k8s_url) },
	{ .name = "shutdown-delay-ms", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 60000,
	  .help = "POST /shutdown answers after this long", .offset = OPT(shutdown_delay_ms) },
};
static const struct cc_config_spec spec = {
	.program = "fake_agones_sdk",
	.summary = "Fake Agones SDK sidecar HTTP gateway on loopback (tests only).",
	.options = options,
	.n_options = CC_ARRAY_LEN(options),
};

struct fake {
	const struct fake_config *cfg;
	int my_port;
	pthread_mutex_t lock;
	char state[32];
	int64_t polls;
	int64_t generation;
	cJSON *labels, *annotations;
	cJSON *requests, *answers;
	int64_t t0;
};

static int64_t now_ms(const struct fake *f)
{
	return cc_clock_ms() - f->t0;
}

/* The sdkGameServer as the sidecar shows it now (under f->lock). */
static cJSON *gameserver(struct fake *f)
{
	char buf[64];
	bool assigned = !f->cfg->never_assign && ++f->polls > f->cfg->incomplete_polls;
	cJSON *gs = cJSON_CreateObject();
	cJSON *meta = cJSON_AddObjectToObject(gs, "object_meta");
	cJSON_AddStringToObject(meta, "name", f->cfg->name);
	cJSON_AddStringToObject(meta, "namespace", f->cfg->namespace_);
	snprintf(buf, sizeof buf, "5e1f0c3a-0000-4000-8000-%012d", f->my_port);
	cJSON_AddStringToObject(meta, "uid", buf);
	snprintf(buf, sizeof buf, "%lld", (long long)(1000 + f->generation));
	cJSON_AddStringToObject(meta, "resource_version", buf);
	snprintf(buf, sizeof buf, "%lld", (long long)f->generation);
	cJSON_AddStringToObject(meta, "generation", buf);
	cJSON_AddStringToObject(meta, "creation_timestamp", "1767225600");
	cJSON_AddStringToObject(meta, "deletion_timestamp", "0");
	cJSON_AddItemToObject(meta, "annotations", cJSON_Duplicate(f->annotations, true));
	cJSON_AddItemToObject(meta, "labels", cJSON_Duplicate(f->labels, true));
	cJSON *health = cJSON_AddObjectToObject(cJSON_AddObjectToObject(gs, "spec"), "health");
	cJSON_AddBoolToObject(health, "disabled", false);
	cJSON_AddNumberToObject(health, "period_seconds", 5);
	cJSON_AddNumberToObject(health, "failure_threshold", 3);
	cJSON_AddNumberToObject(health, "initial_delay_seconds", 5);
	cJSON *st = cJSON_AddObjectToObject(gs, "status");
	cJSON_AddStringToObject(st, "state", f->state);
	cJSON_AddStringToObject(st, "address", assigned ? f->cfg->address : "");
	cJSON *addrs = cJSON_AddArrayToObject(st, "addresses");
	cJSON *ports = cJSON_AddArrayToObject(st, "ports");
	if (assigned) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "type", "InternalIP");
		cJSON_AddStringToObject(a, "address", f->cfg->address);
		cJSON_AddItemToArray(addrs, a);
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name", "default");
		cJSON_AddNumberToObject(p, "port", (double)f->cfg->game_port);
		cJSON_AddItemToArray(ports, p);
	}
	cJSON_AddNullToObject(st, "players");
	cJSON_AddObjectToObject(st, "counters");
	cJSON_AddObjectToObject(st, "lists");
	return gs;
}

/* Logs a request (under f->lock); body is the raw text (kept as JSON when it parses). */
static void log_request(struct fake *f, const struct cc_http_request *req)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddNumberToObject(e, "t_ms", (double)now_ms(f));
	cJSON_AddStringToObject(e, "method", req->method);
	cJSON_AddStringToObject(e, "path", req->path);
	cJSON *b = req->body_len ? cJSON_ParseWithLength(req->body, req->body_len) : NULL;
	cJSON_AddItemToObject(e, "body", b ? b : req->body_len ? cJSON_CreateString(req->body) : cJSON_CreateNull());
	if (cJSON_GetArraySize(f->requests) < MAX_LOG)
		cJSON_AddItemToArray(f->requests, e);
	else
		cJSON_Delete(e);
}

/* Answers status with body (taken), logging it (under f->lock). */
static void answer(struct fake *f, const struct cc_http_request *req, struct cc_http_response *resp, int status,
		   cJSON *body)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "path", req->path);
	cJSON_AddNumberToObject(e, "status", status);
	cJSON_AddItemToObject(e, "body", cJSON_Duplicate(body, true));
	if (cJSON_GetArraySize(f->answers) < MAX_LOG)
		cJSON_AddItemToArray(f->answers, e);
	else
		cJSON_Delete(e);
	cc_http_respond_json(resp, status, body);
}

/* A gRPC-gateway error (googlerpcStatus). */
static cJSON *rpc_status(int code, const char *message)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddNumberToObject(s, "code", code);
	cJSON_AddStringToObject(s, "message", message);
	cJSON_AddArrayToObject(s, "details");
	return s;
}

/* The request's body as an object (an empty body is {}); NULL when it is not one. */
static cJSON *body_object(const struct cc_http_request *req)
{
	if (req->body_len == 0)
		return cJSON_CreateObject();
	cJSON *b = cJSON_ParseWithLength(req->body, req->body_len);
	if (!cJSON_IsObject(b)) {
		cJSON_Delete(b);
		return NULL;
	}
	return b;
}

/* POST to the fake k8s (outside f->lock); logged to stderr when it fails. */
static void tell_k8s(struct fake *f, const char *path, cJSON *body)
{
	char url[2200];
	char *text = cJSON_PrintUnformatted(body);
	snprintf(url, sizeof url, "%s%s", f->cfg->k8s_url, path);
	const char *headers[] = { "Content-Type: application/json", NULL };
	struct cc_http_client_request rq = { .method = "POST", .url = url, .headers = headers, .body = text,
					     .body_len = strlen(text), .timeout_ms = 3000 };
	struct cc_http_client_response rs = { 0 };
	int rc = cc_http_client_do(&rq, &rs);
	if (rc != 0 || rs.status != 200)
		fprintf(stderr, "fake_agones_sdk: POST %s: %s %ld\n", url, rc ? cc_errname(rc) : "HTTP", rc ? 0 : rs.status);
	if (rc == 0)
		cc_http_client_response_release(&rs);
	free(text);
	cJSON_Delete(body);
}

static int handle_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	pthread_mutex_lock(&f->lock);
	log_request(f, req);
	answer(f, req, resp, 200, gameserver(f));
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static int handle_post(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	const char *route = req->path + 1;
	cJSON *body = body_object(req);
	cJSON *join = NULL;
	pthread_mutex_lock(&f->lock);
	log_request(f, req);
	if (!body) {
		answer(f, req, resp, 400, rpc_status(3, "invalid character in request body: not a JSON object"));
		pthread_mutex_unlock(&f->lock);
		return 0;
	}
	f->generation++;
	if (strcmp(route, "ready") == 0) {
		snprintf(f->state, sizeof f->state, "Ready");
		if (f->cfg->k8s_url) {
			char notify[128];
			snprintf(notify, sizeof notify, "http://127.0.0.1:%d/fake/allocate", f->my_port);
			join = cJSON_CreateObject();
			cJSON_AddStringToObject(join, "name", f->cfg->name);
			cJSON_AddStringToObject(join, "address", f->cfg->address);
			cJSON_AddNumberToObject(join, "port", (double)f->cfg->game_port);
			cJSON_AddStringToObject(join, "nodeName", f->cfg->node);
			cJSON_AddItemToObject(join, "labels", cJSON_Duplicate(f->labels, true));
			cJSON_AddStringToObject(join, "notify", notify);
		}
	} else if (strcmp(route, "allocate") == 0) {
		snprintf(f->state, sizeof f->state, "Allocated");
	} else if (strcmp(route, "shutdown") == 0) {
		snprintf(f->state, sizeof f->state, "Shutdown");
		if (f->cfg->k8s_url)
			join = cJSON_CreateObject();
	}
	pthread_mutex_unlock(&f->lock);
	if (join) {
		char path[300];
		if (strcmp(route, "ready") == 0)
			snprintf(path, sizeof path, "/fake/gameservers");
		else
			snprintf(path, sizeof path, "/fake/gameservers/%s/shutdown", f->cfg->name);
		tell_k8s(f, path, join);
	}
	if (strcmp(route, "shutdown") == 0 && f->cfg->shutdown_delay_ms > 0) {
		struct timespec ts = { f->cfg->shutdown_delay_ms / 1000, (f->cfg->shutdown_delay_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	pthread_mutex_lock(&f->lock);
	answer(f, req, resp, 200, cJSON_CreateObject());
	pthread_mutex_unlock(&f->lock);
	cJSON_Delete(body);
	return 0;
}

static int handle_metadata(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	cJSON *body = body_object(req);
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(body, "key");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "value");
	pthread_mutex_lock(&f->lock);
	log_request(f, req);
	if (!cJSON_IsString(k) || !k->valuestring[0] || !cJSON_IsString(v)) {
		answer(f, req, resp, 400, rpc_status(3, "key and value must be strings"));
	} else {
		cJSON *to = strcmp(req->path, "/metadata/label") == 0 ? f->labels : f->annotations;
		char key[300];
		/* The SDK prefixes what it sets with agones.dev/sdk-. */
		snprintf(key, sizeof key, "agones.dev/sdk-%s", k->valuestring);
		cJSON_DeleteItemFromObjectCaseSensitive(to, key);
		cJSON_AddStringToObject(to, key, v->valuestring);
		f->generation++;
		answer(f, req, resp, 200, cJSON_CreateObject());
	}
	pthread_mutex_unlock(&f->lock);
	cJSON_Delete(body);
	return 0;
}

/* Copies every string member of from into to (replacing). */
static void merge_strings(cJSON *to, const cJSON *from)
{
	const cJSON *l;
	cJSON_ArrayForEach(l, from)
	{
		if (!cJSON_IsString(l))
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(to, l->string);
		cJSON_AddStringToObject(to, l->string, l->valuestring);
	}
}

static int handle_fake_allocate(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	cJSON *body = body_object(req);
	if (!body) {
		cc_http_error(resp, 400, "invalid_request", "body must be a JSON object", false);
		return 0;
	}
	pthread_mutex_lock(&f->lock);
	merge_strings(f->labels, cJSON_GetObjectItemCaseSensitive(body, "labels"));
	merge_strings(f->annotations, cJSON_GetObjectItemCaseSensitive(body, "annotations"));
	snprintf(f->state, sizeof f->state, "Allocated");
	f->generation++;
	pthread_mutex_unlock(&f->lock);
	cJSON_Delete(body);
	cc_http_respond_json(resp, 200, cJSON_CreateObject());
	return 0;
}

static int handle_log(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	(void)req;
	cJSON *root = cJSON_CreateObject();
	pthread_mutex_lock(&f->lock);
	cJSON_AddNumberToObject(root, "now_ms", (double)now_ms(f));
	cJSON_AddStringToObject(root, "state", f->state);
	cJSON_AddItemToObject(root, "requests", cJSON_Duplicate(f->requests, true));
	cJSON_AddItemToObject(root, "answers", cJSON_Duplicate(f->answers, true));
	pthread_mutex_unlock(&f->lock);
	cc_http_respond_json(resp, 200, root);
	return 0;
}

static const struct cc_http_route routes[] = {
	{ "GET", "/gameserver", handle_get },
	{ "POST", "/ready", handle_post },
	{ "POST", "/health", handle_post },
	{ "POST", "/allocate", handle_post },
	{ "POST", "/shutdown", handle_post },
	{ "PUT", "/metadata/label", handle_metadata },
	{ "PUT", "/metadata/annotation", handle_metadata },
	{ "POST", "/fake/allocate", handle_fake_allocate },
	{ "GET", "/fake/log", handle_log },
};

/* Fills f->labels from "k=v,k=v". False on a malformed list. */
static bool parse_labels(struct fake *f, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	bool ok = copy != NULL;
	for (char *item = copy ? strtok_r(copy, ",", &save) : NULL; item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (!eq || eq == item) {
			ok = false;
			break;
		}
		*eq = '\0';
		cJSON_AddStringToObject(f->labels, item, eq + 1);
	}
	free(copy);
	return ok;
}

int main(int argc, char **argv)
{
	struct fake_config cfg = { 0 };
	struct fake f = { .cfg = &cfg };
	struct cc_http_server *server = NULL;
	char *const *positional;
	sigset_t stop;
	int sig, status = 1;

	cc_config_load_or_exit(&spec, argc, argv, &cfg, &positional);
	cc_log_init("fake_agones_sdk", CC_LOG_WARN);
	pthread_mutex_init(&f.lock, NULL);
	f.t0 = cc_clock_ms();
	snprintf(f.state, sizeof f.state, "Scheduled");
	f.generation = 1;
	f.labels = cJSON_CreateObject();
	f.annotations = cJSON_CreateObject();
	f.requests = cJSON_CreateArray();
	f.answers = cJSON_CreateArray();
	if (!parse_labels(&f, cfg.labels)) {
		fprintf(stderr, "fake_agones_sdk: --labels: k=v,k=v\n");
		goto out;
	}
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	server = cc_http_server_start(&(struct cc_http_server_options){ .name = "fake_agones_sdk",
									.bind = cfg.listen,
									.port = (int)cfg.port,
									.routes = routes,
									.n_routes = CC_ARRAY_LEN(routes),
									.ctx = &f });
	if (!server) {
		fprintf(stderr, "fake_agones_sdk: cannot serve on %s:%lld\n", cfg.listen, (long long)cfg.port);
		goto out;
	}
	f.my_port = cc_http_server_port(server);
	printf("listening %d\n", f.my_port);
	fflush(stdout);
	sigwait(&stop, &sig);
	status = 0;
out:
	cc_http_server_stop(server);
	cJSON_Delete(f.labels);
	cJSON_Delete(f.annotations);
	cJSON_Delete(f.requests);
	cJSON_Delete(f.answers);
	pthread_mutex_destroy(&f.lock);
	cc_config_release(&spec, &cfg);
	return status;
}
