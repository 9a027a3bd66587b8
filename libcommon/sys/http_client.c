/*
 * http_client.c - see http_client.h. One libcurl easy handle per call.
 */
#include "sys/http_client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sys/log.h"
#include "sys/banned.h"

/* The response body as it arrives, never larger than max. */
struct body_buf {
	char *data;	/* len bytes, room for cap (>= len + 1 for the NUL) */
	size_t len;	/* bytes received */
	size_t cap;	/* bytes allocated */
	size_t max;	/* the caller's cap on len */
	bool too_big;	/* aborted: the body would exceed max */
	bool no_memory; /* aborted: realloc failed */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

/* curl_global_init is not thread-safe on every build: run it exactly once. */
static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* libcurl write callback: appends to the body or aborts (returns 0) at the cap. */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct body_buf *b = userdata;
	size_t n = size * nmemb; /* libcurl guarantees size == 1 */

	if (n > b->max - b->len) {
		b->too_big = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		/* Double, but never past what the cap can need. */
		size_t cap = b->cap ? b->cap * 2 : 4096;
		if (cap < b->len + n + 1)
			cap = b->len + n + 1;
		if (cap > b->max + 1)
			cap = b->max + 1;
		char *data = realloc(b->data, cap);
		if (!data) {
			b->no_memory = true;
			return 0;
		}
		b->data = data;
		b->cap = cap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	return n;
}

/* True for the methods we send; anything else could smuggle bytes into the request line. */
static bool method_known(const char *m)
{
	static const char *const known[] = { "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" };
	for (size_t i = 0; i < CC_ARRAY_LEN(known); i++)
		if (strcmp(m, known[i]) == 0)
			return true;
	return false;
}

/* True when h is "Name: value" with a non-empty name and no CR or LF. */
static bool header_valid(const char *h)
{
	const char *colon = strchr(h, ':');
	return colon && colon != h && !strpbrk(h, "\r\n");
}

/*
 * Builds the curl header list: the caller's headers after "Expect:" (no
 * 100-continue round trip). Returns 0 with *out set (free with
 * curl_slist_free_all), CC_EINVAL or CC_ENOMEM.
 */
static int build_headers(const char *const *headers, struct curl_slist **out)
{
	struct curl_slist *list = curl_slist_append(NULL, "Expect:");
	size_t count = 0;

	if (!list)
		return CC_ENOMEM;
	for (const char *const *h = headers; h && *h; h++) {
		if (++count > CC_HTTP_CLIENT_MAX_HEADERS || !header_valid(*h))
			goto out_invalid;
		struct curl_slist *grown = curl_slist_append(list, *h);
		if (!grown) {
			curl_slist_free_all(list);
			return CC_ENOMEM;
		}
		list = grown;
	}
	*out = list;
	return 0;
out_invalid:
	curl_slist_free_all(list);
	return CC_EINVAL;
}

/*
 * Sets the method and body on h. Returns 0 or CC_EINVAL (unknown method, a
 * body with GET/HEAD).
 */
static int set_method(CURL *h, const char *method, const char *body, size_t body_len)
{
	bool has_body = body != NULL;

	if (!method_known(method))
		return CC_EINVAL;
	if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) {
		if (has_body)
			return CC_EINVAL;
		curl_easy_setopt(h, method[0] == 'G' ? CURLOPT_HTTPGET : CURLOPT_NOBODY, 1L);
		return 0;
	}
	/* POST, PUT, PATCH always carry a body (maybe empty: Content-Length: 0). */
	if (!has_body &&
	    (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0)) {
		body = "";
		body_len = 0;
		has_body = true;
	}
	if (has_body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	if (strcmp(method, "POST") != 0)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	return 0;
}

/* True when url starts with http:// or https:// (any case). */
static bool scheme_allowed(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

/* Maps a finished transfer's curl code to a CC_E* result. */
static int map_curl_error(CURLcode code, const struct body_buf *b)
{
	switch (code) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return CC_ETIMEOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		return CC_EUNAVAILABLE;
	case CURLE_FILESIZE_EXCEEDED:
		return CC_ETOOBIG;
	case CURLE_WRITE_ERROR:
		return b->too_big ? CC_ETOOBIG : b->no_memory ? CC_ENOMEM : CC_EIO;
	case CURLE_OUT_OF_MEMORY:
		return CC_ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return CC_EINVAL;
	default:
		return CC_EIO;
	}
}

/* Validates the parts of req that need no libcurl. Returns 0 or CC_EINVAL. */
static int check_request(const struct cc_http_client_request *req)
{
	if (!req || !req->url || !*req->url || !scheme_allowed(req->url))
		return CC_EINVAL;
	if (req->timeout_ms < 0 || req->connect_timeout_ms < 0)
		return CC_EINVAL;
	return 0;
}

/* Logs a failed transfer with the URL stripped of anything secret. */
static void log_failure(const char *method, const char *url, int rc, CURLcode code, const char *detail)
{
	char where[512];
	(void)cc_http_url_redact(url, where, sizeof(where)); /* always leaves printable text */
	cc_log_warn("http_client_failed", CC_LOG_STR("method", method), CC_LOG_STR("url", where),
		    CC_LOG_STR("result", cc_errname(rc)), CC_LOG_STR("curl_error", curl_easy_strerror(code)),
		    CC_LOG_STR("detail", detail));
}

int cc_http_client_do(const struct cc_http_client_request *req, struct cc_http_client_response *resp)
{
	struct body_buf body = { 0 };
	struct curl_slist *headers = NULL;
	CURL *h = NULL;
	const char *method;
	char detail[CURL_ERROR_SIZE] = "";
	int rc = check_request(req);

	if (rc || !resp)
		return rc ? rc : CC_EINVAL;
	method = req->method ? req->method : "GET";
	long timeout = req->timeout_ms ? req->timeout_ms : CC_HTTP_CLIENT_DEFAULT_TIMEOUT_MS;
	long connect_timeout =
	    req->connect_timeout_ms ? req->connect_timeout_ms : CC_HTTP_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS;
	if (connect_timeout > timeout)
		connect_timeout = timeout;
	body.max = req->max_response_bytes ? req->max_response_bytes : CC_HTTP_CLIENT_DEFAULT_MAX_RESPONSE;

	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return CC_EIO;
	rc = build_headers(req->headers, &headers);
	if (rc)
		return rc;
	h = curl_easy_init();
	if (!h) {
		rc = CC_ENOMEM;
		goto out_free_headers;
	}
	rc = set_method(h, method, req->body, req->body_len);
	if (rc)
		goto out_cleanup;
	curl_easy_setopt(h, CURLOPT_URL, req->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM for DNS timeouts: we run in threads */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "cosmic-clash-backend");
	if (req->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, req->ca_file); /* in-cluster: the service account's CA */
	/* libcurl's specific words ("SSL certificate problem: unable to get local issuer certificate"). */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	/* Refuse an announced oversize body before reading it; on_body catches the rest. */
	if (strcmp(method, "HEAD") != 0)
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)body.max);

	CURLcode code = curl_easy_perform(h);
	rc = map_curl_error(code, &body);
	if (rc) {
		if (!detail[0])
			snprintf(detail, sizeof(detail), "%s", curl_easy_strerror(code));
		log_failure(method, req->url, rc, code, detail);
		goto out_cleanup;
	}
	if (!body.data) {
		body.data = malloc(1); /* an empty body is still a string */
		if (!body.data) {
			rc = CC_ENOMEM;
			goto out_cleanup;
		}
	}
	body.data[body.len] = '\0';

	struct cc_http_client_response out = { 0 };
	char *content_type = NULL;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out.status);
	curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &content_type);
	if (content_type)
		snprintf(out.content_type, sizeof(out.content_type), "%s", content_type);
	out.body = body.data;
	out.body_len = body.len;
	body.data = NULL; /* handed over to *resp */
	*resp = out;
out_cleanup:
	if (req->error && req->error_len)
		snprintf(req->error, req->error_len, "%s", rc ? detail : "");
	curl_easy_cleanup(h);
out_free_headers:
	curl_slist_free_all(headers);
	free(body.data);
	return rc;
}

void cc_http_client_response_release(struct cc_http_client_response *resp)
{
	if (!resp)
		return;
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

char *cc_http_url_escape(const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";

	if (!s || len > (SIZE_MAX - 1) / 3)
		return NULL;
	char *out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
				  (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
		if (unreserved) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

int cc_http_url_redact(const char *url, char *out, size_t outlen)
{
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	int rc = CC_EINVAL;

	if (!out || outlen == 0)
		return CC_EINVAL;
	snprintf(out, outlen, "(unparsable url)");
	if (!url)
		return CC_EINVAL;
	CURLU *u = curl_url();
	if (!u)
		return CC_ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		goto out_free;
	/* The port only when the URL names one (CURLUE_NO_PORT otherwise). */
	if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK)
		port = NULL;
	snprintf(out, outlen, "%s://%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "", path);
	rc = 0;
out_free:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}
