/*
 * steam.c - Steam ticket verification (see steam.h for the contract and
 * the errorcode table).
 *
 * Layout: steam_http_get() builds the URL (libcurl's URL API escapes the
 * query) and sends it with libcommon's HTTP client, which bounds the time
 * and the reply; everything about Steam's reply lives in
 * steam_classify_reply(), which is pure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "sys/charset.h"
#include "sys/clock.h"
#include "sys/http_client.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "steam.h"
#include "sys/banned.h"

#define STEAM_JSON_MAX_DEPTH 8
#define STEAM_LOG_HOST_MAX 256
#define STEAM_LOG_PATH_MAX 512

/* ---- outcomes --------------------------------------------------------------- */

static const char *const outcome_names[] = {
#define STEAM__NAME(id, name, status) name,
	STEAM_OUTCOMES(STEAM__NAME)
#undef STEAM__NAME
};

static const int outcome_statuses[] = {
#define STEAM__STATUS(id, name, status) status,
	STEAM_OUTCOMES(STEAM__STATUS)
#undef STEAM__STATUS
};

const char *steam_outcome_name(enum steam_outcome o)
{
	return (size_t)o < CC_ARRAY_LEN(outcome_names) ? outcome_names[o] : "unknown";
}

int steam_outcome_status(enum steam_outcome o)
{
	return (size_t)o < CC_ARRAY_LEN(outcome_statuses) ? outcome_statuses[o] : 500;
}

bool steam_configured(const struct steam_config *cfg)
{
	return cfg && cfg->base_url && *cfg->base_url && cfg->app_id > 0 &&
	       cfg->app_id <= (int64_t)UINT32_MAX && cfg->publisher_key && *cfg->publisher_key;
}

bool steam_ticket_well_formed(const char *ticket)
{
	size_t n = 0;

	if (!ticket)
		return false;
	/* Stop one past the cap so a huge input costs no more than the cap. */
	for (; ticket[n] && n <= STEAM_TICKET_MAX_LEN; n++)
		if (!cc_charset_has(ticket[n], CC_CHARSET_DIGIT, "abcdefABCDEF"))
			return false;
	return n >= STEAM_TICKET_MIN_LEN && n <= STEAM_TICKET_MAX_LEN && n % 2 == 0;
}

/* ---- classifying Steam's reply --------------------------------------------- */

/* Error codes that are Steam's verdict on the ticket (table in steam.h). */
static bool errorcode_is_about_ticket(int64_t code)
{
	return code == 3 || code == 101 || code == 102 || code == 103;
}

/*
 * Reads a SteamID64 member into buf: canonical decimal (no sign, no
 * leading zero), non-zero, within uint64. False on anything else.
 */
