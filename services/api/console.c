/*
 * console.c - the operator console's page: GET /console and
 * /console/{asset}, the files of services/api/console/ built into the
 * binary by scripts/embed.sh (build/gen/console_assets.inc), so there is
 * nothing to deploy beside cc-api and nothing comes from a CDN.
 *
 * The page itself is public (it holds no data and no secret); everything it
 * shows comes from the /v1/admin routes, which want the operator token the
 * page asks for and keeps in sessionStorage. Every asset goes out with its
 * Content-Type, an ETag (If-None-Match answers 304), Cache-Control:
 * no-cache (kept, revalidated on every load, so a new build is seen at once)
 * and a Content-Security-Policy that allows only this origin's scripts,
 * styles and connections: no inline script, no eval, no framing. A name
 * that is not an asset is 404 in the API's error shape.
 */
#include <string.h>

#include "api.h"
#include "sys/banned.h"

struct console_asset {
	const char *name;
	const char *content_type;
	const unsigned char *data;
	size_t len;
	const char *etag; /* quoted */
};

#include "console_assets.inc"

#define CONSOLE_CSP                                                                                  \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " \
	"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const struct console_asset *find_asset(const char *name)
{
	for (size_t i = 0; i < CC_ARRAY_LEN(console_assets); i++)
		if (strcmp(console_assets[i].name, name) == 0)
			return &console_assets[i];
	return NULL;
}

/* True when an If-None-Match list names etag (or is "*"). */
static bool etag_listed(const char *list, const char *etag)
{
	size_t n = strlen(etag);
	for (const char *p = list; p && *p;) {
		p += strspn(p, " \t,");
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		if (*p == '*' || (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ')))
			return true;
		p = strchr(p, ',');
	}
	return false;
}

static int serve(const struct cc_http_request *req, struct cc_http_response *resp, const char *name)
{
	const struct console_asset *a = find_asset(name);
	if (!a) {
		cc_http_error(resp, 404, "not_found", "no such console page or asset", false);
		return 0;
	}
	bool fresh = etag_listed(cc_http_header(req, "If-None-Match"), a->etag);
	if (cc_http_respond_text(resp, fresh ? 304 : 200, a->content_type, fresh ? "" : (const char *)a->data,
				 fresh ? 0 : a->len) != 0)
		return 0; /* answered 503 out_of_memory */
	resp->cache_control = "no-cache";
	if (cc_http_response_header(resp, "ETag", a->etag) != 0 ||
	    cc_http_response_header(resp, "Content-Security-Policy", CONSOLE_CSP) != 0 ||
	    cc_http_response_header(resp, "X-Content-Type-Options", "nosniff") != 0 ||
	    cc_http_response_header(resp, "Referrer-Policy", "no-referrer") != 0 ||
	    cc_http_response_header(resp, "X-Frame-Options", "DENY") != 0)
		CC_BUG("a console header does not fit");
	return 0;
}

int api_console_index(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)ctx;
	return serve(req, resp, "index.html");
}

int api_console_asset(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)ctx;
	return serve(req, resp, cc_http_param(req, "asset"));
}
