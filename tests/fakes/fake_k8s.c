/*
 * fake_k8s - a stand-in for the Kubernetes API's Agones allocation endpoint
 * (allocation.agones.dev/v1 GameServerAllocation) for cc-allocator's tests.
 * Loopback HTTP, never in a deployment. The shapes are those of
 * ../shared/agones/ (README.md and allocation.swagger.json); test_allocator
 * checks every answer this fake gave against the swagger file's field
 * names, so the fake and the published API cannot drift apart silently.
 *
 *   fake_k8s --port=0 [--listen=127.0.0.1] [--token-file=PATH] [--capacity=N]
 *
 * Prints "listening <port>" as its first stdout line once it serves, then
 * runs until SIGINT/SIGTERM.
 *
 * POST /apis/allocation.agones.dev/v1/namespaces/{ns}/gameserverallocations
 *   401 (a k8s Status) without "Authorization: Bearer <token-file>" when
 *   --token-file is given; 422 (Status) unless the body is
 *   {"apiVersion":"allocation.agones.dev/v1","kind":"GameServerAllocation",
 *    "spec":{"selectors":[...],"metadata":{...}}}. Otherwise the next
 *   scripted outcome (default "allocated") decides:
 *     allocated    201: the selectors are tried in order: one with
 *                  gameServerState Allocated matches an allocated
 *                  GameServer whose labels include its matchLabels (Agones
 *                  re-allocation: the metadata is applied again); one with
 *                  Ready takes a new GameServer "gs-<n>" (address
 *                  10.0.0.<n>, port 7000 + n, node "node-<n % 3>") while
 *                  fewer than --capacity exist, labelled with its
 *                  matchLabels plus metadata.labels, annotated with
 *                  metadata.annotations. Nothing matches: 201 UnAllocated.
 *     unallocated  201, status.state UnAllocated
 *     contention   201, status.state Contention
 *     409, 429, 500, 503, 403   that status (409/500/503/403: a k8s Status
 *                  object; 429: the allocator's {"code":8,"message":...})
 *     slow:<ms>    waits <ms> (the fake's only sleep: it plays a slow API
 *                  server, it synchronises nothing), then does "allocated"
 *                  (a client that gave up has lost an allocated server)
 *
 * POST /fake/script {"outcomes":["unallocated","slow:1500",...]} appends
 * outcomes. GET /fake/log -> {"requests":[{"namespace","authorization",
 * "body"}],"answers":[{"status","body"}]} in arrival order.
 * GET /fake/gameservers -> {"gameservers":[{"name","state","labels","annotations"}]}.
 *
 * A fleet of real game servers (cc-supervisor's Agones mode tests): POST
 * /fake/gameservers {"name","address","port","nodeName","labels","notify"}
 * adds a Ready GameServer (tests/fakes/fake_agones_sdk.c does it on the
 * supervisor's SDK /ready, as the Agones controller would). A Ready
 * selector takes such a server (labels matching) before making up a new
 * one, marks it Allocated, applies the metadata, and POSTs
 * {"labels","annotations"} (all of them) to its notify URL before
 * answering, as Agones updates the GameServer the sidecar shows. POST
 * /fake/gameservers/{name}/shutdown marks it Shutdown (Agones deletes it):
 * no selector matches it again. --capacity=0 allocates only these.
 * --notify-lead-ms=N answers the allocator N ms after the notification
 * (the fake's other sleep): the game server then sees its allocation
 * before the allocator has recorded it, as can happen with Agones.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/file.h"
#include "sys/http_client.h"
#include "sys/http_server.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define MAX_SCRIPT 256
#define MAX_LOG 1024
#define MAX_SERVERS 256

struct fake_config {
	char *listen;
	int64_t port;
	char *token_file;
	int64_t capacity;
	int64_t notify_lead_ms;
};

#define OPT(f) offsetof(struct fake_config, f)
static const struct cc_config_option options[] = {
	{ .name = "listen", .type = CC_CFG_STRING, .default_value = "127.0.0.1", .help = "bind address",
	  .offset = OPT(listen) },
	{ .name = "port", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 65535,
	  .help = "port (0 = ephemeral; printed as \"listening <port>\")", .offset = OPT(port) },
	{ .name = "token-file", .type = CC_CFG_STRING,
	  .help = "when given, requests must carry Authorization: Bearer <its content>", .offset = OPT(token_file) },
	{ .name = "capacity", .type = CC_CFG_INT, .default_value = "16", .min = 0, .max = MAX_SERVERS,
	  .help = "GameServers the fleet holds", .offset = OPT(capacity) },
	{ .name = "notify-lead-ms", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 10000,
	  .help = "after notifying a real GameServer's gateway, wait this long before answering the allocator",
	  .offset = OPT(notify_lead_ms) },
};
static const struct cc_config_spec spec = {
	.program = "fake_k8s",
	.summary = "Fake Kubernetes API serving Agones GameServerAllocations on loopback (tests only).",
	.options = options,
	.n_options = CC_ARRAY_LEN(options),
};

struct fake {
	const struct fake_config *cfg;
	char *token;                   /* expected bearer token, or NULL */
	pthread_mutex_t lock;
	char *script[MAX_SCRIPT];      /* pending outcomes */
	size_t n_script, next_script;
	cJSON *requests, *answers;     /* the log */
	cJSON *servers;                /* allocated GameServers: [{name, labels, annotations, ...}] */
	int n_servers;
};

