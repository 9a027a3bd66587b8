/*
 * fuzz_http_router: the path decoder and route matcher of the HTTP server
 * (sys/http_server.c: decode_path, split_segments, route_matches,
 * resolve_route) over cc-api's real route table (services/api/routes.c).
 * Input: "<METHOD> <request-target>". Invariants: a decoded path starts
 * with '/', holds only printable ASCII and no ".."; a match's literal
 * segments equal the path's and every capture is a non-empty segment
 * without '/', so substituting the captures into the pattern gives back
 * the decoded path; a 405 names the methods in Allow.
 *
 * The matcher is static inside the server (its only caller), so this file
 * includes http_server.c itself rather than widen the server's API; the
 * copy in libcc-sys.a is then never linked (every symbol it would provide
 * is already defined here). If http_server.c renames these functions,
 * follow it here.
 */
#include "../../libcommon/sys/http_server.c"

#include "fuzz_support.h"

/* services/api/routes.c */
extern const struct cc_http_route api_routes[];
extern const size_t api_n_routes;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cc_http_server server;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	server.routes = calloc(api_n_routes, sizeof(*server.routes));
	FUZZ_ASSERT(server.routes != NULL);
	server.n_routes = api_n_routes;
	for (size_t i = 0; i < api_n_routes; i++)
		FUZZ_ASSERT(compile_route(&api_routes[i], &server.routes[i]) == NULL);
	return 0;
}

/* The pattern of r with its captures replaced by req's values. */
static void rebuild(const struct compiled_route *r, const struct cc_http_request *req, char *out,
		    size_t cap)
{
	size_t used = 0, p = 0;

	out[0] = '\0';
	for (size_t i = 0; i < r->n_segs; i++) {
		const char *seg = r->segs[i];

		if (r->is_param[i]) {
			FUZZ_ASSERT(p < req->n_params__);
			FUZZ_ASSERT(strcmp(req->param_names__[p], seg) == 0);
			seg = req->param_values__[p++];
			FUZZ_ASSERT(*seg && !strchr(seg, '/'));
			FUZZ_ASSERT(cc_http_param(req, r->segs[i]) == seg);
		}
		used += (size_t)snprintf(out + used, cap - used, "/%s", seg);
		FUZZ_ASSERT(used < cap);
	}
	FUZZ_ASSERT(p == req->n_params__);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_cstr(data, size), *uri, method[16];
	struct request_state st;
	char again[CC_HTTP_MAX_PATH + 64];
	int rc;

	memset(&st, 0, sizeof(st));
	st.server = &server;
	uri = strchr(line, ' ');
	if (!uri || (size_t)(uri - line) >= sizeof(method) || strlen(line) != size)
		goto out; /* MHD never hands over a request line with a NUL in it */
	memcpy(method, line, (size_t)(uri - line));
	method[uri - line] = '\0';
	uri++;
	rc = decode_path(uri, &st.path);
	FUZZ_ASSERT(rc == 0 || rc == 400 || rc == 414);
	if (rc != 0)
		goto out;
	FUZZ_ASSERT(st.path[0] == '/' && strlen(st.path) <= CC_HTTP_MAX_PATH);
	FUZZ_ASSERT(!strstr(st.path, ".."));
	for (const char *p = st.path; *p; p++)
		FUZZ_ASSERT(*p >= 0x20 && *p <= 0x7e);
	st.req.path = st.path;
	rc = resolve_route(&st, method);
	FUZZ_ASSERT(rc == 0 || rc == 404 || rc == 405);
	if (rc == 0) {
		FUZZ_ASSERT(st.route && strcmp(st.route->method, method) == 0);
		rebuild(st.route, &st.req, again, sizeof(again));
		FUZZ_ASSERT(strcmp(again, st.path) == 0);
	}
	if (rc == 405) {
		bool allow = false;

		for (size_t i = 0; i < st.resp.n_headers; i++)
			allow = allow || strcmp(st.resp.headers[i].name, "Allow") == 0;
		FUZZ_ASSERT(allow);
	}
out:
	free(st.path);
	free(st.segbuf);
	response_release(&st.resp);
	free(line);
	return 0;
}
