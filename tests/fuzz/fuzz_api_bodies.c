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
#include "sys/crypto.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	LOGIN, ENQUEUE, REVISION, PROBE_ANSWER, PROPOSAL_RESPONSE, BAN, REGISTER, CONNECT, DISCONNECT, SHUTDOWN, HEARTBEAT,
	NO_SHOW, UNBAN, N_ROUTES
};

static const char *const *const route_fields[N_ROUTES] = {
	[LOGIN] = api_login_fields,
	[ENQUEUE] = api_enqueue_fields,
	[REVISION] = api_revision_fields,
	[PROBE_ANSWER] = api_probe_answer_fields,
	[PROPOSAL_RESPONSE] = api_proposal_response_fields,
	[BAN] = api_ban_fields,
	[REGISTER] = api_register_fields,
	[CONNECT] = api_connect_fields,
	[DISCONNECT] = api_disconnect_fields,
	[SHUTDOWN] = api_shutdown_fields,
	[HEARTBEAT] = api_heartbeat_fields,
	[NO_SHOW] = api_no_show_fields,
	[UNBAN] = api_unban_fields,
};

/* What a game-server route's reader promises of a text field: length and alphabet. */
static bool text_in(const char *s, size_t min, size_t max, const char *extra, bool upper_digits)
{
	size_t n = strlen(s);
	if (n < min || n > max)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (!((c >= 'a' && c <= 'z') || (upper_digits && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) ||
		      (c && strchr(extra, c))))
			return false;
	}
	return true;
}

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
		/* fallthrough: a ban body carries the fence too */
	case UNBAN: {
		bool fenced = false;
		if (api_ban_fence_read(body, &fenced, &s1, &err) == 0)
			FUZZ_ASSERT(!s1 || (fenced && strlen(s1) >= 20 && strlen(s1) <= 40));
		break;
	}
	case REGISTER:
		if (api_register_read(body, &s1, &n, &s2, &err) == 0)
			FUZZ_ASSERT((strcmp(s1, "process_ready") == 0 || strcmp(s1, "assignment_ready") == 0) && n >= 1 &&
				    n <= INT32_MAX && text_in(s2, 1, 200, "._:@/+-", true));
		break;
	case CONNECT:
		if (api_connect_read(body, &s1, &s2, &err) == 0)
			FUZZ_ASSERT(cc_uuid_valid(s1) && text_in(s2, 1, 64, "._:-", true));
		break;
	case DISCONNECT: {
		const char *reason = NULL;
		if (api_disconnect_read(body, &s1, &n, &reason, &err) == 0)
			FUZZ_ASSERT(cc_uuid_valid(s1) && n >= 1 && n <= INT32_MAX && text_in(reason, 1, 32, "_", false));
		break;
	}
	case SHUTDOWN:
		if (api_shutdown_read(body, &s1, &err) == 0)
			FUZZ_ASSERT(text_in(s1, 1, 32, "_", false));
		break;
	case HEARTBEAT:
		if (api_heartbeat_read(body, &s1, &n, &err) == 0)
			FUZZ_ASSERT((strcmp(s1, "loading") == 0 || strcmp(s1, "playing") == 0 || strcmp(s1, "ended") == 0) &&
				    n >= 0 && n <= (INT64_C(1) << 53) - 1);
		break;
	case NO_SHOW: {
		char ids[API_NO_SHOW_MAX][CC_UUID_BUF];
		size_t k = 0;
		if (api_no_show_read(body, ids, &k, &err) == 0) {
			FUZZ_ASSERT(k >= 1 && k <= API_NO_SHOW_MAX);
			for (size_t i = 0; i < k; i++) {
				FUZZ_ASSERT(cc_uuid_valid(ids[i]));
				for (size_t j = 0; j < i; j++)
					FUZZ_ASSERT(strcmp(ids[i], ids[j]) != 0);
			}
		}
		break;
	}
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