/* A k8s Status object (metav1.Status) for an error. */
static cJSON *k8s_status(int code, const char *reason, const char *message)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "kind", "Status");
	cJSON_AddStringToObject(s, "apiVersion", "v1");
	cJSON_AddObjectToObject(s, "metadata");
	cJSON_AddStringToObject(s, "status", "Failure");
	cJSON_AddStringToObject(s, "message", message);
	cJSON_AddStringToObject(s, "reason", reason);
	cJSON_AddNumberToObject(s, "code", code);
	return s;
}

/* Answers status with body (taken), and logs both (under f->lock). */
static void answer(struct fake *f, struct cc_http_response *resp, int status, cJSON *body)
{
	pthread_mutex_lock(&f->lock);
	cJSON *entry = cJSON_CreateObject();
	cJSON_AddNumberToObject(entry, "status", status);
	cJSON_AddItemToObject(entry, "body", cJSON_Duplicate(body, true));
	if (cJSON_GetArraySize(f->answers) < MAX_LOG)
		cJSON_AddItemToArray(f->answers, entry);
	else
		cJSON_Delete(entry);
	pthread_mutex_unlock(&f->lock);
	cc_http_respond_json(resp, status, body);
}

/* True when every matchLabels entry of sel is in labels. */
static bool labels_match(const cJSON *match_labels, const cJSON *labels)
{
	const cJSON *l;
	cJSON_ArrayForEach(l, match_labels)
	{
		const cJSON *have = cJSON_GetObjectItemCaseSensitive(labels, l->string);
		if (!cJSON_IsString(l) || !cJSON_IsString(have) || strcmp(have->valuestring, l->valuestring) != 0)
			return false;
	}
	return true;
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

/* The flat status of an allocated GameServer gs (under f->lock). */
static cJSON *allocated_status(const cJSON *gs)
{
	cJSON *st = cJSON_CreateObject();
	const char *name = cJSON_GetObjectItemCaseSensitive(gs, "name")->valuestring;
	const char *address = cJSON_GetObjectItemCaseSensitive(gs, "address")->valuestring;
	int port = cJSON_GetObjectItemCaseSensitive(gs, "port")->valueint;
	cJSON_AddStringToObject(st, "state", "Allocated");
	cJSON_AddStringToObject(st, "gameServerName", name);
	cJSON *ports = cJSON_AddArrayToObject(st, "ports");
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", "default");
	cJSON_AddNumberToObject(p, "port", port);
	cJSON_AddItemToArray(ports, p);
	cJSON_AddStringToObject(st, "address", address);
	cJSON *addrs = cJSON_AddArrayToObject(st, "addresses");
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "type", "InternalIP");
	cJSON_AddStringToObject(a, "address", address);
	cJSON_AddItemToArray(addrs, a);
	cJSON_AddStringToObject(st, "nodeName", cJSON_GetObjectItemCaseSensitive(gs, "nodeName")->valuestring);
	cJSON_AddStringToObject(st, "source", "local");
	cJSON *meta = cJSON_AddObjectToObject(st, "metadata");
	cJSON_AddItemToObject(meta, "labels", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(gs, "labels"), true));
	cJSON_AddItemToObject(meta, "annotations",
			      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(gs, "annotations"), true));
	return st;
}

