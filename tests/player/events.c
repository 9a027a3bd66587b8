/*
 * events.c - one player's GET /v1/events stream (events.h).
 */
#include "events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define PC_EVENT_MAX_BYTES (64 * 1024) /* a stream message; the server sends envelopes of a few hundred bytes */

struct pc_stream {
	struct cc_ws_client *ws;
	pc_event_cb cb;
	void *ctx;
};

static void copy_str(const cJSON *obj, const char *field, char *out, size_t cap)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, field);
	out[0] = '\0';
	if (cJSON_IsString(it) && strlen(it->valuestring) < cap)
		snprintf(out, cap, "%s", it->valuestring);
}

static int64_t get_int(const cJSON *obj, const char *field)
{
	int64_t v = 0;
	if (cc_json_get_int(obj, field, false, 0, INT64_C(9007199254740991), &v, NULL) != 0)
		return 0;
	return v;
}

bool pc_event_decode(const char *msg, size_t len, struct pc_event *ev, const char **why)
{
	cJSON *obj = NULL;
	struct cc_json_error err = { 0 };
	memset(ev, 0, sizeof *ev);
	if (cc_json_parse_object(msg, len, PC_EVENT_MAX_BYTES, 8, &obj, &err) != 0) {
		*why = "not a JSON object";
		return false;
	}
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(obj, "event");
	if (!cJSON_IsString(e) || !e->valuestring[0] || strlen(e->valuestring) >= sizeof ev->event) {
		cJSON_Delete(obj);
		*why = "no string \"event\"";
		return false;
	}
	snprintf(ev->event, sizeof ev->event, "%s", e->valuestring);
	ev->position = get_int(obj, "position");
	ev->revision = get_int(obj, "revision");
	ev->replayed = get_int(obj, "replayed");
	copy_str(obj, "resource_type", ev->resource_type, sizeof ev->resource_type);
	copy_str(obj, "resource_id", ev->resource_id, sizeof ev->resource_id);
	copy_str(obj, "reason", ev->reason, sizeof ev->reason);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(obj, "payload");
	if (cJSON_IsObject(p)) {
		copy_str(p, "proposal_id", ev->proposal_id, sizeof ev->proposal_id);
		copy_str(p, "match_id", ev->match_id, sizeof ev->match_id);
		if (!ev->reason[0])
			copy_str(p, "reason", ev->reason, sizeof ev->reason);
	}
	cJSON_Delete(obj);
	return true;
}

static void on_message(void *ctx, const char *msg, size_t len)
{
	struct pc_stream *s = ctx;
	struct pc_event ev;
	const char *why = "";
	if (!pc_event_decode(msg, len, &ev, &why)) {
		cc_log_warn("events_message_skipped", CC_LOG_STR("why", why), CC_LOG_INT("bytes", (long long)len));
		return;
	}
	if (s->cb)
		s->cb(s->ctx, &ev);
}

/* "http://host:port" -> host and port; false for anything else (https: no TLS here). */
static bool split_url(const char *url, char *host, size_t cap, int *port)
{
	const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
	if (!p)
		return false;
	size_t n;
	const char *colon;
	if (*p == '[') {
		const char *close = strchr(p, ']');
		if (!close)
			return false;
		n = (size_t)(close - p - 1);
		if (n == 0 || n >= cap)
			return false;
		memcpy(host, p + 1, n);
		colon = close[1] == ':' ? close + 1 : NULL;
		if (!colon && close[1] != '\0' && close[1] != '/')
			return false;
	} else {
		n = strcspn(p, ":/");
		if (n == 0 || n >= cap)
			return false;
		memcpy(host, p, n);
		colon = p[n] == ':' ? p + n : NULL;
	}
	host[n] = '\0';
	*port = 80;
	if (colon) {
		char *end;
		long v = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || v < 1 || v > 65535 || (*end != '\0' && *end != '/'))
			return false;
		*port = (int)v;
	}
	return true;
}

int pc_stream_open(const char *base_url, const char *token, int64_t after, int timeout_ms, pc_event_cb cb,
		   void *ctx, struct pc_stream **out, struct cc_ws_client_refusal *refusal)
{
	char host[256], target[64], headers[256];
	int port;
	*out = NULL;
	if (refusal) {
		memset(refusal, 0, sizeof *refusal);
		refusal->retry_after_s = -1;
	}
	if (!split_url(base_url, host, sizeof host, &port)) {
		if (refusal)
			snprintf(refusal->reason, sizeof refusal->reason, "not an http:// URL (the stream has no TLS here)");
		return CC_EINVAL;
	}
	if (after >= 0)
		snprintf(target, sizeof target, "/v1/events?after=%lld", (long long)after);
	else
		snprintf(target, sizeof target, "/v1/events");
	if ((size_t)snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", token) >= sizeof headers)
		return CC_EINVAL;
	struct pc_stream *s = calloc(1, sizeof *s);
	if (!s)
		return CC_ENOMEM;
	s->cb = cb;
	s->ctx = ctx;
	struct cc_ws_client_options o = {
		.host = host,
		.port = port,
		.target = target,
		.headers = headers,
		.timeout_ms = timeout_ms,
		.max_message_bytes = PC_EVENT_MAX_BYTES,
		/* the server pings every 20 s; no frame for 60 s: reconnect (the contract's keepalive) */
		.idle_timeout_ms = 60000,
		.on_message = on_message,
		.ctx = s,
	};
	int rc = cc_ws_client_connect(&o, &s->ws, refusal);
	if (rc != 0) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void pc_stream_free(struct pc_stream *s)
{
	if (!s)
		return;
	if (cc_ws_client_open(s->ws) && cc_ws_client_close(s->ws, 1000, "done") == 0)
		(void)cc_ws_client_service(s->ws, 0); /* the close is on its way; no wait for the answer */
	cc_ws_client_free(s->ws);
	free(s);
}

int pc_stream_fd(const struct pc_stream *s)
{
	return s ? cc_ws_client_fd(s->ws) : -1;
}

short pc_stream_events(const struct pc_stream *s)
{
	return s ? cc_ws_client_events(s->ws) : 0;
}

int pc_stream_service(struct pc_stream *s, int timeout_ms)
{
	return s ? cc_ws_client_service(s->ws, timeout_ms) : 0;
}

int pc_stream_close_code(const struct pc_stream *s)
{
	return s ? cc_ws_client_close_code(s->ws) : 0;
}

const char *pc_stream_close_reason(const struct pc_stream *s)
{
	return s ? cc_ws_client_close_reason(s->ws) : "";
}
