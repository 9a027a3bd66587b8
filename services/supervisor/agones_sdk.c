/*
 * agones_sdk.c - the Agones SDK gateway client (agones_sdk.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "agones_sdk.h"
#include "sys/clock.h"
#include "sys/http_client.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define GAMESERVER_MAX (256 * 1024) /* bytes of one GET /gameserver answer */
#define ANNOTATION_MAX 8192	    /* bytes of one annotation we keep */

int agones_sdk_init(struct agones_sdk *s, const char *port, long timeout_ms)
{
	long p = 0;
	memset(s, 0, sizeof *s);
	if (!port || !*port || strlen(port) > 5)
		return CC_EINVAL;
	for (const char *c = port; *c; c++) {
		if (*c < '0' || *c > '9')
			return CC_EINVAL;
		p = p * 10 + (*c - '0');
	}
	if (p < 1 || p > 65535)
		return CC_EINVAL;
	snprintf(s->base, sizeof s->base, "http://127.0.0.1:%ld", p);
	s->timeout_ms = timeout_ms;
	return 0;
}

/* One request to the gateway; the status, or a negative CC_E*. body (may be NULL) gets the answer (caller frees). */
static int call(const struct agones_sdk *s, const char *method, const char *path, const char *json, char **body,
		char *transport, size_t tlen)
{
	char url[128];
	snprintf(url, sizeof url, "%s%s", s->base, path);
	const char *headers[] = { "Accept: application/json", json ? "Content-Type: application/json" : NULL, NULL };
	struct cc_http_client_request req = { .method = method,
					      .url = url,
					      .headers = headers,
					      .body = json,
					      .body_len = json ? strlen(json) : 0,
					      .timeout_ms = s->timeout_ms,
					      .connect_timeout_ms = s->timeout_ms,
					      .max_response_bytes = GAMESERVER_MAX,
					      .error = transport,
					      .error_len = tlen };
	struct cc_http_client_response resp = { 0 };
	int rc = cc_http_client_do(&req, &resp);
	if (rc != 0)
		return rc;
	rc = (int)resp.status;
	if (body) {
		*body = resp.body;
		resp.body = NULL;
	}
	cc_http_client_response_release(&resp);
	return rc;
}

int agones_sdk_post(const struct agones_sdk *s, const char *route)
{
	char path[64], transport[128] = "";
	snprintf(path, sizeof path, "/%s", route);
	return call(s, "POST", path, "{}", NULL, transport, sizeof transport);
}

/* A malloc'd copy of annotation name of ann (a string of 1..ANNOTATION_MAX bytes), or NULL. */
static char *annotation(const cJSON *ann, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ann, name);
	if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > ANNOTATION_MAX)
		return NULL;
	return strdup(v->valuestring);
}

/* Copies string member field of obj into out (cap bytes); "" when absent or null. False when it is not a string or too long. */
static bool opt_str(const cJSON *obj, const char *field, char *out, size_t cap, char *why, size_t whylen, const char *where)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
	out[0] = '\0';
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap) {
		snprintf(why, whylen, "%s.%s: not a string of at most %zu bytes", where, field, cap - 1);
		return false;
	}
	snprintf(out, cap, "%s", v->valuestring);
	return true;
}