/* An empty outcome's status (Agones sends the empty fields too). */
static cJSON *empty_status(const char *state)
{
	cJSON *st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "state", state);
	cJSON_AddStringToObject(st, "gameServerName", "");
	cJSON_AddNullToObject(st, "ports");
	cJSON_AddStringToObject(st, "address", "");
	cJSON_AddNullToObject(st, "addresses");
	cJSON_AddStringToObject(st, "nodeName", "");
	cJSON_AddStringToObject(st, "source", "");
	return st;
}

/* POSTs the GameServer's metadata to its notify URL (a fake SDK gateway); stderr when that fails. */
static void notify(const char *url, char *text)
{
	const char *headers[] = { "Content-Type: application/json", NULL };
	struct cc_http_client_request rq = { .method = "POST", .url = url, .headers = headers, .body = text,
					     .body_len = strlen(text), .timeout_ms = 3000 };
	struct cc_http_client_response rs = { 0 };
	int rc = cc_http_client_do(&rq, &rs);
	if (rc != 0 || rs.status != 200)
		fprintf(stderr, "fake_k8s: notify %s: %s %ld\n", url, rc ? cc_errname(rc) : "HTTP", rc ? 0 : rs.status);
	if (rc == 0)
		cc_http_client_response_release(&rs);
}

static bool state_is(const cJSON *gs, const char *state)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(gs, "state");
	return cJSON_IsString(s) && strcmp(s->valuestring, state) == 0;
}

/* The selectors' verdict: the status of an allocated server, or UnAllocated. */
static cJSON *allocate(struct fake *f, const cJSON *spec_)
{
	const cJSON *selectors = cJSON_GetObjectItemCaseSensitive(spec_, "selectors");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(spec_, "metadata");
	const cJSON *sel;
	cJSON *status = NULL;
	char *notify_url = NULL, *notify_body = NULL;
	pthread_mutex_lock(&f->lock);
	cJSON_ArrayForEach(sel, selectors)
	{
		const cJSON *want = cJSON_GetObjectItemCaseSensitive(sel, "matchLabels");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(sel, "gameServerState");
		bool allocated = cJSON_IsString(state) && strcmp(state->valuestring, "Allocated") == 0;
		cJSON *gs = NULL, *g;
		cJSON_ArrayForEach(g, f->servers)
		if (state_is(g, allocated ? "Allocated" : "Ready") &&
		    labels_match(want, cJSON_GetObjectItemCaseSensitive(g, "labels"))) {
			gs = g;
			break;
		}
		if (!gs && !allocated && f->n_servers < (int)f->cfg->capacity) {
			char name[32], address[32], node[32];
			int n = ++f->n_servers;
			snprintf(name, sizeof name, "gs-%d", n);
			snprintf(address, sizeof address, "10.0.0.%d", n % 250 + 1);
			snprintf(node, sizeof node, "node-%d", n % 3);
			gs = cJSON_CreateObject();
			cJSON_AddStringToObject(gs, "name", name);
			cJSON_AddStringToObject(gs, "state", "Ready");
			cJSON_AddStringToObject(gs, "address", address);
			cJSON_AddNumberToObject(gs, "port", 7000 + n);
			cJSON_AddStringToObject(gs, "nodeName", node);
			cJSON *labels = cJSON_AddObjectToObject(gs, "labels");
			merge_strings(labels, want);
			cJSON_AddObjectToObject(gs, "annotations");
			cJSON_AddItemToArray(f->servers, gs);
		}
		if (gs) {
			cJSON_DeleteItemFromObjectCaseSensitive(gs, "state");
			cJSON_AddStringToObject(gs, "state", "Allocated");
			merge_strings(cJSON_GetObjectItemCaseSensitive(gs, "labels"),
				      cJSON_GetObjectItemCaseSensitive(meta, "labels"));
			merge_strings(cJSON_GetObjectItemCaseSensitive(gs, "annotations"),
				      cJSON_GetObjectItemCaseSensitive(meta, "annotations"));
			status = allocated_status(gs);
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(gs, "notify");
			if (cJSON_IsString(n)) {
				cJSON *b = cJSON_CreateObject();
				cJSON_AddItemToObject(b, "labels",
						      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(gs, "labels"), true));
				cJSON_AddItemToObject(b, "annotations",
						      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(gs, "annotations"), true));
				notify_url = strdup(n->valuestring);
				notify_body = cJSON_PrintUnformatted(b);
				cJSON_Delete(b);
			}
			break;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (notify_url && notify_body) {
		notify(notify_url, notify_body); /* before the answer: the GameServer is Allocated when the allocator hears it */
		if (f->cfg->notify_lead_ms > 0) {
			/* The game server sees its allocation this long before the allocator can record it. */
			struct timespec ts = { f->cfg->notify_lead_ms / 1000, (f->cfg->notify_lead_ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) != 0)
				;
		}
	}
	free(notify_url);
	if (notify_body) {
		memset(notify_body, 0, strlen(notify_body)); /* it holds a workload token */
		free(notify_body);
	}
	return status ? status : empty_status("UnAllocated");
}

