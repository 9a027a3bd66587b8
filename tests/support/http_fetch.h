/*
 * http_fetch.h - a small libcurl (and raw socket) client for test suites.
 *
 * cc_test_fetch() performs one request against 127.0.0.1:<port> and keeps
 * the status, the body and a few response headers. cc_test_raw() writes
 * bytes exactly as given (no normalising of ".." or escapes) and reads the
 * reply until the server closes or a deadline passes, for requests curl
 * would refuse or rewrite. Call curl_global_init() once in main().
 */
#ifndef CC_TEST_HTTP_FETCH_H
#define CC_TEST_HTTP_FETCH_H

#include <stdbool.h>
#include <stddef.h>

struct cc_test_reply {
	long status;		   /* HTTP status, 0 when no answer */
	char *body;		   /* malloc'd, NUL-terminated ("" when empty) */
	size_t body_len;
	char request_id[128];	   /* X-Request-Id */
	char content_type[128];
	char cache_control[64];
	char allow[128];
	char retry_after[32];
	char error[256];	   /* curl's message when the transfer failed */
};

struct cc_test_request {
	const char *method;		/* NULL = GET */
	const char *path;		/* "/v1/x?y=1", sent as is */
	const char *body;		/* NULL = none */
	size_t body_len;
	bool chunked;			/* send the body with Transfer-Encoding: chunked */
	const char *const *headers;	/* NULL-terminated "Name: value" list, or NULL */
	long timeout_ms;		/* 0 = 10 s */
};

/* Returns 0 when a reply arrived, else curl's code (reply->error says why). */
int cc_test_fetch(int port, const struct cc_test_request *req, struct cc_test_reply *reply);

/* Frees the reply's body. */
void cc_test_reply_release(struct cc_test_reply *reply);

/*
 * Connects to 127.0.0.1:port, writes len bytes of request (shutting down
 * the write side only when close_write), and reads up to cap - 1 bytes
 * into out until EOF or timeout_ms. Returns the bytes read (NUL-terminated)
 * or -1 when the connection could not be made.
 */
long cc_test_raw(int port, const char *request, size_t len, bool close_write, char *out,
		 size_t cap, long timeout_ms);

/* The status of a raw reply ("HTTP/1.1 413 ..."), or 0. */
int cc_test_raw_status(const char *reply);

#endif
