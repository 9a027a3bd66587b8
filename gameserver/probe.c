/*
 * probe.c - see probe.h. One thread, poll() with a 100 ms slice so a stop
 * is seen quickly; each accepted connection is read until the end of its
 * request line (or the deadline), answered, and closed.
 */
#include "probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/banned.h"

struct cc_probe {
	int fd;                /* listening socket */
	int port;              /* bound port */
	atomic_bool stop;      /* cc_probe_stop() asked */
	pthread_t thread;      /* the responder */
	cc_probe_ready_fn ready;
	void *ctx;
};

/* Writes all of len bytes of buf, giving up at the deadline. */
static void write_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len > 0 && cc_clock_ms() < deadline) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			(void)poll(&pfd, 1, 10);
			continue;
		}
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* Sends one HTTP/1.0 response with body (len bytes) and content type. */
static void respond(int fd, int status, const char *type, const char *body, size_t len, int64_t deadline)
{
	char head[256];
	const char *text = status == 200 ? "OK" : status == 503 ? "Service Unavailable" : "Not Found";
	int n = snprintf(head, sizeof head,
			 "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, text, type, len);
	write_all(fd, head, (size_t)n, deadline);
	write_all(fd, body, len, deadline);
}

/*
 * Reads the request line of one connection (non-blocking, until "\n" or
 * the deadline), answers, closes. The rest of the request (headers) is
 * drained briefly so the close does not turn into a reset that a client
 * could report instead of the answer.
 */
static void serve(struct cc_probe *p, int fd)
{
	char req[CC_PROBE_REQUEST_MAX + 1];
	size_t have = 0;
	int64_t deadline = cc_clock_ms() + CC_PROBE_DEADLINE_MS;
	while (have < CC_PROBE_REQUEST_MAX && !memchr(req, '\n', have)) {
		int64_t left = deadline - cc_clock_ms();
		if (left <= 0)
			goto out;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		ssize_t n = recv(fd, req + have, CC_PROBE_REQUEST_MAX - have, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			goto out;
		have += (size_t)n;
	}
	req[have] = '\0';
	char path[64] = "";
	if (sscanf(req, "GET %63s", path) != 1) {
		static const char bad[] = "{\"error\":{\"code\":\"not_found\",\"message\":\"GET /readyz, /healthz or /metrics\",\"retryable\":false}}";
		respond(fd, 404, "application/json", bad, sizeof bad - 1, deadline);
		goto out;
	}
	if (strcmp(path, "/readyz") == 0) {
		char why[128] = "", body[320];
		if (!p->ready || p->ready(p->ctx, why, sizeof why)) {
			static const char ok[] = "{\"status\":\"ready\"}";
			respond(fd, 200, "application/json", ok, sizeof ok - 1, deadline);
		} else {
			/* why is ours (a fixed phrase), never input: no escaping needed beyond quotes we never write. */
			int n = snprintf(body, sizeof body,
					 "{\"error\":{\"code\":\"not_ready\",\"message\":\"%s\",\"retryable\":true}}",
					 why[0] ? why : "not ready");
			respond(fd, 503, "application/json", body, (size_t)n < sizeof body ? (size_t)n : sizeof body - 1,
				deadline);
		}
	} else if (strcmp(path, "/healthz") == 0) {
		static const char ok[] = "{\"status\":\"ok\"}";
		respond(fd, 200, "application/json", ok, sizeof ok - 1, deadline);
	} else if (strcmp(path, "/metrics") == 0) {
		char *text = cc_metrics_render();
		if (text)
			respond(fd, 200, "text/plain; version=0.0.4", text, strlen(text), deadline);
		free(text);
	} else {
		static const char nf[] = "{\"error\":{\"code\":\"not_found\",\"message\":\"GET /readyz, /healthz or /metrics\",\"retryable\":false}}";
		respond(fd, 404, "application/json", nf, sizeof nf - 1, deadline);
	}
	(void)shutdown(fd, SHUT_WR);
	/* Drain what the client still sends (headers) for a moment, so close() is not a reset. */
	for (int i = 0; i < 5; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, 10) <= 0 || recv(fd, req, sizeof req, 0) <= 0)
			break;
	}
out:
	close(fd);
}

static void *probe_thread(void *arg)
{
	struct cc_probe *p = arg;
	while (!atomic_load(&p->stop)) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		int fd = accept4(p->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			serve(p, fd);
	}
	return NULL;
}

struct cc_probe *cc_probe_start(int port, cc_probe_ready_fn ready, void *ctx)
{
	struct cc_probe *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->ready = ready;
	p->ctx = ctx;
	p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->fd < 0)
		goto out_fail;
	int one = 1;
	(void)setsockopt(p->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t salen = sizeof sa;
	if (bind(p->fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(p->fd, 16) != 0 ||
	    getsockname(p->fd, (struct sockaddr *)&sa, &salen) != 0)
		goto out_close;
	p->port = ntohs(sa.sin_port);
	if (pthread_create(&p->thread, NULL, probe_thread, p) != 0)
		goto out_close;
	return p;
out_close:
	cc_log_error("probe_failed", CC_LOG_INT("port", port), CC_LOG_STR("error", strerror(errno)));
	close(p->fd);
	free(p);
	return NULL;
out_fail:
	cc_log_error("probe_failed", CC_LOG_INT("port", port), CC_LOG_STR("error", strerror(errno)));
	free(p);
	return NULL;
}

int cc_probe_port(const struct cc_probe *p)
{
	return p ? p->port : -1;
}

void cc_probe_stop(struct cc_probe *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->thread, NULL);
	close(p->fd);
	free(p);
}