/* Checks the request's shape; NULL when fine, else why. */
static const char *shape_problem(const cJSON *body)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "apiVersion");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "allocation.agones.dev/v1") != 0)
		return "apiVersion must be allocation.agones.dev/v1";
	v = cJSON_GetObjectItemCaseSensitive(body, "kind");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "GameServerAllocation") != 0)
		return "kind must be GameServerAllocation";
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(body, "spec");
	if (!cJSON_IsObject(s))
		return "spec is required";
	const cJSON *sel = cJSON_GetObjectItemCaseSensitive(s, "selectors");
	if (!cJSON_IsArray(sel) || cJSON_GetArraySize(sel) == 0)
		return "spec.selectors must be a non-empty array";
	const cJSON *x;
	cJSON_ArrayForEach(x, sel)
	{
		if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(x, "matchLabels")))
			return "every selector needs matchLabels";
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(x, "gameServerState");
		if (st && (!cJSON_IsString(st) ||
			   (strcmp(st->valuestring, "Ready") != 0 && strcmp(st->valuestring, "Allocated") != 0)))
			return "gameServerState must be Ready or Allocated";
	}
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, "metadata");
	if (m && !cJSON_IsObject(m))
		return "spec.metadata must be an object";
	return NULL;
}

/* The next scripted outcome (malloc'd copy), or "allocated". */
static char *next_outcome(struct fake *f)
{
	char *o = NULL;
	pthread_mutex_lock(&f->lock);
	if (f->next_script < f->n_script)
		o = strdup(f->script[f->next_script++]);
	pthread_mutex_unlock(&f->lock);
	return o ? o : strdup("allocated");
}