static bool read_steamid(const cJSON *params, const char *field, char buf[24])
{
	const char *s = NULL;
	uint64_t v = 0;
	size_t n;

	if (cc_json_get_string(params, field, true, 1, 20, &s, NULL) != 0)
		return false;
	n = strlen(s);
	if (s[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	memcpy(buf, s, n + 1);
	return true;
}

/* Sets *outcome and the detail; returns 0 (so callers can `return decide(...)`). */
static int decide(enum steam_outcome *outcome, struct steam_detail *d, enum steam_outcome o,
		  const char *reason)
{
	*outcome = o;
	d->reason = reason;
	return 0;
}

/* Classifies {"response":{"error":{...}}}. */
static int classify_error(const cJSON *error, enum steam_outcome *outcome, struct steam_detail *d)
{
	int64_t code;
	const char *desc = NULL;

	if (cc_json_get_int(error, "errorcode", true, INT32_MIN, INT32_MAX, &code, NULL) != 0)
		return decide(outcome, d, STEAM_UNAVAILABLE, "bad_shape");
	/* errordesc is optional; when present it must still be a string. */
	if (cc_json_get_string(error, "errordesc", false, 0, 1024, &desc, NULL) == CC_EINVAL)
		return decide(outcome, d, STEAM_UNAVAILABLE, "bad_shape");
	d->errorcode = code;
	if (errorcode_is_about_ticket(code))
		return decide(outcome, d, STEAM_INVALID_TICKET, "steam_error");
	return decide(outcome, d, STEAM_UNAVAILABLE, "steam_error_unknown");
}

/* Classifies {"response":{"params":{...}}}; fills *id when Steam vouched. */
static int classify_params(const struct steam_config *cfg, const cJSON *params,
			   struct steam_identity *id, enum steam_outcome *outcome,
			   struct steam_detail *d)
{
	const char *result = NULL;

	if (cc_json_get_string(params, "result", true, 0, 64, &result, NULL) != 0)
		return decide(outcome, d, STEAM_UNAVAILABLE, "bad_shape");
	if (strcmp(result, "OK") != 0)
		return decide(outcome, d, STEAM_UNAVAILABLE, "result_not_ok");
	if (!read_steamid(params, "steamid", id->steamid) ||
	    !read_steamid(params, "ownersteamid", id->ownersteamid) ||
	    cc_json_get_bool(params, "vacbanned", true, &id->vacbanned, NULL) != 0 ||
	    cc_json_get_bool(params, "publisherbanned", true, &id->publisherbanned, NULL) != 0)
		return decide(outcome, d, STEAM_UNAVAILABLE, "bad_shape");
	if (strcmp(id->steamid, id->ownersteamid) != 0)
		return decide(outcome, d, STEAM_FAMILY_SHARED, "family_shared");
	if (id->vacbanned && cfg->reject_vac_banned)
		return decide(outcome, d, STEAM_VAC_BANNED, "vac_banned");
	if (id->publisherbanned && cfg->reject_publisher_banned)
		return decide(outcome, d, STEAM_PUBLISHER_BANNED, "publisher_banned");
	return decide(outcome, d, STEAM_OK, "ok");
}

static bool vouched(enum steam_outcome o)
{
	return o == STEAM_OK || o == STEAM_FAMILY_SHARED || o == STEAM_VAC_BANNED ||
	       o == STEAM_PUBLISHER_BANNED;
}

int steam_classify_reply(const struct steam_config *cfg, long http_status, const char *body,
			 size_t body_len, struct steam_identity *out, enum steam_outcome *outcome,
			 struct steam_detail *detail)
{
	struct steam_detail d = { .reason = "bad_shape", .errorcode = -1, .http_status = http_status };
	struct steam_identity id = { 0 };
	enum steam_outcome o = STEAM_UNAVAILABLE;
	const cJSON *response = NULL, *error = NULL, *params = NULL;
	cJSON *root = NULL;
	int rc;

	if (!cfg || !out || !outcome)
		CC_BUG("steam_classify_reply: NULL argument");
	if (http_status != 200 && http_status != 400) {
		decide(&o, &d, STEAM_UNAVAILABLE, "http_status");
		goto out_decided;
	}
	rc = cc_json_parse_object(body ? body : "", body ? body_len : 0, STEAM_MAX_REPLY_BYTES,
				  STEAM_JSON_MAX_DEPTH, &root, NULL);
	if (rc == CC_ENOMEM)
		return CC_ENOMEM;
	if (rc != 0) {
		decide(&o, &d, STEAM_UNAVAILABLE, "not_json");
		goto out_decided;
	}
	if (cc_json_get_object(root, "response", true, &response, NULL) != 0)
		goto out_decided; /* bad_shape */
	if (cc_json_get_object(response, "error", false, &error, NULL) == CC_EINVAL ||
	    cc_json_get_object(response, "params", false, &params, NULL) == CC_EINVAL ||
	    !error == !params)
		goto out_decided; /* both, neither, or not objects */
	if (error)
		classify_error(error, &o, &d);
	else if (http_status != 200)
		decide(&o, &d, STEAM_UNAVAILABLE, "http_status"); /* a 400 never vouches */
	else
		classify_params(cfg, params, &id, &o, &d);

out_decided:
	cJSON_Delete(root);
	if (vouched(o))
		*out = id;
	*outcome = o;
	if (detail)
		*detail = d;
	return 0;
}

/* ---- HTTP (the part to swap for libcommon's client) ------------------------- */

/* What steam_http_get learned; host/path are safe to log (no query, no userinfo). */
struct http_result {
	long status;		       /* 0 when no reply arrived */
	const char *reason;	       /* static; set when the exchange failed */
	char host[STEAM_LOG_HOST_MAX]; /* "host" or "host:port" */
	char path[STEAM_LOG_PATH_MAX]; /* request path without the query */
};

/* Copies URL part `what` of u into buf (cut to fit); "" when absent. */
static void url_part(CURLU *u, CURLUPart what, char *buf, size_t len)
{
	char *part = NULL;

	buf[0] = '\0';
	if (curl_url_get(u, what, &part, 0) == CURLUE_OK && part)
		snprintf(buf, len, "%s", part);
	curl_free(part);
}

/*
 * Builds base_url + path + the (name, value) query pairs into u (a query
 * or fragment in base_url is kept or dropped as libcurl's URL API does), each
 * value URL-escaped. Fills r->host and r->path for logging. Returns 0,
 * CC_EINVAL (base_url is not an absolute http(s) URL) or CC_ENOMEM.
 */
static int build_url(CURLU *u, const char *base_url, const char *path,
		     const char *const *query, struct http_result *r)
{
	char scheme[8], port[8], base_path[STEAM_LOG_PATH_MAX], pair[STEAM_TICKET_MAX_LEN + 64];
	size_t n;

	if (curl_url_set(u, CURLUPART_URL, base_url, 0) != CURLUE_OK)
		return CC_EINVAL;
	url_part(u, CURLUPART_SCHEME, scheme, sizeof(scheme));
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
		return CC_EINVAL;
	url_part(u, CURLUPART_HOST, r->host, sizeof(r->host));
	url_part(u, CURLUPART_PORT, port, sizeof(port));
	if (*port) {
		n = strlen(r->host);
		snprintf(r->host + n, sizeof(r->host) - n, ":%s", port);
	}
	url_part(u, CURLUPART_PATH, base_path, sizeof(base_path));
	n = strlen(base_path);
	while (n > 0 && base_path[n - 1] == '/')
		base_path[--n] = '\0';
	if ((size_t)snprintf(r->path, sizeof(r->path), "%s%s", base_path, path) >= sizeof(r->path))
		return CC_EINVAL;
	if (curl_url_set(u, CURLUPART_PATH, r->path, 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK)
		return CC_ENOMEM;
	for (; query[0]; query += 2) {
		/* With APPENDQUERY, URLENCODE escapes what follows the first '='. */
		bool fits = (size_t)snprintf(pair, sizeof(pair), "%s=%s", query[0], query[1]) <
			    sizeof(pair);
		CURLUcode uc = fits ? curl_url_set(u, CURLUPART_QUERY, pair,
						   CURLU_APPENDQUERY | CURLU_URLENCODE)
				    : CURLUE_OK;
		explicit_bzero(pair, sizeof(pair)); /* it held the publisher key */
		if (!fits)
			return CC_EINVAL;
		if (uc != CURLUE_OK)
			return CC_ENOMEM;
	}
	return 0;
}

/*
 * GETs base_url + path with the query pairs (NULL-terminated list of name,
 * value) under one deadline, through libcommon's HTTP client. On 0 a reply
 * arrived: r->status is its status and *body (malloc'd, NUL-terminated,
 * caller frees) holds at most STEAM_MAX_REPLY_BYTES. Otherwise returns
 * CC_EUNAVAILABLE with r->reason saying why, or CC_ENOMEM. Never follows
 * redirects; never logs the URL (it holds the publisher key).
 */
static int steam_http_get(const char *base_url, const char *path, const char *const *query,
			  long timeout_ms, struct http_result *r, char **body, size_t *body_len)
{
	struct cc_http_client_response resp;
	char *url = NULL;
	CURLU *u = curl_url();
	int rc;

	if (!u)
		return CC_ENOMEM;
	rc = build_url(u, base_url, path, query, r);
	if (rc == 0 && curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
		rc = CC_ENOMEM;
	curl_url_cleanup(u);
	if (rc != 0) {
		r->reason = "bad_request_url"; /* base_url, or a value too long */
		return rc == CC_ENOMEM ? CC_ENOMEM : CC_EUNAVAILABLE;
	}
	const char *const headers[] = { "User-Agent: cosmic-clash-api", NULL };
	struct cc_http_client_request req = {
		.url = url,
		.headers = headers,
		.timeout_ms = timeout_ms,
		.connect_timeout_ms = timeout_ms,
		.max_response_bytes = STEAM_MAX_REPLY_BYTES,
	};
	rc = cc_http_client_do(&req, &resp);
	explicit_bzero(url, strlen(url)); /* it held the publisher key */
	curl_free(url);
	switch (rc) {
	case 0:
		r->status = resp.status;
		*body = resp.body; /* ownership moves to the caller */
		*body_len = resp.body_len;
		return 0;
	case CC_ENOMEM:
		return CC_ENOMEM;
	case CC_ETOOBIG:
		r->reason = "reply_too_large";
		break;
	case CC_ETIMEOUT:
		r->reason = "timeout";
		break;
	case CC_EUNAVAILABLE:
		r->reason = "connect_failed";
		break;
	default:
		r->reason = "transport_error";
		break;
	}
	return CC_EUNAVAILABLE;
}

/* ---- the call ---------------------------------------------------------------- */

/* Declared on each use (a lookup), so a metrics reset in tests never leaves a stale handle. */
static void record(enum steam_outcome o, double seconds)
{
	static const char *const outcome_label[] = { "outcome", NULL };
	static const double buckets[] = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
	const char *labels[] = { steam_outcome_name(o) };

	cc_metric_add(cc_counter("cosmic_clash_steam_requests_total",
				 "Steam ticket verifications by outcome.", outcome_label,
				 CC_ARRAY_LEN(outcome_names)),
		      labels, 1.0);
	if (seconds >= 0)
		cc_metric_observe(cc_histogram("cosmic_clash_steam_request_duration_seconds",
					       "Time of AuthenticateUserTicket calls to Steam.", NULL,
					       1, buckets, CC_ARRAY_LEN(buckets)),
				  NULL, seconds);
}

int steam_authenticate(const struct steam_config *cfg, const char *ticket,
		       struct steam_identity *out, enum steam_outcome *outcome)
{
	struct http_result r = { .reason = NULL };
	struct steam_detail d = { .reason = NULL, .errorcode = -1 };
	struct steam_identity id = { 0 };
	enum steam_outcome o;
	char appid[24], *body = NULL;
	size_t body_len = 0;
	double start, seconds = -1;
	long timeout_ms;
	int rc;

	if (!cfg || !out || !outcome)
		CC_BUG("steam_authenticate: NULL argument");
	if (!steam_configured(cfg)) {
		o = STEAM_NOT_CONFIGURED;
		d.reason = "not_configured";
		goto out_log;
	}
	if (!steam_ticket_well_formed(ticket)) {
		o = STEAM_MALFORMED_TICKET;
		d.reason = "malformed_ticket";
		goto out_log;
	}
	timeout_ms = cfg->timeout_ms <= 0 ? STEAM_DEFAULT_TIMEOUT_MS
		     : cfg->timeout_ms > STEAM_MAX_TIMEOUT_MS ? STEAM_MAX_TIMEOUT_MS
							      : (long)cfg->timeout_ms;
	snprintf(appid, sizeof(appid), "%lld", (long long)cfg->app_id);
	{
		const char *const query[] = { "key", cfg->publisher_key, "appid", appid,
					      "ticket", ticket, NULL };
		start = cc_clock_seconds();
		rc = steam_http_get(cfg->base_url, STEAM_AUTH_PATH, query, timeout_ms, &r, &body,
				    &body_len);
		seconds = cc_clock_seconds() - start;
	}
	if (rc == CC_ENOMEM)
		return CC_ENOMEM;
	if (rc != 0) {
		o = STEAM_UNAVAILABLE;
		d.reason = r.reason;
		goto out_log;
	}
	rc = steam_classify_reply(cfg, r.status, body, body_len, &id, &o, &d);
	free(body);
	if (rc != 0)
		return rc;

out_log:
	record(o, seconds);
	cc_log_emit(o == STEAM_UNAVAILABLE ? CC_LOG_WARN : CC_LOG_INFO, "steam_authenticate",
		    (const struct cc_log_field[]){
			    CC_LOG_STR("outcome", steam_outcome_name(o)),
			    CC_LOG_STR("reason", d.reason),
			    CC_LOG_STR("host", r.host[0] ? r.host : NULL),
			    CC_LOG_STR("path", r.path[0] ? r.path : NULL),
			    CC_LOG_INT("http_status", r.status),
			    CC_LOG_INT("duration_ms", seconds < 0 ? 0 : (long long)(seconds * 1000)),
			    CC_LOG_INT("steam_errorcode", d.errorcode),
			    CC_LOG_STR("steamid", vouched(o) ? id.steamid : NULL),
		    },
		    8);
	if (vouched(o))
		*out = id;
	*outcome = o;
	return 0;
}
