/*
 * console_api.c - the operator console's reads (GET /v1/admin/overview,
 * /v1/admin/matches, /v1/admin/matches/{match_id}, /v1/admin/players?q=,
 * /v1/admin/players/{player_id}/history, /v1/admin/servers): each checks
 * the operator token, its parameters, and answers one statement of
 * store/console_reads. They write nothing; the console's actions (ban and
 * unban) are operator.c's routes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "store/console_reads.h"
#include "sys/banned.h"
#include "sys/charset.h"
#include "sys/crypto.h"

#define QUERY_MAX 64 /* characters of a search */

/* Answers a read's outcome: its JSON text, 404 for CC_ENOTFOUND, 503 otherwise. Frees text. */
static void answer(struct cc_http_response *resp, int rc, char *text, const char *missing)
{
	if (rc == CC_ENOTFOUND && missing)
		cc_http_error(resp, 404, "not_found", missing, false);
	else if (rc == CC_ENOMEM)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	else if (rc != 0)
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	else if (cc_http_respond_text(resp, 200, "application/json", text, strlen(text)) != 0)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	free(text);
}

/* A search text: absent = "", else 1..QUERY_MAX printable ASCII characters; false = answered 400. */
static bool query_param(const struct cc_http_request *req, struct cc_http_response *resp, const char *name,
			const char **out)
{
	const char *q = cc_http_query(req, name);
	*out = "";
	if (!q)
		return true;
	size_t n = strlen(q);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)q[i] < 0x20 || (unsigned char)q[i] > 0x7e)
			n = QUERY_MAX + 1;
	if (n == 0 || n > QUERY_MAX) {
		char msg[96];
		snprintf(msg, sizeof msg, "%s must be 1 to %d printable ASCII characters", name, QUERY_MAX);
		cc_http_error(resp, 400, "invalid_request", msg, false);
		return false;
	}
	*out = q;
	return true;
}

int api_console_overview(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *text = NULL;
	int rc = cc_console_overview(pg, api->regions_pg_array, &text);
	answer(resp, rc, text, NULL);
	api_db_release(api, pg);
	return 0;
}

static bool match_state_valid(const char *s)
{
	static const char *const states[] = { "ALLOCATING", "PROCESS_READY", "ASSIGNMENT_READY", "IN_PROGRESS",
					       "RESULT_PENDING", "COMPLETED", "FAILED" };
	for (size_t i = 0; i < CC_ARRAY_LEN(states); i++)
		if (strcmp(s, states[i]) == 0)
			return true;
	return false;
}

int api_console_matches(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	const char *q, *state = cc_http_query(req, "state"), *limit_text = cc_http_query(req, "limit");
	long limit = 50;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	if (!query_param(req, resp, "q", &q))
		return 0;
	if (state && !match_state_valid(state)) {
		cc_http_error(resp, 400, "invalid_request", "state must be a match state", false);
		return 0;
	}
	if (limit_text) {
		bool digits = cc_charset_valid(limit_text, 3, CC_CHARSET_DIGIT, "");
		limit = digits ? strtol(limit_text, NULL, 10) : 0;
		if (limit < 1 || limit > CC_CONSOLE_LIST_MAX) {
			cc_http_error(resp, 400, "invalid_request",
				      "limit must be an integer from 1 to " CC_STRINGIFY(CC_CONSOLE_LIST_MAX), false);
			return 0;
		}
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *text = NULL;
	int rc = cc_console_matches(pg, q, state ? state : "", (int)limit, &text);
	answer(resp, rc, text, NULL);
	api_db_release(api, pg);
	return 0;
}

/* The routes that read one resource by the UUID in path parameter param: auth, check, read, answer. */
static int read_by_id(const struct cc_http_request *req, struct cc_http_response *resp, struct api *api,
		      const char *param, int (*read)(struct cc_pg *, const char *, char **), const char *missing)
{
	if (!api_operator_authorized(api, req, resp))
		return 0;
	const char *id = cc_http_param(req, param);
	if (!id || !cc_uuid_valid(id)) {
		char msg[64];
		snprintf(msg, sizeof msg, "%s must be a lowercase UUID", param);
		cc_http_error(resp, 400, "invalid_request", msg, false);
		return 0;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *text = NULL;
	int rc = read(pg, id, &text);
	answer(resp, rc, text, missing);
	api_db_release(api, pg);
	return 0;
}

int api_console_match(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return read_by_id(req, resp, ctx, "match_id", cc_console_match, "no such match");
}

int api_console_players(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	const char *q;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	if (!query_param(req, resp, "q", &q))
		return 0;
	if (!*q) {
		cc_http_error(resp, 400, "invalid_request", "q (a player id, Steam id or name) is required", false);
		return 0;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *text = NULL;
	int rc = cc_console_players(pg, q, &text);
	answer(resp, rc, text, NULL);
	api_db_release(api, pg);
	return 0;
}

int api_console_player_history(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return read_by_id(req, resp, ctx, "player_id", cc_console_player_history, "no such player");
}

int api_console_servers(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *text = NULL;
	int rc = cc_console_servers(pg, &text);
	answer(resp, rc, text, NULL);
	api_db_release(api, pg);
	return 0;
}
