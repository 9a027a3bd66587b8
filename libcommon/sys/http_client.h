/*
 * http_client.h - one blocking HTTP(S) request with hard limits (libcurl).
 *
 * For calls to outside services (Steam's Web API, the Agones allocator):
 * one function sends a request and collects the whole response, and
 * nothing can make it wait or allocate without bound:
 *  - timeout_ms bounds the whole request (DNS, connect, TLS, upload,
 *    download), not just idle periods: a server trickling one byte at a time
 *    still hits it. connect_timeout_ms bounds the connect phase.
 *  - the response body is capped at max_response_bytes; a larger body
 *    aborts the transfer (early when Content-Length announces it).
 *  - redirects are never followed (the 3xx is returned as is), and only
 *    http:// and https:// URLs are accepted.
 *  - TLS peers are verified (libcurl's defaults); proxies come from the
 *    usual environment variables (https_proxy, no_proxy, ...).
 * Each call uses its own connection (no reuse), so calls from many threads
 * at once are safe; libcurl's global state is set up once, on first use.
 *
 * URLs may carry secrets in their query (a Steam Web API key): the module
 * logs transport failures with scheme, host, port and path only
 * (cc_http_url_redact()), never the query, fragment or user info.
 *
 * Ownership: the response's body is malloc'd by cc_http_client_do() and owned
 * by the response until cc_http_client_response_release().
 */
#ifndef CC_HTTP_CLIENT_H
#define CC_HTTP_CLIENT_H

#include <stddef.h>

#include "sys/cc.h"

#define CC_HTTP_CLIENT_DEFAULT_TIMEOUT_MS	  10000L     /* when timeout_ms is 0 */
#define CC_HTTP_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS 3000L	     /* when connect_timeout_ms is 0 */
#define CC_HTTP_CLIENT_DEFAULT_MAX_RESPONSE	  (1u << 20) /* when max_response_bytes is 0 */
#define CC_HTTP_CLIENT_MAX_HEADERS		  32	     /* request headers accepted */

struct cc_http_client_request {
	const char *method;	    /* "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"; NULL = GET */
	const char *url;	    /* http:// or https:// */
	const char *const *headers; /* NULL-terminated "Name: value" lines, or NULL */
	const char *body;	    /* request body bytes, or NULL for none */
	size_t body_len;	    /* bytes of body (binary is fine) */
	long timeout_ms;	    /* whole request; 0 = default, < 0 invalid */
	long connect_timeout_ms;    /* connect phase; 0 = default (capped by timeout_ms) */
	size_t max_response_bytes;  /* body cap; 0 = default */
	const char *ca_file;	    /* PEM bundle that verifies https peers instead of the system's; NULL = system */
	char *error;		    /* optional: on a transport failure, libcurl's detail ("SSL certificate problem: ...") */
	size_t error_len;	    /* bytes of error (NUL included); 0 = none wanted */
};

struct cc_http_client_response {
	long status;		/* HTTP status code, e.g. 200, 503 */
	char *body;		/* body_len bytes plus a NUL (never NULL after success) */
	size_t body_len;	/* bytes of body, NUL excluded */
	char content_type[128]; /* Content-Type header (truncated), "" if none */
};

/*
 * Performs req and fills *resp. Give a Content-Type header yourself when
 * sending a body (libcurl would otherwise say form-urlencoded).
 * Returns:
 *   0                a response arrived, whatever its status (check ->status);
 *                    release *resp with cc_http_client_response_release().
 *   CC_ETIMEOUT      timeout_ms or connect_timeout_ms ran out.
 *   CC_EUNAVAILABLE  the host could not be resolved or refused the connection.
 *   CC_ETOOBIG       the body exceeds max_response_bytes (transfer aborted).
 *   CC_EINVAL        bad request: NULL/empty URL, a scheme other than
 *                    http/https, a header without ':' or with CR/LF, more
 *                    than CC_HTTP_CLIENT_MAX_HEADERS headers, an unknown
 *                    method, a body with GET or HEAD, a negative timeout.
 *   CC_EIO           anything else on the wire (reset, TLS failure, garbage).
 *   CC_ENOMEM
 * *resp is written only on success. When req->error is given it holds ""
 * on success and libcurl's message on failure (no secrets: never the URL).
 */
CC_MUST_CHECK int cc_http_client_do(const struct cc_http_client_request *req,
				    struct cc_http_client_response *resp);

/* Frees resp's body and zeroes *resp. NULL, or a zeroed response, is a no-op. */
void cc_http_client_response_release(struct cc_http_client_response *resp);

/*
 * Percent-encodes len bytes of s for a query parameter or path segment:
 * everything except RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~)
 * becomes %XX. Returns a malloc'd NUL-terminated string the caller frees, or
 * NULL on out-of-memory or when s is NULL.
 */
char *cc_http_url_escape(const char *s, size_t len);

/*
 * Writes into out (outlen bytes, NUL-terminated, truncated if needed) a
 * loggable form of url: "scheme://host[:port]/path", without user info,
 * query or fragment. Returns 0, CC_EINVAL when url does not parse or out is
 * NULL/empty, CC_ENOMEM; on failure out (if usable) holds "(unparsable url)".
 */
int cc_http_url_redact(const char *url, char *out, size_t outlen);

#endif