int agones_sdk_get_gameserver(const struct agones_sdk *s, struct agones_gameserver *gs, char *why, size_t whylen)
{
	char *body = NULL, transport[256] = "";
	cJSON *root = NULL;
	struct cc_json_error je = { { 0 }, { 0 } };
	int rc;
	memset(gs, 0, sizeof *gs);
	int st = call(s, "GET", "/gameserver", NULL, &body, transport, sizeof transport);
	if (st < 0) {
		snprintf(why, whylen, "GET /gameserver: %s%s%s", cc_errname(st), transport[0] ? ": " : "", transport);
		return st;
	}
	if (st != 200) {
		snprintf(why, whylen, "GET /gameserver: HTTP %d", st);
		free(body);
		return CC_EUNAVAILABLE;
	}
	rc = cc_json_parse_object(body, strlen(body), GAMESERVER_MAX, 16, &root, &je);
	free(body);
	if (rc != 0) {
		snprintf(why, whylen, "GET /gameserver: %s", je.message);
		return CC_EINVAL;
	}
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "object_meta");
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
	rc = CC_EINVAL;
	if ((meta && !cJSON_IsObject(meta) && !cJSON_IsNull(meta)) ||
	    (status && !cJSON_IsObject(status) && !cJSON_IsNull(status))) {
		snprintf(why, whylen, "GET /gameserver: object_meta and status must be objects");
		goto out;
	}
	char deletion[32];
	if (!opt_str(meta, "name", gs->name, sizeof gs->name, why, whylen, "object_meta") ||
	    !opt_str(meta, "deletion_timestamp", deletion, sizeof deletion, why, whylen, "object_meta") ||
	    !opt_str(status, "state", gs->state, sizeof gs->state, why, whylen, "status") ||
	    !opt_str(status, "address", gs->address, sizeof gs->address, why, whylen, "status"))
		goto out;
	gs->deleting = deletion[0] && strcmp(deletion, "0") != 0;
	const cJSON *ports = cJSON_GetObjectItemCaseSensitive(status, "ports"), *p;
	if (ports && !cJSON_IsNull(ports) && !cJSON_IsArray(ports)) {
		snprintf(why, whylen, "GET /gameserver: status.ports: not an array");
		goto out;
	}
	/* The port named "default" (Agones' default name), else the first: as cc-allocator's agones provider reads it. */
	const cJSON *list = cJSON_IsArray(ports) ? ports : NULL;
	cJSON_ArrayForEach(p, list)
	{
		int64_t port = 0;
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
		if (cc_json_get_int(p, "port", true, 1, 65535, &port, &je) != 0) {
			snprintf(why, whylen, "GET /gameserver: status.ports[]: %s%s%s", je.field, je.field[0] ? ": " : "",
				 je.message);
			goto out;
		}
		if (gs->port == 0 || (cJSON_IsString(name) && strcmp(name->valuestring, "default") == 0))
			gs->port = (int)port;
	}
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
	if (cJSON_IsObject(ann)) {
		gs->match_id = annotation(ann, CC_AGONES_ANN_MATCH_ID);
		gs->allocation_id = annotation(ann, CC_AGONES_ANN_ALLOCATION_ID);
		gs->workload_token = annotation(ann, CC_AGONES_ANN_WORKLOAD_TOKEN);
		gs->playlist = annotation(ann, CC_AGONES_ANN_PLAYLIST);
		gs->arena = annotation(ann, CC_AGONES_ANN_ARENA);
		gs->protocol = annotation(ann, CC_AGONES_ANN_PROTOCOL);
	}
	rc = 0;
out:
	/* The tree holds the workload token too. */
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
							  CC_AGONES_ANN_WORKLOAD_TOKEN);
	if (cJSON_IsString(t))
		sodium_memzero(t->valuestring, strlen(t->valuestring));
	cJSON_Delete(root);
	if (rc != 0)
		agones_gameserver_release(gs);
	return rc;
}

bool agones_gameserver_assigned(const struct agones_gameserver *gs)
{
	return gs->name[0] && gs->address[0] && gs->port > 0;
}

void agones_gameserver_release(struct agones_gameserver *gs)
{
	if (gs->workload_token)
		sodium_memzero(gs->workload_token, strlen(gs->workload_token));
	free(gs->match_id);
	free(gs->allocation_id);
	free(gs->workload_token);
	free(gs->playlist);
	free(gs->arena);
	free(gs->protocol);
	memset(gs, 0, sizeof *gs);
}

/* ---- health pings ---------------------------------------------------------------------------- */

static void *health_thread(void *arg)
{
	struct agones_health *h = arg;
	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		pthread_mutex_unlock(&h->lock);
		int st = agones_sdk_post(h->sdk, "health");
		pthread_mutex_lock(&h->lock);
		h->sent++;
		if (st != 200) {
			h->failed++;
			cc_log_warn("sdk_health_failed", CC_LOG_INT("status", st < 0 ? 0 : st),
				    CC_LOG_STR("error", st < 0 ? cc_errname(st) : ""), CC_LOG_INT("failed", h->failed));
		}
		int64_t until = cc_clock_ns() + h->interval_ms * 1000000;
		while (!h->stop && cc_clock_ns() < until) {
			struct timespec ts = cc_clock_timespec(until);
			(void)pthread_cond_timedwait(&h->wake, &h->lock, &ts);
		}
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int agones_health_start(struct agones_health *h, const struct agones_sdk *sdk, int64_t interval_ms)
{
	pthread_condattr_t ca;
	memset(h, 0, sizeof *h);
	h->sdk = sdk;
	h->interval_ms = interval_ms;
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&h->thread, NULL, health_thread, h) != 0) {
		pthread_cond_destroy(&h->wake);
		pthread_mutex_destroy(&h->lock);
		return CC_EIO;
	}
	h->running = true;
	cc_log_info("sdk_health_started", CC_LOG_INT("interval_ms", interval_ms));
	return 0;
}

void agones_health_stop(struct agones_health *h)
{
	if (!h->running)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->wake);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL); /* a ping in flight ends first: none is sent after this */
	h->running = false;
	cc_log_info("sdk_health_stopped", CC_LOG_INT("sent", h->sent), CC_LOG_INT("failed", h->failed));
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
}