static int handle_allocate(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	cJSON *body = NULL;
	struct cc_json_error je;
	const char *ns = cc_http_param(req, "ns");
	const char *auth = cc_http_header(req, "Authorization");

	int rc = cc_json_parse_object(req->body, req->body_len, 1 << 20, 32, &body, &je);
	pthread_mutex_lock(&f->lock);
	cJSON *entry = cJSON_CreateObject();
	cJSON_AddStringToObject(entry, "namespace", ns ? ns : "");
	cJSON_AddStringToObject(entry, "authorization", auth ? auth : "");
	cJSON_AddItemToObject(entry, "body", rc == 0 ? cJSON_Duplicate(body, true) : cJSON_CreateNull());
	if (cJSON_GetArraySize(f->requests) < MAX_LOG)
		cJSON_AddItemToArray(f->requests, entry);
	else
		cJSON_Delete(entry);
	pthread_mutex_unlock(&f->lock);

	if (f->token) {
		char want[4200];
		snprintf(want, sizeof want, "Bearer %s", f->token);
		if (!auth || strcmp(auth, want) != 0) {
			answer(f, resp, 401, k8s_status(401, "Unauthorized", "Unauthorized"));
			goto out;
		}
	}
	const char *problem = rc != 0 ? je.message : shape_problem(body);
	if (problem) {
		answer(f, resp, 422, k8s_status(422, "Invalid", problem));
		goto out;
	}
	const cJSON *spec_ = cJSON_GetObjectItemCaseSensitive(body, "spec");
	char *o = next_outcome(f);
	cJSON *status = NULL;
	if (strncmp(o, "slow:", 5) == 0) {
		long ms = strtol(o + 5, NULL, 10);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
		status = allocate(f, spec_);
	} else if (strcmp(o, "allocated") == 0) {
		status = allocate(f, spec_);
	} else if (strcmp(o, "unallocated") == 0) {
		status = empty_status("UnAllocated");
	} else if (strcmp(o, "contention") == 0) {
		status = empty_status("Contention");
	} else if (strcmp(o, "409") == 0) {
		answer(f, resp, 409, k8s_status(409, "Conflict", "the GameServer was modified concurrently"));
	} else if (strcmp(o, "429") == 0) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "code", 8);
		cJSON_AddStringToObject(e, "message", "there is no available GameServer to allocate");
		answer(f, resp, 429, e);
	} else if (strcmp(o, "403") == 0) {
		answer(f, resp, 403, k8s_status(403, "Forbidden", "gameserverallocations is forbidden"));
	} else {
		int code = (int)strtol(o, NULL, 10);
		answer(f, resp, code >= 500 && code < 600 ? code : 500, k8s_status(500, "InternalError", "internal error"));
	}
	free(o);
	if (status) {
		cJSON *gsa = cJSON_CreateObject();
		char name[64];
		static atomic_int seq;
		snprintf(name, sizeof name, "gsa-%d", atomic_fetch_add(&seq, 1) + 1);
		cJSON_AddStringToObject(gsa, "kind", "GameServerAllocation");
		cJSON_AddStringToObject(gsa, "apiVersion", "allocation.agones.dev/v1");
		cJSON *meta = cJSON_AddObjectToObject(gsa, "metadata");
		cJSON_AddStringToObject(meta, "name", name);
		cJSON_AddStringToObject(meta, "namespace", ns ? ns : "");
		cJSON_AddStringToObject(meta, "creationTimestamp", "2026-01-01T00:00:00Z");
		cJSON_AddItemToObject(gsa, "spec", cJSON_Duplicate(spec_, true));
		cJSON_AddItemToObject(gsa, "status", status);
		answer(f, resp, 201, gsa);
	}
out:
	cJSON_Delete(body);
	return 0;
}

static int handle_script(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	cJSON *body = NULL;
	const cJSON *list = NULL, *o;
	struct cc_json_error je;
	if (cc_json_parse_object(req->body, req->body_len, 65536, 4, &body, &je) != 0 ||
	    cc_json_get_array(body, "outcomes", true, MAX_SCRIPT, &list, &je) != 0) {
		cJSON_Delete(body);
		cc_http_error(resp, 400, "invalid_request", je.message, false);
		return 0;
	}
	pthread_mutex_lock(&f->lock);
	cJSON_ArrayForEach(o, list)
	if (cJSON_IsString(o) && f->n_script < MAX_SCRIPT)
		f->script[f->n_script++] = strdup(o->valuestring);
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
	cJSON_AddItemToObject(root, "requests", cJSON_Duplicate(f->requests, true));
	cJSON_AddItemToObject(root, "answers", cJSON_Duplicate(f->answers, true));
	pthread_mutex_unlock(&f->lock);
	cc_http_respond_json(resp, 200, root);
	return 0;
}

static int handle_servers(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	(void)req;
	cJSON *root = cJSON_CreateObject();
	pthread_mutex_lock(&f->lock);
	cJSON_AddItemToObject(root, "gameservers", cJSON_Duplicate(f->servers, true));
	pthread_mutex_unlock(&f->lock);
	cc_http_respond_json(resp, 200, root);
	return 0;
}

