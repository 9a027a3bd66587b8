/*
 * util.c - the helpers every cc-api route shares: borrowing a database
 * connection, turning a transaction's outcome into an answer, reading a
 * bounded JSON body, hashing secrets for lookup.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define API_BODY_MAX_DEPTH 8

void api_answer_reset(struct api_answer *a)
{
	free(a->body);
	memset(a, 0, sizeof *a);
}

void api_answer_error(struct api_answer *a, int status, const char *code, const char *fmt, ...)
{
	va_list ap;
	free(a->body);
	a->body = NULL;
	a->status = status;
	a->code = code;
	va_start(ap, fmt);
	vsnprintf(a->message, sizeof a->message, fmt, ap);
	va_end(ap);
}

int api_answer_body(struct api_answer *a, int status, const char *json)
{
	char *copy = strdup(json);
	if (!copy)
		return CC_ENOMEM;
	free(a->body);
	a->body = copy;
	a->status = status;
	a->code = NULL;
	return 0;
}

/* Database trouble: whatever an attempt decided was rolled back with it. */
static bool rolled_back_by_db(int rc)
{
	return rc == CC_EUNAVAILABLE || rc == CC_ETIMEOUT || rc == CC_EDB || rc == CC_ESERIALIZATION ||
	       rc == CC_ERETRY_EXHAUSTED || rc == CC_ENOMEM;
}

void api_respond(struct cc_http_response *resp, int rc, struct api_answer *a)
{
	if (rolled_back_by_db(rc))
		api_answer_reset(a);
	if (a->status && a->code) {
		if (a->status == 429)
			cc_http_error_too_many(resp, a->code, a->message, a->retry_after);
		else
			cc_http_error(resp, a->status, a->code, a->message, a->status >= 500);
	} else if (a->status && a->body) {
		if (cc_http_respond_text(resp, a->status, "application/json", a->body, strlen(a->body)) != 0)
			cc_http_error_unavailable(resp, "out_of_memory", "out of memory");
	} else if (rc == CC_ERETRY_EXHAUSTED) {
		cc_http_error_unavailable(resp, "retry_exhausted",
					  "the request kept conflicting with concurrent ones; retry it");
	} else if (rc == CC_EUNAVAILABLE || rc == CC_ETIMEOUT || rc == CC_EDB || rc == CC_ESERIALIZATION) {
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	} else {
		cc_http_error_from_result(resp, rc ? rc : CC_EDB);
	}
	api_answer_reset(a);
}

struct cc_pg *api_db(struct api *api, struct cc_http_response *resp)
{
	struct cc_pg *pg = NULL;
	int rc = cc_pg_pool_acquire(api->pool, (int)api->cfg->svc.db_timeout_ms, &pg);
	if (rc != 0) {
		cc_log_warn("db_acquire_failed", CC_LOG_STR("error", cc_errname(rc)));
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
		return NULL;
	}
	return pg;
}

void api_db_release(struct api *api, struct cc_pg *pg)
{
	cc_pg_pool_release(api->pool, pg);
}

int api_body_parse(const char *text, size_t len, const char *const *allowed, cJSON **out,
		   struct cc_json_error *err)
{
	cJSON *obj = NULL;
	/* No byte cap of its own: the HTTP server already refused bodies over --max-body-bytes. */
	int rc = cc_json_parse(text, len, len + 1, API_BODY_MAX_DEPTH, &obj, err);
	/*
	 * Valid JSON of the wrong shape (an array, a number) is a bad request,
	 * not bad JSON (issue 13): a field name marks it invalid_request.
	 */
	if (rc == 0 && !cJSON_IsObject(obj)) {
		cc_json_error_set(err, "body", "the body must be a JSON object");
		rc = CC_EINVAL;
	}
	if (rc == 0 && allowed)
		rc = cc_json_only_fields(obj, allowed, err);
	if (rc != 0) {
		cJSON_Delete(obj);
		return rc;
	}
	*out = obj;
	return 0;
}

cJSON *api_body_object(const struct cc_http_request *req, struct cc_http_response *resp,
		       const char *const *allowed)
{
	struct cc_json_error err = { 0 };
	cJSON *obj = NULL;

	if (api_body_parse(req->body, req->body_len, allowed, &obj, &err) != 0) {
		cc_http_error(resp, 400, err.field[0] ? "invalid_request" : "invalid_json",
			      err.message[0] ? err.message : "the body is not a JSON object", false);
		return NULL;
	}
	return obj;
}

void api_bad_field(struct cc_http_response *resp, const struct cc_json_error *err)
{
	cc_http_error(resp, 400, "invalid_request", err->message, false);
}

void api_secret_hash_param(const char *secret, char out[2 + 64 + 1])
{
	out[0] = '\\';
	out[1] = 'x';
	cc_sha256_hex(secret, strlen(secret), out + 2);
}

bool api_region_known(const struct api *api, const char *region)
{
	for (size_t i = 0; i < api->n_regions; i++)
		if (strcmp(api->regions[i], region) == 0)
			return true;
	return false;
}

void api_probe_answer_url(const struct api *api, const char *region, char out[API_ANSWER_URL_BUF])
{
	const char *base = "";
	for (size_t i = 0; i < api->n_regions; i++)
		if (strcmp(api->regions[i], region) == 0)
			base = api->probe_urls[i];
	snprintf(out, API_ANSWER_URL_BUF, "%s/v1/probes/%s/answer", base, region);
}

