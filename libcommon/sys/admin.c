/* admin.c - /metrics, /healthz and /readyz on a cc_http_server. */
#include "sys/admin.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sys/http_server.h"
#include "sys/metrics.h"
#include "sys/service.h"
#include "sys/banned.h"

struct cc_admin {
	struct cc_http_server *server;
	cc_admin_ready_fn ready; /* NULL = always ready */
	void *ctx;		 /* for ready() */
};

/* Answers 200 {"status": status}. */
static void respond_status(struct cc_http_response *resp, const char *status)
{
	cJSON *body = cJSON_CreateObject();
	if (body && !cJSON_AddStringToObject(body, "status", status)) {
		cJSON_Delete(body);
		body = NULL;
	}
	cc_http_respond_json(resp, 200, body);
}

static int handle_healthz(const struct cc_http_request *req, struct cc_http_response *resp,
			  void *ctx)
{
	(void)req;
	(void)ctx;
	respond_status(resp, "ok");
	return 0;
}

static int handle_readyz(const struct cc_http_request *req, struct cc_http_response *resp,
			 void *ctx)
{
	struct cc_admin *a = ctx;
	char why[CC_ADMIN_WHY_MAX] = "";

	(void)req;
	if (!a->ready || a->ready(a->ctx, why, sizeof(why))) {
		respond_status(resp, "ready");
		return 0;
	}
	why[sizeof(why) - 1] = '\0'; /* whatever ready() did */
	cc_http_error_unavailable(resp, "not_ready", why[0] ? why : "not ready");
	return 0;
}

static int handle_metrics(const struct cc_http_request *req, struct cc_http_response *resp,
			  void *ctx)
{
	char *text = cc_metrics_render();
	int rc;

	(void)req;
	(void)ctx;
	if (!text)
		return CC_ENOMEM;
	rc = cc_http_respond_text(resp, 200, "text/plain; version=0.0.4; charset=utf-8", text,
				  strlen(text));
	free(text);
	return rc;
}

static const struct cc_http_route admin_routes[] = {
	{ "GET", "/metrics", handle_metrics },
	{ "GET", "/healthz", handle_healthz },
	{ "GET", "/readyz", handle_readyz },
};

struct cc_admin *cc_admin_start(const char *bind, int port, cc_admin_ready_fn ready, void *ctx)
{
	struct cc_admin *a = calloc(1, sizeof(*a));
	struct cc_http_server_options opts = {
		.name = "admin",
		.bind = bind,
		.port = port,
		.max_connections = 32, /* scrapers and probes, not players */
		.timeout_seconds = 10,
		.max_body_bytes = 1024, /* no admin route takes a body */
		.routes = admin_routes,
		.n_routes = CC_ARRAY_LEN(admin_routes),
	};

	if (!a)
		return NULL;
	a->ready = ready;
	a->ctx = ctx;
	opts.ctx = a;
	a->server = cc_http_server_start(&opts);
	if (!a->server) {
		free(a);
		return NULL;
	}
	return a;
}

struct cc_admin *cc_admin_start_service(struct cc_service *svc, cc_admin_ready_fn ready, void *ctx)
{
	if (!cc_service_has(svc, CC_SERVICE_ADMIN))
		CC_BUG("cc_admin_start_service: the service declares no CC_SERVICE_ADMIN rows");
	const struct cc_service_options *opt = cc_service_options(svc);
	cc_service_set_ready(svc, ready, ctx);
	return cc_admin_start(opt->admin_listen, (int)opt->admin_port, cc_service_ready, svc);
}

int cc_admin_port(const struct cc_admin *a)
{
	return a ? cc_http_server_port(a->server) : -1;
}

void cc_admin_stop(struct cc_admin *a)
{
	if (!a)
		return;
	cc_http_server_stop(a->server);
	free(a);
}
