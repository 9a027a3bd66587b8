/*
 * routes.c - cc-api's route table: the one place that says which handler
 * serves which method and path. The contract test reads this table to find
 * routes that exist on the server but not in contracts/v1/openapi.json.
 */
#include "api.h"
#include "http_server.h"
#include "banned.h"

static int handle_placeholder(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	(void)req;
	(void)ctx;
	cc_http_error_unavailable(resp, "not_configured", "the v1 API is not served yet");
	return 0;
}

const struct cc_http_route api_routes[] = {
	{ "GET", "/v1", handle_placeholder },
};
const size_t api_n_routes = CC_ARRAY_LEN(api_routes);
