/*
 * auth.c - who is calling: player sessions (bearer tokens checked against
 * the durable sessions table on every request, so a revocation or ban made
 * through any replica applies at once) and the operator's bearer secret.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <stdint.h>

#include "api.h"
#include "sys/charset.h"
#include "sys/crypto.h"
#include "store/sessions.h"
#include "sys/banned.h"

#define TOKEN_MAX API_BEARER_TOKEN_MAX

/* RFC 6750's b64token of 1..max characters. */
static bool b64token_ok(const char *token, size_t len, size_t max)
{
	return token && len > 0 && len <= max && cc_charset_all(token, len, CC_CHARSET_ALNUM, "-._~+/=");
}

bool api_bearer_token_syntax_ok(const char *token, size_t len)
{
	return b64token_ok(token, len, TOKEN_MAX);
}

/*
 * The one reader of "Authorization: Bearer <token>": copies a b64token of
 * at most max characters into buf (cap bytes), or returns false for an
 * absent header, another scheme, or a malformed or oversized token.
 */
static bool bearer_from_header(const char *h, size_t max, char *buf, size_t cap)
{
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	size_t n = strlen(h);
	if (n >= cap || !b64token_ok(h, n, max))
		return false;
	memcpy(buf, h, n + 1);
	return true;
}

bool api_bearer_parse(const char *h, char *buf, size_t len)
{
	return bearer_from_header(h, TOKEN_MAX, buf, len);
}

static bool bearer_token(const struct cc_http_request *req, char *buf, size_t len)
{
	return api_bearer_parse(cc_http_header(req, "Authorization"), buf, len);
}

/* Workload tokens are longer than session tokens: only the buffer bounds them. */
bool api_bearer_token(const struct cc_http_request *req, char *buf, size_t cap)
{
	return bearer_from_header(cc_http_header(req, "Authorization"), SIZE_MAX, buf, cap);
}

int api_authenticate(struct api *api, struct cc_pg *pg, const struct cc_http_request *req,
		     struct cc_http_response *resp, struct api_player *out)
{
	char token[TOKEN_MAX + 1];
	if (!bearer_token(req, token, sizeof token)) {
		cc_http_error(resp, 401, "unauthorized", "a valid session bearer token is required", false);
		return CC_EUNAUTHORIZED;
	}
	char hash[2 + 64 + 1];
	api_secret_hash_param(token, hash);
	return api_authenticate_hash(api, pg, hash, resp, out);
}

int api_authenticate_hash(struct api *api, struct cc_pg *pg, const char *hash, struct cc_http_response *resp,
			  struct api_player *out)
{
	struct cc_session_check s;
	(void)api;
	int rc = cc_session_lookup(pg, hash, &s);
	if (rc == CC_ENOTFOUND) {
		cc_http_error(resp, 401, "unauthorized", "the session is unknown", false);
		return CC_EUNAUTHORIZED;
	}
	if (rc != 0) {
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
		return rc;
	}
	if (s.banned) {
		char msg[128];
		snprintf(msg, sizeof msg, "the player is banned until %s", s.banned_until);
		cc_http_error(resp, 403, "banned", msg, false);
		return CC_EFORBIDDEN;
	}
	/* Revoked and expired alike mean "log in again": the contract's session_expired. */
	if (s.revoked) {
		cc_http_error(resp, 401, "session_expired", "the session was revoked; log in again", false);
		return CC_EUNAUTHORIZED;
	}
	if (s.expired) {
		cc_http_error(resp, 401, "session_expired", "the session has expired; log in again", false);
		return CC_EUNAUTHORIZED;
	}
	snprintf(out->id, sizeof out->id, "%s", s.player_id);
	return 0;
}

bool api_operator_authorized(struct api *api, const struct cc_http_request *req,
			     struct cc_http_response *resp)
{
	char token[TOKEN_MAX + 1];
	const char *secret = api->cfg->operator_token;
	if (!secret || !*secret) {
		cc_http_error_unavailable(resp, "not_configured", "operator routes need --operator-token-file");
		return false;
	}
	if (!bearer_token(req, token, sizeof token) ||
	    !cc_secret_equal(token, strlen(token), secret, strlen(secret))) {
		cc_http_error(resp, 401, "unauthorized", "a valid operator bearer token is required", false);
		return false;
	}
	return true;
}
