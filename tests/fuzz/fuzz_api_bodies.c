/*
 * fuzz_api_bodies: the JSON request body of every cc-api route that takes
 * one, through exactly what the route runs: api_body_parse() with the
 * route's allowed members, then the route's reader (services/api/api.h).
 * The first input byte picks the route; the rest is the body. A body that
 * reads must have produced values inside the reader's documented ranges.
 *
 * Adding a route with a body: add its fields/reader pair to api.h and one
 * case below, and a seed in tests/fuzz/corpus/api_bodies/ (first byte = the
 * case number).
 */
#include <stdint.h>
#include <string.h>

#include "../../services/api/api.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { LOGIN, ENQUEUE, REVISION, PROBE_ANSWER, PROPOSAL_RESPONSE, BAN, N_ROUTES };

static const char *const *const route_fields[N_ROUTES] = {
	[LOGIN] = api_login_fields,
	[ENQUEUE] = api_enqueue_fields,
	[REVISION] = api_revision_fields,
	[PROBE_ANSWER] = api_probe_answer_fields,
	[PROPOSAL_RESPONSE] = api_proposal_response_fields,
	[BAN] = api_ban_fields,
};

/* Runs the route's reader; on success checks what it promised. */
static void read_route(int route, const cJSON *body)
{
	struct cc_json_error err = {{0}, {0}};
	const char *s1 = NULL, *s2 = NULL;
	int64_t n = 0;
	bool accept = false;

	switch (route) {
	case LOGIN:
		if (api_login_read(body, &s1, &err) == 0)
			FUZZ_ASSERT(strlen(s1) >= 1 && strlen(s1) <= 8192);
		break;
	case ENQUEUE:
		if (api_enqueue_read(body, &s1, &n, &s2, &err) == 0)
			FUZZ_ASSERT(*s1 && n >= 1 && n <= INT32_MAX && strlen(s2) <= 64);
		break;
	case REVISION:
		if (api_revision_read(body, &n, &err) == 0)
			FUZZ_ASSERT(n >= 1);
		break;
	case PROBE_ANSWER:
		if (api_probe_answer_read(body, &s1, &err) == 0)
			FUZZ_ASSERT(strlen(s1) >= 1 && strlen(s1) <= 128);
		break;
	case PROPOSAL_RESPONSE:
		if (api_proposal_response_read(body, &accept, &n, &err) == 0)
			FUZZ_ASSERT(n >= 1);
		break;
	case BAN:
		if (api_ban_read(body, &s1, &s2, &err) == 0)
			FUZZ_ASSERT(strlen(s1) >= 20 && strlen(s1) <= 40 && *s2);
		break;
	}
	/* Whatever went wrong is described in bounded, terminated text. */
	FUZZ_ASSERT(memchr(err.field, '\0', sizeof(err.field)) != NULL);
	FUZZ_ASSERT(memchr(err.message, '\0', sizeof(err.message)) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cc_json_error err = {{0}, {0}};
	cJSON *body = NULL;
	char *text;
	int route;

	if (size < 1)
		return 0;
	route = data[0] % N_ROUTES;
	/* The HTTP server hands handlers a NUL-terminated body that may hold NULs. */
	text = fuzz_cstr(data + 1, size - 1);
	if (api_body_parse(text, size - 1, route_fields[route], &body, &err) == 0) {
		FUZZ_ASSERT(cJSON_IsObject(body));
		read_route(route, body);
		cJSON_Delete(body);
	} else {
		FUZZ_ASSERT(body == NULL && err.message[0]);
	}
	free(text);
	return 0;
}
