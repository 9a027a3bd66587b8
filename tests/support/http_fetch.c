#include "http_fetch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "sys/clock.h"
#include "sys/banned.h"

struct sink {
	char *data;
	size_t len;
};

struct upload {
	const char *data;
	size_t len, off;
};

static size_t on_body(char *ptr, size_t size, size_t n, void *userdata)
{
	struct sink *s = userdata;
	size_t add = size * n;
	char *grown = realloc(s->data, s->len + add + 1);
	if (!grown)
		return 0;
	memcpy(grown + s->len, ptr, add);
	s->data = grown;
	s->len += add;
	s->data[s->len] = '\0';
	return add;
}

/* Copies the value of "Name: value\r\n" into dst when the name matches. */
static void take_header(const char *line, size_t len, const char *name, char *dst, size_t cap)
{
	size_t nlen = strlen(name);
	if (len <= nlen + 1 || strncasecmp(line, name, nlen) != 0 || line[nlen] != ':')
		return;
	line += nlen + 1;
	len -= nlen + 1;
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	snprintf(dst, cap, "%.*s", (int)len, line);
}

static size_t on_header(char *ptr, size_t size, size_t n, void *userdata)
{
	struct cc_test_reply *r = userdata;
	size_t len = size * n;
	take_header(ptr, len, "X-Request-Id", r->request_id, sizeof(r->request_id));
	take_header(ptr, len, "Content-Type", r->content_type, sizeof(r->content_type));
	take_header(ptr, len, "Cache-Control", r->cache_control, sizeof(r->cache_control));
	take_header(ptr, len, "Allow", r->allow, sizeof(r->allow));
	take_header(ptr, len, "Retry-After", r->retry_after, sizeof(r->retry_after));
	return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *userdata)
{
	struct upload *u = userdata;
	size_t left = u->len - u->off, take = size * n < left ? size * n : left;
	memcpy(buf, u->data + u->off, take);
	u->off += take;
	return take;
}

/* True when list (NULL-terminated "Name: value" lines) has a header called name. */
static bool has_header(const char *const *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *const *h = list; h && *h; h++)
		if (strncasecmp(*h, name, n) == 0 && (*h)[n] == ':')
			return true;
	return false;
}

int cc_test_fetch(int port, const struct cc_test_request *req, struct cc_test_reply *reply)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	struct sink sink = { 0 };
	struct upload up = { req->body, req->body_len, 0 };
	char url[4096];
	CURLcode rc;

	memset(reply, 0, sizeof(*reply));
	if (!c) {
		snprintf(reply->error, sizeof(reply->error), "curl_easy_init failed");
		return CURLE_FAILED_INIT;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, req->path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms ? req->timeout_ms : 10000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, reply);
	if (req->method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	for (const char *const *h = req->headers; h && *h; h++)
		hdrs = curl_slist_append(hdrs, *h);
	hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
	/* Servers here take JSON bodies only (415 otherwise): say so unless the test chose. */
	if (req->body && !has_header(req->headers, "Content-Type"))
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	if (req->body && req->chunked) {
		hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &up);
		if (!req->method)
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
	} else if (req->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply->status);
	else
		snprintf(reply->error, sizeof(reply->error), "%s", curl_easy_strerror(rc));
	reply->body = sink.data ? sink.data : strdup("");
	reply->body_len = sink.len;
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return (int)rc;
}

void cc_test_reply_release(struct cc_test_reply *reply)
{
	free(reply->body);
	reply->body = NULL;
}

long cc_test_raw(int port, const char *request, size_t len, bool close_write, char *out,
		 size_t cap, long timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	long deadline = cc_clock_ms() + timeout_ms;
	size_t got = 0, sent = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	while (sent < len) {
		ssize_t n = send(fd, request + sent, len - sent, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server may close early: read what it said */
		sent += (size_t)n;
	}
	if (close_write)
		shutdown(fd, SHUT_WR);
	while (got + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left = deadline - cc_clock_ms();
		ssize_t n;
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = recv(fd, out + got, cap - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(fd);
	return (long)got;
}

int cc_test_raw_status(const char *reply)
{
	int status = 0;
	if (sscanf(reply, "HTTP/1.%*d %d", &status) != 1)
		return 0;
	return status;
}