/* POST /fake/gameservers: a Ready GameServer of the fleet (a real game server's fake SDK gateway). */
static int handle_register(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	cJSON *body = NULL;
	const char *name = NULL, *address = NULL, *node = NULL, *url = NULL;
	const cJSON *labels = NULL;
	int64_t port = 0;
	struct cc_json_error je = { { 0 }, { 0 } };
	if (cc_json_parse_object(req->body, req->body_len, 65536, 4, &body, &je) != 0 ||
	    cc_json_get_string(body, "name", true, 1, 128, &name, &je) != 0 ||
	    cc_json_get_string(body, "address", true, 1, 253, &address, &je) != 0 ||
	    cc_json_get_string(body, "nodeName", true, 1, 253, &node, &je) != 0 ||
	    cc_json_get_string(body, "notify", true, 1, 1024, &url, &je) != 0 ||
	    cc_json_get_int(body, "port", true, 1, 65535, &port, &je) != 0 ||
	    cc_json_get_object(body, "labels", true, &labels, &je) != 0) {
		cJSON_Delete(body);
		cc_http_error(resp, 400, "invalid_request", je.message, false);
		return 0;
	}
	cJSON *gs = cJSON_CreateObject();
	cJSON_AddStringToObject(gs, "name", name);
	cJSON_AddStringToObject(gs, "state", "Ready");
	cJSON_AddStringToObject(gs, "address", address);
	cJSON_AddNumberToObject(gs, "port", (double)port);
	cJSON_AddStringToObject(gs, "nodeName", node);
	cJSON_AddItemToObject(gs, "labels", cJSON_Duplicate(labels, true));
	cJSON_AddObjectToObject(gs, "annotations");
	cJSON_AddStringToObject(gs, "notify", url);
	pthread_mutex_lock(&f->lock);
	cJSON_AddItemToArray(f->servers, gs);
	pthread_mutex_unlock(&f->lock);
	cJSON_Delete(body);
	cc_http_respond_json(resp, 200, cJSON_CreateObject());
	return 0;
}

/* POST /fake/gameservers/{name}/shutdown: the SDK's /shutdown reached Agones. */
static int handle_gs_shutdown(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct fake *f = ctx;
	const char *name = cc_http_param(req, "name");
	bool found = false;
	cJSON *g;
	pthread_mutex_lock(&f->lock);
	cJSON_ArrayForEach(g, f->servers)
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(g, "name");
		if (name && cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) {
			cJSON_DeleteItemFromObjectCaseSensitive(g, "state");
			cJSON_AddStringToObject(g, "state", "Shutdown");
			found = true;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (found)
		cc_http_respond_json(resp, 200, cJSON_CreateObject());
	else
		cc_http_error(resp, 404, "not_found", "no such GameServer", false);
	return 0;
}

static const struct cc_http_route routes[] = {
	{ "POST", "/apis/allocation.agones.dev/v1/namespaces/{ns}/gameserverallocations", handle_allocate },
	{ "POST", "/fake/script", handle_script },
	{ "GET", "/fake/log", handle_log },
	{ "GET", "/fake/gameservers", handle_servers },
	{ "POST", "/fake/gameservers", handle_register },
	{ "POST", "/fake/gameservers/{name}/shutdown", handle_gs_shutdown },
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
	cc_log_init("fake_k8s", CC_LOG_WARN);
	pthread_mutex_init(&f.lock, NULL);
	f.requests = cJSON_CreateArray();
	f.answers = cJSON_CreateArray();
	f.servers = cJSON_CreateArray();
	if (cfg.token_file) {
		size_t len = 0;
		struct cc_file_error fe;
		if (cc_file_read(cfg.token_file, 16384, 0, &f.token, &len, &fe) != 0) {
			fprintf(stderr, "fake_k8s: --token-file: unreadable\n");
			goto out;
		}
		while (len > 0 && (f.token[len - 1] == '\n' || f.token[len - 1] == '\r'))
			f.token[--len] = '\0';
	}
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	server = cc_http_server_start(&(struct cc_http_server_options){ .name = "fake_k8s",
									.bind = cfg.listen,
									.port = (int)cfg.port,
									.routes = routes,
									.n_routes = CC_ARRAY_LEN(routes),
									.ctx = &f });
	if (!server) {
		fprintf(stderr, "fake_k8s: cannot serve on %s:%lld\n", cfg.listen, (long long)cfg.port);
		goto out;
	}
	printf("listening %d\n", cc_http_server_port(server));
	fflush(stdout);
	sigwait(&stop, &sig);
	status = 0;
out:
	cc_http_server_stop(server);
	for (size_t i = 0; i < f.n_script; i++)
		free(f.script[i]);
	cJSON_Delete(f.requests);
	cJSON_Delete(f.answers);
	cJSON_Delete(f.servers);
	free(f.token);
	pthread_mutex_destroy(&f.lock);
	cc_config_release(&spec, &cfg);
	return status;
}
